"""The readiness Lambda: its judgement of realistic Deployment/IEC states (ready, progressing,
failed with the pod's reason), run through the real request path against a loopback HTTPS
stand-in of the Kubernetes API; its EKS token; and its asset (self-contained, stdlib + the
one rules module the kinds registry also reads)."""

from __future__ import annotations

import ast
import base64
import json
import shutil
import ssl
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.aws import _readiness_lambda as handler
from mlcc_constructs.core.serving.kinds import _readiness as rules
from mlcc_constructs.core.serving.kinds.registry import kind_named, readiness
from tests._endpoint_env import make_certificate
from tests._readiness_fixtures import (
    CONFIG_ERROR,
    CRASH_LOOP,
    DEADLINE_DEPLOYMENT,
    IEC_FAILED,
    IMAGE_PULL,
    NAME,
    NAMESPACE,
    PROGRESSING_DEPLOYMENT,
    READY_DEPLOYMENT,
    UNSCHEDULABLE,
    deployment,
    event,
    iec,
    pod,
)

DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"
IEC_PATH = (
    f"/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/{NAMESPACE}/"
    f"inferenceendpointconfigs/{NAME}"
)
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
EVENTS = f"/api/v1/namespaces/{NAMESPACE}/events"
STARTED = 1796119200.0  # 2026-12-01T10:00:00Z, the fixtures' creation time
MINUTE = 60.0


class KubeStandIn:
    """The Kubernetes API on 127.0.0.1 over HTTPS: ``routes`` maps a path to (status, JSON);
    ``seen`` records (path, query, Authorization) of every request."""

    def __init__(self, folder: Path) -> None:
        cert, key = make_certificate(folder, "kube")
        self.ca = base64.b64encode(cert.read_bytes()).decode()
        self.routes: dict[str, tuple[int, Any]] = {}
        self.seen: list[tuple[str, dict[str, list[str]], str]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parsed = urllib.parse.urlsplit(self.path)
                stand_in.seen.append(
                    (
                        parsed.path,
                        urllib.parse.parse_qs(parsed.query),
                        self.headers.get("Authorization", ""),
                    )
                )
                status, document = stand_in.routes.get(parsed.path, (404, {"kind": "Status"}))
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.endpoint = f"https://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def api(self) -> handler.KubernetesApi:
        return handler.KubernetesApi(self.endpoint, self.ca, lambda: "k8s-aws-v1.test-token")


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeStandIn]:
    stand_in = KubeStandIn(tmp_path_factory.mktemp("kube"))
    yield stand_in
    stand_in.close()


def _props(kind: str = "Deployment", deadline: int = 1800) -> dict[str, Any]:
    return {
        "Kind": kind,
        "Namespace": NAMESPACE,
        "Name": NAME,
        "Path": DEPLOYMENT_PATH if kind == "Deployment" else IEC_PATH,
        "DeadlineSeconds": str(deadline),
        "ClusterName": "acme",
    }


def _serve(
    kube: KubeStandIn, workload: tuple[str, Any], pods: list[Any], events: list[Any]
) -> None:
    kube.routes = {
        workload[0]: (200, workload[1]),
        PODS: (200, {"kind": "PodList", "items": pods}),
        EVENTS: (200, {"kind": "EventList", "items": events}),
    }
    kube.seen.clear()


def _judge(kube: KubeStandIn, kind: str = "Deployment", *, waited: float = MINUTE) -> Any:
    try:
        return handler.judge(_props(kind), kube.api(), now=STARTED + waited, started=STARTED)
    except handler.NotReady as failed:
        return f"NotReady: {failed}"


