// kforge-gateway: turns search requests into prompts, calls LLM providers (or the offline
// proposer), parses candidates, and accounts every call in llm_calls.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "common/base/files.h"
#include "common/base/log.h"
#include "common/config.h"
#include "common/secrets.h"
#include "common/pg.h"
#include "common/service.h"
#include "llm_gateway/call_accounting.h"
#include "llm_gateway/endpoint_allowlist.h"
#include "llm_gateway/gateway_service.h"
#include "llm_gateway/generator.h"
#include "llm_gateway/http_transport.h"
#include "llm_gateway/pg_call_log.h"
#include "llm_gateway/provider_client.h"
#include "llm_gateway/templates.h"
#include "migrations/migrator.h"

ABSL_FLAG(std::string, grpc_address, "0.0.0.0:50061", "where to serve gRPC");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9465", "where to serve /metrics");
ABSL_FLAG(std::string, ready_file, "", "write bound ports here once serving");
ABSL_FLAG(std::string, database_url, "",
          "PostgreSQL for llm_calls accounting (migrated by the coordinator); empty: no "
          "accounting, llm_call_id stays empty");
ABSL_FLAG(std::string, database_url_file, "",
          "a file holding the libpq connection string (wins over --database_url)");
ABSL_FLAG(std::string, caller_token_file, "",
          "a file holding the token the coordinators call with (their --gateway_token_file)");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "let anyone call (no --caller_token_file): only on a trusted loopback; logged as a "
          "warning");
ABSL_FLAG(int, db_pool_size, 4, "PostgreSQL connections");
ABSL_FLAG(double, db_wait_s, 30, "how long to wait for the database and its schema at startup");
ABSL_FLAG(std::string, templates_dir, "",
          "directory of prompt templates overriding the embedded ones of the same name");
ABSL_FLAG(std::string, llm_provider, "offline",
          "provider for requests that name none: offline, openai or anthropic");
ABSL_FLAG(std::string, llm_model, "", "model for requests that name none");
ABSL_FLAG(double, llm_temperature, 0.7, "sampling temperature for requests that give 0");
ABSL_FLAG(uint32_t, llm_max_tokens, 8192, "completion token limit for requests that give 0");
ABSL_FLAG(double, llm_timeout_s, 300, "limit of one HTTP request to a provider");
ABSL_FLAG(double, llm_connect_timeout_s, 10, "limit of connecting to a provider");
ABSL_FLAG(int, llm_max_attempts, 4, "attempts per call (429, 5xx, timeouts are retried)");
ABSL_FLAG(double, llm_backoff_initial_s, 1, "first retry backoff; doubles per attempt");
ABSL_FLAG(double, llm_backoff_max_s, 60, "backoff cap, also for a server's Retry-After");
ABSL_FLAG(uint32_t, max_candidates, 64, "largest num_candidates / num_ideas of one request");
ABSL_FLAG(std::string, llm_prices_file, "",
          "JSON price table: {\"model\": {\"input_per_mtok\": USD, \"output_per_mtok\": USD}}");
ABSL_FLAG(std::string, openai_base_url, "https://api.openai.com",
          "OpenAI-compatible endpoint (vLLM, SGLang, DeepSeek...); /v1/chat/completions is added");
ABSL_FLAG(std::string, openai_api_key_file, "", "file holding the key (else $OPENAI_API_KEY)");
ABSL_FLAG(int, openai_max_concurrency, 8, "requests in flight to the openai provider; 0: no cap");
ABSL_FLAG(double, openai_requests_per_minute, 0,
          "request rate cap of the openai provider; 0: none");
ABSL_FLAG(std::string, anthropic_base_url, "https://api.anthropic.com",
          "Anthropic endpoint; /v1/messages is added");
ABSL_FLAG(std::string, anthropic_api_key_file, "",
          "file holding the key (else $ANTHROPIC_API_KEY)");
