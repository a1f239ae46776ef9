"""The Helm chart (helm/kforge) rendered by the real helm and checked without a cluster.

Every values file of helm/kforge/ci/ and the defaults are rendered with `helm template`; every
built-in object is validated against the schemas of every Kubernetes minor version from the
chart's `kubeVersion` floor to the newest kubernetes-validate knows (strict: unknown fields
fail), and the custom resources (KEDA ScaledObject, Prometheus operator
ServiceMonitor, PodMonitor, PrometheusRule) by the assertions below. helm and
kubernetes-validate are installed by scripts/setup.sh; KFORGE_HELM overrides helm's path.
"""
import base64
import json
import os
import pathlib
import re
import subprocess
import tempfile

import kubernetes_validate
import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "kforge"
HELM = os.environ.get("KFORGE_HELM", str(REPO / ".cache" / "tools" / "bin" / "helm"))

def kubernetes_versions():
    """Every minor version from Chart.yaml's kubeVersion floor (">=1.30.0-0") to the newest
    kubernetes-validate has schemas for, as "1.N.0"."""
    floor = re.fullmatch(r">=1\.(\d+)\.0-0", yaml.safe_load((CHART / "Chart.yaml").read_text())[
        "kubeVersion"])
    assert floor, "kubeVersion is a floor >=1.N.0-0"
    newest = int(kubernetes_validate.utils.latest_version().split(".")[1])
    return [f"1.{minor}.0" for minor in range(int(floor.group(1)), newest + 1)]


KUBERNETES_VERSIONS = kubernetes_versions()
# The worker's outer wall limit for one evaluation with the engine's default stage limits:
# build 120 + correctness 120 + timing 60 + 180, plus extra_wall_s 60 (EvaluationWallLimitS in
# gpu_worker/sandbox_evaluator.cc; worker_test checks it against the chart's values.yaml).
EVALUATION_LIMIT_S = 120 + 120 + 60 + 180 + 60
# The capabilities the worker's sandbox uses (helm/README.md says which syscall needs which).
SANDBOX_CAPABILITIES = {"SYS_ADMIN", "SETUID", "SETGID", "CHOWN", "KILL", "DAC_OVERRIDE", "FOWNER"}
CUSTOM_KINDS = {"ScaledObject", "ServiceMonitor", "PodMonitor", "PrometheusRule"}
VALUES_FILES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))
SCENARIOS = ["defaults"] + VALUES_FILES


def helm(*args, check=True):
    run = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    if check and run.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{run.stderr}")
    return run


def render(scenario, *extra):
    args = ["template", "kf", str(CHART), "--namespace", "gpu"]
    if scenario != "defaults":
        args += ["-f", str(CHART / "ci" / scenario)]
    return [o for o in yaml.safe_load_all(helm(*args, *extra).stdout) if o]


def merged(base, override):
    """Helm's merge of a values file into the defaults: maps merge, anything else replaces."""
    out = dict(base)
    for key, value in override.items():
        out[key] = (merged(base[key], value)
                    if isinstance(value, dict) and isinstance(base.get(key), dict) else value)
    return out


def values_of(scenario):
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    if scenario != "defaults":
        values = merged(values, yaml.safe_load((CHART / "ci" / scenario).read_text()))
    return values


def pools_of(scenario):
    values = values_of(scenario)
    return [{**values["workerDefaults"], **p} for p in values["workerPools"]]


def by_kind(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def named(objects, kind, name):
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind} {name}: {len(found)} rendered"
    return found[0]


