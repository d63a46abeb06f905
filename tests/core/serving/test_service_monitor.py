"""A ServiceMonitor for a team's Prometheus Operator: rendered when the render context names its
namespace and the engine serves metrics, validated against its rule data, and the NetworkPolicy
admits that namespace on the engine port; nothing changes without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mlcc_constructs.core.serving.kinds.registry import object_problems
from mlcc_constructs.core.serving.render import render
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.support.errors import MlccError
from tests._flat import flat_spec

SPEC = {
    "engine": {"name": "vllm"},
    "model": {"uri": "meta-llama/Llama-3.1-8B-Instruct"},
    "compute": {"instance_type": "ml.g5.12xlarge"},
    "name": "chat",
    "namespace": "inference",
}


def _objects(**context: Any) -> dict[str, dict[str, Any]]:
    spec = flat_spec(**{**SPEC, **context.pop("spec", {})})
    rendered = render(spec, context=RenderContext(region="us-east-1", **context))
    return {o["kind"]: o for o in rendered.objects}


def test_a_prometheus_operator_namespace_gets_a_service_monitor() -> None:
    objects = _objects(prometheus_operator_namespace="monitoring")
    monitor = objects["ServiceMonitor"]
    assert monitor["metadata"]["namespace"] == "inference"
    assert monitor["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "chat"}},
        "endpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
    }
    service = objects["Service"]
    labels = service["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert [p["name"] for p in service["spec"]["ports"]] == ["http"]
    assert object_problems(monitor) == []
    port = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]["ports"][0]
    monitoring = {
        "from": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ],
        "ports": [{"protocol": "TCP", "port": port["containerPort"]}],
    }
    assert monitoring in objects["NetworkPolicy"]["spec"]["ingress"]


def test_without_it_nothing_changes() -> None:
    plain, monitored = _objects(), _objects(prometheus_operator_namespace="monitoring")
    assert "ServiceMonitor" not in plain
    assert set(monitored) - set(plain) == {"ServiceMonitor"}
    for kind in set(plain) - {"NetworkPolicy"}:
        assert plain[kind] == monitored[kind], kind


def test_an_allow_from_namespace_is_not_listed_twice() -> None:
    objects = _objects(
        prometheus_operator_namespace="monitoring", spec={"allow_from": ["monitoring"]}
    )
    peers = [
        peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for rule in objects["NetworkPolicy"]["spec"]["ingress"]
        for peer in rule["from"]
        if "namespaceSelector" in peer
    ]
    assert peers == ["monitoring"]


def test_an_engine_without_metrics_gets_none() -> None:
    objects = _objects(prometheus_operator_namespace="monitoring", spec={"engine": "tensorrt-llm"})
    assert "ServiceMonitor" not in objects
    assert all(
        "namespaceSelector" not in str(r) for r in objects["NetworkPolicy"]["spec"]["ingress"]
    )


def test_hyperpod_renders_no_service_monitor() -> None:
    objects = _objects(
        prometheus_operator_namespace="monitoring",
        account="123456789012",
        profile="dev",
        spec={"target": "hyperpod-eks"},
    )
    assert "ServiceMonitor" not in objects and "InferenceEndpointConfig" in objects


@pytest.mark.parametrize("namespace", ["Monitoring", "-m", "a" * 64, "mon_itoring"])
def test_a_bad_namespace_is_refused(namespace: str) -> None:
    with pytest.raises(MlccError) as caught:
        RenderContext(prometheus_operator_namespace=namespace)
    assert str(caught.value).startswith("/prometheus_operator_namespace: not a namespace name")
    assert repr(namespace) in str(caught.value) or namespace in str(caught.value)


def _monitor() -> dict[str, Any]:
    return _objects(prometheus_operator_namespace="monitoring")["ServiceMonitor"]


@pytest.mark.parametrize(
    ("edit", "pointer"),
    [
        (lambda m: m["spec"].pop("selector"), "/spec"),
        (lambda m: m["spec"].update(endpoints=[]), "/spec/endpoints"),
        (
            lambda m: m["spec"]["endpoints"][0].update(interval="30 seconds"),
            "/spec/endpoints/0/interval",
        ),
        (lambda m: m["spec"]["endpoints"][0].update(scheme="tcp"), "/spec/endpoints/0/scheme"),
        (lambda m: m["spec"]["endpoints"][0].update(targetPortt=8000), "/spec/endpoints/0"),
        (lambda m: m["spec"]["endpoints"][0].update(path="metrics"), "/spec/endpoints/0/path"),
    ],
)
def test_the_rules_refuse_what_the_crd_would(edit: Any, pointer: str) -> None:
    monitor = _monitor()
    edit(monitor)
    problems = object_problems(monitor)
    assert [p.pointer for p in problems] == [pointer]


def test_mlcc_render_takes_the_operator_namespace(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "engine: {name: vllm}\nmodel: {uri: org/model}\ncompute: {instance_type: g5.12xlarge}\n"
        "name: chat\n"
        "region: us-east-1\n"
    )
    command = [sys.executable, "-m", "mlcc_constructs.cli", "render", "-f", str(spec)]
    out = subprocess.run(
        [*command, "--prometheus-operator-namespace", "monitoring"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "kind: ServiceMonitor" in out.stdout
    plain = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 0 and "ServiceMonitor" not in plain.stdout
