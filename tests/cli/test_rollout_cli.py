"""``mlcc rollout check|apply`` end to end against botocore's Stubber (SageMaker) and a fake
``kubectl`` on PATH (canned JSON per call, every call recorded), on a fake clock: the success
path and every failure path of ``--surge-node``, each asserting the exact texts, that the
instance group's count is restored and that nothing is ever scaled to zero."""

from __future__ import annotations

import copy
import datetime
import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from mlcc_constructs import cli
from mlcc_constructs.cli import rollout as rollout_cli
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.yaml_output import to_yaml
from mlcc_constructs.ops.rollout import Clock
from tests._flat import flat_spec

MODEL = "s3://mlcc-models-123456789012-us-east-1/models/meta-llama/Llama-3.1-8B-Instruct/"
TYPE = "ml.g5.12xlarge"
SPEC = [
    "--target", "hyperpod-eks", "--engine", "vllm", "--model", MODEL, "--instance-type", TYPE,
    "--name", "llama", "--namespace", "inference", "--account", "123456789012",
    "--region", "us-east-1", "--profile", "dev",
]  # fmt: skip
ARGS = [*SPEC, "--cluster", "hp"]
ARN = "arn:aws:sagemaker:us-east-1:123456789012:cluster/abcdefghijkl"
ROLE = "arn:aws:iam::123456789012:role/hyperpod-exec"
A, B = "i-0aaaaaaaaaaaaaaaa", "i-0bbbbbbbbbbbbbbbb"
NODE_A, NODE_B = f"hyperpod-{A}", f"hyperpod-{B}"
WHEN = datetime.datetime(2026, 10, 23, tzinfo=datetime.UTC)
CAPACITY = (
    "InsufficientInstanceCapacity: We currently do not have sufficient ml.g5.12xlarge capacity "
    "in the Availability Zone you requested (us-east-1a)."
)
LIFECYCLE = {"SourceS3Uri": "s3://mlcc-artifacts/lifecycle/", "OnCreate": "on_create.sh"}


def _rendered() -> dict[str, Any]:
    spec = flat_spec(
        engine="vllm",
        model=MODEL,
        instance_type=TYPE,
        name="llama",
        namespace="inference",
        target="hyperpod-eks",
    )
    context = RenderContext(account="123456789012", region="us-east-1", profile="dev")
    return copy.deepcopy(render(spec, context=context).objects[0])


RENDERED = _rendered()
LIVE = copy.deepcopy(RENDERED)
LIVE["spec"]["worker"]["image"] = "vllm/vllm-openai:v0.30.0"  # the pod template changes
SURGE_DETAIL = (
    "the pod template changed (/spec/worker/image) and no Ready node of instance type "
    f"ml.g5.12xlarge has 4 free nvidia.com/gpu for the surge pod ({NODE_A}: 0 of 4 free)"
)
SUBJECT = "InferenceEndpointConfig inference/llama"


# -- the cluster as kubectl sees it ----------------------------------------------------------


