"""``mlcc plan``: the cold start of a spec as JSON (default) and as a table, labelled as
estimates, with the numbers the rendered objects carry; the staged index read from loopback
S3; and its errors (bad ``model_bytes``, a spec it cannot prepare, ``--read-index`` on a Hub
model or a prefix with no weights)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import cli
from tests._flat import sectioned_doc

BUCKET = "mlcc-models-dev-123456789012-us-east-1"
MODEL = f"s3://{BUCKET}/models/meta-llama/Llama-3.1-8B-Instruct/"
LLAMA_8B = 16_060_522_496
SPEC: dict[str, Any] = {
    "name": "llama-vllm",
    "namespace": "inference",
    "engine": {"name": "vllm"},
    "model": {"uri": MODEL, "bytes": LLAMA_8B, "load": "mount"},
    "compute": {"instance_type": "ml.g5.12xlarge"},
}
HUB = {
    "name": "mistral",
    "engine": {"name": "vllm"},
    "model": {"uri": "mistralai/Mistral-7B-Instruct-v0.3"},
    "compute": {"instance_type": "ml.g5.2xlarge"},
    "target": "hyperpod-eks",
}
CONTEXT = ["--account", "123456789012", "--region", "us-east-1", "--profile", "dev"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _spec(tmp_path: Path, *documents: dict[str, Any]) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(
        yaml.safe_dump(sectioned_doc(list(documents) if len(documents) > 1 else documents[0]))
    )
    return str(path)


def test_the_json_plan_splits_the_cold_start_and_says_it_estimates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "plan", "-f", _spec(tmp_path, SPEC, HUB), *CONTEXT)
    assert code == 0, err
    report = json.loads(out)
    assert (report["command"], report["ok"], report["estimate"]) == ("plan", True, True)
    assert "not measurements" in report["note"]
    llama, mistral = report["plans"]
    assert list(llama["phases"]) == ["node_start", "image_pull", "weight_load", "engine_warmup"]
    for phase in llama["phases"].values():
        assert phase["assumption"] and phase["source"]
    load = -(-LLAMA_8B // 31_000_000)
    assert [p["seconds"] for p in llama["phases"].values()] == [300, 300, load, 300]
    assert llama["expected_seconds"] == 900 + load
    assert (llama["model_bytes"], llama["model_bytes_source"]) == (LLAMA_8B, "spec")
    assert llama["network"]["baseline_gbps"] == 40
    assert llama["physical_limit"]["seconds"] == -(-LLAMA_8B // 5_000_000_000)
    assert llama["budget"]["ready_timeout_seconds"] == llama["budget"]["pod_launch_seconds"]
    # HyperPod from the Hub, no size: no node to launch, the weight load unknown, 30 minutes.
    assert [p["seconds"] for p in mistral["phases"].values()] == [0, 300, None, 300]
    assert (mistral["expected_seconds"], mistral["physical_limit"]["seconds"]) == (None, None)
    assert mistral["network"] == {
        "baseline_gbps": 5,
        "burst_gbps": 10,
        "used": "baseline",
        "source": "mlcc_constructs/data/instance_catalog.json",
    }
    assert mistral["budget"]["startup_probe_seconds"] == 1800
    # The operator makes HyperPod's pods: no do-not-disrupt annotation of ours.
    assert (
        llama["budget"]["do_not_disrupt_seconds"] == llama["budget"]["startup_probe_seconds"] + 300
    )
    assert mistral["budget"]["do_not_disrupt_seconds"] is None


def test_the_plan_is_what_render_renders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spec(tmp_path, SPEC)
    _, out, _ = run(capsys, "plan", "-f", spec, *CONTEXT)
    budget = json.loads(out)["plans"][0]["budget"]
    code, rendered, err = run(capsys, "render", "-f", spec, *CONTEXT)
    assert code == 0, err
    (deployment,) = (o for o in yaml.safe_load_all(rendered) if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]
    (engine,) = pod["spec"]["containers"]
    assert engine["startupProbe"]["failureThreshold"] == budget["startup_probe_failure_threshold"]
    assert pod["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == (
        f"{budget['do_not_disrupt_seconds']}s"
    )
    assert deployment["spec"]["progressDeadlineSeconds"] == budget["ready_timeout_seconds"]


def test_the_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(
        capsys, "plan", "-f", _spec(tmp_path, SPEC, HUB), *CONTEXT, "--format", "table"
    )
    assert code == 0, err
    assert out.startswith("All figures are estimates")
    for label in ("node start", "image pull", "weight load", "engine warm-up", "expected"):
        assert f"  {label} " in out
    assert "physical limit" in out and "40 Gbps baseline network" in out
    assert "up to 10 Gbps burst, not planned on" in out  # g5.2xlarge
    assert "inference/llama-vllm (eks, vllm, g5.12xlarge, load path mount" in out
    assert (
        "default/mistral (hyperpod-eks, vllm, g5.2xlarge, load path huggingface, model size "
        "unknown)"
    ) in out
    assert "budget: startup probe 1800 s (failureThreshold 180), do-not-disrupt none" in out


def test_a_flag_overrides_the_size(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "plan", "-f", _spec(tmp_path, HUB), "--model-bytes", "1000")
    assert code == 0
    (plan,) = json.loads(out)["plans"]
    assert (plan["model_bytes"], plan["model_bytes_source"]) == (1000, "spec")
    assert plan["budget"]["startup_probe_seconds"] == 600  # the floor


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "0 is less than the minimum of 1 (got 0; allowed: a positive integer (bytes)"),
        (-3, "-3 is less than the minimum of 1 (got -3; allowed: a positive integer (bytes)"),
        ("16GB", "'16GB' is not of type 'integer' (got '16GB'; allowed: a positive integer"),
        (1.5, "1.5 is not of type 'integer' (got 1.5; allowed: a positive integer"),
        (True, "True is not of type 'integer' (got True; allowed: a positive integer"),
    ],
)
@pytest.mark.parametrize("form", ["json", "table"])
def test_a_bad_model_size_is_refused_naming_the_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: Any, message: str, form: str
) -> None:
    spec = _spec(tmp_path, {**HUB, "model_bytes": value})
    code, out, err = run(capsys, "plan", "-f", spec, "--format", form)
    assert code == 1
    line = f"mlcc: error: {spec}:/model/bytes: {message}"
    assert err.startswith(line), err
    assert "metadata.total_size" in err
    if form == "json":
        report = json.loads(out)
        assert (report["command"], report["ok"]) == ("plan", False)
        assert report["errors"] == [err.removeprefix("mlcc: error: ").rstrip("\n")]
    else:
        assert out == ""


def test_a_spec_it_cannot_prepare_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spec(tmp_path, {**HUB, "instance_type": "ml.g5.13xlarge"})
    code, out, err = run(capsys, "plan", "-f", spec)
    assert code == 1
    assert json.loads(out)["ok"] is False
    assert "unknown instance type" in err


def test_read_index_on_a_hub_model_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "plan", "-f", _spec(tmp_path, HUB), "--read-index")
    assert code == 1
    assert "/model/uri: --read-index reads the index from S3" in err
    assert "allowed: an s3:// model" in err


def _bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    import urllib.request

    import boto3  # type: ignore[import-untyped]

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"))
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    return s3


PREFIX = "models/meta-llama/Llama-3.1-8B-Instruct/"


@pytest.mark.parametrize(
    ("files", "size"),
    [
        # A sharded model: the index's total_size.
        ({"model.safetensors.index.json": json.dumps({"metadata": {"total_size": LLAMA_8B}})},
         LLAMA_8B),
        # One shard, no index: the bytes of the top's *.safetensors (not a subfolder's).
        ({"model.safetensors": b"x" * 1234, "config.json": b"{}", "sub/a.safetensors": b"y"},
         1234),
    ],
)  # fmt: skip
def test_read_index_takes_the_staged_size(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    moto_s3: str,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, Any],
    size: int,
) -> None:
    s3 = _bucket(moto_s3, monkeypatch)
    for name, body in files.items():
        s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=body)
    spec = {**SPEC, "model": {k: v for k, v in SPEC["model"].items() if k != "bytes"}}
    argv = ["plan", "-f", _spec(tmp_path, spec), *CONTEXT, "--endpoint-url", moto_s3]
    code, out, err = run(capsys, *argv, "--read-index")
    assert code == 0, err
    (plan,) = json.loads(out)["plans"]
    assert (plan["model_bytes"], plan["model_bytes_source"]) == (size, "index")
    # The spec's field wins: no read at all.
    code, out, _ = run(capsys, *argv, "--read-index", "--model-bytes", "5")
    assert json.loads(out)["plans"][0]["model_bytes_source"] == "spec"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "no model.safetensors.index.json and no *.safetensors weights at the prefix"),
        ({"model.safetensors.index.json": b"{"}, "not valid JSON"),
        ({"model.safetensors.index.json": b'{"metadata": {}}'},
         "/metadata/total_size: no model size in the safetensors index"),
    ],
)  # fmt: skip
def test_read_index_without_a_size_is_refused(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    moto_s3: str,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, bytes],
    message: str,
) -> None:
    s3 = _bucket(moto_s3, monkeypatch)
    for name, body in files.items():
        s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=body)
    spec = {**SPEC, "model": {k: v for k, v in SPEC["model"].items() if k != "bytes"}}
    argv = ["plan", "-f", _spec(tmp_path, spec), *CONTEXT, "--endpoint-url", moto_s3]
    code, _, err = run(capsys, *argv, "--read-index")
    assert code == 1
    assert message in err


def test_a_multi_node_plan_shows_the_group(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    group = SPEC | {
        "name": "llama-405b",
        "model": {
            "uri": f"s3://{BUCKET}/models/meta-llama/Llama-3.1-405B-Instruct/",
            "bytes": 811_000_000_000,
            "load": "stream",
        },
        "compute": {
            "instance_type": "ml.p5.48xlarge",
            "nodes": 2,
            "tensor_parallel_degree": 8,
            "pipeline_parallel_degree": 2,
        },
    }
    code, out, err = run(capsys, "plan", "-f", _spec(tmp_path, group), *CONTEXT)
    assert code == 0, err
    (plan,) = json.loads(out)["plans"]
    assert list(plan["phases"]) == [
        "node_start", "image_pull", "weight_load", "group_init", "engine_warmup"
    ]  # fmt: skip
    assert plan["nodes"]["count"] == 2
    assert plan["nodes"]["bytes_read_total"] == 1_622_000_000_000
    assert plan["nodes"]["node_seconds"] == 2 * plan["expected_seconds"]
    code, out, err = run(
        capsys, "plan", "-f", _spec(tmp_path, group), *CONTEXT, "--format", "table"
    )
    assert code == 0, err
    assert "group init" in out
    assert "nodes                 2  each reads the whole checkpoint in parallel" in out
    assert "1,622,000,000,000 bytes from S3" in out


PLAN_KEYS = [
    "name", "namespace", "target", "engine", "model", "estimate", "instance_type", "load_path",
    "model_bytes", "model_bytes_source", "network", "load_bytes_per_second", "phases",
    "expected_seconds", "nodes", "physical_limit", "budget",
]  # fmt: skip


def test_the_json_plan_prices_each_deployment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "plan", "-f", _spec(tmp_path, SPEC, HUB), *CONTEXT)
    assert code == 0, err
    llama, mistral = json.loads(out)["plans"]
    assert list(llama) == [*PLAN_KEYS, "price"]  # the cold start's keys as before, then price
    price = llama["price"]
    assert (price["region"], price["currency"], price["hours_per_30_days"]) == (
        "us-east-1",
        "USD",
        720,
    )
    assert [
        (line["what"], line["count"], line["usd_per_hour_each"], line["usd_per_30_days"])
        for line in price["lines"]
    ] == [
        ("EC2 instance g5.12xlarge", {"min": 1, "max": 1}, 5.672, {"min": 4083.84, "max": 4083.84}),
        ("Auto Mode fee g5.12xlarge", {"min": 1, "max": 1}, None, None),
        ("load balancer", {"min": 1, "max": 1}, 0.0225, {"min": 16.2, "max": 16.2}),
    ]
    assert price["usd_per_hour"] == {"min": 5.6945, "max": 5.6945}
    assert price["usd_per_30_days"] == {"min": 4100.04, "max": 4100.04}
    assert price["totals_cover"] == "priced lines only"
    assert price["unpriced"] == [
        "Auto Mode fee g5.12xlarge x 1 (eks inference/llama-vllm): EKS Auto Mode bills a "
        "management fee per instance it manages, priced per instance type on "
        "https://aws.amazon.com/eks/pricing/; no per-type figure is on record offline"
    ]
    assert price["lines"][0]["source"]["url"].startswith("https://github.com/aws/karpenter")
    assert price["lines"][0]["checked"] == "2026-07-20"
    # HyperPod: the operator's load balancer only; the nodes are the HyperPod cluster's.
    assert [line["what"] for line in mistral["price"]["lines"]] == ["load balancer"]
    assert mistral["price"]["notes"][0].startswith(
        "hyperpod-eks default/mistral runs on nodes the hyperpod-eks platform provides"
    )
    assert mistral["price"]["totals_cover"] == "every line"


def test_the_table_prices_each_deployment_and_names_what_it_leaves_out_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, "plan", "-f", _spec(tmp_path, SPEC, HUB), *CONTEXT, "--format", "table"
    )
    assert code == 0, err
    llama = out.split("\n\n")[1]
    budget, price = llama.split("\n  price: ")
    assert budget.endswith("ready timeout 1830 s (formula)")  # the cold start table as before
    assert price.splitlines()[1:] == [
        "    item                                                             count  USD/h each"
        "   USD/h  USD/30 days",
        "    eks inference/llama-vllm: EC2 instance g5.12xlarge (1 replica)       1       5.672"
        "  5.6720     4,083.84",
        "    eks inference/llama-vllm: Auto Mode fee g5.12xlarge (1 replica)      1    unpriced"
        "       -            -",
        "    eks inference/llama-vllm: load balancer (internal)                   1      0.0225"
        "  0.0225        16.20",
        "    total (priced lines only)                                                          "
        " 5.6945     4,100.04",
        "    unpriced (named, never guessed):",
        "      - EKS Auto Mode bills a management fee per instance it manages, priced per "
        "instance type on https://aws.amazon.com/eks/pricing/; no per-type figure is on record "
        "offline:",
        "          Auto Mode fee g5.12xlarge x 1 (eks inference/llama-vllm)",
    ]
    assert price.startswith("us-east-1, on-demand list prices in USD from ")
    assert "30 days = 720 h" in price.splitlines()[0]
    # What prices leave out, once after every deployment.
    assert out.count("usage-billed, not priced:") == 1
    assert out.rstrip().endswith("Savings Plans, Reserved Instances, Spot and Capacity Blocks: "
                                 "list on-demand rates only")  # fmt: skip


def test_without_a_region_nothing_is_priced_and_the_plan_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./cdk.json to take a region from
    hub = {k: v for k, v in HUB.items() if k != "target"}
    code, out, err = run(capsys, "plan", "-f", _spec(tmp_path, hub))
    assert code == 0, err
    price = json.loads(out)["plans"][0]["price"]
    assert price["region"] is None
    assert price["usd_per_hour"] == {"min": 0.0, "max": 0.0}
    assert price["unpriced"][0] == (
        "EC2 instance g5.2xlarge x 1 (eks default/mistral): the region is unknown: give the "
        "deployment's region (--region)"
    )
