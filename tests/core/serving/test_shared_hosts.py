"""The rule that spans deployments sharing a load balancer (core/serving/shared_hosts.py):
table-driven over prepared deployments, and through ``mlcc render -f LIST`` (one of the list
paths the Renderer applies it on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mlcc_constructs import DeploymentSpec, RenderContext, prepare
from mlcc_constructs.core.serving.shared_hosts import overlapping, shared_host_problems
from tests._adapter_env import run

CONTEXT = RenderContext(account="123456789012", region="us-east-1", profile="dev")


def deployment(name: str, engine: str = "vllm", **endpoint: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "inference",
        "engine": {"name": engine},
        "model": {"uri": "org/model"},
        "compute": {"instance_type": "ml.g5.2xlarge"},
        "endpoint": endpoint,
    }


def problems(*documents: dict[str, Any]) -> list[str]:
    prepared = [
        (f"list.yaml#{i}", prepare(DeploymentSpec(**document), context=CONTEXT))
        for i, document in enumerate(documents)
    ]
    return [str(p) for p in shared_host_problems(prepared)]


@pytest.mark.parametrize(
    ("documents", "refused"),
    [
        # no group: a load balancer per deployment
        ([deployment("a"), deployment("b")], []),
        # one group, a host each
        (
            [
                deployment("a", group="shared", hostname="a.example.com"),
                deployment("b", group="shared", hostname="b.example.com"),
            ],
            [],
        ),
        # one group, one host (or none): refused, naming the earlier entry
        (
            [deployment("a", group="shared"), deployment("b", group="shared")],
            ["list.yaml#1"],
        ),
        (
            [
                deployment("a", group="shared", hostname="llm.example.com"),
                deployment("b", group="shared", hostname="llm.example.com"),
                deployment("c", group="shared", hostname="llm.example.com"),
            ],
            ["list.yaml#1", "list.yaml#2"],
        ),
        # the same group name under another scheme is another load balancer
        (
            [
                deployment("a", group="shared"),
                deployment(
                    "b",
                    group="shared",
                    scheme="internet-facing",
                    hostname="b.example.com",
                    certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
                    api_key_secret="mlcc/key",
                ),
            ],
            [],
        ),
    ],
)
def test_a_shared_load_balancer_tells_its_deployments_apart(
    documents: list[dict[str, Any]], refused: list[str]
) -> None:
    found = problems(*documents)
    assert [line.split(":")[0] for line in found] == refused


def test_the_problem_names_both_entries_the_paths_and_the_fix() -> None:
    (line,) = problems(deployment("a", group="shared"), deployment("b", group="shared"))
    assert line.startswith(
        "list.yaml#1:/endpoint/hostname: shares load balancer group 'shared' (internal), any "
        "host (no hostname) and the paths /v1"
    )
    assert "with list.yaml#0 (a): the load balancer cannot tell their requests apart" in line
    assert line.endswith(
        "(got None; allowed: a hostname no other deployment of the group uses; fix: give each "
        "deployment of the group its own endpoint.hostname, or its own endpoint.group)"
    )


@pytest.mark.parametrize(
    ("paths", "others", "shared"),
    [
        (("/v1",), ("/v1",), ("/v1",)),
        (("/v1/chat",), ("/v1",), ("/v1/chat",)),
        (("/",), ("/invocations",), ("/",)),
        (("/v1", "/health"), ("/invocations", "/ping"), ()),
    ],
)
def test_paths_overlap_when_one_is_a_prefix_of_the_other(
    paths: tuple[str, ...], others: tuple[str, ...], shared: tuple[str, ...]
) -> None:
    assert overlapping(paths, others) == shared


def test_render_of_a_list_refuses_two_deployments_on_one_host(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    listing = tmp_path / "list.yaml"
    listing.write_text(
        yaml.safe_dump([deployment("a", group="shared"), deployment("b", group="shared")])
    )
    code, _, err = run(
        capsys, "render", "-f", str(listing), "--account", "123456789012", "--profile", "dev"
    )
    assert code == 1
    [line] = err.splitlines()
    assert line.startswith(f"mlcc: error: {listing}#1:/endpoint/hostname: shares load balancer")