POD_NAME = f"{NAME}-5d9c7b8f4-x2k7q"
CASES = [
    # (id, workload, pods, events, waited, expected)
    ("ready", READY_DEPLOYMENT, [pod(ready=True)], [], MINUTE,
     {"IsComplete": True, "Data": {"Readiness": "1/1 replicas available, 1 updated"}}),
    ("loading-weights", PROGRESSING_DEPLOYMENT, [pod()], [], 10 * MINUTE, {"IsComplete": False}),
    # An old ready state does not count: generation 2 is not observed yet.
    ("update-not-observed", deployment(generation=2, observed=1, replicas=1, updatedReplicas=1,
                                       availableReplicas=1), [pod(ready=True)], [], MINUTE,
     {"IsComplete": False}),
    # A pull error heals sometimes (an image pushed late): waited out for 5 minutes...
    ("image-pull-early", PROGRESSING_DEPLOYMENT, [pod(waiting=IMAGE_PULL, created="2026-12-01T10:"
                                                  "58:00Z")], [], 60 * MINUTE - 1,
     "NotReady: Deployment/llama-vllm not ready after 1800 s (0/1 replicas available, 1 updated)"
     f"; Pod/{POD_NAME}: container engine: ImagePullBackOff: {IMAGE_PULL[1]}"),
    ("image-pull-young", PROGRESSING_DEPLOYMENT, [pod(waiting=IMAGE_PULL)], [], 4 * MINUTE,
     {"IsComplete": False}),
    # ... then it fails the deploy with the pod's words.
    ("image-pull", PROGRESSING_DEPLOYMENT, [pod(waiting=IMAGE_PULL)], [], 6 * MINUTE,
     "NotReady: Deployment/llama-vllm cannot become ready (0/1 replicas available, 1 updated); "
     f"Pod/{POD_NAME}: container engine: ImagePullBackOff: {IMAGE_PULL[1]}"),
    ("crash-loop", PROGRESSING_DEPLOYMENT, [pod(waiting=CRASH_LOOP, restarts=3)], [], 2 * MINUTE,
     "NotReady: Deployment/llama-vllm cannot become ready (0/1 replicas available, 1 updated); "
     f"Pod/{POD_NAME}: container engine: CrashLoopBackOff: {CRASH_LOOP[1]}"),
    ("crash-once", PROGRESSING_DEPLOYMENT, [pod(waiting=CRASH_LOOP, restarts=1)], [], 2 * MINUTE,
     {"IsComplete": False}),
    ("missing-secret", PROGRESSING_DEPLOYMENT, [pod(waiting=CONFIG_ERROR)], [], 6 * MINUTE,
     "NotReady: Deployment/llama-vllm cannot become ready (0/1 replicas available, 1 updated); "
     f"Pod/{POD_NAME}: container engine: CreateContainerConfigError: {CONFIG_ERROR[1]}"),
    # No GPU node (yet): Karpenter may still launch one, so it waits to the deadline, then
    # says why with the scheduler's last Warning.
    ("unschedulable-waits", PROGRESSING_DEPLOYMENT, [pod(scheduled=UNSCHEDULABLE)],
     [event("Pod", POD_NAME, "FailedScheduling", UNSCHEDULABLE[1], "2026-12-01T10:20:00Z")],
     20 * MINUTE, {"IsComplete": False}),
    ("unschedulable-deadline", PROGRESSING_DEPLOYMENT, [pod(scheduled=UNSCHEDULABLE)],
     [event("Pod", POD_NAME, "FailedScheduling", "0/1 nodes are available: old", "2026-12-01T"
            "10:01:00Z"),
      event("Pod", POD_NAME, "FailedScheduling", UNSCHEDULABLE[1], "2026-12-01T10:29:00Z"),
      event("Pod", "someone-else", "BackOff", "not ours", "2026-12-01T10:29:30Z")],
     30 * MINUTE,
     "NotReady: Deployment/llama-vllm not ready after 1800 s (0/1 replicas available, 1 updated)"
     f"; Pod/{POD_NAME}: FailedScheduling: {UNSCHEDULABLE[1]}"),
    # The ReplicaSet cannot create pods (quota, admission): its FailedCreate is the reason.
    ("replicaset-failed-create", DEADLINE_DEPLOYMENT, [],
     [event("ReplicaSet", f"{NAME}-5d9c7b8f4", "FailedCreate", 'pods "x" is forbidden: exceeded '
            "quota", "2026-12-01T10:10:00Z")], 30 * MINUTE,
     f'NotReady: Deployment/llama-vllm failed: ReplicaSet "{NAME}-5d9c7b8f4" has timed out '
     f"progressing.; ReplicaSet/{NAME}-5d9c7b8f4: FailedCreate: pods \"x\" is forbidden: exceeded "
     "quota"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "pods", "events", "waited", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_handler_judges_a_deployment_through_the_api(
    kube: KubeStandIn,
    workload: Any,
    pods: list[Any],
    events: list[Any],
    waited: float,
    expected: Any,
) -> None:
    _serve(kube, (DEPLOYMENT_PATH, workload), pods, events)
    assert _judge(kube, waited=waited) == expected
    # The same rule as mlcc endpoint check (the kinds registry): one source of truth.
    state = readiness(workload, kind_named("Deployment")).state
    assert (state == "ready") is (expected == CASES[0][5])


def test_the_request_path(kube: KubeStandIn) -> None:
    _serve(kube, (DEPLOYMENT_PATH, PROGRESSING_DEPLOYMENT), [pod()], [])
    assert _judge(kube) == {"IsComplete": False}
    paths = [(path, query) for path, query, _ in kube.seen]
    assert paths == [
        (DEPLOYMENT_PATH, {}),
        # The Deployment's own selector finds its pods; only Warning events are listed.
        (PODS, {"labelSelector": ["app.kubernetes.io/instance=llama-vllm,app.kubernetes.io/name="
                                  "llama-vllm"]}),
        (EVENTS, {"fieldSelector": ["type=Warning"], "limit": ["200"]}),
    ]  # fmt: skip
    assert {auth for _, _, auth in kube.seen} == {"Bearer k8s-aws-v1.test-token"}


IEC_CASES = [
    ("complete", iec("DeploymentComplete"), [], {"IsComplete": True,
                                                 "Data": {"Readiness": "DeploymentComplete"}}),
    ("in-progress", iec("DeploymentInProgress", selector=f"app={NAME}"), [pod()],
     {"IsComplete": False}),
    ("update-not-observed", iec("DeploymentComplete", generation=2, observed=1), [],
     {"IsComplete": False}),
    ("failed", IEC_FAILED, [pod(waiting=CRASH_LOOP, restarts=1)],
     "NotReady: InferenceEndpointConfig/llama-vllm failed: DeploymentReady: DeploymentFailed: "
     "Deployment did not become ready within maxDeployTimeInSeconds (1638); "
     f"Pod/{POD_NAME}: container engine: CrashLoopBackOff: {CRASH_LOOP[1]}"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("workload", "pods", "expected"), [c[1:] for c in IEC_CASES], ids=[c[0] for c in IEC_CASES]
)
def test_the_handler_judges_an_iec_through_the_api(
    kube: KubeStandIn, workload: Any, pods: list[Any], expected: Any
) -> None:
    _serve(kube, (IEC_PATH, workload), pods, [])
    assert _judge(kube, "InferenceEndpointConfig") == expected
    selectors = [q.get("labelSelector") for p, q, _ in kube.seen if p == PODS]
    # The operator's status.selector names the IEC's pods (none before it reports one).
    assert selectors == ([[f"app={NAME}"]] if workload["status"].get("selector") else [])


def test_api_errors_are_waited_out_then_fail_the_deploy(kube: KubeStandIn) -> None:
    kube.routes = {DEPLOYMENT_PATH: (403, {"kind": "Status", "reason": "Forbidden"})}
    assert _judge(kube, waited=handler.API_GRACE_S - 1) == {"IsComplete": False}
    failed = _judge(kube, waited=handler.API_GRACE_S)
    assert failed.startswith(
        "NotReady: Deployment/llama-vllm: cannot read it from the cluster: GET "
        f"{DEPLOYMENT_PATH}: 403 "
    )


def test_a_missing_workload_waits_then_says_not_found(kube: KubeStandIn) -> None:
    kube.routes = {}
    assert _judge(kube, waited=MINUTE) == {"IsComplete": False}
    assert _judge(kube, waited=1800) == (
        "NotReady: Deployment/llama-vllm not ready after 1800 s (not found): no reason"
    )


def test_an_unknown_ca_is_refused(kube: KubeStandIn, tmp_path: Path) -> None:
    other, _ = make_certificate(tmp_path, "other")
    api = handler.KubernetesApi(
        kube.endpoint, base64.b64encode(other.read_bytes()).decode(), lambda: "t"
    )
    with pytest.raises(handler.ApiError, match="CERTIFICATE_VERIFY_FAILED"):
        api.get(DEPLOYMENT_PATH)


def test_on_event_stamps_the_start_and_delete_returns_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(handler.time, "time", lambda: 1234.5)
    props = _props()
    created = handler.on_event({"RequestType": "Create", "ResourceProperties": props})
    assert created == {
        "PhysicalResourceId": f"{NAMESPACE}/Deployment/{NAME}",
        "WaitStartedAt": 1234.5,
    }
    updated = handler.on_event(
        {"RequestType": "Update", "ResourceProperties": props, "PhysicalResourceId": "p"}
    )
    assert updated == {"PhysicalResourceId": "p", "WaitStartedAt": 1234.5}
    deleted = {"RequestType": "Delete", "ResourceProperties": props, "PhysicalResourceId": "p"}
    assert handler.on_event(deleted) == {"PhysicalResourceId": "p"}
    # is_complete on Delete reads nothing (no endpoint given here): complete at once.
    assert handler.is_complete(deleted) == {"IsComplete": True}


def test_the_eks_token_is_a_presigned_get_caller_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    token = handler.eks_token("acme-serving", "us-east-1")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    parsed = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(parsed.query)
    assert parsed.scheme == "https" and parsed.hostname and parsed.hostname.startswith("sts.")
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-Credential"][0].startswith("AKIAIOSFODNN7EXAMPLE/")
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")


# -- the pure rules ------------------------------------------------------------------------


def test_fatal_needs_a_stuck_reason_held_long_enough() -> None:
    young = rules.pod_blocker(pod(waiting=IMAGE_PULL))
    assert young is not None and young.waiting == "ImagePullBackOff"
    assert not rules.fatal(young, now=STARTED + rules.FAIL_FAST_AFTER_S - 1)
    assert rules.fatal(young, now=STARTED + rules.FAIL_FAST_AFTER_S)
    crash = rules.pod_blocker(pod(waiting=CRASH_LOOP, restarts=rules.CRASH_RESTARTS - 1))
    assert not rules.fatal(crash, now=STARTED + 3600)
    assert not rules.fatal(rules.pod_blocker(pod(scheduled=UNSCHEDULABLE)), now=STARTED + 3600)
    assert rules.pod_blocker(pod(ready=True)) is None


def test_the_iec_failure_detail_prefers_the_newest_false_condition() -> None:
    assert rules.iec_failure_detail(IEC_FAILED).startswith("DeploymentReady: DeploymentFailed: ")
    bare = iec("DeploymentFailed", deploymentStatus={"reason": "ProgressDeadlineExceeded",
                                                     "message": "timed out"})  # fmt: skip
    assert rules.iec_failure_detail(bare) == "ProgressDeadlineExceeded: timed out"
    assert rules.iec_failure_detail(iec("DeploymentFailed")) == "DeploymentFailed"


def test_every_workload_kind_of_a_target_has_rules() -> None:
    from mlcc_constructs.core.platform.targets import load_target, target_names

    workloads = {load_target(t).workload for t in target_names()} - {None}
    assert workloads <= set(rules.RULES)
    for name, rule in rules.RULES.items():
        assert kind_named(name).readiness is rule.readiness  # the registry reads the same rule


# -- the asset -----------------------------------------------------------------------------

STDLIB = set(sys.stdlib_module_names)


def test_the_rules_module_is_stdlib_only() -> None:
    tree = ast.parse(Path(rules.__file__).read_text(encoding="utf-8"))
    imported = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    } | {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported - {"__future__"} <= STDLIB, imported - STDLIB


def test_the_asset_is_the_handler_and_the_rules_and_runs_alone(tmp_path: Path) -> None:
    from mlcc_constructs.aws.readiness import asset_directory, asset_files

    folder = Path(asset_directory())
    assert asset_directory() == str(folder)  # stable: named by its content
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert (
        files
        == sorted(asset_files())
        == [
            "index.py",
            "mlcc_constructs/core/serving/kinds/_readiness.py",
        ]
    )
    assert (folder / "index.py").read_text() == Path(handler.__file__).read_text()
    # A copy, isolated (-I -S: no site-packages, no project on the path; -B: no bytecode
    # written): only the asset's own files import.
    copy = tmp_path / "asset"
    shutil.copytree(folder, copy)
    code = (
        "import sys; sys.path[:0] = [sys.argv[1]]; import index; "
        "print(index.on_event({'RequestType': 'Delete', 'PhysicalResourceId': 'p'}))"
    )
    run = subprocess.run(
        [sys.executable, "-B", "-I", "-S", "-c", code, str(copy)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert run.stdout.strip() == "{'PhysicalResourceId': 'p'}"


def test_the_digest_follows_the_objects_not_the_token_numbers() -> None:
    from mlcc_constructs.core.serving.kinds.registry import RenderedObject
    from mlcc_constructs.core.serving.readiness import digest

    def objects(url: str, replicas: int = 1) -> list[RenderedObject]:
        scaled = {"kind": "ScaledObject", "spec": {"serverAddress": url, "max": replicas}}
        return [RenderedObject("Scaler", scaled)]

    # The same token under another number (unrelated code made tokens first): the same digest.
    assert digest(objects("${Token[TOKEN.812]}")) == digest(objects("${Token[TOKEN.815]}"))
    # A real change, or a literal URL in place of the token, still moves it.
    assert digest(objects("${Token[TOKEN.812]}", 2)) != digest(objects("${Token[TOKEN.812]}"))
    literal = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"
    assert digest(objects(literal)) != digest(objects("${Token[TOKEN.812]}"))


INGRESS_PATH = f"/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/ingresses/{NAME}"
ALB = "internal-k8s-mlccinternal-0123456789-987654321.us-east-1.elb.amazonaws.com"


def _ingress(address: str | None) -> dict[str, Any]:
    status = {"loadBalancer": {"ingress": [{"hostname": address}]}} if address else {}
    return {"kind": "Ingress", "metadata": {"name": NAME, "namespace": NAMESPACE}, "status": status}


@pytest.mark.parametrize(
    ("address", "waited", "expected"),
    [
        (ALB, MINUTE, {"IsComplete": True,
                       "Data": {"Readiness": "1/1 replicas available, 1 updated", "Address": ALB}}),
        # Ready pods behind a load balancer without an address are not an endpoint yet...
        (None, MINUTE, {"IsComplete": False}),
        # ... and at the deadline the deploy fails saying so.
        (None, 1800.0, f"NotReady: Ingress {NAMESPACE}/{NAME} has no load balancer address "
         "after 1800 s: the load balancer controller made none (kubectl describe ingress shows "
         "its events)"),
    ],
)  # fmt: skip
def test_a_ready_workload_completes_with_its_load_balancers_address(
    kube: KubeStandIn, address: str | None, waited: float, expected: Any
) -> None:
    _serve(kube, (DEPLOYMENT_PATH, READY_DEPLOYMENT), [], [])
    kube.routes[INGRESS_PATH] = (200, _ingress(address))
    props = {
        **_props(),
        "AddressKind": "Ingress",
        "AddressName": NAME,
        "AddressPath": INGRESS_PATH,
    }
    try:
        found: Any = handler.judge(props, kube.api(), now=STARTED + waited, started=STARTED)
    except handler.NotReady as failed:
        found = f"NotReady: {failed}"
    assert found == expected
    assert INGRESS_PATH in [path for path, _, _ in kube.seen]


def test_the_address_rule_reads_a_hostname_or_an_ip() -> None:
    assert rules.ingress_address(_ingress(ALB)) == ALB
    ip = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}
    assert rules.ingress_address(ip) == "203.0.113.7"
    assert rules.ingress_address({"status": {"loadBalancer": {}}}) is None
