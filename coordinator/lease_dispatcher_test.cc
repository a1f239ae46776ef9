// The lease dispatcher against the in-memory queue (fake_work_queue.h) and a recording
// sender: what one worker's stream is offered and what becomes of what it sends. Each test
// drives the dispatcher's two entry points (OfferLeases, Handle) from the test thread.
#include "coordinator/lease_dispatcher.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/fake_work_queue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RecordingSender : public WorkerSender {
 public:
  bool Send(const v1::CoordinatorMessage& message) override {
    if (broken) return false;
    sent.push_back(message);
    return true;
  }
  std::vector<std::string> LeaseIds() const {
    std::vector<std::string> ids;
    for (const auto& m : sent) {
      if (m.has_lease()) ids.push_back(m.lease().lease_id());
    }
    return ids;
  }
  std::vector<v1::CoordinatorMessage> sent;
  bool broken = false;
};

v1::EvalResult CompileError() {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_COMPILE_ERROR);
  r.set_reason("does not build");
  return r;
}

v1::WorkerMessage ResultOf(const std::string& lease_id, const v1::EvalResult& result) {
  v1::WorkerMessage m;
  m.mutable_result()->set_lease_id(lease_id);
  *m.mutable_result()->mutable_result() = result;
  return m;
}

v1::WorkerMessage HeartbeatOf(const std::vector<std::string>& lease_ids, bool draining) {
  v1::WorkerMessage m;
  for (const auto& id : lease_ids) m.mutable_heartbeat()->add_lease_ids(id);
  m.mutable_heartbeat()->set_draining(draining);
  return m;
}

class LeaseDispatcherTest : public ::testing::Test {
 protected:
  // A dispatcher for `worker_id` of GPU type "H200" with room for `capacity` leases.
  std::unique_ptr<LeaseDispatcher> Dispatcher(const std::string& worker_id, int capacity,
                                              RecordingSender& sender, double poll_interval_s = 1) {
    DispatchSettings settings;
    settings.worker_id = worker_id;
    settings.gpu_type = "H200";
    settings.capacity = capacity;
    settings.lease_timeout_s = 15;
    settings.poll_interval_s = poll_interval_s;
    settings.store_retry_delay = absl::Milliseconds(1);
    return std::make_unique<LeaseDispatcher>(
        queue_, notifier_, sender, metrics_, settings, [this] { return credentials_; }, nullptr);
  }

  // Worker "w1" with one slot, which it has already filled with the queue's first lease.
  std::unique_ptr<LeaseDispatcher> LeasedOne(RecordingSender& sender) {
    auto d = Dispatcher("w1", 1, sender);
    d->OfferLeases();
    return d;
  }

  FakeWorkQueue queue_;
  Notifier notifier_;
  prometheus::Registry registry_;
  DispatchMetrics metrics_{registry_};
  absl::Status credentials_;
};

TEST(WorkerCapacityTest, SlotsPlusPrefetchUpToTwoPerSlot) {
  EXPECT_EQ(WorkerCapacity(2, 0), 2);
  EXPECT_EQ(WorkerCapacity(2, 3), 5);
  EXPECT_EQ(WorkerCapacity(2, 100), 6);
}

TEST_F(LeaseDispatcherTest, OffersWorkOfItsTypeUpToItsCapacity) {
  const int64_t other = queue_.Enqueue("A100");
  const int64_t first = queue_.Enqueue("H200");
  const int64_t any = queue_.Enqueue("any");
  const int64_t third = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 2, sender);

  LeaseDispatcher::Offer offer = d->OfferLeases();
  EXPECT_EQ(offer.free, 2);
  EXPECT_EQ(offer.granted, 2);
  ASSERT_EQ(sender.sent.size(), 2u);
  EXPECT_EQ(sender.sent[0].lease().evaluation_id(), std::to_string(first));
  EXPECT_EQ(sender.sent[1].lease().evaluation_id(), std::to_string(any));
  EXPECT_EQ(sender.sent[0].lease().deadline_s(), 15);
  EXPECT_EQ(sender.sent[0].lease().request().dialect(), v1::DIALECT_KERNELBENCH);

  offer = d->OfferLeases();  // full: nothing more until a lease is answered
  EXPECT_EQ(offer.free, 0);
  EXPECT_EQ(sender.sent.size(), 2u);
  EXPECT_THAT(queue_.Queued(), ElementsAre(other, third));
}

