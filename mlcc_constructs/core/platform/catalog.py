"""Instance catalog: GPUs, memory, network bandwidth and EFA per instance type (data in
``data/instance_catalog.json``, with the sources of its network columns).

SageMaker names (``ml.g5.12xlarge``) and EKS node names (``g5.12xlarge``) are both accepted;
the catalog file lists each type once, by its SageMaker name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.support.errors import closest, fail

_ML = "ml."
GPU_RESOURCE = "nvidia.com/gpu"
"""The extended resource that schedules an NVIDIA GPU (the device plugin's name)."""


@dataclass(frozen=True, kw_only=True)
class InstanceType:
    """One accelerated instance type. ``name`` is the SageMaker name (``ml.`` prefix)."""

    name: str
    """The SageMaker name (``ml.g5.12xlarge``)."""
    gpus: int
    """The GPUs of one instance (0: no GPU)."""
    gpu_type: str
    """The GPU model (``NVIDIA A10G``)."""
    gpu_memory_gib: int
    """The memory of one GPU, GiB (host memory is :attr:`memory_gib`)."""
    vcpus: int
    """The instance's vCPUs."""
    memory_gib: int
    """The instance's memory, GiB."""
    network_gbps: float
    """Baseline network bandwidth (Gbps): what the instance sustains. Cold-start formulas use
    this one (:attr:`network_bytes_per_second`)."""
    network_burst_gbps: float | None = None
    """The "up to N Gbps" AWS states for the smaller sizes, reached only while network I/O
    credits last; ``None`` where AWS states one fixed bandwidth. Recorded, never planned on."""
    efa_supported: bool = False
    """Whether the type supports an Elastic Fabric Adapter (the EC2 guide's EFA column)."""
    efa_max_interfaces: int = 0
    """How many EFA interfaces the type takes (EC2's ``MaximumEfaInterfaces``; 0 without EFA):
    what a pod that has the whole node asks for as ``vpc.amazonaws.com/efa``."""
    efa_device_rdma: bool = False
    """Whether the catalog records RDMA read support for the type's EFA (the EC2 guide's EFA
    RDMA table): the libfabric ``FI_EFA_USE_DEVICE_RDMA`` setting follows it."""

    @property
    def network_bytes_per_second(self) -> int:
        """:attr:`network_gbps` in bytes per second (1 Gbps = 10^9 bits/s)."""
        return int(self.network_gbps * 1e9) // 8

    @property
    def node_name(self) -> str:
        """The EC2/EKS node name, without the ``ml.`` prefix."""
        return self.name.removeprefix(_ML)

    @property
    def family(self) -> str:
        """The EC2 instance family (``g5`` for ``ml.g5.12xlarge``): the value of the
        ``eks.amazonaws.com/instance-family`` node label."""
        return self.node_name.partition(".")[0]


@cache
def _catalog() -> dict[str, InstanceType]:
    document = json.loads(data_path("instance_catalog.json").read_text(encoding="utf-8"))
    return {name: InstanceType(name=name, **facts) for name, facts in document["instances"].items()}


def catalog_entries() -> tuple[InstanceType, ...]:
    """Every entry of the catalog, in the data file's order."""
    return tuple(_catalog().values())


def instance_names() -> tuple[str, ...]:
    """Every known type, SageMaker names then EKS node names."""
    names = tuple(_catalog())
    return names + tuple(n.removeprefix(_ML) for n in names)


def lookup(name: str, *, pointer: str = "/compute/instance_type") -> InstanceType:
    """The catalog entry for ``name`` (with or without ``ml.``); unknown → closest names.

    Called where a name is read (a spec, props, the app's context), once: what is read further
    carries the entry (an :class:`InstanceType`), never the name to look up again."""
    entry = _catalog().get(name if name.startswith(_ML) else _ML + name)
    if entry is None:
        near = closest(name, instance_names())
        raise fail(
            "unknown instance type",
            pointer=pointer,
            value=name,
            allowed="the types in mlcc_constructs/data/instance_catalog.json",
            fix=f"did you mean {' or '.join(near)}?" if near else "add it to the catalog",
        )
    return entry
