#include "gpu_worker/eval/candidate_client.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/csrc/autograd/python_variable.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "common/base/utf8.h"
#include "gpu_worker/eval/candidate_process.h"

namespace py = pybind11;

namespace kforge::eval {

namespace judge = v1::judge;

std::unique_ptr<CandidateClient> CandidateClient::Start(std::string* error) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("cannot create the candidate channel: ") + std::strerror(errno);
    return nullptr;
  }
  int taint[2];  // audit_hook.h: the candidate process writes, only the judge reads
  if (pipe2(taint, O_CLOEXEC) != 0) {
    *error = std::string("cannot create the taint pipe: ") + std::strerror(errno);
    close(sv[0]);
    close(sv[1]);
    return nullptr;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot start the candidate process: ") + std::strerror(errno);
    for (int fd : {sv[0], sv[1], taint[0], taint[1]}) close(fd);
    return nullptr;
  }
  if (pid == 0) {
    close(sv[0]);
    close(taint[0]);
    // A session of its own, so an autogroup of its own: any process of a session may nice the
    // session's autogroup (/proc/self/autogroup), which would slow the judge's reference, alone
    // too. It stays this process's child (and subreaper's orphans): ended all the same.
    setsid();
    RunCandidateProcess(sv[1], taint[1]);
  }
  close(sv[1]);
  close(taint[1]);
  fcntl(taint[0], F_SETFL, O_NONBLOCK);
  // Not dumpable from here on: a process of the same uid (the candidate's) can neither ptrace
  // the judge nor open its /proc entries (mem, fd, environ).
  prctl(PR_SET_DUMPABLE, 0);
  return std::unique_ptr<CandidateClient>(new CandidateClient(pid, sv[0], taint[0]));
}

void CandidateClient::ReadAuditChannel(bool end_is_native) {
  if (native_code_ || taint_fd_ < 0) return;
  char buf[512];
  ssize_t n = read(taint_fd_, buf, sizeof buf);
  if (n > 0) {
    native_code_ = true;
    native_detail_ = PrintableUtf8(std::string_view(buf, static_cast<size_t>(n)));
  } else if (n == 0 && end_is_native) {  // every write end closed: replaced, or ended
    native_code_ = true;
    native_detail_ = "the candidate process closed its audit channel";
  } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
    native_code_ = true;
    native_detail_ = std::string("the audit channel failed: ") + std::strerror(errno);
  }
}

bool CandidateClient::NativeCode(std::string* detail) {
  ReadAuditChannel(true);
  if (native_code_) *detail = native_detail_;
  return native_code_;
}

void CandidateClient::MarkNativeCode(const std::string& detail) {
  std::string earlier;
  if (NativeCode(&earlier)) return;
  native_code_ = true;
  native_detail_ = detail;
}

CandidateClient::~CandidateClient() {
  if (taint_fd_ >= 0) close(taint_fd_);
  if (pid_ <= 0) return;  // reaped by Describe
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void CandidateClient::KillWithoutWaiting() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  pid_ = -1;
}

void CandidateClient::EndAuditChannel() {
  ReadAuditChannel(false);  // bytes still there are the hook's finding; the end is ours
  if (taint_fd_ >= 0) close(taint_fd_);
  taint_fd_ = -1;
}

void CandidateClient::UseDevice(bool cuda, int device) {
  arena_ = std::make_unique<SlotArena>(cuda, device);
  channel_.set_spin_us(ChannelSpinUs(cuda));
}

std::string CandidateClient::Describe(const std::string& channel_error) {
  if (pid_ <= 0) return "the candidate process is gone: " + channel_error;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) {  // alive: give it a moment to finish dying
    usleep(50 * 1000);
    r = waitpid(pid_, &status, WNOHANG);
  }
  if (r == pid_) {
    std::string how = WIFSIGNALED(status)
                          ? "died with signal " + std::to_string(WTERMSIG(status)) + " (" +
                                strsignal(WTERMSIG(status)) + ")"
                          : "exited with code " + std::to_string(WEXITSTATUS(status));
    pid_ = -1;  // reaped
    return "the candidate process " + how;
  }
  return "the candidate process broke the channel: " + channel_error;
}

bool CandidateClient::Receive(judge::FromCandidate* in, std::string* error) {
  std::string e;
  if (!channel_.Receive(in, &e)) {
    *error = Describe(e);
    return false;
  }
  if (in->kind_case() == judge::FromCandidate::kFailed) {
    *error = "the candidate process failed: " + in->failed().substr(0, 4000);
    return false;
  }
  return true;
}

bool CandidateClient::SendLoad(const judge::Load& load, std::string* error) {
  judge::ToCandidate out;
  *out.mutable_load() = load;
  std::string e;
  if (!channel_.Send(out, &e)) {
    *error = Describe(e);
    return false;
  }
  return true;
}

bool CandidateClient::Loaded(judge::Loaded* loaded, std::string* error) {
  judge::FromCandidate in;
  if (!Receive(&in, error)) return false;
  if (in.kind_case() != judge::FromCandidate::kLoaded) {
    *error = "the candidate process answered Load with something else";
    return false;
  }
  *loaded = in.loaded();
  return true;
}

bool CandidateClient::AwaitCalibration(std::string* error) {
  judge::FromCandidate in;
  if (!Receive(&in, error)) return false;
  if (in.kind_case() != judge::FromCandidate::kCalibrating) {
    *error = "the candidate process did not get ready for calibration";
    return false;
  }
  return true;
}

