// The monitoring setup in deploy/ against a real stack: PostgreSQL, the coordinator, the
// gateway (offline proposer) and a CPU-mode worker run a one-round optimization job; then a
// real Prometheus (the Debian package) started with deploy/prometheus/prometheus.yml and
// rules.yml scrapes the three services. Every query of every Grafana dashboard in
// deploy/grafana/dashboards must run: PromQL through Prometheus's HTTP API, SQL against the
// cluster's database (with Grafana's macros and variables replaced), and every metric a
// dashboard or rule names must be one the services export. Grafana itself is not run here (no
// package): the dashboards' layout is not checked, their queries are. The Helm chart's
// autoscalers (helm/kforge, rendered by helm) are checked against the same Prometheus: every
// metric they name is exported, and each KEDA query returns its GPU type's queue depth.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/subprocess.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cluster.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

using Clock = std::chrono::steady_clock;

// Exported only by a worker with NVML (a GPU); the CPU-mode worker here registers none.
const std::set<std::string> kGpuOnlyMetrics = {"kforge_worker_gpu_utilization_ratio",
                                               "kforge_worker_gpu_memory_used_bytes"};

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

// Grafana's variables and macros, replaced as Grafana would for "All" over the last 6 hours.
std::string PromQl(std::string expr) {
  return absl::StrReplaceAll(expr, {{"$__rate_interval", "1m"},
                                    {"$__interval", "30s"},
                                    {"$__range", "6h"},
                                    {"$gpu_type", ".*"}});
}

// `gpu_types`: the multi-value variable as Grafana's SQL data sources expand it (quoted,
// comma-separated; "All" is every value).
std::string Sql(const std::string& sql, const std::string& gpu_types) {
  static const std::regex time_filter(R"(\$__timeFilter\(([^)]+)\))");
  std::string s = std::regex_replace(sql, time_filter, "$1 > now() - interval '6 hours'");
  return absl::StrReplaceAll(s, {{"$gpu_type", gpu_types}});
}

// kforge_* metric names in a query or rule (recording rules are kforge:..., not matched).
std::set<std::string> MetricNames(const std::string& text) {
  static const std::regex name(R"(\bkforge_[a-z0-9_]+)");
  std::set<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    out.insert(it->str());
  }
  return out;
}

// The autoscaler objects of helm/kforge rendered with `values` (a file under the chart, or ""
// for the defaults) by the helm scripts/setup.sh installs; "" when helm failed.
std::string RenderAutoscalers(const std::string& values) {
  SpawnOptions o;
  o.argv = {SourcePath(".cache/tools/bin/helm"), "template", "kf", SourcePath("helm/kforge"),
            "--show-only", "templates/autoscaling.yaml"};
  if (!values.empty()) {
    o.argv.push_back("-f");
    o.argv.push_back(SourcePath("helm/kforge/" + values));
  }
  o.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(o);
  EXPECT_TRUE(r.Succeeded()) << r.Describe() << r.stderr_data;
  return r.Succeeded() ? r.stdout_data : "";
}

