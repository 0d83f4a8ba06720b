"""The deployment files: deploy/Dockerfile, deploy/docker-compose.yml and deploy/k8s/*.yaml.

Two kinds of test. The structural ones read the files with PyYAML and check the facts the app relies
on (the broker address, one data dir per worker on a persistent volume, the group instance id from the
pod name, probes and scrape port on the web port, ...). The validation ones run the checks of
deploy/validate-manifests (yamllint, strict Kubernetes schemas, kustomize, hadolint, `docker compose
config`) where the tool is installed, and skip with the reason otherwise. Nothing here needs Docker or
a cluster.
"""

from __future__ import annotations

import copy
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML reads the deployment files: pip install pyyaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
NEARDUP_IMAGE_SERVICES = ("topics", "worker", "worker-pinned", "cli")
WORKER_SERVICES = ("worker", "worker-pinned")


def _validator() -> ModuleType:
    """deploy/validate-manifests (a script without .py) as a module."""
    name = "validate_manifests"
    if name not in sys.modules:
        loader = importlib.machinery.SourceFileLoader(name, str(DEPLOY / "validate-manifests"))
        spec = importlib.util.spec_from_loader(name, loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def v() -> ModuleType:
    return _validator()


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def k8s() -> dict[str, dict[str, Any]]:
    """Kind -> the one document of that kind in deploy/k8s (the kustomization aside)."""
    docs: dict[str, dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is None:
                continue
            assert doc["kind"] not in docs, f"two {doc['kind']} documents"
            docs[doc["kind"]] = doc
    return docs


def env_map(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def worker_container(k8s: dict[str, dict[str, Any]]) -> dict[str, Any]:
    containers = k8s["StatefulSet"]["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == val for k, val in selector.items())


# ---- docker compose --------------------------------------------------------------------------------

def test_compose_kafka_is_apache_kafka_39_single_node_kraft(compose: dict[str, Any]) -> None:
    kafka = compose["services"]["kafka"]
    assert re.fullmatch(r"apache/kafka:3\.9\.\d+", kafka["image"])
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    assert "CLUSTER_ID" in env
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == 1
    # its log dirs on a named volume
    assert f"kafka-data:{env['KAFKA_LOG_DIRS']}" in kafka["volumes"]
    assert "kafka-data" in compose["volumes"]
    assert kafka["healthcheck"]["test"]


def test_compose_neardup_services_use_the_kafka_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    advertised = services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(",")
    for name in NEARDUP_IMAGE_SERVICES:
        service = services[name]
        broker = service["environment"]["NEARDUP_BROKER"]
        host, port = broker.rsplit(":", 1)
        assert host == "kafka" and host in services, name
        assert f"PLAINTEXT://{broker}" in advertised, f"{name}: {broker} is not an advertised listener"
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy", name


def test_compose_image_is_built_from_the_dockerfile(compose: dict[str, Any]) -> None:
    for name in NEARDUP_IMAGE_SERVICES:
        build = compose["services"][name]["build"]
        assert (DEPLOY / build["context"]).resolve() == ROOT, name
        assert build["dockerfile"] == "deploy/Dockerfile", name
    images = {compose["services"][name]["image"] for name in NEARDUP_IMAGE_SERVICES}
    assert len(images) == 1


def test_compose_topics_service_runs_once_before_the_workers(compose: dict[str, Any]) -> None:
    services = compose["services"]
    topics = services["topics"]
    assert topics["command"] == ["topics", "create"]
    assert topics["restart"] == "no"
    partitions = re.fullmatch(r"\$\{NEARDUP_PARTITIONS:-(\d+)\}", topics["environment"]["NEARDUP_PARTITIONS"])
    assert partitions and int(partitions.group(1)) > 0
    for name in WORKER_SERVICES:
        worker = services[name]
        assert worker["depends_on"]["topics"]["condition"] == "service_completed_successfully", name
        # a worker reads the partition count from the broker, and so waits for the topics
        assert "NEARDUP_PARTITIONS" not in worker["environment"], name


def test_compose_each_worker_has_its_own_persistent_data_dir(compose: dict[str, Any]) -> None:
    services = compose["services"]
    sources = {}
    for name in WORKER_SERVICES:
        worker = services[name]
        data_dir = worker["environment"]["NEARDUP_DATA_DIR"]
        mounts = [m.split(":") for m in worker["volumes"]]
        [source] = [src for src, target, *_ in mounts if target == data_dir]
        assert source in compose["volumes"], f"{name}: {source} is not a named volume"
        sources[name] = source
        assert worker["stop_grace_period"], name
    assert len(set(sources.values())) == len(sources), "two worker services share a volume"
    # the scalable service: replicas share the volume, each under its own hostname
    entry = " ".join(services["worker"]["entrypoint"])
    hostname = r"\$\$\(cat /proc/sys/kernel/hostname\)"
    assert re.search(r'export NEARDUP_DATA_DIR="\$\$\{NEARDUP_DATA_DIR\}/' + hostname + '"', entry)
    assert entry.endswith('&& mkdir -p "$${NEARDUP_DATA_DIR}" && exec neardup worker')
    assert "container_name" not in services["worker"] and "hostname" not in services["worker"]
    # the pinned one: a fixed identity, fit for static membership
    pinned = services["worker-pinned"]
    assert pinned["environment"]["NEARDUP_GROUP_INSTANCE_ID"] == pinned["hostname"]
    assert "entrypoint" not in pinned  # the image's `neardup worker`


# ---- Dockerfile ------------------------------------------------------------------------------------

def test_dockerfile(compose: dict[str, Any], k8s: dict[str, dict[str, Any]]) -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim$", text, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\}$", text, re.M)
    assert "pip install ." in text
    assert re.search(r'^ENTRYPOINT \["neardup"\]$', text, re.M)
    assert re.search(r'^CMD \["worker"\]$', text, re.M)
    assert re.search(r"^USER 10001:10001$", text, re.M)  # numeric: runAsNonRoot can check it
    assert re.search(r"^EXPOSE 6066$", text, re.M)
    data_dir = re.search(r"NEARDUP_DATA_DIR=(\S+)", text)
    assert data_dir
    assert compose["services"]["worker"]["environment"]["NEARDUP_DATA_DIR"] == data_dir.group(1)
    assert env_map(worker_container(k8s))["NEARDUP_DATA_DIR"] == data_dir.group(1)
    # the image runs as uid 10001, which the pod security context must match to own the volume
    pod = k8s["StatefulSet"]["spec"]["template"]["spec"]
    assert "--uid 10001" in text and pod["securityContext"]["fsGroup"] == 10001


# ---- Kubernetes ------------------------------------------------------------------------------------

def test_k8s_has_the_expected_objects_without_namespace(k8s: dict[str, dict[str, Any]]) -> None:
    assert set(k8s) == {"ConfigMap", "Job", "StatefulSet", "Service", "PodDisruptionBudget"}
    for doc in k8s.values():
        assert "namespace" not in doc["metadata"], doc["kind"]


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_statefulset_keeps_rocksdb_on_a_claim_mounted_at_the_data_dir(k8s: dict[str, dict[str, Any]]) -> None:
    spec = k8s["StatefulSet"]["spec"]
    [claim] = spec["volumeClaimTemplates"]
    name = claim["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    container = worker_container(k8s)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[name] == env_map(container)["NEARDUP_DATA_DIR"]
    # no pod volume of the same name would shadow the claim
    assert name not in {vol["name"] for vol in spec["template"]["spec"].get("volumes", [])}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}


def test_group_instance_id_is_the_pod_name(k8s: dict[str, dict[str, Any]]) -> None:
    env = worker_container(k8s)["env"]
    names = [e["name"] for e in env]
    pod_name = env[names.index("POD_NAME")]
    assert pod_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    instance = env[names.index("NEARDUP_GROUP_INSTANCE_ID")]
    assert instance["value"] == "$(POD_NAME)"
    # $(VAR) expands only variables defined earlier in the list
    assert names.index("POD_NAME") < names.index("NEARDUP_GROUP_INSTANCE_ID")


def test_headless_service_and_pdb_select_the_workers(k8s: dict[str, dict[str, Any]]) -> None:
    sts = k8s["StatefulSet"]
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    assert selects(sts["spec"]["selector"]["matchLabels"], pod_labels)
    service = k8s["Service"]
    assert sts["spec"]["serviceName"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert selects(service["spec"]["selector"], pod_labels)
    port_names = {p["name"] for p in worker_container(k8s)["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= port_names
    pdb = k8s["PodDisruptionBudget"]["spec"]
    assert selects(pdb["selector"]["matchLabels"], pod_labels)
    assert pdb["maxUnavailable"] == 1
    # the Job's pods are not workers
    job_labels = k8s["Job"]["spec"]["template"]["metadata"]["labels"]
    assert not selects(sts["spec"]["selector"]["matchLabels"], job_labels)
    assert not selects(service["spec"]["selector"], job_labels)


def test_probes_and_prometheus_scrape_use_the_web_port(k8s: dict[str, dict[str, Any]]) -> None:
    container = worker_container(k8s)
    web_port = int(env_map(container)["NEARDUP_WEB_PORT"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    paths = {"startupProbe": "/live", "readinessProbe": "/health", "livenessProbe": "/live"}  # /health: ready
    for probe, path in paths.items():
        get = container[probe]["httpGet"]
        assert get["path"] == path, probe
        assert ports[get["port"]] == web_port, probe
    annotations = k8s["StatefulSet"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(web_port)
    assert annotations["prometheus.io/path"] == "/metrics"


def test_no_service_links_in_the_environment(k8s: dict[str, dict[str, Any]]) -> None:
    # Faust reads WEB_PORT, WEB_HOST, ... from the environment, over the app's own settings
    for kind in ("StatefulSet", "Job"):
        assert k8s[kind]["spec"]["template"]["spec"]["enableServiceLinks"] is False, kind


def test_worker_shutdown_and_resources(k8s: dict[str, dict[str, Any]]) -> None:
    pod = k8s["StatefulSet"]["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] >= 60
    resources = worker_container(k8s)["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "2"
    assert resources["requests"]["memory"] == resources["limits"]["memory"]
    # os.cpu_count() in a container is the node's: the pool size must come from the settings
    assert int(k8s["ConfigMap"]["data"]["NEARDUP_EXTRACT_PROCESSES"]) <= 2


def test_configmap_and_job(k8s: dict[str, dict[str, Any]]) -> None:
    config = k8s["ConfigMap"]
    data = config["data"]
    assert all(isinstance(value, str) for value in data.values()), "ConfigMap values must be strings"
    assert all(key.startswith("NEARDUP_") for key in data)
    assert data["NEARDUP_BROKER"]
    assert "NEARDUP_PARTITIONS" not in data, "workers read the partition count from the broker"
    # settings that must match the pod spec live in the pod spec
    assert "NEARDUP_DATA_DIR" not in data and "NEARDUP_WEB_PORT" not in data
    job = k8s["Job"]["spec"]
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] in ("OnFailure", "Never")
    [container] = pod["containers"]
    assert container["args"] == ["topics", "create"]
    partitions = int(env_map(container)["NEARDUP_PARTITIONS"])
    assert partitions >= k8s["StatefulSet"]["spec"]["replicas"]
    for c in (container, worker_container(k8s)):
        refs = [src["configMapRef"]["name"] for src in c["envFrom"] if "configMapRef" in src]
        assert refs == [config["metadata"]["name"]]
        assert c["image"] == worker_container(k8s)["image"]


# ---- validation with the tools ---------------------------------------------------------------------

def test_yamllint_finds_no_problem(v: ModuleType) -> None:
    pytest.importorskip("yamllint", reason="yamllint is not installed: pip install yamllint")
    assert v.lint_problems(v.yaml_files()) == []


def test_yamllint_catches_a_duplicate_key(v: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("yamllint", reason="yamllint is not installed: pip install yamllint")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\na: 2\n")
    assert any("key-duplicates" in p for p in v.lint_problems([bad]))


def test_k8s_manifests_match_the_schemas_strictly(v: ModuleType) -> None:
    pytest.importorskip("kubernetes_validate",
                        reason="kubernetes-validate is not installed: pip install kubernetes-validate")
    docs = v.manifest_documents()
    assert len(docs) == 5
    assert v.k8s_schema_errors(docs) == []


def test_k8s_schema_check_rejects_bad_fields(v: ModuleType, k8s: dict[str, dict[str, Any]]) -> None:
    pytest.importorskip("kubernetes_validate",
                        reason="kubernetes-validate is not installed: pip install kubernetes-validate")
    misspelt = copy.deepcopy(k8s["StatefulSet"])
    misspelt["spec"]["volumeClaimTemplate"] = misspelt["spec"].pop("volumeClaimTemplates")
    wrong_type = copy.deepcopy(k8s["StatefulSet"])
    wrong_type["spec"]["replicas"] = "3"
    for doc in (misspelt, wrong_type):
        assert v.k8s_schema_errors([("test", doc)], ["1.29"])


def test_kustomization_renders_the_same_documents(v: ModuleType) -> None:
    cmd = v.kustomize_command()
    if cmd is None:
        pytest.skip("neither kubectl nor kustomize is on PATH")
    rendered, error = v.kustomize_render(cmd)
    assert rendered is not None, error
    assert sorted(v.describe(d) for d in rendered) == sorted(v.describe(d) for _, d in v.manifest_documents())


def test_hadolint_finds_no_problem_in_the_dockerfile(v: ModuleType, tmp_path: Path) -> None:
    cmd = v.hadolint_command()
    if cmd is None:
        pytest.skip(f"hadolint is not installed: pip install {v.HADOLINT_TOOL}")
    assert v.hadolint_problems(cmd) == []
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /src && pip install .\n")
    assert any("DL3007" in p for p in v.hadolint_problems(cmd, bad))  # the `latest` tag


def test_docker_compose_config_accepts_the_file(v: ModuleType) -> None:
    found = v.compose_cli()
    if found is None:
        pytest.skip("no docker compose v2 CLI: install the compose plugin, or run deploy/validate-manifests "
                    "once, which builds one from its Go module into its tools dir")
    cli, _version = found
    assert v.compose_config_errors(cli) == []


def test_docker_compose_config_rejects_an_unknown_key(v: ModuleType, tmp_path: Path) -> None:
    found = v.compose_cli()
    if found is None:
        pytest.skip("no docker compose v2 CLI (see test_docker_compose_config_accepts_the_file)")
    # into the x-worker block, which the worker services merge
    text = (DEPLOY / "docker-compose.yml").read_text()
    text = text.replace("  init: true\n", "  init: true\n  bogus: 1\n", 1)
    bad = tmp_path / "docker-compose.yml"
    bad.write_text(text)
    errors = v.compose_config_errors(found[0], bad)
    assert errors and "bogus" in errors[0]