def node(name: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": TYPE}},
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": "4"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(name: str, on: str, *, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "inference", "labels": {"app": "llama"}},
        "spec": {
            "nodeName": on,
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": "4"}}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def items(*objects: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "List", "items": list(objects)}


ONE_NODE = items(node(NODE_A))
TWO_NODES = items(node(NODE_A), node(NODE_B))
OLD_POD = items(pod("llama-old", NODE_A))
BOTH_PODS = items(pod("llama-old", NODE_A), pod("llama-new", NODE_B, ready=False))
NEW_POD = items(pod("llama-new", NODE_B))

_FAKE_KUBECTL = """\
import json, sys
folder = {folder!r}
argv = sys.argv[1:]
key = " ".join(argv[:2]) if argv[0] == "get" else argv[0]
stdin = sys.stdin.read() if "-" in argv else None
with open(folder + "/calls.jsonl", "a") as log:
    log.write(json.dumps({{"argv": argv, "stdin": stdin}}) + "\\n")
script = json.load(open(folder + "/script.json"))
state = json.load(open(folder + "/state.json"))
answers = script[key]
answer = answers[min(state.get(key, 0), len(answers) - 1)]
state[key] = state.get(key, 0) + 1
json.dump(state, open(folder + "/state.json", "w"))
if answer.get("stdout") is not None:
    print(json.dumps(answer["stdout"]))
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("code", 0))
"""


class FakeClock:
    """Time moves only when the code sleeps; on sleep number ``interrupt_at`` (1-based) the
    process gets a real ``interrupt_with`` signal."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []
        self.interrupt_at: int | None = None
        self.interrupt_with = "SIGINT"

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.interrupt_at == len(self.sleeps):
            # a real signal to this process: the handler in place decides what happens
            os.kill(os.getpid(), getattr(signal, self.interrupt_with))
        self.t += seconds


class Cluster:
    """The fake kubectl, the stubbed SageMaker client and the fake clock of one test."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder = folder
        self.script: dict[str, list[dict[str, Any]]] = {}
        (folder / "state.json").write_text("{}")
        kubectl = folder / "kubectl"
        kubectl.write_text(f"#!{sys.executable} -S\n" + _FAKE_KUBECTL.format(folder=str(folder)))
        kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        self.sm = boto3.client(
            "sagemaker",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self.stub = Stubber(self.sm)
        self.deep_health_checks = False
        self.counts: list[int] = []  # every InstanceCount sent, by any call
        self.sm.meta.events.register(
            "provide-client-params.sagemaker.UpdateCluster", self._record_count
        )
        monkeypatch.setattr(rollout_cli, "_sagemaker", lambda region: self.sm)
        self.clock = FakeClock()
        monkeypatch.setattr(
            rollout_cli, "_clock", lambda: Clock(now=self.clock.now, sleep=self.clock.sleep)
        )

    def _record_count(self, params: dict[str, Any], **_: Any) -> None:
        self.counts += [g["InstanceCount"] for g in params.get("InstanceGroups", [])]

    def kubectl(self, key: str, *answers: Any) -> None:
        """``key`` (``get nodes``, ``apply``...) answers these in turn, the last one for ever."""
        self.script[key] = [
            a if isinstance(a, dict) and "code" in a else {"stdout": a} for a in answers
        ]
        (self.folder / "script.json").write_text(json.dumps(self.script))

    def calls(self) -> list[str]:
        lines = (self.folder / "calls.jsonl").read_text().splitlines()
        return [" ".join(json.loads(line)["argv"]) for line in lines]

    def applied(self) -> list[str | None]:
        lines = (self.folder / "calls.jsonl").read_text().splitlines()
        return [json.loads(x)["stdin"] for x in lines if json.loads(x)["argv"][0] == "apply"]

    # SageMaker answers, in call order
    def describe(self, target: int, current: int | None = None, status: str = "InService") -> None:
        group = {
            "InstanceGroupName": "workers",
            "InstanceType": TYPE,
            "CurrentCount": target if current is None else current,
            "TargetCount": target,
            "Status": status,
            "ExecutionRole": ROLE,
            "LifeCycleConfig": LIFECYCLE,
            "ThreadsPerCore": 1,
            "KubernetesConfig": {"CurrentLabels": {"team": "ml"}, "DesiredLabels": {"team": "ml"}},
        }
        if self.deep_health_checks:
            group["OnStartDeepHealthChecks"] = ["InstanceStress", "InstanceConnectivity"]
        system = {
            "InstanceGroupName": "system",
            "InstanceType": "ml.m5.xlarge",
            "CurrentCount": 1,
            "TargetCount": 1,
            "Status": "InService",
            "ExecutionRole": ROLE,
            "LifeCycleConfig": LIFECYCLE,
        }
        self.stub.add_response(
            "describe_cluster",
            {
                "ClusterArn": ARN,
                "ClusterName": "hp",
                "ClusterStatus": "InService",
                "CreationTime": WHEN,
                "InstanceGroups": [system, group],
            },
            {"ClusterName": "hp"},
        )

    def instances(self, *ids: str, status: dict[str, str] | None = None) -> None:
        status = status or {}
        summaries = [
            {
                "InstanceGroupName": "workers",
                "InstanceId": i,
                "InstanceType": TYPE,
                "LaunchTime": WHEN,
                "InstanceStatus": {"Status": "Failure", "Message": CAPACITY}
                if status.get(i) == "Failure"
                else {"Status": status.get(i, "Running")},
            }
            for i in ids
        ]
        summaries.append(  # another group whose name contains "workers": ignored
            {
                "InstanceGroupName": "workers-cpu",
                "InstanceId": "i-0cccccccccccccccc",
                "InstanceType": "ml.m5.xlarge",
                "LaunchTime": WHEN,
                "InstanceStatus": {"Status": "Running"},
            }
        )
        self.stub.add_response(
            "list_cluster_nodes",
            {"ClusterNodeSummaries": summaries},
            {"ClusterName": "hp", "InstanceGroupNameContains": "workers"},
        )

    def update(self, count: int) -> None:
        self.stub.add_response(
            "update_cluster",
            {"ClusterArn": ARN},
            {"ClusterName": "hp", "InstanceGroups": [spec(count, deep=self.deep_health_checks)]},
        )

    def delete(self, instance: str, *, failed: dict[str, str] | None = None) -> None:
        answer: dict[str, Any] = (
            {"Failed": [{"NodeId": instance, **failed}]} if failed else {"Successful": [instance]}
        )
        self.stub.add_response(
            "batch_delete_cluster_nodes", answer, {"ClusterName": "hp", "NodeIds": [instance]}
        )


def spec(count: int, *, deep: bool = False) -> dict[str, Any]:
    """The instance group spec UpdateCluster must get: the group's own settings, the count."""
    settings: dict[str, Any] = {
        "InstanceGroupName": "workers",
        "InstanceType": TYPE,
        "LifeCycleConfig": LIFECYCLE,
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
    }
    if deep:
        settings["OnStartDeepHealthChecks"] = ["InstanceStress", "InstanceConnectivity"]
    return {**settings, "KubernetesConfig": {"Labels": {"team": "ml"}}, "InstanceCount": count}


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    fake = Cluster(tmp_path, monkeypatch)
    with fake.stub:
        yield fake
    assert 0 not in fake.counts  # nothing is ever scaled to zero


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def surge_start(cluster: Cluster) -> None:
    """The check and the surge's own reads: one serving pod filling the only node."""
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.describe(1)  # the check
    cluster.describe(1)  # the surge reads it again before changing anything
    cluster.instances(A)
    cluster.update(2)


CHECK_CALLS = [
    "get inferenceendpointconfig llama -n inference --ignore-not-found -o json",
    "get nodes -o json",
    "get pods --all-namespaces --field-selector=status.phase!=Succeeded,status.phase!=Failed "
    "-o json",
]
VIEW = CHECK_CALLS[1:]
APPLY = "apply -f - -o json"
RAISING = "mlcc: raising instance group 'workers' of cluster 'hp' from 1 to 2 (UpdateCluster)"


# -- check -----------------------------------------------------------------------------------


def test_check_stops_a_rollout_that_needs_a_surge_node(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "check", *ARGS, "--set", "VLLM_MAX_NUM_SEQS=64")
    assert (code, out) == (1, "")
    assert err == (
        f"mlcc: error: {SUBJECT}: "
        + SURGE_DETAIL.replace(
            "(/spec/worker/image)", "(/spec/worker/image, /spec/worker/environmentVariables)"
        )
        + "; nothing was applied (fix: run `mlcc rollout apply --target hyperpod-eks --name "
        "llama --namespace inference --region us-east-1 --account 123456789012 --profile dev "
        f"--engine vllm --model {MODEL} --instance-type ml.g5.12xlarge --set "
        "VLLM_MAX_NUM_SEQS=64 --cluster hp --surge-node`; cost: one more ml.g5.12xlarge node in "
        "instance group 'workers' of cluster 'hp' (1 node now) for the rollout's duration, "
        "until the new pod is Ready and the old pod is gone; the vacated node is then removed)\n"
    )
    assert cluster.calls() == CHECK_CALLS  # reads only


def test_the_printed_command_runs_the_same_deployment(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deployment = tmp_path / "deploy.yaml"
    deployment.write_text(
        "engine: {name: vllm}\nmodel: {uri: "
        + MODEL
        + "}\ncompute: {instance_type: ml.g5.12xlarge}\n"
        "name: llama\nnamespace: inference\ntarget: hyperpod-eks\n"
    )
    context = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    code, _, err = run(
        capsys, "rollout", "check", "-f", str(deployment), *context, "--cluster", "hp"
    )
    assert code == 1
    command = err.split("run `")[1].split("`")[0]
    assert command == (
        f"mlcc rollout apply --file {deployment} --region us-east-1 --account 123456789012 "
        "--profile dev --cluster hp --surge-node"
    )


@pytest.mark.parametrize(
    ("live", "nodes", "expected"),
    [
        (None, ONE_NODE, f"{SUBJECT}: does not exist yet: applying creates it (no rollout)\n"),
        (RENDERED, ONE_NODE, f"{SUBJECT}: the pod template is unchanged: no rollout\n"),
        (
            LIVE,
            TWO_NODES,
            f"{SUBJECT}: the pod template changed (/spec/worker/image); node {NODE_B} has 4 "
            "free nvidia.com/gpu for the surge pod (4 needed)\n",
        ),
    ],
    ids=["create", "unchanged", "fits"],
)
def test_check_passes_when_nothing_rolls_or_the_surge_fits(
    cluster: Cluster,
    capsys: pytest.CaptureFixture[str],
    live: dict[str, Any] | None,
    nodes: dict[str, Any],
    expected: str,
) -> None:
    cluster.kubectl("get inferenceendpointconfig", live)
    cluster.kubectl("get nodes", nodes)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    assert run(capsys, "rollout", "check", *ARGS) == (0, expected, "")


@pytest.mark.parametrize("source", ["flags", "file"])
def test_check_without_a_target_rolls_out_the_hyperpod_iec(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str
) -> None:
    """No ``--target`` and no ``target:`` in the spec: rollout takes hyperpod-eks, the one
    target whose objects hold an IEC, not ``mlcc render``'s default (eks), which it refuses."""
    if source == "flags":
        argv = [a for a in ARGS if a not in ("--target", "hyperpod-eks")]
    else:
        deployment = tmp_path / "deploy.yaml"
        deployment.write_text(
            f"name: llama\nnamespace: inference\nengine: {{name: vllm}}\nmodel: {{uri: {MODEL}}}\n"
            f"compute: {{instance_type: {TYPE}}}\n"
        )
        argv = ["-f", str(deployment), *SPEC[-6:], "--cluster", "hp"]
    assert "--target" not in argv
    cluster.kubectl("get inferenceendpointconfig", RENDERED)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    expected = f"{SUBJECT}: the pod template is unchanged: no rollout\n"
    assert run(capsys, "rollout", "check", *argv) == (0, expected, "")


# -- apply without a surge -------------------------------------------------------------------


def test_apply_without_surge_node_stops_before_applying(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS)
    assert (code, out) == (1, "")
    assert err.startswith(f"mlcc: error: {SUBJECT}: {SURGE_DETAIL}; nothing was applied (fix: run ")
    assert APPLY not in cluster.calls()


def test_apply_applies_the_rendered_objects_when_the_pods_fit(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", TWO_NODES)
    cluster.kubectl("get pods", OLD_POD)
    cluster.kubectl("apply", {})
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    fits = (
        f"{SUBJECT}: the pod template changed (/spec/worker/image); node {NODE_B} has 4 free "
        "nvidia.com/gpu for the surge pod (4 needed)"
    )
    assert (code, out, err) == (
        0,
        f"{fits}; applied\n",
        f"mlcc: --surge-node is not needed: {fits}\n",
    )
    assert cluster.calls() == [*CHECK_CALLS, APPLY]
    assert cluster.applied() == [to_yaml([RENDERED])]  # exactly what `mlcc render` prints
    assert cluster.counts == []  # no node was added


# -- --surge-node ----------------------------------------------------------------------------


def test_surge_node_success(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    surge_start(cluster)
    # the node: not there, then Ready; the pods: the new one starts, then replaces the old one
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, ONE_NODE, TWO_NODES)
    cluster.kubectl("get pods", OLD_POD, OLD_POD, OLD_POD, OLD_POD, BOTH_PODS, NEW_POD)
    cluster.kubectl("apply", {})
    cluster.instances(A, B, status={B: "Pending"})
    cluster.instances(A, B)
    cluster.describe(2)  # the restore reads the raised count
    cluster.instances(A, B)
    cluster.delete(A)  # the vacated node, not the new one
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    removed = f"removed {NODE_A}: it hosts no serving pod"
    assert (code, out) == (0, f"{SUBJECT}: {SURGE_DETAIL}; applied with a surge node ({removed})\n")
    assert err.splitlines() == [
        RAISING,
        f"mlcc: new node {NODE_B} is Ready; applying",
        "mlcc: the new pod is Ready and the old pod is gone; restoring the group's count",
        f"mlcc: removing {NODE_A} (it hosts no serving pod) (BatchDeleteClusterNodes)",
        f"mlcc: instance group 'workers' of cluster 'hp' is back to 1 ({removed})",
    ]
    assert cluster.calls() == [*CHECK_CALLS, *VIEW * 3, APPLY, *VIEW * 3]
    assert cluster.applied() == [to_yaml([RENDERED])]
    assert cluster.counts == [2]
    assert cluster.clock.sleeps == [15.0, 15.0]
    cluster.stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "ResourceLimitExceeded",
            "The account-level service limit 'ml.g5.12xlarge for cluster usage' is 1 Instances",
        ),
        ("ValidationException", "Insufficient capacity for ml.g5.12xlarge in us-east-1a"),
    ],
)
def test_surge_node_capacity_error_at_the_increase(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], code: str, message: str
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(1)
    cluster.describe(1)
    cluster.instances(A)
    cluster.stub.add_client_error(
        "update_cluster", service_error_code=code, service_message=message, http_status_code=400
    )
    cluster.describe(1)  # the restore finds the count unchanged
    exit_code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    verbatim = f"An error occurred ({code}) when calling the UpdateCluster operation: {message}"
    assert (exit_code, out) == (1, "")
    assert err.splitlines() == [
        RAISING,
        f"mlcc: restoring instance group 'workers' of cluster 'hp' to 1 after: {verbatim}",
        f"mlcc: error: {verbatim} (fix: instance group 'workers' is at its count of 1 (its "
        "count was never raised))",
    ]
    assert APPLY not in cluster.calls()
    cluster.stub.assert_no_pending_responses()


def test_surge_node_the_new_instance_fails(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.instances(A, B, status={B: "Failure"})  # SageMaker's message travels verbatim
    cluster.describe(2)
    cluster.instances(A, B, status={B: "Failure"})
    cluster.delete(B)
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"mlcc: error: instance group 'workers': new instance {B} failed: {CAPACITY} (fix: "
        f"instance group 'workers' is at its count of 1 (removed {B}: it never joined the "
        "Kubernetes cluster))"
    )
    assert APPLY not in cluster.calls()
    cluster.stub.assert_no_pending_responses()


def test_surge_node_the_node_never_becomes_ready(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.deep_health_checks = True  # the group runs them: the wait may be too short
    surge_start(cluster)
    not_ready = items(node(NODE_A), node(NODE_B, ready=False))
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, not_ready)
    cluster.kubectl("get pods", OLD_POD)
    for _ in range(3):  # t = 0, 15, 30: the deadline
        cluster.instances(A, B, status={B: "Pending"})
    cluster.describe(2)
    cluster.instances(A, B)
    cluster.delete(B)  # joined but never Ready: it goes, never the serving node
    cluster.describe(2)  # the count comes down a poll later
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node", "--node-timeout", "30")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "mlcc: instance group 'workers' runs deep health checks on new nodes, which take 60-90 "
        "minutes; --node-timeout is 30 s",
        RAISING,
        "mlcc: restoring instance group 'workers' of cluster 'hp' to 1 after: --node-timeout: no "
        "new node of instance group 'workers' became Ready within 30 s",
        f"mlcc: removing {NODE_B} (it hosts no serving pod) (BatchDeleteClusterNodes)",
        "mlcc: error: --node-timeout: no new node of instance group 'workers' became Ready "
        f"within 30 s (fix: instance group 'workers' is at its count of 1 (removed {NODE_B}: it "
        "hosts no serving pod))",
    ]
    assert APPLY not in cluster.calls()
    assert cluster.clock.sleeps == [15.0, 15.0, 15.0]  # two waits for the node, one for the count
    cluster.stub.assert_no_pending_responses()


def test_surge_node_no_instance_is_ever_launched(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.instances(A)
    cluster.instances(A)
    cluster.describe(2)
    cluster.instances(A)
    cluster.describe(2)
    cluster.update(1)  # no extra instance exists: SageMaker has nothing to choose from
    cluster.describe(1)
    code, _, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node", "--node-timeout", "15")
    assert code == 1
    assert err.splitlines()[-2:] == [
        "mlcc: no new instance was launched; setting the count back to 1",
        "mlcc: error: --node-timeout: no new node of instance group 'workers' became Ready "
        "within 15 s (fix: instance group 'workers' is at its count of 1 (no new instance had "
        "been launched))",
    ]
    assert cluster.counts == [2, 1]
    cluster.stub.assert_no_pending_responses()


def test_surge_node_the_new_pod_never_becomes_ready(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, TWO_NODES)
    cluster.kubectl("get pods", OLD_POD, OLD_POD, BOTH_PODS)
    cluster.kubectl("apply", {})
    cluster.instances(A, B)
    cluster.describe(2)
    cluster.instances(A, B)
    cluster.delete(B)  # the old pod keeps serving on A; the node of the failed pod goes
    cluster.describe(1)
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node", "--pod-timeout", "30")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        "mlcc: error: --pod-timeout: the new pod was not Ready, or the old pod not gone, within "
        f"30 s (serving pods: llama-new on {NODE_B} (not Ready), llama-old on {NODE_A} (Ready)) "
        "(fix: the new configuration stays applied; `kubectl describe pod` says why the new pod "
        f"is not Ready; instance group 'workers' is at its count of 1 (removed {NODE_B}: it hosts "
        "no Ready serving pod))"
    )
    assert cluster.calls().count(APPLY) == 1
    cluster.stub.assert_no_pending_responses()


@pytest.fixture(params=["default", "ignored"])
def inherited_sigint(request: pytest.FixtureRequest) -> Iterator[None]:
    """SIGINT as the process found it: Python's default, or ignored (nohup, some CI runners)."""
    handler = signal.default_int_handler if request.param == "default" else signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("interrupt", ["SIGINT", "SIGTERM"])
@pytest.mark.usefixtures("inherited_sigint")
def test_surge_node_interrupted_after_the_increase(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], interrupt: str
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.instances(A, B, status={B: "Pending"})
    cluster.describe(2)
    cluster.instances(A, B, status={B: "Pending"})
    cluster.delete(B)
    cluster.describe(1)
    cluster.clock.interrupt_at = 1  # while waiting for the node
    cluster.clock.interrupt_with = interrupt
    # The handlers found at start are put back, whatever they were: a process launched with
    # SIGINT ignored (nohup, some CI runners) keeps SIG_IGN.
    found = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    code, out, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"mlcc: error: interrupted ({interrupt}) during the surge rollout (fix: instance group "
        f"'workers' is at its count of 1 (removed {B}: it never joined the Kubernetes cluster))"
    )
    assert {sig: signal.getsignal(sig) for sig in found} == found
    cluster.stub.assert_no_pending_responses()