ABSL_FLAG(int, anthropic_max_concurrency, 8, "requests in flight to Anthropic; 0: no cap");
ABSL_FLAG(double, anthropic_requests_per_minute, 0, "request rate cap of Anthropic; 0: none");
ABSL_FLAG(std::string, allowed_base_urls, "",
          "comma-separated URL prefixes a job's llm.base_url may name (scheme://host[:port][/path], "
          "matched on scheme, host, port and path segments); the providers' own base URLs "
          "(--openai_base_url, --anthropic_base_url) are always allowed, nothing else by default");
ABSL_FLAG(std::string, anthropic_version, "2023-06-01", "the anthropic-version header");

namespace kforge {
namespace {

// Bad startup configuration ends the process with a message saying what to fix.
[[noreturn]] void Fail(const std::string& what, const std::string& error) {
  LogError(what, {{"error", error}});
  std::exit(1);
}

std::string ReadFileOrFail(const std::string& path, const char* what) {
  std::string text = ReadFileOrEmpty(path);
  if (text.empty()) Fail(std::string("cannot read (or empty) ") + what, path);
  return text;
}

// The key from --<name>_api_key_file, else from the environment variable.
std::string ApiKey(const std::string& file, const char* env) {
  if (!file.empty()) {
    return std::string(absl::StripAsciiWhitespace(ReadFileOrFail(file, "API key file")));
  }
  const char* value = std::getenv(env);
  return value == nullptr ? "" : std::string(absl::StripAsciiWhitespace(value));
}

gateway::ProviderConfig Provider(const std::string& name, gateway::Protocol protocol,
                                 std::string base_url, std::string key, int concurrency,
                                 double per_minute) {
  gateway::ProviderConfig c;
  c.name = name;
  c.protocol = protocol;
  c.base_url = std::move(base_url);
  c.api_key = std::move(key);
  c.anthropic_version = absl::GetFlag(FLAGS_anthropic_version);
  c.timeout_s = absl::GetFlag(FLAGS_llm_timeout_s);
  c.connect_timeout_s = absl::GetFlag(FLAGS_llm_connect_timeout_s);
  c.retry.max_attempts = absl::GetFlag(FLAGS_llm_max_attempts);
  c.retry.initial_backoff_s = absl::GetFlag(FLAGS_llm_backoff_initial_s);
  c.retry.max_backoff_s = absl::GetFlag(FLAGS_llm_backoff_max_s);
  c.max_concurrency = concurrency;
  c.requests_per_minute = per_minute;
  return c;
}

// Waits (bounded by --db_wait_s) for the database and for the coordinator's migrations.
std::unique_ptr<PgPool> ConnectDatabase(const std::string& url) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(absl::GetFlag(FLAGS_db_wait_s) * 1000));
  absl::Status last;
  while (true) {
    auto conn = PgConnection::Connect(url);
    last = conn.ok() ? CheckSchemaVersion(**conn, EmbeddedMigrations()) : conn.status();
    if (last.ok()) break;
    if (std::chrono::steady_clock::now() > deadline) Fail("database not ready", last.ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return std::make_unique<PgPool>(url, absl::GetFlag(FLAGS_db_pool_size));
}

int Run() {
  auto templates = gateway::TemplateSet::Load(absl::GetFlag(FLAGS_templates_dir));
  if (!templates.ok()) Fail("bad --templates_dir", templates.status().ToString());
  gateway::PriceTable prices;
  if (!absl::GetFlag(FLAGS_llm_prices_file).empty()) {
    auto parsed = gateway::ParsePriceTable(
        ReadFileOrFail(absl::GetFlag(FLAGS_llm_prices_file), "--llm_prices_file"));
    if (!parsed.ok()) Fail("bad --llm_prices_file", parsed.status().ToString());
    prices = std::move(parsed).value();
  }
  auto secret_url = SecretFromValueOrFile(absl::GetFlag(FLAGS_database_url),
                                          absl::GetFlag(FLAGS_database_url_file));
  if (!secret_url.ok()) Fail("bad --database_url_file", std::string(secret_url.status().message()));
  const std::string database_url = *secret_url;
  std::unique_ptr<PgPool> pool;
  std::unique_ptr<gateway::PgCallLog> call_log;
  if (database_url.empty()) {
    LogWarning("no --database_url: LLM calls are not recorded in llm_calls");
  } else {
    pool = ConnectDatabase(database_url);
    call_log = std::make_unique<gateway::PgCallLog>(*pool);
  }

  ServiceHost host({.name = "gateway",
                    .grpc_address = absl::GetFlag(FLAGS_grpc_address),
                    .metrics_address = absl::GetFlag(FLAGS_metrics_address),
                    .ready_file = absl::GetFlag(FLAGS_ready_file),
                    .tls = TlsFromFlags()});
  gateway::CallAccounting accounting(call_log.get(), std::move(prices), host.metrics().registry());
  gateway::CurlTransport transport;
  gateway::ProviderClient openai(
      Provider("openai", gateway::Protocol::kOpenAi, absl::GetFlag(FLAGS_openai_base_url),
               ApiKey(absl::GetFlag(FLAGS_openai_api_key_file), "OPENAI_API_KEY"),
               absl::GetFlag(FLAGS_openai_max_concurrency),
               absl::GetFlag(FLAGS_openai_requests_per_minute)),
      transport);
  gateway::ProviderClient anthropic(
      Provider("anthropic", gateway::Protocol::kAnthropic, absl::GetFlag(FLAGS_anthropic_base_url),
               ApiKey(absl::GetFlag(FLAGS_anthropic_api_key_file), "ANTHROPIC_API_KEY"),
               absl::GetFlag(FLAGS_anthropic_max_concurrency),
               absl::GetFlag(FLAGS_anthropic_requests_per_minute)),
      transport);
  gateway::GeneratorDefaults defaults;
  defaults.provider = absl::GetFlag(FLAGS_llm_provider);
  defaults.model = absl::GetFlag(FLAGS_llm_model);
  defaults.temperature = absl::GetFlag(FLAGS_llm_temperature);
  defaults.max_tokens = absl::GetFlag(FLAGS_llm_max_tokens);
  defaults.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  auto allowed = gateway::EndpointAllowList::Parse(absl::GetFlag(FLAGS_allowed_base_urls));
  if (!allowed.ok()) Fail("bad --allowed_base_urls", std::string(allowed.status().message()));
  for (const gateway::ProviderClient* p : {&openai, &anthropic}) {
    if (absl::Status s = allowed->Add(p->config().base_url); !s.ok()) {
      Fail("bad --" + p->config().name + "_base_url", std::string(s.message()));
    }
  }
  const std::string allowed_text = allowed->ToString();
  gateway::Generator generator(defaults, *templates,
                               {{"openai", &openai}, {"anthropic", &anthropic}}, accounting,
                               *std::move(allowed));
  std::string caller_token;
  if (const std::string file = absl::GetFlag(FLAGS_caller_token_file); !file.empty()) {
    auto token = ReadSecretFile(file);
    if (!token.ok()) Fail("bad --caller_token_file", std::string(token.status().message()));
    caller_token = *token;
  } else if (absl::GetFlag(FLAGS_allow_unauthenticated)) {
    LogWarning("--allow_unauthenticated: anyone who reaches the gateway may call it");
  } else {
    Fail("refusing to start",
         "--caller_token_file is required: the token coordinators call the gateway with (or "
         "--allow_unauthenticated on a trusted loopback)");
  }
  GatewayServiceImpl service(generator, caller_token);
  host.AddService(&service);
  if (absl::Status s = host.Start(); !s.ok()) {
    LogError("cannot start", {{"error", std::string(s.message())}});
    return 1;
  }
  LogInfo("gateway ready", {{"default_provider", defaults.provider},
                            {"default_model", defaults.model},
                            {"openai_key", openai.config().api_key.empty() ? "unset" : "set"},
                            {"anthropic_key", anthropic.config().api_key.empty() ? "unset" : "set"},
                            {"accounting", call_log ? "llm_calls" : "off"},
                            {"allowed_base_urls", allowed_text}});
  int sig = WaitForTerminationSignal();
  LogInfo("shutting down", {{"signal", std::to_string(sig)}});
  host.Shutdown();
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::BlockTerminationSignals();
  kforge::InitFromFlagsAndEnv(argc, argv, "gateway", "kforge-gateway: LLM proposals");
  return kforge::Run();
}
