"""``mlcc adapter`` end to end: loopback S3 (moto's ThreadedMotoServer) and local HTTP servers
standing in for the serving pods' dynamic LoRA endpoints."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.cli import main
from mlcc_constructs.core.adapters import path_names, s3_layout as L
from mlcc_constructs.core.adapters.record import hash_bytes
from mlcc_constructs.core.platform.buckets import bucket_names
from tests._adapter_env import FakePod

ENV = {"account": "123456789012", "region": "us-east-1", "profile": "test"}
BUCKETS = bucket_names(**ENV)
CORE, ARTIFACTS = BUCKETS["core"], BUCKETS["artifacts"]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
MODEL = L.base_model_location(CORE, L.base_model(LLAMA))
CONFIG = {
    "peft_type": "LORA",
    "r": 16,
    "target_modules": ["q_proj"],
    "base_model_name_or_path": LLAMA,
}
FILES = {"adapter_config.json": json.dumps(CONFIG).encode(), "adapter_model.safetensors": b"w1"}
VERSION = path_names.version_id(hash_bytes(FILES))
POD_PATH = f"/opt/ml/model/.mlcc-adapters/acme/bot/{VERSION}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint(moto_s3: str) -> str:
    return moto_s3


@pytest.fixture
def s3(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    import boto3

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    for bucket in (CORE, ARTIFACTS):
        client.create_bucket(Bucket=bucket)
    return client


def _raw(s3: Any, job: str = "job-1", files: dict[str, bytes] = FILES) -> str:
    prefix = L.job_output(ARTIFACTS, "acme", "tune", job, "checkpoints", "hf")
    for name, body in files.items():
        s3.put_object(Bucket=ARTIFACTS, Key=prefix.key + name, Body=body)
    return prefix.uri


def _run(endpoint: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    common = ["--project", "acme", "--endpoint-url", endpoint]
    if argv[0] != "remove":
        common += ["--account", ENV["account"], "--region", ENV["region"], "--profile", "test"]
    code = main(["adapter", *argv, *common])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def _pod_args(*pods: FakePod) -> list[str]:
    return [arg for pod in pods for arg in ("--pod-url", pod.url)]


def test_promote_twice(s3: Any, endpoint: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = _raw(s3)
    code, first, _ = _run(
        endpoint, capsys, "promote", "bot", "--from", source, "--technique", "sft"
    )
    assert (code, first["status"], first["version"]) == (0, "created", VERSION)
    assert first["uri"] == f"{MODEL.uri}.mlcc-adapters/acme/bot/{VERSION}/"
    code, second, _ = _run(endpoint, capsys, "promote", "bot", "--from", source)
    assert (code, second["status"], second["copied"]) == (0, "unchanged", [])


def test_plan_is_json_with_empty_path_and_writes_nothing(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    source = _raw(s3)
    code, plan, _ = _run(
        endpoint, capsys, "plan", "bot", "--from", source, "--model", MODEL.uri, *_pod_args(*pods)
    )
    assert code == 0
    assert (plan["path"], plan["path_home"]) == ("", "/opt/ml/model/.mlcc-adapters/acme/bot")
    assert plan["steps"] == ["promote", "load"]
    assert plan["rank"] == {"need": 16, "limit": 16, "limit_from": "engine default"}
    assert plan["pods"] == [p.url for p in pods]
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE)
    assert all(p.calls == [] for p in pods)
    code, dry, _ = _run(
        endpoint, capsys, "add", "bot", "--from", source, "--model", MODEL.uri, "--dry-run"
    )
    assert (code, dry["path"]) == (0, "")


def test_add_loads_on_every_pod(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = _run(
        endpoint, capsys, "add", "bot", "--from", _raw(s3), "--model", MODEL.uri, *_pod_args(*pods)
    )
    assert (code, err) == (0, "")
    assert report["path"] == POD_PATH
    assert report["failed_pods"] == []
    for pod in pods:
        assert pod.calls == [
            ("POST", "/v1/load_lora_adapter", {"lora_name": "bot", "lora_path": POD_PATH})
        ]
    assert [r["ok"] for r in report["pods"]] == [True, True]


def test_a_failing_pod_exits_1(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    pods[1].status = 500
    code, report, err = _run(
        endpoint, capsys, "add", "bot", "--from", _raw(s3), "--model", MODEL.uri, *_pod_args(*pods)
    )
    assert code == 1
    assert report["failed_pods"] == [pods[1].url]
    assert report["pods"][1] == {
        "pod": pods[1].url,
        "action": "load",
        "ok": False,
        "status": 500,
        "detail": "boom",
        "reason": "HTTP 500: boom",
    }
    assert f"mlcc: error: pod {pods[1].url} failed: load: HTTP 500: boom" in err
    assert len(pods[0].calls) == 1  # the healthy pod still got its load


def test_unreachable_pod_exits_1(
    s3: Any, endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{_free_port()}"
    code, report, _ = _run(
        endpoint, capsys, "add", "bot", "--from", _raw(s3), "--model", MODEL.uri, "--pod-url", dead
    )
    assert code == 1
    assert report["pods"][0]["status"] is None


def test_update_unloads_then_loads_the_new_version(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    _run(endpoint, capsys, "add", "bot", "--from", _raw(s3), "--model", MODEL.uri)
    changed = {**FILES, "adapter_model.safetensors": b"w2"}
    new_version = path_names.version_id(hash_bytes(changed))
    code, _report, _ = _run(
        endpoint,
        capsys,
        "update",
        "bot",
        "--from",
        _raw(s3, "job-2", changed),
        "--model",
        MODEL.uri,
        *_pod_args(*pods),
    )
    assert code == 0
    new_path = f"/opt/ml/model/.mlcc-adapters/acme/bot/{new_version}"
    for pod in pods:
        assert pod.calls == [
            ("POST", "/v1/unload_lora_adapter", {"lora_name": "bot"}),
            ("POST", "/v1/load_lora_adapter", {"lora_name": "bot", "lora_path": new_path}),
        ]
    # the previous version is intact for pods not yet swapped
    old = s3.list_objects_v2(Bucket=CORE, Prefix=f"{MODEL.key}.mlcc-adapters/acme/bot/{VERSION}/")
    assert len(old["Contents"]) == 3


def test_rank_above_live_pod_limit_is_refused(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    big = {**FILES, "adapter_config.json": json.dumps({**CONFIG, "r": 64}).encode()}
    code, out, err = _run(
        endpoint,
        capsys,
        "add",
        "bot",
        "--from",
        _raw(s3, "big", big),
        "--model",
        MODEL.uri,
        "--pod-env",
        "VLLM_MAX_LORA_RANK=32",
        *_pod_args(*pods),
    )
    message = (
        "/rank: adapter bot needs LoRA rank 64, above the live limit 32 (pod env "
        "VLLM_MAX_LORA_RANK) (got 64; fix: raise VLLM_MAX_LORA_RANK to at least 64 and "
        "redeploy, then add the adapter again)"
    )
    # the JSON report on stdout on failure too, the same line on stderr
    assert (code, out) == (1, {"command": "adapter add", "ok": False, "errors": [message]})
    assert err == f"mlcc: error: {message}\n"
    assert all(p.calls == [] for p in pods)
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE)


def test_prefetching_iec_is_refused(
    s3: Any, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    iec = tmp_path / "iec.yaml"
    iec.write_text(
        "spec:\n  modelSourceConfig:\n    modelSourceType: s3\n    prefetchEnabled: true\n"
    )
    code, _, err = _run(
        endpoint,
        capsys,
        "add",
        "bot",
        "--from",
        _raw(s3),
        "--model",
        MODEL.uri,
        "--target",
        "hyperpod-eks",
        "--iec",
        str(iec),
    )
    assert code == 1
    assert "prefetches the model" in err


def test_remove_unloads_and_deletes_only_serving_copies(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    _run(endpoint, capsys, "promote", "bot", "--from", _raw(s3))
    restaged = L.model_location(CORE, "staged/llama/")
    canonical = f"{MODEL.uri}.mlcc-adapters/acme/bot/{VERSION}/"
    code, report, _ = _run(
        endpoint,
        capsys,
        "add",
        "bot",
        "--from",
        canonical,
        "--model",
        restaged.uri,
        "--base-model",
        LLAMA,
    )
    assert code == 0 and report["steps"] == ["copy", "load"]
    code, report, _ = _run(
        endpoint,
        capsys,
        "remove",
        "bot",
        "--model",
        restaged.uri,
        "--base-model",
        LLAMA,
        *_pod_args(*pods),
    )
    assert code == 0
    assert report["deleted"] == [f"{restaged.uri}.mlcc-adapters/acme/bot/{VERSION}/"]
    for pod in pods:
        assert pod.calls == [("POST", "/v1/unload_lora_adapter", {"lora_name": "bot"})]
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE, Prefix=restaged.key)
    kept = s3.list_objects_v2(Bucket=CORE, Prefix=L.parse_s3_uri(canonical).key)
    assert len(kept["Contents"]) == 3


def test_remove_keeps_copies_when_a_pod_failed(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    _run(endpoint, capsys, "promote", "bot", "--from", _raw(s3))
    restaged = L.model_location(CORE, "staged/llama/")
    canonical = f"{MODEL.uri}.mlcc-adapters/acme/bot/{VERSION}/"
    args = ("--model", restaged.uri, "--base-model", LLAMA)
    _run(endpoint, capsys, "add", "bot", "--from", canonical, *args)
    pods[0].status = 500
    code, report, _ = _run(endpoint, capsys, "remove", "bot", *args, *_pod_args(*pods))
    assert (code, report["deleted"]) == (1, [])
    assert len(s3.list_objects_v2(Bucket=CORE, Prefix=restaged.key)["Contents"]) == 3


def test_sglang_uses_its_manifest_adapter_api(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = _run(
        endpoint,
        capsys,
        "add",
        "bot",
        "--from",
        _raw(s3),
        "--model",
        MODEL.uri,
        "--engine",
        "sglang",
        *_pod_args(pods[0]),
    )
    assert code == 0
    assert pods[0].calls == [
        ("POST", "/load_lora_adapter", {"lora_name": "bot", "lora_path": POD_PATH})
    ]


def test_sglang_rank_limit_defaults_to_the_resolved_companion_default(
    s3: Any, endpoint: str, pods: list[FakePod], capsys: pytest.CaptureFixture[str]
) -> None:
    # SGLang declares lora_max_rank without a default: its pods run with the resolver's 16
    big = {**FILES, "adapter_config.json": json.dumps({**CONFIG, "r": 32}).encode()}
    code, out, err = _run(
        endpoint,
        capsys,
        "add",
        "bot",
        "--from",
        _raw(s3, "big", big),
        "--model",
        MODEL.uri,
        "--engine",
        "sglang",
        *_pod_args(pods[0]),
    )
    message = (
        "/rank: adapter bot needs LoRA rank 32, above the live limit 16 (engine "
        "default) (got 32; fix: raise SGLANG_MAX_LORA_RANK to at least 32 and redeploy, then "
        "add the adapter again)"
    )
    assert (code, out) == (1, {"command": "adapter add", "ok": False, "errors": [message]})
    assert err == f"mlcc: error: {message}\n"
    assert pods[0].calls == []
    assert "Contents" not in s3.list_objects_v2(Bucket=CORE)


def test_discover_with_kubectl(
    s3: Any,
    endpoint: str,
    pods: list[FakePod],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A stand-in kubectl: one Running pod, one Pending,
    # an envFrom ConfigMap that sets the live rank limit.
    pod = {
        "metadata": {"name": "llama-0"},
        "status": {"phase": "Running", "podIP": "127.0.0.1"},
        "spec": {
            "containers": [
                {
                    "envFrom": [{"configMapRef": {"name": "llama-env"}}],
                    "env": [{"name": "OTHER", "value": "1"}],
                    "volumeMounts": [{"name": "model", "mountPath": "/opt/ml/model"}],
                }
            ]
        },
    }
    pending = {"metadata": {"name": "llama-1"}, "status": {"phase": "Pending"}, "spec": {}}
    answers = {
        "pods": {"items": [pod, pending]},
        "configmap": {"data": {"VLLM_MAX_LORA_RANK": "8"}},
    }
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"answers = json.load(open({str(tmp_path / 'answers.json')!r}))\n"
        f"open({str(tmp_path / 'calls.log')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "print(json.dumps(answers[sys.argv[2]]))\n"
    )
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    code, _out, err = _run(
        endpoint,
        capsys,
        "plan",
        "bot",
        "--from",
        _raw(s3),
        "--model",
        MODEL.uri,
        "--discover",
        "--deployment-name",
        "llama",
        "--namespace",
        "serving",
    )
    # the live limit 8 (from the ConfigMap) is below the adapter's r 16
    assert code == 1
    assert "above the live limit 8 (pod env VLLM_MAX_LORA_RANK)" in err
    assert (tmp_path / "calls.log").read_text().splitlines() == [
        "get pods -n serving -l app.kubernetes.io/name=llama -o json",
        "get configmap llama-env -n serving -o json",
    ]
    answers["configmap"]["data"]["VLLM_MAX_LORA_RANK"] = "16"
    (tmp_path / "answers.json").write_text(json.dumps(answers))
    code, plan, _ = _run(
        endpoint,
        capsys,
        "plan",
        "bot",
        "--from",
        _raw(s3),
        "--model",
        MODEL.uri,
        "--discover",
        "--deployment-name",
        "llama",
        "--namespace",
        "serving",
    )
    assert code == 0
    assert plan["pods"] == ["http://127.0.0.1:8000"]  # Running pods only, the engine's port


@pytest.mark.parametrize(
    ("target", "selector"),
    [("eks", "app.kubernetes.io/name=llama"), ("hyperpod-eks", "app=llama")],
)
def test_discover_selects_the_pods_by_the_targets_pod_name_label(
    s3: Any,
    endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    selector: str,
) -> None:
    """eks pods carry the Deployment's app.kubernetes.io/name; the HyperPod inference operator
    labels an IEC's pods app=<IEC name>."""
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(tmp_path / 'calls.log')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        "print(json.dumps({'items': []} if sys.argv[2] == 'pods' else {'spec': {}}))\n"
    )
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _run(
        endpoint, capsys, "plan", "bot", "--from", _raw(s3), "--model", MODEL.uri,
        "--target", target, "--discover", "--deployment-name", "llama", "--namespace", "serving",
    )  # fmt: skip
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[0] == f"get pods -n serving -l {selector} -o json"


def test_discover_on_a_target_without_pods_is_refused_before_anything_runs(
    s3: Any,
    endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    source = _raw(s3)
    before = s3.list_objects_v2(Bucket=CORE).get("KeyCount", 0)
    code, out, err = _run(
        endpoint, capsys, "add", "bot", "--from", source, "--model", MODEL.uri,
        "--target", "realtime-inference", "--discover", "--deployment-name", "llama",
    )  # fmt: skip
    message = (
        "--discover: the target has no pods to select (got 'realtime-inference'; "
        "allowed: eks, hyperpod-eks; fix: pass the pods with --pod-url, or a target whose pods "
        "run on Kubernetes)"
    )
    assert code == 1
    assert message in out["errors"]
    assert f"mlcc: error: {message}" in err
    assert s3.list_objects_v2(Bucket=CORE).get("KeyCount", 0) == before