// The PromQL of every KEDA trigger in rendered YAML (`query: "..."`, YAML's double-quoted form).
std::vector<std::string> KedaQueries(const std::string& rendered) {
  static const std::regex query(R"re(\bquery: "((?:[^"\\]|\\.)*)")re");
  std::vector<std::string> out;
  for (std::sregex_iterator it(rendered.begin(), rendered.end(), query), end; it != end; ++it) {
    out.push_back(absl::StrReplaceAll((*it)[1].str(), {{"\\\"", "\""}, {"\\\\", "\\"}}));
  }
  return out;
}

class Prometheus {
 public:
  // Copies the repository's config and rules into `dir`, names the services in
  // targets/kforge.json, checks the config with promtool and starts Prometheus on a free port.
  Prometheus(const std::string& dir, const nlohmann::json& targets) {
    for (const char* f : {"prometheus.yml", "rules.yml"}) {
      WriteFile(dir + "/" + f, ReadSourceFile(std::string("deploy/prometheus/") + f));
    }
    mkdir((dir + "/targets").c_str(), 0755);
    WriteFile(dir + "/targets/kforge.json", targets.dump(1));
    SpawnOptions check;
    check.argv = {"promtool", "check", "config", dir + "/prometheus.yml"};
    check.wall_limit_s = 60;
    SubprocessResult r = RunSubprocess(check);
    check_ok = r.Succeeded();
    check_output = r.stdout_data + r.stderr_data + r.error;
    auto p = UnusedLoopbackPort();
    port = p.ok() ? *p : 0;
    SpawnOptions run;
    run.argv = {"sh", "-c",
                absl::StrCat("exec prometheus --config.file=", dir,
                             "/prometheus.yml --storage.tsdb.path=", dir,
                             "/data --web.listen-address=127.0.0.1:", port, " >", dir,
                             "/prometheus.log 2>&1")};
    started = process_.Start(run);
    log_path = dir + "/prometheus.log";
  }
  ~Prometheus() {
    if (started) {
      process_.SignalGroup(SIGKILL);
      process_.Wait();
    }
  }

  // GET on the HTTP API; the parsed JSON body (null when there was none).
  nlohmann::json Get(const std::string& path) {
    auto r = HttpGet(port, path, 20);
    if (!r.ok() || r->status == 0) return nullptr;
    return nlohmann::json::parse(r->body, nullptr, false);
  }
  nlohmann::json Query(const std::string& promql) {
    return Get("/api/v1/query?query=" + UrlEncode(promql));
  }
  bool Ready(double limit_s) {
    auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(limit_s * 1000));
    while (Clock::now() < deadline) {
      auto r = HttpGet(port, "/-/ready", 5);
      if (r.ok() && r->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
  }
  std::string Log() const {
    std::ifstream in(log_path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
  }

  bool check_ok = false, started = false;
  std::string check_output, log_path;
  int port = 0;

 private:
  Subprocess process_;
};

double ScalarOf(const nlohmann::json& answer) {
  if (answer.is_null() || answer.value("status", "") != "success") return -1;
  const auto& result = answer["data"]["result"];
  if (!result.is_array() || result.empty()) return 0;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Every (datasource type, query) of a dashboard: panel targets (rows' panels included) and
// template variables.
std::vector<std::pair<std::string, std::string>> DashboardQueries(const nlohmann::json& d) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<nlohmann::json> panels(d["panels"].begin(), d["panels"].end());
  for (size_t i = 0; i < panels.size(); ++i) {
    const auto& p = panels[i];
    if (p.contains("panels")) panels.insert(panels.end(), p["panels"].begin(), p["panels"].end());
    for (const auto& t : p.value("targets", nlohmann::json::array())) {
      std::string type = t.contains("datasource") ? t["datasource"].value("type", "")
                                                  : p["datasource"].value("type", "");
      out.emplace_back(type, t.contains("expr") ? t["expr"].get<std::string>()
                                                : t.value("rawSql", ""));
    }
  }
  for (const auto& v : d["templating"]["list"]) {
    std::string type = v["datasource"].value("type", "");
    const auto& q = v["query"];
    out.emplace_back(type + "-variable", q.is_string() ? q.get<std::string>()
                                                       : q.value("query", ""));
  }
  return out;
}

TEST(MonitoringTest, PrometheusScrapesEveryServiceAndEveryDashboardQueryRuns) {
  Cluster cluster("monitoring", /*gateway=*/true);
  ServiceProcess* worker = cluster.StartWorker("cpu", 2, {"--prefetch=1"});
  ASSERT_NE(worker, nullptr);
  ASSERT_NE(cluster.gateway(), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  {
    v1::SubmitJobRequest req = ReluJobRequest(task, /*rounds=*/1, /*seed=*/7);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::SubmitJobResponse resp;
    ASSERT_TRUE(cluster.Stub()->SubmitJob(&ctx, req, &resp).ok());
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT state FROM jobs", "succeeded", 300));

  TempDir dir;
  nlohmann::json targets = nlohmann::json::array();
  for (auto [service, port] : {std::pair<std::string, int>{"coordinator",
                                                           cluster.coordinator()->metrics_port()},
                               {"gateway", cluster.gateway()->metrics_port()},
                               {"worker", worker->metrics_port()}}) {
    targets.push_back({{"targets", {absl::StrCat("127.0.0.1:", port)}},
                       {"labels", {{"service", service}}}});
  }
  Prometheus prom(dir.path(), targets);
  EXPECT_TRUE(prom.check_ok) << "promtool check config:\n" << prom.check_output;
  ASSERT_TRUE(prom.started) << "prometheus could not start (the Debian package 'prometheus'; "
                               "scripts/setup.sh installs it)";
  ASSERT_TRUE(prom.Ready(60)) << prom.Log();

  // All three targets scraped, as job kforge-<service>.
  auto deadline = Clock::now() + std::chrono::seconds(60);
  double up = 0;
  while (Clock::now() < deadline && up < 3) {
    up = ScalarOf(prom.Query(R"q(count(up{job=~"kforge-(coordinator|gateway|worker)"} == 1))q"));
    if (up < 3) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_EQ(up, 3) << prom.Log();
  EXPECT_GT(ScalarOf(prom.Query(R"(sum(kforge_evaluations_total{gpu_type="cpu"}))")), 0);
  EXPECT_GT(ScalarOf(prom.Query(R"(sum(kforge_gateway_llm_calls_total))")), 0);

  std::set<std::string> exported;
  nlohmann::json names = prom.Get("/api/v1/label/__name__/values");
  ASSERT_FALSE(names.is_null());
  for (const auto& n : names["data"]) exported.insert(n.get<std::string>());
  auto expect_exported = [&](const std::string& text, const std::string& where) {
    for (const std::string& name : MetricNames(text)) {
      if (kGpuOnlyMetrics.count(name)) continue;
      EXPECT_TRUE(exported.count(name)) << where << " names " << name
                                        << ", which no service exported";
    }
  };

  // Rules: every metric they read exists; Prometheus loaded every rule without error.
  expect_exported(ReadSourceFile("deploy/prometheus/rules.yml"), "rules.yml");
  // Every rule evaluated without error (bounded wait: the first evaluation comes within one
  // evaluation interval).
  int rule_count = 0, healthy = 0;
  nlohmann::json rules;
  for (auto until = Clock::now() + std::chrono::seconds(60);
       Clock::now() < until && (rule_count == 0 || healthy < rule_count);) {
    rules = prom.Get("/api/v1/rules");
    ASSERT_FALSE(rules.is_null());
    rule_count = healthy = 0;
    for (const auto& g : rules["data"]["groups"]) {
      for (const auto& r : g["rules"]) {
        ++rule_count;
        healthy += r.value("health", "") == "ok";
      }
    }
    if (healthy < rule_count) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_GE(rule_count, 9);
  EXPECT_EQ(healthy, rule_count) << rules.dump();

  int prom_queries = 0, sql_queries = 0;
  for (const char* file : {"kforge-speedup.json", "kforge-fleet.json", "kforge-llm.json"}) {
    std::string text = ReadSourceFile(std::string("deploy/grafana/dashboards/") + file);
    nlohmann::json d = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(d.is_discarded()) << file << " is not JSON";
    EXPECT_FALSE(d.value("uid", "").empty()) << file;
    for (const auto& [type, query] : DashboardQueries(d)) {
      SCOPED_TRACE(std::string(file) + ": " + query);
      ASSERT_FALSE(query.empty());
      if (type == "prometheus") {
        nlohmann::json a = prom.Query(PromQl(query));
        ASSERT_FALSE(a.is_null());
        EXPECT_EQ(a.value("status", ""), "success") << a.dump();
        expect_exported(query, file);
        ++prom_queries;
      } else if (type == "prometheus-variable") {
        expect_exported(query, file);
      } else if (type == "grafana-postgresql-datasource" ||
                 type == "grafana-postgresql-datasource-variable") {
        for (const char* types : {"'cpu'", "'cpu','H200'"}) {  // one type; "All"
          auto r = cluster.TryQuery(Sql(query, types));
          EXPECT_TRUE(r.ok()) << r.status();
        }
        ++sql_queries;
      } else {
        ADD_FAILURE() << "unknown data source type " << type;
      }
    }
  }
  EXPECT_GE(prom_queries, 20);
  EXPECT_GE(sql_queries, 11);

  // The speedup dashboard's leaderboard shows the job's GPU type.
  auto board = cluster.TryQuery(
      Sql("SELECT gpu_type FROM leaderboard WHERE gpu_type IN ($gpu_type)", "'cpu'"));
  ASSERT_TRUE(board.ok()) << board.status();
  ASSERT_EQ(board->rows(), 1);
  EXPECT_EQ(board->Get(0, 0), "cpu");
  // Its leaderboard per clock too: CPU mode times by the call clock only.
  auto by_clock = cluster.TryQuery(
      Sql("SELECT gpu_type || '/' || clock FROM leaderboard_by_clock WHERE gpu_type IN ($gpu_type)",
          "'cpu'"));
  ASSERT_TRUE(by_clock.ok()) << by_clock.status();
  ASSERT_EQ(by_clock->rows(), 1);
  EXPECT_EQ(by_clock->Get(0, 0), "cpu/call");

  // The chart's autoscalers read metrics the coordinator exports, and the default pool's KEDA
  // query (GPU type H100, no worker here) reads the two evaluations queued for H100.
  for (const char* values : {"", "ci/three-pools-values.yaml", "ci/keda-off-values.yaml"}) {
    std::string rendered = RenderAutoscalers(values);
    ASSERT_FALSE(rendered.empty()) << values;
    EXPECT_THAT(MetricNames(rendered), ::testing::ElementsAre("kforge_queue_depth")) << values;
    expect_exported(rendered, std::string("helm/kforge autoscalers ") + values);
  }
  std::vector<std::string> queries = KedaQueries(RenderAutoscalers(""));
  ASSERT_EQ(queries.size(), 1u);
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (const char* c : {"correct", "wrong"}) {
    req.add_candidates()->set_source(
        ReadSourceFile(std::string("examples/candidates/tiny_relu/") + c + ".py"));
  }
  req.add_gpu_types("H100");
  std::vector<v1::EvaluationRecord> none;
  ReadBatch(*cluster.Stub(), req, &none, nullptr, 3);  // queued; nobody will take them
  EXPECT_TRUE(none.empty());
  double depth = -1;
  for (auto until = Clock::now() + std::chrono::seconds(60); Clock::now() < until && depth != 2;) {
    depth = ScalarOf(prom.Query(queries[0]));
    if (depth != 2) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(depth, 2) << queries[0];
}

}  // namespace
}  // namespace kforge
