// QueueStore against a real PostgreSQL: the queue's guarantees one by one, without processes
// in between (distributed_test covers the same through the services).
#include "coordinator/queue_store.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "common/base/sha256.h"
#include "coordinator/job_store.h"
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
    auto w = store_->RegisterWorker("host", "H200", 4, "{}", "");
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

  // Leases up to `n` for the test's H200 worker (or a worker of `type`).
  std::vector<LeaseGrant> Take(int n, double timeout_s = 30, const std::string& type = "H200") {
    auto leased = queue_->Lease({worker_, type, n, timeout_s});
    EXPECT_TRUE(leased.ok()) << leased.status();
    return leased.ok() ? leased->grants : std::vector<LeaseGrant>{};
  }

  std::vector<std::string> Refs(const std::vector<LeaseGrant>& grants) {
    std::vector<std::string> refs;
    for (const LeaseGrant& g : grants) {
      refs.push_back(Scalar("SELECT client_ref FROM evaluations WHERE evaluation_id = " +
                            std::to_string(g.evaluation_id)));
    }
    return refs;
  }

  absl::StatusOr<Completion> Finish(const LeaseGrant& lease, int next = 0) {
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_OK);
    r.set_speedup(1.5);
    return queue_->CompleteAndLease(lease.lease_id, r, {worker_, "H200", next, 30});
  }

  BatchSpec TenantBatch(int n, const std::string& tag, const std::string& tenant) {
    BatchSpec b = Batch(n, tag);
    b.tenant = tenant;
    b.owner = tenant + "-researcher";
    return b;
  }

  // The tenant and the batch of each grant's evaluation.
  std::string TenantOf(const LeaseGrant& g) {
    return Scalar("SELECT coalesce(tenant, '') FROM evaluations WHERE evaluation_id = " +
                  std::to_string(g.evaluation_id));
  }
  std::string BatchOf(const LeaseGrant& g) {
    return Scalar("SELECT batch_id FROM evaluations WHERE evaluation_id = " +
                  std::to_string(g.evaluation_id));
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
  auto leases = Take(10);
  ASSERT_EQ(leases.size(), 1u);  // only the "any" item
  EXPECT_EQ(leases.front().task_source, kTask);
  EXPECT_EQ(leases.front().attempt, 1);
  EXPECT_EQ(Take(10, 30, "A100").size(), 2u);
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
  int from_small = 0;
  for (const auto& l : Take(4)) from_small += l.candidate_source.find("small") != std::string::npos;
  EXPECT_EQ(from_small, 2);  // the small batch's items come within the first four leases
}

TEST_F(QueueStoreTest, ResultIsStoredOnceAndLateResultsAreDropped) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "a"), 100).ok());
  auto leases = Take(1);
  ASSERT_EQ(leases.size(), 1u);
  auto first = Finish(leases.front());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->stored);
  EXPECT_EQ(first->batch_id, Scalar("SELECT batch_id FROM evaluations"));
  auto again = Finish(leases.front());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->stored);
  EXPECT_EQ(again->batch_id, "");
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
        auto l = queue_->Lease({worker_, "H200", 3, 30});
        if (!l.ok() || l->grants.empty()) return;
        got[t].insert(got[t].end(), l->grants.begin(), l->grants.end());
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
    auto l = Take(1, 0.0);  // deadline now: expires at once
    ASSERT_EQ(l.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(l.front().attempt, attempt);
    auto stats = queue_->ReclaimExpired();
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->requeued, attempt < 3 ? 1 : 0);
    EXPECT_EQ(stats->abandoned, attempt < 3 ? 0 : 1);
  }
  EXPECT_EQ(Scalar("SELECT state || ' ' || verdict || ' ' || rule FROM evaluations"),
            "done runtime_error worker_lost");
  EXPECT_EQ(Scalar("SELECT count(*) FROM eval_queue"), "0");
  EXPECT_TRUE(Take(1).empty());
}

TEST_F(QueueStoreTest, ReleasedLeaseGoesBackWithoutUsingAnAttempt) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "a"), 100).ok());
  auto l = Take(1);
  ASSERT_EQ(l.size(), 1u);
  auto type = queue_->Release(l.front().lease_id, worker_);
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(*type, "H200");
  auto again = Take(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again.front().attempt, 1);
  auto twice = queue_->Release(l.front().lease_id, worker_);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(*twice, "");  // that lease is gone
}