bool CandidateClient::EndCalibration(std::string* error) {
  judge::ToCandidate out;
  out.set_end_calibration(true);
  std::string e;
  if (!channel_.Send(out, &e)) {
    *error = Describe(e);
    return false;
  }
  return true;
}

bool CandidateClient::SlotFor(const std::pair<int, int>& key, uint64_t bytes, uint32_t* slot,
                              std::string* error) {
  auto it = slots_.find(key);
  if (it != slots_.end() && arena_->bytes(it->second) >= bytes) {
    *slot = it->second;
    return true;
  }
  // A new slot (the old one, too small, stays mapped until the end: never reused).
  judge::ToCandidate out;
  int fd = -1;
  if (!arena_->Allocate(bytes, out.mutable_slot(), &fd, error)) return false;
  std::string e;
  if (!channel_.Send(out, fd >= 0 ? std::vector<int>{fd} : std::vector<int>{}, &e)) {
    *error = Describe(e);
    return false;
  }
  judge::FromCandidate in;
  if (!Receive(&in, error)) return false;
  if (in.kind_case() != judge::FromCandidate::kSlotMapped) {
    *error = "the candidate process answered a slot with something else";
    return false;
  }
  *slot = out.slot().id();
  slots_[key] = *slot;
  return true;
}

bool CandidateClient::Prepare(int group, const py::list& inputs, std::string* error) {
  std::vector<judge::Arg> args;
  std::vector<at::Tensor> views;
  int index = 0;
  for (py::handle item : inputs) {
    judge::Arg a;
    if (THPVariable_Check(item.ptr())) {
      const at::Tensor& t = THPVariable_Unpack(item.ptr());
      uint32_t slot;
      if (!SlotFor({group, index}, LayoutBytes(t), &slot, error)) return false;
      at::Tensor view = arena_->View(slot, t, a.mutable_tensor());
      view.copy_(t);
      views.push_back(view);
    } else if (py::isinstance<py::bool_>(item)) {
      a.set_bool_value(item.cast<bool>());
    } else if (py::isinstance<py::int_>(item)) {
      a.set_int_value(item.cast<int64_t>());
    } else if (py::isinstance<py::float_>(item)) {
      a.set_float_value(item.cast<double>());
    } else if (py::isinstance<py::str>(item)) {
      a.set_str_value(item.cast<std::string>());
    } else if (item.is_none()) {
      a.set_none(true);
    } else {
      *error = "get_inputs() returned a " +
               std::string(py::str(py::type::handle_of(item).attr("__name__"))) +
               ", which cannot be passed to the candidate process (tensors, numbers, strings "
               "and None can)";
      return false;
    }
    args.push_back(std::move(a));
    ++index;
  }
  prepared_[group] = std::move(args);
  input_views_[group] = std::move(views);
  return true;
}

bool CandidateClient::PoisonOutputs(const std::vector<at::Tensor>& ref_outputs,
                                    std::string* error) {
  output_views_.clear();
  output_descs_.clear();
  for (size_t k = 0; k < ref_outputs.size(); ++k) {
    uint32_t slot;
    if (!SlotFor({-1, static_cast<int>(k)}, LayoutBytes(ref_outputs[k]), &slot, error)) {
      return false;
    }
    judge::TensorView desc;
    at::Tensor view = arena_->View(slot, ref_outputs[k], &desc);
    at::Tensor bytes =
        at::from_blob(view.data_ptr(), {static_cast<int64_t>(arena_->bytes(slot))},
                      at::TensorOptions().dtype(at::kByte).device(view.device()));
    bytes.fill_(0xFF);
    output_views_.push_back(view);
    output_descs_.push_back(desc);
  }
  // The poison and the input copies are complete before the candidate process can look.
  if (!ref_outputs.empty() && ref_outputs[0].is_cuda() && cudaDeviceSynchronize() != cudaSuccess) {
    *error = std::string("CUDA error in the judge: ") + cudaGetErrorString(cudaGetLastError());
    return false;
  }
  return true;
}

bool CandidateClient::Call(uint32_t iteration, int group, const std::vector<uint64_t>& ref_aliases,
                           bool timed, uint32_t keep, double device_preroll_ms,
                           judge::Called* called, std::string* error, bool null_call) {
  const auto started = std::chrono::steady_clock::now();
  auto us_since = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
  };
  judge::ToCandidate out;
  judge::Call* call = out.mutable_call();
  call->set_iteration(iteration);
  call->set_timed(timed);
  call->set_keep_outputs(keep);
  call->set_device_preroll_ms(device_preroll_ms);
  call->set_null_call(null_call);
  for (const judge::Arg& a : prepared_.at(group)) *call->add_args() = a;
  for (const judge::TensorView& d : output_descs_) *call->add_outputs() = d;
  for (uint64_t bits : ref_aliases) call->add_ref_aliases(bits);
  std::string e;
  if (!channel_.Send(out, &e)) {
    *error = Describe(e);
    return false;
  }
  const double send_us = us_since(started);
  judge::FromCandidate in;
  if (!Receive(&in, error)) return false;
  if (in.kind_case() != judge::FromCandidate::kCalled) {
    *error = "the candidate process answered a call with something else";
    return false;
  }
  *called = in.called();
  if (CallProfileOn()) {
    const CallKind kind = null_call               ? CallKind::kNull
                          : device_preroll_ms > 0 ? CallKind::kTraced
                                                  : CallKind::kCall;
    profile_.Add(kind, send_us, us_since(started),
                 {called->profile_us().begin(), called->profile_us().end()});
  }
  return true;
}

}  // namespace kforge::eval