def containers(obj):
    return obj["spec"]["template"]["spec"]["containers"]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def secret_file(obj, container, path):
    """(Secret name, key) of the file at `path` in `container`: mounted read-only from a
    Secret volume of `obj`'s pod; fails when the path is on no such volume."""
    mounts = [m for m in container.get("volumeMounts", [])
              if path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert len(mounts) == 1, f"{path}: mounted {len(mounts)} times"
    (mount,) = mounts
    assert mount.get("readOnly") is True, mount
    (volume,) = [v for v in obj["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    assert "secret" in volume, f"{path} is on {volume}, not a Secret"
    relative = path[len(mount["mountPath"].rstrip("/")) + 1:]
    items = volume["secret"].get("items")
    if items is None:
        return volume["secret"]["secretName"], relative
    (key,) = [i["key"] for i in items if i["path"] == relative]
    return volume["secret"]["secretName"], key


def deployment_of(objects, component):
    (d,) = [d for d in by_kind(objects, "Deployment")
            if d["metadata"]["labels"]["app.kubernetes.io/component"] == component]
    return d


def secret_data(objects, name):
    return {k: base64.b64decode(v).decode() for k, v in named(objects, "Secret", name)["data"].items()}


def component_of(d):
    return d["metadata"]["labels"]["app.kubernetes.io/component"]


# Where each image has the CLI the TLS probes run (docker/*.Dockerfile).
PROBE_CLI = {"coordinator": "/usr/local/bin/kforge", "gateway": "/usr/local/bin/kforge",
             "worker": "/src/kforge/build/cli/kforge"}


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario(request):
    return request.param


@pytest.fixture(scope="module")
def objects(scenario):
    return render(scenario)


def test_helm_lint_passes_for_every_values_file():
    for scenario in SCENARIOS:
        args = ["lint", str(CHART), "--strict"]
        if scenario != "defaults":
            args += ["-f", str(CHART / "ci" / scenario)]
        run = helm(*args, check=False)
        assert run.returncode == 0, f"{scenario}:\n{run.stdout}\n{run.stderr}"
        assert "1 chart(s) linted, 0 chart(s) failed" in run.stdout


def test_every_builtin_object_is_valid_for_every_kubernetes_version_the_chart_allows(objects):
    assert "1.34.0" in KUBERNETES_VERSIONS and len(KUBERNETES_VERSIONS) >= 4
    builtin = [o for o in objects if o["kind"] not in CUSTOM_KINDS]
    assert builtin
    for version in KUBERNETES_VERSIONS:
        for obj in builtin:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                pytest.fail(f"Kubernetes {version}: {obj['kind']} {obj['metadata']['name']}: "
                            f"{e.message} at {list(e.path)}")
    assert {o["kind"] for o in objects} - CUSTOM_KINDS <= {
        "Deployment", "Service", "PodDisruptionBudget", "StatefulSet", "Secret", "ConfigMap",
        "HorizontalPodAutoscaler"}


def test_the_charts_kubernetes_floor_is_the_first_version_its_objects_are_valid_for():
    """kubeVersion must not promise a version the pods do not fit: the worker's
    securityContext.appArmorProfile exists from Kubernetes 1.30 on."""
    floor = KUBERNETES_VERSIONS[0]
    below = f"1.{int(floor.split('.')[1]) - 1}.0"
    workers = [o for o in render("defaults") if o["kind"] == "Deployment"
               and o["metadata"]["labels"]["app.kubernetes.io/component"] == "worker"]
    with pytest.raises(kubernetes_validate.ValidationError, match="appArmorProfile"):
        kubernetes_validate.validate(workers[0], below, strict=True)


def test_each_pool_has_its_node_selector_gpu_limits_grace_period_and_sandbox(scenario, objects):
    pools = pools_of(scenario)
    workers = [d for d in by_kind(objects, "Deployment")
               if d["metadata"]["labels"]["app.kubernetes.io/component"] == "worker"]
    assert len(workers) == len(pools)
    for pool in pools:
        d = named(objects, "Deployment", f"kf-kforge-worker-{pool['name']}")
        spec = d["spec"]["template"]["spec"]
        assert spec["nodeSelector"]["nvidia.com/gpu.product"] == pool["gpuProduct"]
        (c,) = containers(d)
        for side in ("requests", "limits"):
            assert c["resources"][side]["nvidia.com/gpu"] == pool["gpusPerPod"], side
        assert spec["terminationGracePeriodSeconds"] > EVALUATION_LIMIT_S
        assert d["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
        env = env_of(c)
        assert env["KFORGE_GPU_TYPE"]["value"] == pool["gpuType"]
        assert env["KFORGE_DEVICE"]["value"] == "cuda"
        assert env["KFORGE_LANES_PER_GPU"]["value"] == str(pool["lanesPerGpu"])
        assert env["KFORGE_COORDINATOR"]["value"] == "kf-kforge-coordinator:50051"
        sc = c["securityContext"]
        assert sc["capabilities"]["drop"] == ["ALL"]
        assert set(sc["capabilities"]["add"]) == SANDBOX_CAPABILITIES
        assert "privileged" not in sc
        cache = [m for m in c["volumeMounts"] if m["mountPath"] == env["KFORGE_CACHE_DIR"]["value"]]
        assert len(cache) == 1, "the build cache is on a volume"
        (volume,) = [v for v in spec["volumes"] if v["name"] == cache[0]["name"]]
        assert set(volume) - {"name"} == set(pool["cacheVolume"])
        assert spec["tolerations"] == pool["tolerations"]


def test_probes_point_at_the_port_each_service_serves_health_on(scenario, objects):
    insecure = values_of(scenario)["tls"]["insecure"]
    for d in by_kind(objects, "Deployment"):
        (c,) = containers(d)
        served = int(env_of(c)["KFORGE_GRPC_ADDRESS"]["value"].rsplit(":", 1)[1])
        (grpc_port,) = [p["containerPort"] for p in c["ports"] if p["name"] == "grpc"]
        assert grpc_port == served
        component = component_of(d)
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            if insecure:  # Kubernetes' own gRPC probe: plaintext only
                assert c[probe]["grpc"]["port"] == served, (d["metadata"]["name"], probe)
            else:  # TLS: `kforge health` verifying the certificate's name for the component
                assert "grpc" not in c[probe]
                assert c[probe]["exec"]["command"] == [
                    PROBE_CLI[component], f"--tls_server_name=kf-kforge-{component}", "health",
                    f"127.0.0.1:{served}"], (d["metadata"]["name"], probe)
        metrics = int(env_of(c)["KFORGE_METRICS_ADDRESS"]["value"].rsplit(":", 1)[1])
        assert [p["containerPort"] for p in c["ports"] if p["name"] == "metrics"] == [metrics]


def test_services_and_disruption_budgets_select_the_pods_they_serve(objects):
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
            for d in by_kind(objects, "Deployment") + by_kind(objects, "StatefulSet")}
    for kind, key in (("Service", ("spec", "selector")),
                      ("PodDisruptionBudget", ("spec", "selector", "matchLabels"))):
        for obj in by_kind(objects, kind):
            selector = obj
            for k in key:
                selector = selector[k]
            assert selector["app.kubernetes.io/component"] != "worker"
            matched = [n for n, labels in pods.items() if selector.items() <= labels.items()]
            assert matched == [obj["metadata"]["name"]], (kind, obj["metadata"]["name"], matched)


def test_coordinators_are_several_with_a_budget_and_migrate_themselves(objects):
    d = named(objects, "Deployment", "kf-kforge-coordinator")
    assert d["spec"]["replicas"] >= 2
    assert d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert env_of(containers(d)[0])["KFORGE_MIGRATE"]["value"] == "true"
    pdb = named(objects, "PodDisruptionBudget", "kf-kforge-coordinator")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert not [o for o in objects if o["kind"] == "Job"], "no migration hook Job"


def test_autoscalers_follow_each_pools_queue(scenario, objects):
    values = values_of(scenario)
    scaling = values["autoscaling"]
    pools = pools_of(scenario)
    scaled = by_kind(objects, "ScaledObject")
    hpas = by_kind(objects, "HorizontalPodAutoscaler")
    if not scaling["enabled"]:
        assert not scaled and not hpas
        for pool in pools:
            d = named(objects, "Deployment", f"kf-kforge-worker-{pool['name']}")
            assert d["spec"]["replicas"] == pool["replicas"]
        return
    for pool in pools:
        name = f"kf-kforge-worker-{pool['name']}"
        assert "replicas" not in named(objects, "Deployment", name)["spec"], "the autoscaler owns it"
        types = [pool["gpuType"]] + (["any"] if pool["scaleOnAnyQueue"] else [])
        if scaling["mode"] == "keda":
            so = named(objects, "ScaledObject", name)
            assert so["apiVersion"] == "keda.sh/v1alpha1"
            spec = so["spec"]
            assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": name}
            assert spec["minReplicaCount"] == pool["minReplicas"]
            assert spec["maxReplicaCount"] == pool["maxReplicas"]
            (trigger,) = spec["triggers"]
            assert trigger["type"] == "prometheus"
            meta = trigger["metadata"]
            assert set(meta) == {"serverAddress", "query", "threshold", "activationThreshold",
                                 "ignoreNullValues"}
            assert all(isinstance(v, str) for v in meta.values()), "KEDA metadata are strings"
            assert meta["serverAddress"] == scaling["prometheusAddress"]
            assert meta["threshold"] == str(pool["queuePerReplica"])
            selector = re.search(r'kforge_queue_depth\{gpu_type=~"([^"]*)"\}', meta["query"])
            assert selector, meta["query"]
            assert selector.group(1).split("|") == types
        else:
            hpa = named(objects, "HorizontalPodAutoscaler", name)
            assert hpa["spec"]["minReplicas"] == max(1, pool["minReplicas"])
            assert hpa["spec"]["maxReplicas"] == pool["maxReplicas"]
            (metric,) = hpa["spec"]["metrics"]
            assert metric["external"]["metric"]["name"] == "kforge_queue_depth"
            (expr,) = metric["external"]["metric"]["selector"]["matchExpressions"]
            assert expr == {"key": "gpu_type", "operator": "In", "values": types}
    assert len(scaled) + len(hpas) == len(pools)
    if scaling["mode"] == "keda":
        assert any(so["spec"]["minReplicaCount"] == 0 for so in scaled), "scale to zero"


def test_monitoring_objects_carry_deploys_rules_and_dashboards_unchanged(objects):
    rules = yaml.safe_load((REPO / "deploy" / "prometheus" / "rules.yml").read_text())
    (rule,) = by_kind(objects, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"] == rules
    dashboards = sorted((REPO / "deploy" / "grafana" / "dashboards").glob("*.json"))
    maps = [m for m in by_kind(objects, "ConfigMap") if m["metadata"]["labels"].get("grafana_dashboard")]
    assert len(maps) == len(dashboards)
    for m in maps:
        (name, text), = m["data"].items()
        assert m["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(text) == json.loads((REPO / "deploy/grafana/dashboards" / name).read_text())
    (sm,) = by_kind(objects, "ServiceMonitor")
    (pm,) = by_kind(objects, "PodMonitor")
    for obj, endpoints in ((sm, "endpoints"), (pm, "podMetricsEndpoints")):
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        (endpoint,) = obj["spec"][endpoints]
        assert endpoint["port"] == "metrics"
        jobs = [r for r in endpoint["relabelings"] if r["targetLabel"] == "job"]
        assert jobs and jobs[0]["replacement"].startswith("kforge-"), "the rules select job=kforge-*"
    assert pm["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] == "worker"
    services = by_kind(objects, "Service")
    selected = [s for s in services if all(
        s["metadata"]["labels"].get(e["key"]) in e["values"]
        for e in sm["spec"]["selector"]["matchExpressions"])]
    assert sorted(s["metadata"]["name"] for s in selected) == ["kf-kforge-coordinator",
                                                              "kf-kforge-gateway"]


def secret_values(objects):
    values = []
    for s in by_kind(objects, "Secret"):
        values += [base64.b64decode(v).decode() for v in s.get("data", {}).values()]
        values += list(s.get("stringData", {}).values())
    return values


def test_no_secret_value_is_rendered_outside_its_secret(scenario, objects):
    values = values_of(scenario)
    secrets = secret_values(objects)
    want = 0
    if values["postgresql"]["enabled"]:
        want += 2  # the chart's database password and URL
    if not values["tls"]["insecure"] and not values["tls"]["existingSecret"]:
        want += 3  # the chart's CA, certificate and key
    if not values["auth"]["existingSecret"]:
        want += 2  # the chart's bootstrap admin and gateway tokens
    if not values["auth"]["workerTokenSecret"]:
        want += 1  # the chart's worker token
    assert len(secrets) == want
    for obj in objects:
        if obj["kind"] == "Secret":
            continue
        text = yaml.safe_dump(obj)
        for value in secrets:
            assert value not in text, f"a Secret's value is in {obj['kind']} {obj['metadata']['name']}"
    for obj in objects:
        if obj["kind"] != "Secret":
            text = yaml.safe_dump(obj)
            assert not re.search(r"kf_[0-9a-f]{64}", text), f"a token in {obj['metadata']['name']}"
            assert not re.search(r"postgresql://[^@\s]*:[^@\s]*@", text), "a database password"
            assert "PRIVATE KEY" not in text
    # Every credential reaches a process as a file mounted from a Secret, never as a value.
    for obj in by_kind(objects, "Deployment") + by_kind(objects, "StatefulSet"):
        for c in containers(obj):
            for e in c.get("env", []):
                if re.search(r"DATABASE_URL|PASSWORD|API_KEY|TOKEN|TLS_KEY", e["name"]):
                    assert e["name"].endswith("_FILE") and "valueFrom" not in e, e
                    secret_file(obj, c, e["value"])


def test_database_url_comes_from_the_right_secret(scenario, objects):
    values = values_of(scenario)
    want = ({"name": "kf-kforge-database", "key": "url"} if values["postgresql"]["enabled"] else
            {"name": values["database"]["existingSecret"], "key": values["database"]["urlKey"]})
    for name in ("kf-kforge-coordinator", "kf-kforge-gateway"):
        d = named(objects, "Deployment", name)
        (c,) = containers(d)
        env = env_of(c)
        assert "KFORGE_DATABASE_URL" not in env
        name, key = secret_file(d, c, env["KFORGE_DATABASE_URL_FILE"]["value"])
        assert {"name": name, "key": key} == want
    assert bool(by_kind(objects, "StatefulSet")) == values["postgresql"]["enabled"]


def test_provider_keys_are_mounted_files_named_by_flags():
    objects = render("external-db-values.yaml")
    (c,) = containers(named(objects, "Deployment", "kf-kforge-gateway"))
    env = env_of(c)
    assert env["KFORGE_OPENAI_API_KEY_FILE"]["value"] == "/var/run/secrets/kforge/llm/openai"
    assert env["KFORGE_ANTHROPIC_API_KEY_FILE"]["value"] == "/var/run/secrets/kforge/llm/anthropic"
    assert env["KFORGE_OPENAI_REQUESTS_PER_MINUTE"]["value"] == "500"
    assert env["KFORGE_ANTHROPIC_MAX_CONCURRENCY"]["value"] == "4"
    spec = named(objects, "Deployment", "kf-kforge-gateway")["spec"]["template"]["spec"]
    (keys,) = [v for v in spec["volumes"] if v["name"] == "llm-keys"]
    assert keys["secret"]["secretName"] == "kforge-llm"
    assert keys["secret"]["items"] == [{"key": "openai-api-key", "path": "openai"},
                                       {"key": "anthropic-api-key", "path": "anthropic"}]
    defaults = render("defaults")
    (c,) = containers(named(defaults, "Deployment", "kf-kforge-gateway"))
    assert not [e for e in env_of(c) if "API_KEY" in e], "no key without a Secret"


TLS_FILES = {"KFORGE_TLS_CERT_FILE": "tls.crt", "KFORGE_TLS_KEY_FILE": "tls.key",
             "KFORGE_TLS_CA_FILE": "ca.crt"}


def test_every_deployment_serves_and_calls_tls_from_a_mounted_secret(scenario, objects):
    tls = values_of(scenario)["tls"]
    want = tls["existingSecret"] or "kf-kforge-tls"
    deployments = by_kind(objects, "Deployment")
    assert {component_of(d) for d in deployments} == {"coordinator", "gateway", "worker"}
    for d in deployments:
        (c,) = containers(d)
        env = env_of(c)
        if tls["insecure"]:
            assert env["KFORGE_INSECURE"]["value"] == "true"
            assert not set(TLS_FILES) & set(env)
            continue
        assert "KFORGE_INSECURE" not in env, "plaintext only when tls.insecure says so"
        for var, key in TLS_FILES.items():
            assert secret_file(d, c, env[var]["value"]) == (want, key), (d["metadata"]["name"], var)
    if not tls["insecure"] and not tls["existingSecret"]:
        assert named(objects, "Secret", "kf-kforge-tls")["type"] == "kubernetes.io/tls"


def test_the_charts_certificate_is_signed_by_its_ca_for_every_probe_and_service_name():
    data = secret_data(render("defaults"), "kf-kforge-tls")
    with tempfile.TemporaryDirectory() as tmp:
        for key in ("ca.crt", "tls.crt", "tls.key"):
            pathlib.Path(tmp, key).write_text(data[key])
        names = [f"kf-kforge-{c}{suffix}" for c in ("coordinator", "gateway", "worker")
                 for suffix in ("", ".gpu", ".gpu.svc", ".gpu.svc.cluster.local")]
        for name in names:
            run = subprocess.run(["openssl", "verify", "-CAfile", f"{tmp}/ca.crt",
                                  "-verify_hostname", name, f"{tmp}/tls.crt"],
                                 capture_output=True, text=True)
            assert run.returncode == 0, (name, run.stdout, run.stderr)
        wrong = subprocess.run(["openssl", "verify", "-CAfile", f"{tmp}/ca.crt", "-verify_hostname",
                                "kf-kforge-postgresql", f"{tmp}/tls.crt"], capture_output=True)
        assert wrong.returncode != 0
        key_of = lambda *args: subprocess.run(["openssl", *args], capture_output=True,
                                              check=True).stdout
        assert (key_of("pkey", "-in", f"{tmp}/tls.key", "-pubout") ==
                key_of("x509", "-in", f"{tmp}/tls.crt", "-noout", "-pubkey")), "key matches"


def test_tokens_are_files_from_secrets_and_the_gateway_shares_the_coordinators():
    for scenario in SCENARIOS:
        objects = render(scenario)
        auth = values_of(scenario)["auth"]
        secret = auth["existingSecret"] or "kf-kforge-auth"
        workers = auth["workerTokenSecret"] or "kf-kforge-worker-token"
        coordinator = deployment_of(objects, "coordinator")
        (c,) = containers(coordinator)
        env = env_of(c)
        assert secret_file(coordinator, c, env["KFORGE_BOOTSTRAP_ADMIN_TOKEN_FILE"]["value"]) == (
            secret, "bootstrap-admin-token")
        assert secret_file(coordinator, c, env["KFORGE_GATEWAY_TOKEN_FILE"]["value"]) == (
            secret, "gateway-token")
        assert "KFORGE_ALLOW_UNAUTHENTICATED" not in env
        gateway = deployment_of(objects, "gateway")
        (g,) = containers(gateway)
        assert secret_file(gateway, g, env_of(g)["KFORGE_CALLER_TOKEN_FILE"]["value"]) == (
            secret, "gateway-token"), "the token the coordinators call with"
        assert "KFORGE_ALLOW_UNAUTHENTICATED" not in env_of(g)
        # The workers call with the token the coordinators store with the worker role at
        # startup (--bootstrap_worker_token_file): no token is made by hand after install.
        assert secret_file(coordinator, c, env["KFORGE_BOOTSTRAP_WORKER_TOKEN_FILE"]["value"]) == (
            workers, "worker-token")
        pools = [d for d in by_kind(objects, "Deployment") if component_of(d) == "worker"]
        assert pools
        for d in pools:
            (w,) = containers(d)
            assert secret_file(d, w, env_of(w)["KFORGE_TOKEN_FILE"]["value"]) == (
                workers, "worker-token")
            mounted = {v["secret"]["secretName"] for v in d["spec"]["template"]["spec"]["volumes"]
                       if "secret" in v}
            assert secret not in mounted, "a worker pod does not see the admin or gateway token"
        if not auth["existingSecret"]:
            tokens = secret_data(objects, "kf-kforge-auth")
            assert set(tokens) == {"bootstrap-admin-token", "gateway-token"}
            for token in tokens.values():  # what --bootstrap_admin_token_file accepts
                assert re.fullmatch(r"kf_[0-9a-f]{64}", token), token
            assert len(set(tokens.values())) == 2
        made = [s for s in by_kind(objects, "Secret") if s["metadata"]["name"] == workers]
        if auth["workerTokenSecret"]:
            assert not made, "the operator's Secret is not rendered"
        else:
            (worker_token,) = secret_data(objects, workers).values()
            assert re.fullmatch(r"kf_[0-9a-f]{64}", worker_token), worker_token
            if not auth["existingSecret"]:
                assert worker_token not in tokens.values(), "a token of its own"


def test_the_coordinator_accepts_every_pools_gpu_type(scenario, objects):
    (c,) = containers(deployment_of(objects, "coordinator"))
    listed = env_of(c)["KFORGE_GPU_POOLS"]["value"].split(",")
    pools = pools_of(scenario)
    assert sorted(listed) == sorted({p["gpuType"] for p in pools})
    # including pools that autoscaling may have at zero, whose workers have not registered
    assert any(p["minReplicas"] == 0 for p in pools)


def test_the_charts_postgresql_requires_scram_and_reads_its_password_from_a_file():
    objects = render("defaults")
    sts = named(objects, "StatefulSet", "kf-kforge-postgresql")
    (c,) = containers(sts)
    env = env_of(c)
    assert "POSTGRES_PASSWORD" not in env
    assert secret_file(sts, c, env["POSTGRES_PASSWORD_FILE"]["value"]) == (
        "kf-kforge-database", "password")
    assert env["POSTGRES_HOST_AUTH_METHOD"]["value"] == "scram-sha-256"
    assert set(env["POSTGRES_INITDB_ARGS"]["value"].split()) == {
        "--auth-host=scram-sha-256", "--auth-local=scram-sha-256"}
    data = secret_data(objects, "kf-kforge-database")
    assert data["url"] == f"postgresql://kforge:{data['password']}@kf-kforge-postgresql:5432/kforge"


def test_the_images_have_the_cli_the_probes_run():
    for component in ("coordinator", "gateway"):
        text = (REPO / "docker" / f"{component}.Dockerfile").read_text()
        (copy,) = [l for l in text.splitlines() if l.startswith("COPY --from=build")]
        assert "/src/kforge/build/cli/kforge" in copy.split() and copy.endswith(" /usr/local/bin/")
    worker = (REPO / "docker" / "worker.Dockerfile").read_text()
    assert "FROM ${BUILD_IMAGE}\n" in worker, "the worker image is the build tree itself"


@pytest.mark.parametrize("args, message", [
    (["--set", "workerDefaults.gpusPerPod=0"], "at '/workerDefaults/gpusPerPod': minimum: got 0, want 1"),
    (["--set", "coordinator.replica=3"], "at '/coordinator': additional properties 'replica' not allowed"),
    (["--set", "gateway.openaiApiKey=sk-123"], "additional properties 'openaiApiKey' not allowed"),
    (["--set", "autoscaling.mode=vpa"], "at '/autoscaling/mode': value must be one of 'keda', 'hpa'"),
    (["--set", "postgresql.enabled=false"], "at '/database/existingSecret': minLength: got 0, want 1"),
    (["--set", "tls.insecure=true", "--set", "tls.existingSecret=kforge-tls"],
     "at '/tls/existingSecret': maxLength: got 10, want 0"),
    (["--set", "tls.enabled=true"], "at '/tls': additional properties 'enabled' not allowed"),
    (["--set", "auth.adminToken=kf_00"], "at '/auth': additional properties 'adminToken' not allowed"),
    (["--set", "workerPools[0].name=H100"], "at '/workerPools/0': missing properties 'gpuProduct', 'gpuType'"),
    (["--set-json", 'workerPools=[{"name":"Big_Pool","gpuProduct":"NVIDIA-H100","gpuType":"H100"}]'],
     "at '/workerPools/0/name'"),
    (["--set", "workerDefaults.terminationGracePeriodSeconds=300"],
     "terminationGracePeriodSeconds (300) must exceed evaluationLimitSeconds (540)"),
    (["--set-json", 'workerPools=[{"name":"a","gpuProduct":"X","gpuType":"A"},'
                    '{"name":"a","gpuProduct":"Y","gpuType":"B"}]'],
     'workerPools: the name "a" is used twice'),
    (["--set", "workerDefaults.minReplicas=5"], "minReplicas (5) is above maxReplicas (4)"),
    (["--kube-version", "1.29.0"], "chart requires kubeVersion: >=1.30.0-0"),
])
def test_wrong_values_fail_with_a_message(args, message):
    run = helm("template", "kf", str(CHART), *args, check=False)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr
