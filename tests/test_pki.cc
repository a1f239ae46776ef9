#include "tests/test_pki.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/subprocess.h"
#include "tests/service_process.h"

namespace kforge {
namespace {

absl::Status Openssl(std::vector<std::string> args) {
  SpawnOptions o;
  o.argv = {"openssl"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(std::move(o));
  if (r.Succeeded()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("openssl ", absl::StrJoin(args, " "), ": ",
                                          r.started ? r.Describe() : r.error, "\n",
                                          r.stderr_data));
}

}  // namespace

absl::StatusOr<TestPki> TestPki::Create(const std::string& dir, const std::string& name) {
  TestPki pki;
  const std::string base = dir + "/" + name;
  pki.ca_file = base + "-ca.pem";
  pki.cert_file = base + "-server.pem";
  pki.key_file = base + "-server.key";
  const std::string ca_key = base + "-ca.key", csr = base + "-server.csr", ext = base + ".ext";
  std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt",
                                       "ec_paramgen_curve:prime256v1", "-nodes"};
  std::vector<std::string> ca = {"req", "-x509"};
  ca.insert(ca.end(), ec.begin(), ec.end());
  ca.insert(ca.end(), {"-keyout", ca_key, "-out", pki.ca_file, "-days", "2", "-subj",
                       "/CN=" + name + " test CA", "-addext",
                       "basicConstraints=critical,CA:TRUE", "-addext",
                       "keyUsage=critical,keyCertSign,cRLSign"});
  if (absl::Status s = Openssl(ca); !s.ok()) return s;
  std::vector<std::string> req = {"req"};
  req.insert(req.end(), ec.begin(), ec.end());
  req.insert(req.end(), {"-keyout", pki.key_file, "-out", csr, "-subj", "/CN=localhost"});
  if (absl::Status s = Openssl(req); !s.ok()) return s;
  if (absl::Status s = Openssl({"x509", "-req", "-in", csr, "-CA", pki.ca_file, "-CAkey", ca_key,
                                "-CAcreateserial", "-out", pki.cert_file, "-days", "2",
                                "-extfile", ext});
      !s.ok()) {
    return s;
  }
  return pki;
}

const TestPki& TestPki::Shared() {
  static TempDir dir;  // deleted at exit
  static auto* pki = [] {
    auto made = Create(dir.path(), "shared");
    if (!made.ok()) {
      std::fprintf(stderr, "test_pki: %s\n", std::string(made.status().message()).c_str());
      std::abort();
    }
    return new TestPki(*made);
  }();
  return *pki;
}

std::vector<std::string> TestPki::Flags() const {
  return {"--tls_cert_file=" + cert_file, "--tls_key_file=" + key_file,
          "--tls_ca_file=" + ca_file};
}

TlsSettings TestPki::Client() const {
  TlsSettings t;
  t.ca_file = ca_file;
  return t;
}

}  // namespace kforge
