#include "tests/rogue_worker.h"

#include <chrono>
#include <utility>

#include "common/channel.h"
#include "gtest/gtest.h"
#include "tests/test_pki.h"

namespace kforge {
namespace {

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

}  // namespace

RogueWorker::RogueWorker(const std::string& address, const std::string& gpu_type,
                         const std::string& token, const std::string& hostname)
    : stub_(v1::WorkerService::NewStub(MakeChannel(address, {token, TestPki::Shared().Client()}))) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::RegisterRequest req;
  req.mutable_facts()->set_hostname(hostname);
  req.mutable_facts()->set_gpu_type(gpu_type);
  req.mutable_facts()->set_slots(1);
  v1::RegisterResponse resp;
  registered_ = stub_->Register(&ctx, req, &resp);
  worker_id_ = resp.worker_id();
}

bool RogueWorker::Connect() {
  stream_ctx_.set_deadline(In(120));
  stream_ = stub_->Connect(&stream_ctx_);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id(worker_id_);
  return stream_->Write(hello);
}

std::string RogueWorker::TakeLease() {
  if (pending_) {
    leased_ = *std::exchange(pending_, std::nullopt);
    return leased_.lease_id();
  }
  v1::CoordinatorMessage m;
  while (stream_->Read(&m)) {
    if (m.has_lease()) {
      leased_ = m.lease();
      return leased_.lease_id();
    }
  }
  return "";
}

bool RogueWorker::Send(const std::string& lease_id, const v1::EvalResult& result) {
  v1::WorkerMessage msg;
  msg.mutable_result()->set_lease_id(lease_id);
  *msg.mutable_result()->mutable_result() = result;
  return stream_->Write(msg);
}

std::string RogueWorker::SendAndReadRefusal(const std::string& lease_id,
                                            const v1::EvalResult& result) {
  if (!Send(lease_id, result)) return "";
  v1::CoordinatorMessage m;
  while (stream_->Read(&m)) {
    if (m.has_lease()) pending_ = m.lease();
    if (m.has_result_refused()) {
      EXPECT_EQ(m.result_refused().lease_id(), lease_id);
      return m.result_refused().reason();
    }
  }
  return "";
}

bool RogueWorker::Heartbeat(const std::string& lease_id) {
  v1::WorkerMessage msg;
  msg.mutable_heartbeat()->add_lease_ids(lease_id);
  msg.mutable_heartbeat()->set_free_slots(0);
  return stream_->Write(msg);
}

grpc::Status RogueWorker::Finish() {
  v1::CoordinatorMessage m;
  while (stream_->Read(&m)) {
  }
  return stream_->Finish();
}

void RogueWorker::Close() {
  stream_ctx_.TryCancel();
  (void)stream_->Finish();
}

}  // namespace kforge
