// A process that speaks WorkerService with no engine behind it, for tests of what the
// coordinator accepts from workers: it registers (with or without a token), holds a stream,
// takes leases and answers them with whatever result the test forges.
//
// Thread-safety: used by one test thread.
#ifndef KFORGE_TESTS_ROGUE_WORKER_H_
#define KFORGE_TESTS_ROGUE_WORKER_H_

#include <memory>
#include <optional>
#include <string>

#include "grpcpp/grpcpp.h"
#include "kforge/v1/worker.grpc.pb.h"

namespace kforge {

class RogueWorker {
 public:
  // Registers at once; registered() tells how that went. `token` "" sends no credentials.
  RogueWorker(const std::string& address, const std::string& gpu_type, const std::string& token,
              const std::string& hostname = "rogue");
  const grpc::Status& registered() const { return registered_; }
  const std::string& worker_id() const { return worker_id_; }
  // Uses `worker_id` instead of the one registration gave (an impersonation attempt).
  void set_worker_id(std::string id) { worker_id_ = std::move(id); }

  // Opens the stream and says hello.
  bool Connect();
  // The next lease's id: one that arrived meanwhile, else the next to come; "" when the stream
  // ended first.
  std::string TakeLease();
  // The evaluation TakeLease handed out last (what a real worker would run).
  const v1::EvalRequest& leased_request() const { return leased_.request(); }
  // Sends `result` for `lease_id` and reads nothing.
  bool Send(const std::string& lease_id, const v1::EvalResult& result);
  // Sends `result` for `lease_id`; the reason the coordinator refused it with ("" when the
  // stream ended first). Leases that arrive meanwhile are kept for TakeLease.
  std::string SendAndReadRefusal(const std::string& lease_id, const v1::EvalResult& result);
  // Sends a heartbeat naming `lease_id`.
  bool Heartbeat(const std::string& lease_id);
  // Reads until the stream ends and returns its status.
  grpc::Status Finish();
  void Close();

 private:
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::Status registered_;
  std::string worker_id_;
  grpc::ClientContext stream_ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  std::optional<v1::Lease> pending_;  // arrived while waiting for a refusal
  v1::Lease leased_;
};

}  // namespace kforge

#endif  // KFORGE_TESTS_ROGUE_WORKER_H_
