#include "coordinator/bench/dispatch_recorder.h"

#include "gtest/gtest.h"

namespace kforge {
namespace {

using std::chrono::milliseconds;

TEST(DispatchRecorderTest, TurnaroundCountsOnlyWhileCommittedWorkWaits) {
  DispatchRecorder rec;
  BenchClock::time_point t0 = BenchClock::now();
  rec.StartPhase(t0);
  rec.BatchSubmitted(0, 2, t0);
  // The first lease beats the batch id to the client: one evaluation is left waiting.
  rec.LeaseArrived(0, std::nullopt, t0 + milliseconds(5));
  rec.BatchEnqueued(0, t0 + milliseconds(6));
  DispatchRecorder::SentResult first = rec.ResultSent(1, t0 + milliseconds(10));
  EXPECT_TRUE(first.work_queued);
  rec.LeaseArrived(0, first, t0 + milliseconds(13));
  // Nothing committed is waiting any more: the next turnaround is idle.
  DispatchRecorder::SentResult second = rec.ResultSent(2, t0 + milliseconds(20));
  EXPECT_FALSE(second.work_queued);
  rec.BatchSubmitted(1, 1, t0 + milliseconds(30));
  rec.BatchEnqueued(1, t0 + milliseconds(40));
  rec.LeaseArrived(1, second, t0 + milliseconds(41));

  DispatchReport r = rec.Report();
  EXPECT_EQ(r.leases, 3);
  EXPECT_EQ(r.turnaround.n, 1);
  EXPECT_DOUBLE_EQ(r.turnaround.max_ms, 3);
  EXPECT_EQ(r.idle_turnaround.n, 1);
  EXPECT_DOUBLE_EQ(r.idle_turnaround.max_ms, 21);
  EXPECT_EQ(r.enqueue.n, 2);
  EXPECT_DOUBLE_EQ(r.enqueue.max_ms, 10);
  EXPECT_EQ(r.queue_wait.n, 3);
  EXPECT_DOUBLE_EQ(r.queue_wait.max_ms, 13);
}

TEST(DispatchRecorderTest, TurnaroundIsIdleWhenWorkRanOutMeanwhile) {
  DispatchRecorder rec;
  BenchClock::time_point t0 = BenchClock::now();
  rec.StartPhase(t0);
  rec.BatchSubmitted(0, 1, t0);
  rec.BatchEnqueued(0, t0);
  // Work waits as the result goes out, but another worker takes the last evaluation.
  DispatchRecorder::SentResult sent = rec.ResultSent(1, t0 + milliseconds(1));
  EXPECT_TRUE(sent.work_queued);
  rec.LeaseArrived(0, std::nullopt, t0 + milliseconds(2));
  rec.BatchSubmitted(1, 1, t0 + milliseconds(3));
  rec.BatchEnqueued(1, t0 + milliseconds(50));
  rec.LeaseArrived(1, sent, t0 + milliseconds(51));

  DispatchReport r = rec.Report();
  EXPECT_EQ(r.turnaround.n, 0);
  EXPECT_EQ(r.idle_turnaround.n, 1);
  EXPECT_DOUBLE_EQ(r.idle_turnaround.max_ms, 50);
}

TEST(DispatchRecorderTest, RecordsAreCountedOnceAndTimedFromTheirResult) {
  DispatchRecorder rec;
  BenchClock::time_point t0 = BenchClock::now();
  rec.StartPhase(t0);
  rec.ResultSent(7, t0 + milliseconds(100));
  rec.RecordReceived(7, 1, true, t0 + milliseconds(104));
  rec.RecordReceived(7, 1, true, t0 + milliseconds(105));
  rec.RecordReceived(8, 2, false, t0 + milliseconds(200));

  DispatchReport r = rec.Report();
  EXPECT_EQ(r.records, 2);
  EXPECT_EQ(r.duplicate_records, 1);
  EXPECT_EQ(r.retried, 1);
  EXPECT_EQ(r.not_ok, 1);
  EXPECT_EQ(r.result_to_client.n, 1);
  EXPECT_DOUBLE_EQ(r.result_to_client.max_ms, 4);
  EXPECT_DOUBLE_EQ(r.elapsed_s, 0.2);
}

TEST(DispatchRecorderTest, StartPhaseForgetsThePreviousPhase) {
  DispatchRecorder rec;
  BenchClock::time_point t0 = BenchClock::now();
  rec.StartPhase(t0);
  int warmup = rec.phase();
  rec.ResultSent(1, t0);
  rec.RecordReceived(1, 1, true, t0 + milliseconds(1));
  rec.StartPhase(t0 + milliseconds(2));
  EXPECT_NE(rec.phase(), warmup);
  EXPECT_EQ(rec.records(), 0);
  EXPECT_EQ(rec.Report().results_sent, 0);
}

}  // namespace
}  // namespace kforge