TEST_F(QueueStoreTest, EnqueueMakesOneEvaluationPerCandidateAndTypeInBatchOrder) {
  BatchSpec b = Batch(3, "a", {"H200", "A100"});
  b.candidates.push_back(b.candidates.front());  // given twice, evaluated once
  auto batch = queue_->Enqueue(b, 100);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->evaluations, 6);
  EXPECT_EQ(batch->queued_per_type, (std::map<std::string, int64_t>{{"A100", 3}, {"H200", 3}}));
  EXPECT_EQ(Scalar("SELECT string_agg(client_ref || ':' || gpu_type || ':' || batch_seq, ' ' "
                   "ORDER BY evaluation_id) FROM evaluations"),
            "a0:H200:0 a0:A100:1 a1:H200:2 a1:A100:3 a2:H200:4 a2:A100:5");
  EXPECT_EQ(Scalar("SELECT count(*) FROM candidates"), "3");
}

TEST_F(QueueStoreTest, RequeuedEvaluationsKeepTheirFairPosition) {
  // Batch a's third item is handed back (release) and its second expires (reclaim) after
  // batch b arrived: they go back behind b's items of a lower position, not to the head.
  ASSERT_TRUE(queue_->Enqueue(Batch(3, "a"), 100).ok());
  auto held = Take(3);
  ASSERT_EQ(Refs(held), (std::vector<std::string>{"a0", "a1", "a2"}));
  ASSERT_TRUE(queue_->Enqueue(Batch(3, "b"), 100).ok());
  auto released = queue_->Release(held[2].lease_id, worker_);
  ASSERT_TRUE(released.ok() && *released == "H200");
  ASSERT_TRUE(pool_
                  ->Exec("UPDATE leases SET deadline = now() - interval '1 s' WHERE lease_id = $1",
                         {held[1].lease_id})
                  .ok());
  auto reclaimed = queue_->ReclaimExpired();
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status();
  EXPECT_EQ(reclaimed->requeued_per_type, (std::map<std::string, int64_t>{{"H200", 1}}));
  EXPECT_EQ(Refs(Take(5)), (std::vector<std::string>{"b0", "a1", "b1", "a2", "b2"}));
}

TEST_F(QueueStoreTest, CompleteAndLeaseStoresTheResultAndLeasesTheNextInOneStatement) {
  ASSERT_TRUE(queue_->Enqueue(Batch(3, "a"), 100).ok());
  auto first = Take(1);
  ASSERT_EQ(first.size(), 1u);
  auto done = Finish(first.front(), 5);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->stored);
  EXPECT_EQ(Refs(done->next.grants), (std::vector<std::string>{"a1", "a2"}));
  EXPECT_EQ(done->next.grants.front().attempt, 1);
  EXPECT_EQ(Scalar("SELECT count(*) FROM leases"), "2");
  EXPECT_EQ(Scalar("SELECT count(*) FROM eval_queue"), "0");
  // A stale result still frees the worker's slot for new work.
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "b"), 100).ok());
  auto stale = Finish(first.front(), 1);
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->stored);
  EXPECT_EQ(Refs(stale->next.grants), (std::vector<std::string>{"b0"}));
}

TEST_F(QueueStoreTest, LeaseTakesTheBestOfBothLanesAndReportsWhatItPassedOver) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "any", {"any"}), 100).ok());
  ASSERT_TRUE(queue_->Enqueue(Batch(2, "own"), 100).ok());
  auto leased = queue_->Lease({worker_, "H200", 1, 30});
  ASSERT_TRUE(leased.ok()) << leased.status();
  EXPECT_EQ(Refs(leased->grants), (std::vector<std::string>{"any0"}));  // queued first
  EXPECT_EQ(leased->passed_over, (std::map<std::string, int64_t>{{"H200", 1}}));
  leased = queue_->Lease({worker_, "H200", 5, 30});
  ASSERT_TRUE(leased.ok());
  EXPECT_EQ(Refs(leased->grants), (std::vector<std::string>{"own0", "own1"}));
  EXPECT_TRUE(leased->passed_over.empty());
}

