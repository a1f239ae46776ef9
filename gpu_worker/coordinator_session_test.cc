// The worker's session against a scripted coordinator (fake_coordinator_link.h): register,
// hello, heartbeats, leases into the queue, results on the stream or after a reconnect,
// reconnect backoff, a new registration when the coordinator forgot the worker, and drains.
#include "gpu_worker/coordinator_session.h"

#include <atomic>
#include <thread>

#include "gmock/gmock.h"
#include "gpu_worker/fake_coordinator_link.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::ElementsAre;
using Messages = std::vector<v1::WorkerMessage>;

v1::CoordinatorMessage LeaseMessage(const std::string& id) {
  v1::CoordinatorMessage m;
  m.mutable_lease()->set_lease_id(id);
  return m;
}

v1::RegisterResponse Registered(const std::string& id) {
  v1::RegisterResponse r;
  r.set_worker_id(id);
  r.set_heartbeat_interval_s(0.05);
  return r;
}

// A heartbeat listing exactly `ids`, with `free` slots and `draining`.
auto HeartbeatWith(std::vector<std::string> ids, uint32_t free, bool draining) {
  return [=](const Messages& written) {
    for (const auto& m : written) {
      if (!m.has_heartbeat()) continue;
      const auto& hb = m.heartbeat();
      if (std::vector<std::string>(hb.lease_ids().begin(), hb.lease_ids().end()) == ids &&
          hb.free_slots() == free && hb.draining() == draining) {
        return true;
      }
    }
    return false;
  };
}

auto Released(const std::string& id) {
  return [=](const Messages& written) {
    for (const auto& m : written) {
      if (m.has_release() && m.release().lease_id() == id) return true;
    }
    return false;
  };
}

class CoordinatorSessionTest : public ::testing::Test {
 protected:
  void StartSession() {
    SessionOptions options;
    options.facts.set_hostname("host");
    options.facts.set_gpu_type("H200");
    options.facts.set_slots(1);
    options.prefetch = 1;
    options.drain_timeout_s = drain_timeout_s_;
    options.sleep = [this](double s) {
      absl::MutexLock lock(&mu_);
      sleeps_.push_back(s);
    };
    session_ = std::make_unique<CoordinatorSession>(link_, leases_, options);
    runner_ = std::thread([this] { session_->Run(stop_); });
  }
  void TearDown() override {
    if (!runner_.joinable()) return;
    stop_ = true;
    leases_.Close();
    if (auto last = link_.AwaitStream(link_.streams() - 1, absl::ZeroDuration())) {
      last->End(absl::UnavailableError("test over"));
    }
    runner_.join();
  }
  std::vector<double> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

  FakeCoordinatorLink link_;
  LeaseQueue leases_{1};
  std::atomic<bool> stop_{false};
  double drain_timeout_s_ = 60;
  std::unique_ptr<CoordinatorSession> session_;
  std::thread runner_;
  absl::Mutex mu_;
  std::vector<double> sleeps_ ABSL_GUARDED_BY(mu_);
};

TEST_F(CoordinatorSessionTest, RegistersThenSaysHello) {
  link_.ScriptRegistrations({Registered("w1")});
  StartSession();
  auto stream = link_.AwaitStream(0);
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(stream->AwaitWritten([](const Messages& w) { return !w.empty(); }));
  const v1::WorkerMessage hello = stream->written()[0];
  ASSERT_TRUE(hello.has_hello());
  EXPECT_EQ(hello.hello().worker_id(), "w1");
  EXPECT_EQ(hello.hello().prefetch(), 1u);
  ASSERT_EQ(link_.registrations().size(), 1u);
  EXPECT_EQ(link_.registrations()[0].facts().gpu_type(), "H200");
  EXPECT_EQ(session_->worker_id(), "w1");
  // Capacity 2 (a slot and a prefetch), nothing held.
  EXPECT_TRUE(stream->AwaitWritten(HeartbeatWith({}, 2, false)));
}

TEST_F(CoordinatorSessionTest, LeasesAreQueuedHeldAndListedInTheNextHello) {
  link_.ScriptRegistrations({Registered("w1")});
  StartSession();
  auto first = link_.AwaitStream(0);
  first->Push(LeaseMessage("a"));
  ASSERT_TRUE(first->AwaitWritten(HeartbeatWith({"a"}, 1, false)));
  first->End(absl::UnavailableError("coordinator restarting"));

  auto second = link_.AwaitStream(1);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->AwaitWritten([](const Messages& w) { return !w.empty(); }));
  const v1::WorkerMessage hello = second->written()[0];
  EXPECT_EQ(hello.hello().worker_id(), "w1");  // kept across reconnects
  EXPECT_THAT(hello.hello().held_lease_ids(), ElementsAre("a"));
  EXPECT_EQ(link_.registrations().size(), 1u);
  EXPECT_TRUE(sleeps().empty());  // a message was read: reconnect at once
}