TEST_F(LeaseDispatcherTest, LeasesHeldFromAnEarlierStreamFillSlotsUntilAnswered) {
  queue_.Enqueue("H200");
  const int64_t waiting = queue_.Enqueue("H200");
  RecordingSender sender;
  DispatchSettings settings;
  settings.worker_id = "w1";
  settings.gpu_type = "H200";
  settings.capacity = 2;
  settings.held = {"lease-from-before"};
  LeaseDispatcher d(
      queue_, notifier_, sender, metrics_, settings, [] { return absl::OkStatus(); }, nullptr);
  EXPECT_EQ(d.OfferLeases().granted, 1);
  EXPECT_THAT(queue_.Queued(), ElementsAre(waiting));
  v1::WorkerMessage release;
  release.mutable_release()->set_lease_id("lease-from-before");
  EXPECT_TRUE(d.Handle(release));
  EXPECT_EQ(d.OfferLeases().granted, 1);
  EXPECT_THAT(queue_.Queued(), IsEmpty());
}

TEST_F(LeaseDispatcherTest, TaskOptionsBecomeEngineSettings) {
  queue_.Enqueue("H200", R"({"precision":"bf16","correctness_trials":7})");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  ASSERT_EQ(sender.sent.size(), 1u);
  const v1::EvalRequest& req = sender.sent[0].lease().request();
  EXPECT_DOUBLE_EQ(req.atol(), 1e-2);
  EXPECT_DOUBLE_EQ(req.rtol(), 1e-2);
  EXPECT_EQ(req.correctness_trials(), 7u);
}

TEST_F(LeaseDispatcherTest, AResultIsStoredWithTheNextLease) {
  const int64_t first = queue_.Enqueue("H200");
  const int64_t second = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  ASSERT_THAT(sender.LeaseIds(), ElementsAre("lease-1"));

  EXPECT_TRUE(d->Handle(ResultOf("lease-1", CompileError())));
  ASSERT_TRUE(queue_.StoredResult(first).has_value());
  EXPECT_EQ(queue_.StoredResult(first)->reason(), "does not build");
  EXPECT_THAT(sender.LeaseIds(), ElementsAre("lease-1", "lease-2"));
  EXPECT_EQ(queue_.Holder("lease-2"), "w1");
  EXPECT_THAT(queue_.Queued(), IsEmpty());
  EXPECT_EQ(queue_.Attempts(second), 1);
}

TEST_F(LeaseDispatcherTest, CompletingALeaseTheWorkerDoesNotHoldStoresNothing) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender owner_sender, other_sender;
  auto owner = Dispatcher("owner", 1, owner_sender);
  auto other = Dispatcher("other", 1, other_sender);
  owner->OfferLeases();
  ASSERT_THAT(owner_sender.LeaseIds(), ElementsAre("lease-1"));

  EXPECT_TRUE(other->Handle(ResultOf("lease-1", CompileError())));
  EXPECT_FALSE(queue_.StoredResult(id).has_value());
  EXPECT_EQ(queue_.Holder("lease-1"), "owner");

  EXPECT_TRUE(owner->Handle(ResultOf("lease-1", CompileError())));
  EXPECT_TRUE(queue_.StoredResult(id).has_value());
  EXPECT_EQ(queue_.Holder("lease-1"), "");
}

TEST_F(LeaseDispatcherTest, AMalformedResultIsRefusedAndItsLeaseRequeued) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  v1::EvalResult ok_without_speedup;
  ok_without_speedup.set_verdict(v1::VERDICT_OK);

  EXPECT_TRUE(d->Handle(ResultOf("lease-1", ok_without_speedup)));
  ASSERT_EQ(sender.sent.size(), 2u);
  ASSERT_TRUE(sender.sent[1].has_result_refused());
  EXPECT_EQ(sender.sent[1].result_refused().lease_id(), "lease-1");
  EXPECT_THAT(sender.sent[1].result_refused().reason(), HasSubstr("speedup"));
  EXPECT_FALSE(queue_.StoredResult(id).has_value());
  EXPECT_THAT(queue_.Queued(), ElementsAre(id));
  EXPECT_EQ(queue_.Attempts(id), 1);  // counted: garbage uses the attempts up
  EXPECT_EQ(queue_.completion_calls(), 0);
}