TEST_F(QueueStoreTest, ResultCursorReturnsEachResultOnceWhenCommitsOvertakeEachOther) {
  auto batch = queue_->Enqueue(Batch(3, "a"), 100);
  ASSERT_TRUE(batch.ok());
  auto held = Take(3);
  ASSERT_EQ(held.size(), 3u);
  ResultCursor cursor;
  auto none = queue_->FinishedSince(batch->batch_id, cursor);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  // The first result's transaction starts first and commits last.
  auto slow = PgConnection::Connect(pool_->url());
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE((*slow)->Exec("BEGIN").ok());
  ASSERT_TRUE((*slow)
                  ->Exec("UPDATE evaluations SET state = 'done', done_xid = pg_current_xact_id() "
                         "WHERE evaluation_id = $1",
                         {std::to_string(held[0].evaluation_id)})
                  .ok());
  ASSERT_TRUE(Finish(held[1]).ok());
  auto ids = [&]() {
    std::vector<int64_t> out;
    auto rows = queue_->FinishedSince(batch->batch_id, cursor);
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (rows.ok()) {
      for (const StoredEvaluation& e : *rows) out.push_back(e.evaluation_id);
    }
    return out;
  };
  EXPECT_EQ(ids(), (std::vector<int64_t>{held[1].evaluation_id}));
  ASSERT_TRUE((*slow)->Exec("COMMIT").ok());
  ASSERT_TRUE(Finish(held[2]).ok());
  EXPECT_EQ(ids(), (std::vector<int64_t>{held[0].evaluation_id, held[2].evaluation_id}));
  EXPECT_TRUE(ids().empty());
  EXPECT_EQ(cursor.delivered, 3);
  // A new cursor (a client re-attaching) starts over.
  ResultCursor fresh;
  auto all = queue_->FinishedSince(batch->batch_id, fresh);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
}

TEST_F(QueueStoreTest, JobCursorReadsEachResultOfEveryBatchOfTheJobOnce) {
  std::string job_id = Scalar("INSERT INTO jobs (task_id, gpu_types, strategy) VALUES ('" +
                              task_id_ + "', '{H200}', 'contrastive') RETURNING job_id");
  ASSERT_FALSE(job_id.empty());
  BatchSpec first = Batch(2, "a"), second = Batch(1, "b"), other = Batch(1, "c");
  first.job_id = second.job_id = job_id;
  ASSERT_TRUE(queue_->Enqueue(first, 100).ok());
  ASSERT_TRUE(queue_->Enqueue(other, 100).ok());  // not the job's
  std::vector<LeaseGrant> held = Take(3);
  ASSERT_EQ(held.size(), 3u);
  for (const LeaseGrant& g : held) ASSERT_TRUE(Finish(g).ok());
  ResultCursor cursor;
  auto read = queue_->JobFinishedSince(job_id, cursor);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 2u);
  read = queue_->JobFinishedSince(job_id, cursor);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->empty()) << "a result read twice";
  ASSERT_TRUE(queue_->Enqueue(second, 100).ok());  // the job's next round
  held = Take(1);
  ASSERT_EQ(held.size(), 1u);
  ASSERT_TRUE(Finish(held[0]).ok());
  read = queue_->JobFinishedSince(job_id, cursor);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ(read->front().evaluation_id, held[0].evaluation_id);
  EXPECT_EQ(cursor.delivered, 3);
}

// Fair share between tenants: tenant A has ten batches, tenant B one, all of five items.
// Fairness between batches alone would give B one lease in eleven; between tenants B gets
// every other lease while it has work, and A's leases still interleave A's batches.
TEST_F(QueueStoreTest, TenantsShareAOneSlotWorkerWhateverTheirNumberOfBatches) {
  std::set<std::string> a_batches;
  for (int i = 0; i < 10; ++i) {
    auto b = queue_->Enqueue(TenantBatch(5, "a" + std::to_string(i) + "_", "A"), 1000);
    ASSERT_TRUE(b.ok()) << b.status();
    a_batches.insert(b->batch_id);
  }
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(5, "b", "B"), 1000).ok());
  // One slot: lease one, complete it and lease the next in the same statement.
  std::vector<LeaseGrant> order = Take(1);
  ASSERT_EQ(order.size(), 1u);
  while (true) {
    auto done = Finish(order.back(), 1);
    ASSERT_TRUE(done.ok()) << done.status();
    if (done->next.grants.empty()) break;
    order.push_back(done->next.grants.front());
  }
  ASSERT_EQ(order.size(), 55u);
  std::string tenants;
  for (const LeaseGrant& g : order) tenants += TenantOf(g);
  EXPECT_EQ(tenants.substr(0, 10), "ABABABABAB");
  EXPECT_EQ(tenants.substr(10), std::string(45, 'A'));
  // Within A, by today's batch fairness: the first item of each of A's ten batches before
  // any batch's second.
  std::vector<std::string> a_order;
  for (const LeaseGrant& g : order) {
    if (TenantOf(g) == "A") a_order.push_back(BatchOf(g));
  }
  EXPECT_EQ(std::set<std::string>(a_order.begin(), a_order.begin() + 10), a_batches);
  EXPECT_EQ(std::set<std::string>(a_order.begin() + 10, a_order.begin() + 20), a_batches);
}