TEST_F(CoordinatorSessionTest, ResultsWithoutAStreamAreSentFirstAfterTheReconnect) {
  link_.ScriptRegistrations({Registered("w1")});
  StartSession();
  auto first = link_.AwaitStream(0);
  first->Push(LeaseMessage("a"));
  ASSERT_TRUE(first->AwaitWritten(HeartbeatWith({"a"}, 1, false)));
  ASSERT_TRUE(leases_.TakeForSlot().has_value());
  first->Break();
  leases_.Answer("a", v1::EvalResult(), *session_);
  EXPECT_EQ(leases_.undelivered(), 1u);
  first->End(absl::UnavailableError("gone"));

  auto second = link_.AwaitStream(1);
  ASSERT_TRUE(second->AwaitWritten([](const Messages& w) { return w.size() >= 2; }));
  const Messages written = second->written();
  EXPECT_TRUE(written[0].has_hello());
  EXPECT_TRUE(written[0].hello().held_lease_ids().empty());
  ASSERT_TRUE(written[1].has_result());
  EXPECT_EQ(written[1].result().lease_id(), "a");
  EXPECT_EQ(leases_.undelivered(), 0u);
}

TEST_F(CoordinatorSessionTest, BacksOffDoublingUpToTheCap) {
  std::vector<absl::StatusOr<v1::RegisterResponse>> answers;
  answers.push_back(absl::UnavailableError("unreachable"));
  answers.push_back(absl::UnauthenticatedError("bad token"));
  for (int i = 0; i < 5; ++i) answers.push_back(absl::UnavailableError("unreachable"));
  answers.push_back(Registered("w1"));
  link_.ScriptRegistrations(std::move(answers));
  link_.EndNewStreams(absl::UnavailableError("refused"));
  StartSession();
  ASSERT_NE(link_.AwaitStream(1), nullptr);  // the second stream: after one more backoff
  std::vector<double> s = sleeps();
  ASSERT_GE(s.size(), 8u);
  EXPECT_THAT(std::vector<double>(s.begin(), s.begin() + 8),
              ElementsAre(0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10, 10));
}

TEST_F(CoordinatorSessionTest, RegistersAgainWhenTheCoordinatorForgotTheWorker) {
  link_.ScriptRegistrations({Registered("w1"), Registered("w2")});
  StartSession();
  link_.AwaitStream(0)->End(absl::NotFoundError("worker w1 not found"));
  auto second = link_.AwaitStream(1);
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(second->AwaitWritten([](const Messages& w) { return !w.empty(); }));
  EXPECT_EQ(second->written()[0].hello().worker_id(), "w2");
  EXPECT_EQ(link_.registrations().size(), 2u);
  EXPECT_THAT(sleeps(), ElementsAre(0.2));  // nothing was read on the first stream
}

TEST_F(CoordinatorSessionTest, ADrainHandsQueuedLeasesBackAndEndsOnceAnswered) {
  link_.ScriptRegistrations({Registered("w1")});
  StartSession();
  auto stream = link_.AwaitStream(0);
  stream->Push(LeaseMessage("running"));
  stream->Push(LeaseMessage("queued"));
  ASSERT_TRUE(stream->AwaitWritten(HeartbeatWith({"queued", "running"}, 0, false)));
  ASSERT_EQ(leases_.TakeForSlot()->lease.lease_id(), "running");

  stop_ = true;
  ASSERT_TRUE(stream->AwaitWritten(HeartbeatWith({"running"}, 0, true)));
  ASSERT_TRUE(stream->AwaitWritten(Released("queued")));
  stream->Push(LeaseMessage("late"));  // sent before the coordinator saw the drain
  ASSERT_TRUE(stream->AwaitWritten(Released("late")));
  EXPECT_FALSE(stream->cancelled());  // "running" is not answered yet

  leases_.Answer("running", v1::EvalResult(), *session_);
  EXPECT_TRUE(stream->AwaitCancelled());
  runner_.join();
  EXPECT_EQ(link_.streams(), 1u);
}

TEST_F(CoordinatorSessionTest, ADrainGivesUpDeliveringAfterItsTimeout) {
  drain_timeout_s_ = 0.2;
  link_.EndNewStreams(absl::UnavailableError("coordinator down"));
  leases_.KeepInOutbox(v1::WorkerMessage());
  stop_ = true;
  StartSession();
  runner_.join();  // returns although the result was never delivered
  EXPECT_EQ(leases_.undelivered(), 1u);
}

}  // namespace
}  // namespace kforge