TEST_F(LeaseDispatcherTest, ARevokedWorkerIsCutOffAndItsLeasesRequeued) {
  const int64_t a = queue_.Enqueue("H200");
  const int64_t b = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 2, sender);
  d->OfferLeases();
  ASSERT_THAT(queue_.Queued(), IsEmpty());

  EXPECT_TRUE(d->Handle(HeartbeatOf({"lease-1", "lease-2"}, false)));
  EXPECT_FALSE(d->cut_off().has_value());

  credentials_ = absl::UnauthenticatedError("token revoked");
  EXPECT_FALSE(d->Handle(HeartbeatOf({"lease-1", "lease-2"}, false)));
  ASSERT_TRUE(d->cut_off().has_value());
  EXPECT_TRUE(absl::IsUnauthenticated(*d->cut_off()));
  EXPECT_THAT(std::string(d->cut_off()->message()), HasSubstr("token revoked"));
  EXPECT_THAT(queue_.Queued(), ElementsAre(a, b));
  EXPECT_EQ(queue_.Attempts(a), 0);  // not counted: the evaluations did nothing wrong
  d->ReaderEnded();
  EXPECT_TRUE(d->OfferLeases().ended);
}

TEST_F(LeaseDispatcherTest, ARevokedWorkersResultIsNotStoredEvenBeforeItsNextHeartbeat) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  ASSERT_THAT(sender.LeaseIds(), ElementsAre("lease-1"));

  credentials_ = absl::UnauthenticatedError("token revoked");
  v1::EvalResult ok;
  ok.set_verdict(v1::VERDICT_OK);
  ok.set_speedup(1000);
  ok.mutable_reference()->set_median_ms(1000);
  ok.mutable_candidate()->set_median_ms(1);
  EXPECT_FALSE(d->Handle(ResultOf("lease-1", ok)));
  EXPECT_FALSE(queue_.StoredResult(id).has_value());
  EXPECT_EQ(queue_.completion_calls(), 0);
  ASSERT_TRUE(d->cut_off().has_value());
  EXPECT_TRUE(absl::IsUnauthenticated(*d->cut_off()));
  EXPECT_THAT(queue_.Queued(), ElementsAre(id));  // another worker evaluates it
}

// A red team's worker (session 29): its token revoked, it never heartbeats and answers every
// lease with a release, which went back to the queue uncounted and was leased to it again:
// 12,699 leases, other tenants' sources with them, in 15 s.
TEST_F(LeaseDispatcherTest, ARevokedWorkerThatOnlyReleasesIsCutOff) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  credentials_ = absl::UnauthenticatedError("token revoked");
  v1::WorkerMessage release;
  release.mutable_release()->set_lease_id("lease-1");
  EXPECT_FALSE(d->Handle(release));
  ASSERT_TRUE(d->cut_off().has_value());
  EXPECT_TRUE(absl::IsUnauthenticated(*d->cut_off()));
  EXPECT_THAT(queue_.Queued(), ElementsAre(id));
  EXPECT_TRUE(d->OfferLeases().ended);
  EXPECT_THAT(sender.LeaseIds(), ElementsAre("lease-1"));  // nothing more was sent
}

TEST_F(LeaseDispatcherTest, ARevokedWorkerThatSaysNothingIsOfferedNothing) {
  queue_.Enqueue("H200");
  const int64_t later = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 2, sender, /*poll_interval_s=*/0);
  credentials_ = absl::UnauthenticatedError("token expired");
  LeaseDispatcher::Offer offer = d->OfferLeases();
  EXPECT_TRUE(offer.ended);
  EXPECT_EQ(offer.granted, 0);
  EXPECT_THAT(sender.sent, IsEmpty());
  ASSERT_TRUE(d->cut_off().has_value());
  EXPECT_THAT(std::string(d->cut_off()->message()), HasSubstr("token expired"));
  EXPECT_EQ(queue_.Attempts(later), 0);
  d->RunLeasing([] { return false; });  // returns at once: the worker was cut off
  EXPECT_THAT(sender.sent, IsEmpty());
}

// A queue that runs `during` inside Lease, after the leases were taken and before they are
// sent: the reader thread's work racing the handler's.
class RacingQueue : public FakeWorkQueue {
 public:
  absl::StatusOr<Leased> Lease(const LeaseRequest& request) override {
    absl::StatusOr<Leased> leased = FakeWorkQueue::Lease(request);
    if (during) std::exchange(during, nullptr)();
    return leased;
  }
  std::function<void()> during;
};