TEST_F(QueueStoreTest, LeasesGoToTheTenantWithTheLeastInFlight) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(queue_->Enqueue(TenantBatch(5, "a" + std::to_string(i) + "_", "A"), 1000).ok());
  }
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(10, "b", "B"), 1000).ok());
  auto sorted_tenants = [&](const std::vector<LeaseGrant>& grants) {
    std::string out;
    for (const LeaseGrant& g : grants) out += TenantOf(g);
    std::sort(out.begin(), out.end());
    return out;
  };
  // Four slots at once, nothing in flight: two each.
  EXPECT_EQ(sorted_tenants(Take(4)), "AABB");
  // Another worker of this type holds three more of A's: B is three behind and gets the next
  // three leases, then A and B are even (5 : 5) and the longer waiting A gets the fourth.
  auto other = store_->RegisterWorker("host2", "H200", 4, "{}", "");
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(pool_
                  ->Exec("WITH q AS (DELETE FROM eval_queue WHERE evaluation_id IN "
                         "  (SELECT evaluation_id FROM eval_queue WHERE tenant = 'A' LIMIT 3) "
                         "  RETURNING evaluation_id) "
                         "INSERT INTO leases (evaluation_id, worker_id, attempt, deadline, tenant) "
                         "SELECT evaluation_id, $1::uuid, 1, now() + interval '1 h', 'A' FROM q",
                         {*other})
                  .ok());
  EXPECT_EQ(sorted_tenants(Take(4)), "ABBB");
  // Leases held by workers of another GPU type do not count here: with A's moved to an A100
  // worker, A has none in flight on H200 against B's five.
  auto a100 = store_->RegisterWorker("host3", "A100", 8, "{}", "");
  ASSERT_TRUE(a100.ok());
  ASSERT_TRUE(
      pool_->Exec("UPDATE leases SET worker_id = $1::uuid WHERE tenant = 'A'", {*a100}).ok());
  EXPECT_EQ(sorted_tenants(Take(5)), "AAAAA");
}

TEST_F(QueueStoreTest, PublicSpaceIsATenantOfItsOwnAndPriorityOrdersOnlyWithinATenant) {
  BatchSpec urgent = TenantBatch(3, "urgent", "A");
  urgent.priority = 9;
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(3, "a", "A"), 100).ok());
  ASSERT_TRUE(queue_->Enqueue(urgent, 100).ok());
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(3, "pub", "public"), 100).ok());
  EXPECT_EQ(Refs(Take(2)), (std::vector<std::string>{"urgent0", "pub0"}));
  EXPECT_EQ(Refs(Take(2)), (std::vector<std::string>{"urgent1", "pub1"}));
}

TEST_F(QueueStoreTest, RequeuedEvaluationsStayTheirTenants) {
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(3, "a", "A"), 100).ok());
  auto held = Take(3);
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(Scalar("SELECT string_agg(DISTINCT tenant, ',') FROM leases"), "A");
  ASSERT_TRUE(queue_->Release(held[0].lease_id, worker_).ok());
  ASSERT_TRUE(pool_
                  ->Exec("UPDATE leases SET deadline = now() - interval '1 s' WHERE lease_id = $1",
                         {held[1].lease_id})
                  .ok());
  ASSERT_TRUE(queue_->ReclaimExpired().ok());
  ASSERT_TRUE(queue_->ReleaseWorkerLeases(worker_).ok());
  EXPECT_EQ(Scalar("SELECT count(*) || ' ' || string_agg(DISTINCT tenant, ',') FROM eval_queue"),
            "3 A");
  // The tenant's quota counts them again.
  auto over = queue_->Enqueue(TenantBatch(1, "more", "A"), 100, 3);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(queue_->Enqueue(TenantBatch(1, "b", "B"), 100, 3).ok());
}

