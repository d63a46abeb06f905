"""EFA facts in the instance catalog, and the multi-node network of a pod: the EFA resource
limit and libfabric env where the instance has EFA, the refusal (engine requires EFA) or the
warning (EFA recommended) where it has none."""

from __future__ import annotations

import json

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import instance_names, lookup
from mlcc_constructs.core.platform.efa import (
    EFA_RESOURCE,
    multi_node_network,
    multi_node_network_problems,
    multi_node_network_warnings,
)
from mlcc_constructs.core.support.errors import MlccError

SOURCES = json.loads(data_path("instance_catalog.json").read_text(encoding="utf-8"))["sources"]


@pytest.mark.parametrize(
    ("name", "supported", "interfaces", "rdma"),
    [
        # The EC2 guide's EFA column: no EFA on the small G sizes.
        ("g5.xlarge", False, 0, False),
        ("g5.4xlarge", False, 0, False),
        ("g6.2xlarge", False, 0, False),
        ("g6e.2xlarge", False, 0, False),
        # One network card: one EFA.
        ("g5.12xlarge", True, 1, False),
        ("g5.48xlarge", True, 1, False),
        ("g6.48xlarge", True, 1, False),
        ("g6e.12xlarge", True, 1, False),
        # Several network cards: one EFA each.
        ("g6e.24xlarge", True, 2, False),
        ("g6e.48xlarge", True, 4, False),
        ("p4d.24xlarge", True, 4, True),
        ("p4de.24xlarge", True, 4, True),
        ("p5.48xlarge", True, 32, True),
        ("p5e.48xlarge", True, 32, True),
        ("p5en.48xlarge", True, 16, True),
        ("p6-b200.48xlarge", True, 8, True),
    ],
)
def test_the_efa_columns(name: str, supported: bool, interfaces: int, rdma: bool) -> None:
    entry = lookup(name)
    assert (entry.efa_supported, entry.efa_max_interfaces, entry.efa_device_rdma) == (
        supported,
        interfaces,
        rdma,
    )
    if supported:
        assert f"{entry.family}" in SOURCES["efa"] or entry.efa_max_interfaces == 1


def test_every_type_states_efa_consistently() -> None:
    for name in (n for n in instance_names() if n.startswith("ml.")):
        entry = lookup(name)
        # Supported exactly when it takes at least one EFA; RDMA only with EFA.
        assert entry.efa_supported == (entry.efa_max_interfaces > 0), name
        assert not entry.efa_device_rdma or entry.efa_supported, name


def test_the_b200_entry() -> None:
    b200 = lookup("ml.p6-b200.48xlarge")
    assert (b200.gpus, b200.gpu_type, b200.gpu_memory_gib) == (8, "NVIDIA B200", 179)
    assert (b200.vcpus, b200.memory_gib, b200.network_gbps) == (192, 2048, 3200)
    assert b200.family == "p6-b200"
    assert "8 x 179 GiB" in SOURCES["p6-b200"]


@pytest.mark.parametrize(
    ("name", "limits", "env"),
    [
        (
            "p5.48xlarge",
            {EFA_RESOURCE: "32"},
            {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
        ),
        (
            "p5en.48xlarge",
            {EFA_RESOURCE: "16"},
            {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
        ),
        (
            "p6-b200.48xlarge",
            {EFA_RESOURCE: "8"},
            {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
        ),
        (
            "p4d.24xlarge",
            {EFA_RESOURCE: "4"},
            {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"},
        ),
        # EFA without recorded RDMA: the provider only; libfabric decides RDMA.
        ("g6e.48xlarge", {EFA_RESOURCE: "4"}, {"FI_PROVIDER": "efa"}),
        ("g5.12xlarge", {EFA_RESOURCE: "1"}, {"FI_PROVIDER": "efa"}),
        # No EFA: nothing (an EFA request would leave the pod unschedulable).
        ("g5.xlarge", {}, {}),
        ("g6e.2xlarge", {}, {}),
    ],
)
def test_multi_node_network(name: str, limits: dict[str, str], env: dict[str, str]) -> None:
    assert multi_node_network(lookup(name)) == (limits, env)


@pytest.mark.parametrize(
    ("name", "requires_efa", "expected"),
    [
        (
            "g5.4xlarge",
            True,
            [
                "deployment.yaml:/compute/instance_type: ml.g5.4xlarge has no Elastic Fabric "
                "Adapter, "
                "which this engine requires between the nodes of a multi-node deployment (got "
                "'ml.g5.4xlarge'; allowed: an instance type whose catalog entry has "
                "efa_supported true (e.g. ml.p5.48xlarge, ml.p5en.48xlarge, "
                "ml.p6-b200.48xlarge); fix: choose an EFA instance type, or serve the model on "
                "one node (nodes: 1))"
            ],
        ),
        # Only recommended by the engine: no refusal (the warning says it).
        ("g5.4xlarge", False, []),
        # EFA present: nothing to refuse either way.
        ("p5.48xlarge", True, []),
        ("g6e.12xlarge", True, []),
    ],
)
def test_multi_node_network_problems(name: str, requires_efa: bool, expected: list[str]) -> None:
    problems = multi_node_network_problems(
        lookup(name),
        requires_efa=requires_efa,
        where="deployment.yaml",
        pointer="/compute/instance_type",
    )
    assert [str(p) for p in problems] == expected
    if problems:
        with pytest.raises(MlccError):
            raise MlccError(problems)


@pytest.mark.parametrize(
    ("name", "nodes", "expected"),
    [
        (
            "g6e.2xlarge",
            2,
            [
                "ml.g6e.2xlarge has no Elastic Fabric Adapter: the 2 nodes' tensor/pipeline "
                "traffic goes over TCP; the engines' multi-node docs recommend a high-speed "
                "network (an EFA type such as ml.p5.48xlarge, ml.p5en.48xlarge, "
                "ml.p6-b200.48xlarge is recommended)"
            ],
        ),
        ("g6e.2xlarge", 1, []),
        ("p5.48xlarge", 4, []),
    ],
)
def test_multi_node_network_warnings(name: str, nodes: int, expected: list[str]) -> None:
    assert multi_node_network_warnings(lookup(name), nodes=nodes) == expected
