// QueueStore against a real PostgreSQL: the queue's guarantees one by one, without processes
// in between (distributed_test covers the same through the services).
#include "coordinator/queue_store.h"

#include <set>
#include <thread>

#include "coordinator/pg_store.h"
#include "gtest/gtest.h"
#include "migrations/migrator.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr char kTask[] =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    "def get_inputs():\n    return [torch.rand(4)]\ndef get_init_inputs():\n    return []\n";

class QueueStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int next_db = 0;
    auto url = PgTestEnvironment::server().CreateDatabase("queue_" + std::to_string(next_db++));
    ASSERT_TRUE(url.ok()) << url.status();
    auto conn = PgConnection::Connect(*url);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE(ApplyMigrations(**conn, EmbeddedMigrations()).ok());
    pool_ = std::make_unique<PgPool>(*url, 4);
    store_ = std::make_unique<PgStore>(*pool_);
    queue_ = std::make_unique<QueueStore>(*pool_);
    auto task = store_->PutTask("identity", kTask, "{}");
    ASSERT_TRUE(task.ok());
    task_id_ = task->task_id;
    auto w = store_->RegisterWorker("host", "H200", 4, "{}");
    ASSERT_TRUE(w.ok());
    worker_ = *w;
  }

  BatchSpec Batch(int n, const std::string& tag, std::vector<std::string> types = {"H200"}) {
    BatchSpec b;
    b.task_id = task_id_;
    b.gpu_types = std::move(types);
    for (int i = 0; i < n; ++i) {
      b.candidates.push_back({"class ModelNew: pass  # " + tag + std::to_string(i), "kernelbench",
                              tag + std::to_string(i)});
    }
    return b;
  }

  std::string Scalar(const std::string& sql) {
    auto r = pool_->Exec(sql);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && r->rows() ? r->Get(0, 0) : "";
  }

  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgStore> store_;
  std::unique_ptr<QueueStore> queue_;
  std::string task_id_, worker_;
};

TEST_F(QueueStoreTest, LeasesOnlyMatchingTypesAndAny) {
  ASSERT_TRUE(queue_->Enqueue(Batch(2, "a", {"A100"}), 100).ok());
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "b", {"any"}), 100).ok());
  auto leases = queue_->Lease(worker_, "H200", 10, 30);
  ASSERT_TRUE(leases.ok()) << leases.status();
  ASSERT_EQ(leases->size(), 1u);  // only the "any" item
  EXPECT_EQ(leases->front().task_source, kTask);
  EXPECT_EQ(leases->front().attempt, 1);
}

TEST_F(QueueStoreTest, FullQueueIsResourceExhausted) {
  ASSERT_TRUE(queue_->Enqueue(Batch(3, "a"), 4).ok());
  auto second = queue_->Enqueue(Batch(2, "b"), 4);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("limit of 4"), std::string::npos);
  EXPECT_EQ(Scalar("SELECT count(*) FROM batches"), "1");  // nothing half-stored
}

TEST_F(QueueStoreTest, UnknownTaskIsNotFound) {
  BatchSpec b = Batch(1, "a");
  b.task_id = "nope";
  EXPECT_EQ(queue_->Enqueue(b, 100).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(QueueStoreTest, BatchesInterleaveSoALargeOneCannotStarveALaterOne) {
  ASSERT_TRUE(queue_->Enqueue(Batch(50, "big"), 1000).ok());
  auto small = queue_->Enqueue(Batch(2, "small"), 1000);
  ASSERT_TRUE(small.ok());
  auto leases = queue_->Lease(worker_, "H200", 4, 30);
  ASSERT_TRUE(leases.ok());
  int from_small = 0;
  for (const auto& l : *leases) from_small += l.candidate_source.find("small") != std::string::npos;
  EXPECT_EQ(from_small, 2);  // the small batch's items come within the first four leases
}

TEST_F(QueueStoreTest, ResultIsStoredOnceAndLateResultsAreDropped) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "a"), 100).ok());
  auto leases = queue_->Lease(worker_, "H200", 1, 30);
  ASSERT_TRUE(leases.ok() && leases->size() == 1);
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_OK);
  r.set_speedup(1.5);
  auto first = queue_->Complete(leases->front().lease_id, worker_, r);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(*first);
  auto again = queue_->Complete(leases->front().lease_id, worker_, r);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_EQ(Scalar("SELECT verdict || ' ' || speedup || ' ' || ran_on_gpu_type FROM evaluations"),
            "ok 1.5 H200");
  EXPECT_EQ(Scalar("SELECT result->>'verdict' FROM evaluations"), "ok");
}

TEST_F(QueueStoreTest, ConcurrentLeasersNeverShareAnItem) {
  ASSERT_TRUE(queue_->Enqueue(Batch(40, "a"), 100).ok());
  std::vector<std::vector<LeaseGrant>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (true) {
        auto l = queue_->Lease(worker_, "H200", 3, 30);
        if (!l.ok() || l->empty()) return;
        got[t].insert(got[t].end(), l->begin(), l->end());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> ids;
  size_t total = 0;
  for (const auto& g : got) {
    total += g.size();
    for (const auto& l : g) ids.insert(l.evaluation_id);
  }
  EXPECT_EQ(total, 40u);
  EXPECT_EQ(ids.size(), 40u);
}

TEST_F(QueueStoreTest, ExpiredLeasesReturnThenStopAfterMaxAttempts) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "a"), 100).ok());
  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto l = queue_->Lease(worker_, "H200", 1, 0.0);  // deadline now: expires at once
    ASSERT_TRUE(l.ok());
    ASSERT_EQ(l->size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(l->front().attempt, attempt);
    auto stats = queue_->ReclaimExpired();
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->requeued, attempt < 3 ? 1 : 0);
    EXPECT_EQ(stats->abandoned, attempt < 3 ? 0 : 1);
  }
  EXPECT_EQ(Scalar("SELECT state || ' ' || verdict || ' ' || rule FROM evaluations"),
            "done runtime_error worker_lost");
  EXPECT_EQ(Scalar("SELECT count(*) FROM eval_queue"), "0");
  auto l = queue_->Lease(worker_, "H200", 1, 30);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->empty());
}

TEST_F(QueueStoreTest, ReleasedLeaseGoesBackWithoutUsingAnAttempt) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "a"), 100).ok());
  auto l = queue_->Lease(worker_, "H200", 1, 30);
  ASSERT_TRUE(l.ok() && l->size() == 1);
  ASSERT_TRUE(queue_->Release(l->front().lease_id, worker_).ok());
  auto again = queue_->Lease(worker_, "H200", 1, 30);
  ASSERT_TRUE(again.ok() && again->size() == 1);
  EXPECT_EQ(again->front().attempt, 1);
}

}  // namespace
}  // namespace kforge