// Two coordinators leasing concurrently: the share is of slots, not of leases (a leaser that
// holds B's lease longer makes the other lease A's meanwhile), so this checks what
// concurrency could break: every item leased once, none lost.
TEST_F(QueueStoreTest, TwoLeasersOfTwoTenantsNeverShareAnItem) {
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(queue_->Enqueue(TenantBatch(10, "a" + std::to_string(i) + "_", "A"), 1000).ok());
  }
  ASSERT_TRUE(queue_->Enqueue(TenantBatch(20, "b", "B"), 1000).ok());
  // Each leaser on its own pool, completing as it goes.
  PgPool second(pool_->url(), 2);
  QueueStore other(second);
  std::vector<std::vector<std::string>> tenants(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      QueueStore& q = t == 0 ? *queue_ : other;
      v1::EvalResult r;
      r.set_verdict(v1::VERDICT_OK);
      r.set_speedup(1.5);
      auto leased = q.Lease({worker_, "H200", 1, 30});
      std::vector<LeaseGrant> mine = leased.ok() ? leased->grants : std::vector<LeaseGrant>{};
      while (!mine.empty()) {
        tenants[t].push_back(std::to_string(mine.front().evaluation_id));
        auto done = q.CompleteAndLease(mine.front().lease_id, r, {worker_, "H200", 1, 30});
        if (!done.ok()) return;
        mine = done->next.grants;
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> ids;
  for (const auto& v : tenants) ids.insert(v.begin(), v.end());
  EXPECT_EQ(tenants[0].size() + tenants[1].size(), 60u);
  EXPECT_EQ(ids.size(), 60u);
  EXPECT_EQ(Scalar("SELECT count(*) FROM evaluations WHERE state = 'done'"), "60");
  EXPECT_EQ(Scalar("SELECT count(*) FROM leases"), "0");
  // Both tenants were served by both leasers' statements: each tenant's share row exists.
  EXPECT_EQ(Scalar("SELECT string_agg(tenant, ',' ORDER BY tenant) FROM tenant_shares"), "A,B");
}

// Red team, session 29: candidates are shared by source, and the lease read the dialect of
// whoever submitted the source first, so tenant A decided how tenant B's copy was judged.
TEST_F(QueueStoreTest, EachTenantsCopyOfOneSourceIsLeasedWithTheDialectThatTenantGave) {
  const std::string source = "// one source, two readings\n";
  for (const auto& [tenant, dialect] :
       {std::pair<std::string, std::string>{"A", "cpp"}, {"B", "kernelbench"}}) {
    BatchSpec b = TenantBatch(0, "x", tenant);
    b.candidates.push_back({source, dialect, tenant});
    ASSERT_TRUE(queue_->Enqueue(b, 100).ok());
  }
  std::map<std::string, std::string> leased;  // client_ref (the tenant) -> dialect
  auto grants = Take(2);
  ASSERT_EQ(grants.size(), 2u);
  std::vector<std::string> refs = Refs(grants);
  for (size_t i = 0; i < grants.size(); ++i) leased[refs[i]] = grants[i].dialect;
  EXPECT_EQ(leased, (std::map<std::string, std::string>{{"A", "cpp"}, {"B", "kernelbench"}}));
  // A refused or expired lease comes back with the same dialect.
  ASSERT_TRUE(queue_->Release(grants[1].lease_id, worker_).ok());
  auto again = Take(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].dialect, grants[1].dialect);
  EXPECT_EQ(Scalar("SELECT count(*) FROM candidates"), "1");
}

// Evaluations stored before migration 0011 have no dialect of their own: they keep being
// judged under the candidate's, as they were.
TEST_F(QueueStoreTest, AnEvaluationFromBeforeMigration11IsLeasedWithItsCandidatesDialect) {
  ASSERT_TRUE(queue_->Enqueue(Batch(1, "old"), 100).ok());
  Scalar("UPDATE evaluations SET dialect = NULL RETURNING 1");
  Scalar("UPDATE candidates SET dialect = 'nvrtc' RETURNING 1");
  auto grants = Take(1);
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].dialect, "nvrtc");
}

// The same for a job's members: a job's candidate is read back (and evaluated) with the
// dialect its job gave it, not the one of another tenant that submitted the source first.
TEST_F(QueueStoreTest, AJobsMemberKeepsItsJobsDialectWhenAnotherTenantSubmittedTheSourceFirst) {
  const std::string source = "// generated by two jobs\n";
  BatchSpec first = TenantBatch(0, "x", "A");
  first.candidates.push_back({source, "cpp", "A"});
  ASSERT_TRUE(queue_->Enqueue(first, 100).ok());
  JobStore jobs(*pool_);
  auto job = jobs.CreateJob(task_id_, {"H200"}, "contrastive", nlohmann::json::object(),
                            {{"class ModelNew: pass  # seed\n", "kernelbench"}}, "b", "B");
  ASSERT_TRUE(job.ok()) << job.status();
  search::Member m;
  m.candidate_id = Sha256Hex(source);
  m.source = source;
  m.dialect = "nvrtc";
  m.round = 1;
  ASSERT_TRUE(jobs.AddMember(*job, m, "prompt", "completion", 0).ok());
  auto population = jobs.LoadPopulation(*job);
  ASSERT_TRUE(population.ok()) << population.status();
  std::map<std::string, std::string> dialects;
  for (const search::Member& p : *population) dialects[p.source] = p.dialect;
  EXPECT_EQ(dialects[source], "nvrtc");
  EXPECT_EQ(dialects["class ModelNew: pass  # seed\n"], "kernelbench");
}

}  // namespace
}  // namespace kforge
