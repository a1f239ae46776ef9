"""The Debian packages docker/coordinator.Dockerfile and docker/gateway.Dockerfile install
(docker/runtime-packages.txt) provide every shared library the built binaries load.

Images cannot be built on these machines (no registry is reachable), so this checks what the
runtime stages rely on: each library `ldd` resolves for build/coordinator/kforge-coordinator
and build/llm_gateway/kforge-gateway belongs to a listed package or to one of their
dependencies (the Depends and Pre-Depends of the installed packages, followed recursively).
KFORGE_BUILD_DIR names the build tree (default build/).
"""
import os
import pathlib
import re
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("KFORGE_BUILD_DIR", REPO / "build"))
BINARIES = {"coordinator": "coordinator/kforge-coordinator",
            "gateway": "llm_gateway/kforge-gateway"}
# Both images also carry the CLI: with TLS the Helm chart's probes run `kforge health`.
CLI = "cli/kforge"


def listed_packages():
    lines = (REPO / "docker" / "runtime-packages.txt").read_text().splitlines()
    return {name: set(rest.split()) for name, rest in (l.split(": ", 1) for l in lines if l)}


def installed_depends():
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n"],
                         capture_output=True, text=True, check=True).stdout
    graph = {}
    for line in out.splitlines():
        package, depends = line.split("\t", 1)
        names = set()
        for alternative in depends.split(","):
            for option in alternative.split("|"):
                if option.strip():
                    names.add(re.split(r"[\s:(]", option.strip())[0])
        graph[package] = names
    return graph


def closure(packages, graph):
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += graph.get(p, ())
    return seen


def library_packages(binary):
    """{library path: owning package or None}, by one dpkg -S over every spelling of each path
    (Debian 12 merges /lib into /usr/lib; dpkg knows each file under one of them)."""
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    spellings = {}
    for path in re.findall(r"=> (/\S+)", ldd):
        real = os.path.realpath(path)
        spellings[path] = {path, "/usr" + path, real, "/usr" + real}
    found = subprocess.run(["dpkg", "-S", *set().union(*spellings.values())],
                           capture_output=True, text=True).stdout
    owner_of = {}
    for line in found.splitlines():
        package, path = line.split(": ", 1)
        owner_of[path] = package.split(",")[0].split(":")[0]
    return {path: next((owner_of[s] for s in sorted(names) if s in owner_of), None)
            for path, names in spellings.items()}


@pytest.mark.parametrize("service, binary", [(s, b) for s, b in sorted(BINARIES.items())] +
                         [(s, CLI) for s in sorted(BINARIES)])
def test_runtime_packages_provide_every_library(service, binary):
    binary = BUILD / binary
    assert binary.exists(), f"{binary} is not built"
    listed = listed_packages()[service]
    provided = closure(listed, installed_depends())
    owners = library_packages(binary)
    assert any("libgrpc" in p for p in owners), "ldd found the binary's libraries"
    missing = {lib: pkg for lib, pkg in owners.items() if pkg not in provided}
    assert not missing, f"{service}: libraries from packages not in runtime-packages.txt: {missing}"


def test_the_coordinator_image_has_the_python_that_compile_checks_tasks():
    """The coordinator runs --task_python (default python3) to compile every submitted task
    and refuses to start when it does not work: the image must ship it."""
    main = (REPO / "coordinator" / "main.cc").read_text()
    python = re.search(r'ABSL_FLAG\(std::string, task_python, "([^"]+)"', main).group(1)
    assert python == "python3"
    found = subprocess.run(["dpkg", "-S", f"/usr/bin/{python}"], capture_output=True, text=True,
                           check=True).stdout
    owner = found.split(":", 1)[0]
    assert owner in closure(listed_packages()["coordinator"], installed_depends()), owner
    assert owner not in closure(listed_packages()["gateway"], installed_depends()), \
        "the check means something: the gateway's list does not bring python3"