// The review of session 29: a token revoked while a lease was being taken (the reader's next
// message cuts the worker off) must not let that lease, and its sources, reach the worker.
TEST(LeaseDispatcherRaceTest, LeasesTakenWhileTheWorkerIsCutOffAreNotSent) {
  RacingQueue queue;
  Notifier notifier;
  prometheus::Registry registry;
  DispatchMetrics metrics(registry);
  RecordingSender sender;
  absl::Status credentials;
  DispatchSettings settings;
  settings.worker_id = "w1";
  settings.gpu_type = "H200";
  settings.capacity = 2;
  LeaseDispatcher d(
      queue, notifier, sender, metrics, settings, [&] { return credentials; }, nullptr);
  const int64_t a = queue.Enqueue("H200");
  const int64_t b = queue.Enqueue("H200");
  queue.during = [&] {
    credentials = absl::UnauthenticatedError("token revoked");
    EXPECT_FALSE(d.Handle(HeartbeatOf({}, false)));
  };
  d.OfferLeases();
  EXPECT_THAT(sender.LeaseIds(), IsEmpty());
  EXPECT_THAT(queue.Queued(), ElementsAre(a, b));
  EXPECT_EQ(queue.Attempts(a), 0);
  ASSERT_TRUE(d.cut_off().has_value());
  EXPECT_TRUE(d.OfferLeases().ended);
}

TEST_F(LeaseDispatcherTest, CredentialsAreAskedAtMostOncePerPollIntervalBeforeLeasing) {
  queue_.Enqueue("H200");
  queue_.Enqueue("H200");
  RecordingSender sender;
  int asked = 0;
  DispatchSettings settings;
  settings.worker_id = "w1";
  settings.gpu_type = "H200";
  settings.capacity = 1;
  settings.poll_interval_s = 3600;
  LeaseDispatcher d(
      queue_, notifier_, sender, metrics_, settings,
      [&] {
        ++asked;
        return absl::OkStatus();
      },
      nullptr);
  d.OfferLeases();
  EXPECT_TRUE(d.Handle(ResultOf("lease-1", CompileError())));  // asked for the result
  d.OfferLeases();
  d.OfferLeases();
  EXPECT_EQ(asked, 2);
}

TEST_F(LeaseDispatcherTest, OtherCredentialErrorsDoNotCutOff) {
  queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  credentials_ = absl::UnavailableError("token store unreachable");
  EXPECT_TRUE(d->Handle(HeartbeatOf({"lease-1"}, false)));
  EXPECT_FALSE(d->cut_off().has_value());
  EXPECT_EQ(queue_.Holder("lease-1"), "w1");
}

TEST_F(LeaseDispatcherTest, ADrainingWorkerGetsNoNewLeaseAndLeavesOnceAnswered) {
  queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 2, sender);
  d->OfferLeases();
  ASSERT_THAT(sender.LeaseIds(), ElementsAre("lease-1"));

  EXPECT_TRUE(d->Handle(HeartbeatOf({"lease-1"}, true)));
  queue_.Enqueue("H200");
  EXPECT_EQ(d->OfferLeases().free, 0);
  EXPECT_FALSE(d->Drained());  // lease-1 is still running

  EXPECT_TRUE(d->Handle(ResultOf("lease-1", CompileError())));
  EXPECT_THAT(sender.LeaseIds(), ElementsAre("lease-1"));  // no next lease with the result
  EXPECT_TRUE(d->Drained());
  d->ReaderEnded();
  d->Finish();
  EXPECT_EQ(queue_.WorkerState("w1"), "gone");
}

TEST_F(LeaseDispatcherTest, AReleasedLeaseGoesBackWithoutUsingAnAttempt) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  EXPECT_TRUE(d->Handle(HeartbeatOf({}, true)));
  v1::WorkerMessage release;
  release.mutable_release()->set_lease_id("lease-1");
  EXPECT_TRUE(d->Handle(release));
  EXPECT_THAT(queue_.Queued(), ElementsAre(id));
  EXPECT_EQ(queue_.Attempts(id), 0);
  EXPECT_TRUE(d->Drained());
}

TEST_F(LeaseDispatcherTest, AnOperatorDrainedWorkerIsOfferedNothing) {
  const int64_t id = queue_.Enqueue("H200");
  queue_.SetDrained("w1", true);
  RecordingSender sender;
  auto d = Dispatcher("w1", 1, sender);
  LeaseDispatcher::Offer offer = d->OfferLeases();
  EXPECT_EQ(offer.free, 1);
  EXPECT_EQ(offer.granted, 0);
  EXPECT_THAT(sender.sent, IsEmpty());

  queue_.SetDrained("w1", false);
  EXPECT_EQ(d->OfferLeases().granted, 1);
  EXPECT_THAT(queue_.Queued(), IsEmpty());
  EXPECT_EQ(queue_.Attempts(id), 1);
}