def test_surge_node_restore_refused_names_the_manual_step(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.instances(A, B, status={B: "Failure"})
    cluster.describe(2)
    cluster.instances(A, B, status={B: "Failure"})
    cluster.delete(B, failed={"Code": "NodeIdInUse", "Message": "the node is busy"})
    code, _, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    assert code == 1
    assert err.splitlines()[-2:] == [
        f"mlcc: error: instance group 'workers': new instance {B} failed: {CAPACITY}",
        f"mlcc: error: instance group 'workers': BatchDeleteClusterNodes refused {B}: NodeIdInUse: "
        "the node is busy (fix: once the node hosts no serving pod, run `aws sagemaker "
        f"batch-delete-cluster-nodes --cluster-name hp --node-ids {B}` (instance group 'workers' "
        "is one above its count))",
    ]
    cluster.stub.assert_no_pending_responses()


def test_surge_node_refuses_a_busy_group_before_changing_anything(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.describe(2, current=1, status="Updating")
    cluster.describe(2, current=1, status="Updating")
    cluster.instances(A)
    code, _, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    assert code == 1
    assert err == (
        "mlcc: error: instance group 'workers': the group is busy (Updating, 1 of 2 instances) "
        "(fix: wait until the group is InService at its target count, then re-run)\n"
    )
    assert cluster.counts == []
    cluster.stub.assert_no_pending_responses()


# -- bad input: refused before anything is read or changed -----------------------------------


def _replaced(argv: list[str], extra: list[str]) -> list[str]:
    """``argv`` with ``extra``'s flag values in place of its own (a single-value flag may be
    given once), ``extra``'s other flags appended."""
    argv = list(argv)
    flag, *values = extra
    if flag in argv and len(values) == 1:
        argv[argv.index(flag) + 1] = values[0]
        return argv
    return [*argv, *extra]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--cluster", "hp_1"],
            "--cluster: not a HyperPod cluster name or ARN (got 'hp_1'; allowed: letters, "
            "digits and '-', at most 63; or a cluster ARN)",
        ),
        (
            ["--instance-group", "gpu_workers"],
            "--instance-group: not an instance group name (got 'gpu_workers'; allowed: letters, "
            "digits and '-', at most 63)",
        ),
        (
            ["--target", "eks"],
            "--target: mlcc rollout rolls out an InferenceEndpointConfig on a HyperPod cluster; "
            "this target renders none (got 'eks'; allowed: hyperpod-eks; fix: pass --target "
            "hyperpod-eks)",
        ),
        (
            ["--selector", "app"],
            "--selector: not an equality label selector (got 'app'; allowed: "
            "KEY=VALUE[,KEY=VALUE...]; fix: name each label and its value, e.g. "
            "app=my-model,tier=gpu)",
        ),
        (["--node-timeout", "0"], "--node-timeout: must be a positive number of seconds (got 0.0)"),
        (
            ["--apply-command", "no-such-program --x"],
            "--apply-command: the apply command is not on PATH (got 'no-such-program --x'; fix: "
            "give a command line whose program is on PATH)",
        ),
    ],
    ids=["cluster", "group", "target", "selector", "timeout", "apply-command"],
)
def test_bad_input_is_refused_with_nothing_done(
    cluster: Cluster, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    cluster.kubectl("get nodes", ONE_NODE)
    code, out, err = run(capsys, "rollout", "apply", *_replaced(ARGS, extra))
    assert (code, out, err) == (1, "", f"mlcc: error: {message}\n")
    assert not (cluster.folder / "calls.jsonl").exists()


def test_a_sagemaker_error_is_one_line(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl("get inferenceendpointconfig", LIVE)
    cluster.kubectl("get nodes", ONE_NODE)
    cluster.kubectl("get pods", OLD_POD)
    cluster.stub.add_client_error(
        "describe_cluster",
        service_error_code="ResourceNotFound",
        service_message="Cluster hp not found",
    )
    code, _, err = run(capsys, "rollout", "check", *ARGS)
    assert (code, err) == (
        1,
        "mlcc: error: --cluster: SageMaker: An error occurred (ResourceNotFound) when calling the "
        "DescribeCluster operation: Cluster hp not found (fix: check AWS credentials, --region "
        "and --cluster)\n",
    )


def test_a_kubectl_failure_is_one_line(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.kubectl(
        "get inferenceendpointconfig", {"code": 1, "stderr": "error: You must be logged in"}
    )
    code, _, err = run(capsys, "rollout", "check", *ARGS)
    assert (code, err) == (
        1,
        "mlcc: error: kubectl get inferenceendpointconfig llama -n inference --ignore-not-found "
        "failed: error: You must be logged in (fix: check the kube context (kubectl config "
        "current-context) and --namespace)\n",
    )


def test_surge_node_restore_fails_after_a_good_rollout(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, TWO_NODES)
    cluster.kubectl("get pods", OLD_POD, OLD_POD, OLD_POD, NEW_POD)
    cluster.kubectl("apply", {})
    cluster.instances(A, B)
    cluster.describe(2)
    cluster.instances(A, B)
    cluster.stub.add_client_error(
        "batch_delete_cluster_nodes",
        service_error_code="ThrottlingException",
        service_message="Rate exceeded",
    )
    code, _, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node")
    assert code == 1
    assert err.splitlines()[-1] == (
        "mlcc: error: instance group 'workers': the rollout is done, but restoring the count "
        "failed: An error occurred (ThrottlingException) when calling the BatchDeleteClusterNodes "
        "operation: Rate exceeded (fix: once the node hosts no serving pod, run `aws sagemaker "
        "batch-delete-cluster-nodes --cluster-name hp --node-ids <instance id>` (instance group "
        "'workers' is one above its count))"
    )
    cluster.stub.assert_no_pending_responses()


def test_surge_node_with_an_apply_command(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    deploy = cluster.folder / "deploy-step"
    deploy.write_text(f'#!/bin/sh\necho "$@" > {cluster.folder}/deployed\n')
    deploy.chmod(deploy.stat().st_mode | stat.S_IEXEC)
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, TWO_NODES)
    cluster.kubectl("get pods", OLD_POD, OLD_POD, OLD_POD, NEW_POD)
    cluster.instances(A, B)
    cluster.describe(2)
    cluster.instances(A, B)
    cluster.delete(A)
    cluster.describe(1)
    command = "deploy-step mlcc-dev-serving --require-approval never"
    code, _, _ = run(capsys, "rollout", "apply", *ARGS, "--surge-node", "--apply-command", command)
    assert code == 0
    assert (
        cluster.folder / "deployed"
    ).read_text() == "mlcc-dev-serving --require-approval never\n"
    assert APPLY not in cluster.calls()  # the command applied, not kubectl
    cluster.stub.assert_no_pending_responses()


def test_a_signal_during_the_restore_is_held_until_it_is_done(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    surge_start(cluster)
    cluster.kubectl("get nodes", ONE_NODE, ONE_NODE, items(node(NODE_A), node(NODE_B, ready=False)))
    cluster.kubectl("get pods", OLD_POD)
    for _ in range(3):
        cluster.instances(A, B, status={B: "Pending"})
    cluster.describe(2)
    cluster.instances(A, B)
    cluster.delete(B)
    cluster.describe(2)
    cluster.describe(1)
    cluster.clock.interrupt_at = 3  # the restore's wait for the count
    cluster.clock.interrupt_with = "SIGTERM"
    code, _, err = run(capsys, "rollout", "apply", *ARGS, "--surge-node", "--node-timeout", "30")
    assert code == 1
    assert err.splitlines()[-1].endswith(
        f"(fix: instance group 'workers' is at its count of 1 (removed {NODE_B}: it hosts no "
        "serving pod))"
    )
    cluster.stub.assert_no_pending_responses()  # the restore ran to the end
