// Client channels of kforge's binaries (CLI, worker, coordinator to gateway): one place that
// decides how a client verifies the server (TLS, common/tls.h) and proves who it is. A bearer
// token, when given, is attached to every call as `authorization: Bearer <token>` by a client
// interceptor (so streams and unary calls alike carry it).
//
// Thread-safe: the returned channel is gRPC's, shareable between threads.
#ifndef KFORGE_COMMON_CHANNEL_H_
#define KFORGE_COMMON_CHANNEL_H_

#include <memory>
#include <string>

#include "common/tls.h"
#include "grpcpp/channel.h"

namespace kforge {

struct ClientCredentials {
  std::string token;  // API token; empty: none
  TlsSettings tls;    // how the server is verified (ca_file), or insecure
};

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientCredentials& credentials);

}  // namespace kforge

#endif  // KFORGE_COMMON_CHANNEL_H_