TEST_F(LeaseDispatcherTest, HeartbeatsExtendTheWorkersLeasesOnly) {
  const int64_t a = queue_.Enqueue("H200");
  const int64_t b = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 2, sender);
  d->OfferLeases();

  EXPECT_EQ(queue_.AdvanceAndReclaim(10), 0);
  EXPECT_TRUE(d->Handle(HeartbeatOf({"lease-1"}, false)));  // lease-2 not listed
  EXPECT_EQ(queue_.AdvanceAndReclaim(10), 1);               // 20 s: lease-2 expired
  EXPECT_EQ(queue_.Holder("lease-1"), "w1");
  EXPECT_THAT(queue_.Queued(), ElementsAre(b));

  RecordingSender other_sender;
  auto other = Dispatcher("other", 1, other_sender);
  EXPECT_TRUE(other->Handle(HeartbeatOf({"lease-1"}, false)));  // not its lease
  EXPECT_EQ(queue_.AdvanceAndReclaim(10), 1);                   // 30 s, 20 s after w1's heartbeat
  EXPECT_THAT(queue_.Queued(), ElementsAre(a, b));
}

TEST_F(LeaseDispatcherTest, LeasesTheWorkerCannotReceiveGoBack) {
  const int64_t a = queue_.Enqueue("H200");
  const int64_t b = queue_.Enqueue("H200");
  RecordingSender sender;
  sender.broken = true;
  auto d = Dispatcher("w1", 2, sender);
  d->OfferLeases();
  EXPECT_THAT(queue_.Queued(), ElementsAre(a, b));
  EXPECT_EQ(queue_.Attempts(a), 0);
  EXPECT_EQ(d->OfferLeases().free, 2);  // not outstanding
}

TEST_F(LeaseDispatcherTest, AResultIsRetriedWhileTheQueueIsUnavailable) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  queue_.FailCompletions(absl::UnavailableError("database restarting"), 3);
  EXPECT_TRUE(d->Handle(ResultOf("lease-1", CompileError())));
  EXPECT_EQ(queue_.completion_calls(), 4);
  EXPECT_TRUE(queue_.StoredResult(id).has_value());
}

TEST_F(LeaseDispatcherTest, AnUnknownStoreErrorLeavesTheLeaseToExpire) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  queue_.FailCompletions(absl::InternalError("disk full"), 1);
  EXPECT_TRUE(d->Handle(ResultOf("lease-1", CompileError())));
  EXPECT_EQ(queue_.completion_calls(), 1);
  EXPECT_FALSE(queue_.StoredResult(id).has_value());
  EXPECT_EQ(queue_.Holder("lease-1"), "w1");
}

// Red team, session 29: the database refusing a result's data (INVALID_ARGUMENT: a data
// exception or a constraint) will refuse it again; the lease used to stay, untold to the
// worker, and the evaluation came back after every expiry. The result is refused like a
// malformed one, and the evaluation ends once its attempts are used up.
TEST_F(LeaseDispatcherTest, AResultTheDatabaseRefusesAsDataIsRefusedAndEndsAfterTheLastAttempt) {
  const int64_t id = queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = LeasedOne(sender);
  queue_.FailCompletions(absl::InvalidArgumentError("unsupported Unicode escape sequence"), 3);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string lease = "lease-" + std::to_string(attempt);
    EXPECT_TRUE(d->Handle(ResultOf(lease, CompileError())));
    ASSERT_TRUE(sender.sent.back().has_result_refused()) << attempt;
    EXPECT_EQ(sender.sent.back().result_refused().reason(),
              "the database refused to store it as data (the coordinator's log says why)");
    EXPECT_EQ(queue_.Holder(lease), "");
    if (attempt < 3) {
      EXPECT_THAT(queue_.Queued(), ElementsAre(id));
      ASSERT_TRUE(d->OfferLeases().granted == 1) << attempt;
    }
  }
  EXPECT_THAT(queue_.Queued(), IsEmpty());
  ASSERT_TRUE(queue_.StoredResult(id).has_value());
  EXPECT_EQ(queue_.StoredResult(id)->rule(), "result_refused");
}

TEST_F(LeaseDispatcherTest, RunLeasingReturnsOnceTheReaderEnded) {
  queue_.Enqueue("H200");
  RecordingSender sender;
  auto d = Dispatcher("w1", 1, sender);
  d->ReaderEnded();
  d->RunLeasing([] { return false; });
  EXPECT_THAT(sender.sent, IsEmpty());
}

}  // namespace
}  // namespace kforge
