"""How long a pod takes to serve (its **cold start**), estimated once per deployment by
:func:`cold_start`, and the deadlines sized from it: the startup probe's allowance, the
``karpenter.sh/do-not-disrupt`` window and, per pod, the deploy's ready timeout
(:mod:`.ready_timeout`). ``mlcc plan`` prints the same object. Every figure is an estimate.

Phases (durations and throughputs are data, each with its assumption and source:
``data/cold_start.json``)::

    node_start    = NODE_START where the cluster launches a GPU node for the pod, else 0
    image_pull    = IMAGE_PULL
    weight_load   = ceil(model_bytes / min(throughput[load_path], network))
    group_init    = GROUP_INIT, for a group of several nodes only (no such phase for one)
    engine_warmup = ENGINE_WARMUP
    expected      = node_start + image_pull + weight_load + group_init + engine_warmup
    physical_limit = ceil(model_bytes / network)

* ``network``: the instance's baseline network bandwidth (catalog ``network_gbps``), never its
  "up to" burst: the burst lasts only while network I/O credits do. With fallback instance
  types, the slowest of them (the pod may land there).
* ``throughput[load_path]``: ``mount`` (Mountpoint for Amazon S3), ``stream`` (the engine
  streams ``s3://`` itself), ``prefetch`` (the HyperPod operator copies the prefix first),
  ``huggingface`` (a Hub download). :func:`load_path` picks it; ``model_load`` names the
  spec's choice (``mount`` until a deployment can ask for ``stream``).
* **Several nodes** (``nodes`` > 1, a LeaderWorkerSet group): the group's pods start together
  (``startupPolicy: LeaderCreated``), so the nodes launch, pull and load in parallel and the
  phases above are each node's; every node reads the whole checkpoint (``multi_node_reads`` in
  the data: the engines' default loaders read the entire checkpoint on each worker), so S3
  serves ``nodes x model_bytes``. ``group_init`` is the rendezvous and NCCL set-up that
  follows the slowest node's load. The group serves only when all its nodes do, and a failed
  pod restarts the whole group, this whole cold start again on every node.
* ``physical_limit``: no load path reads the weights faster than the instance's network. It
  assumes many flows (the streamer's and Mountpoint's concurrent S3 requests): one TCP flow is
  limited to 5 Gbps outside a cluster placement group (EC2 User Guide, *Amazon EC2 instance
  network bandwidth*).

Budgets (deadlines: the estimate with a margin, computed here once and carried)::

    startup_s   = max(STARTUP_FLOOR_S, ceil(SAFETY * (weight_load + group_init + engine_warmup)))
                  rounded up to the probe period; UNKNOWN_SIZE_STARTUP_S without a model size
    pod_start_s = image_pull + startup_s
    launch_s    = node_start + pod_start_s

* ``startup_s`` is the startup probe's allowance (``failureThreshold`` = ``startup_s /
  STARTUP_PERIOD_S``): the kubelet starts probing when the container starts, after the pull.
  ``SAFETY`` 1.5 covers what the constants do not know (a slow S3 prefix, a busy node);
  ``STARTUP_FLOOR_S`` (10 minutes) keeps a small model's probe from racing a slow start. Without
  a model size it stays today's 30 minutes (``UNKNOWN_SIZE_STARTUP_S``: a cold start without
  prefetch measured ~15 minutes, seed lora-delivery §4).
* ``pod_start_s`` is the ``karpenter.sh/do-not-disrupt`` duration: it counts from the pod's
  start time, before the image pull.
* ``launch_s`` is one pod's whole cold start: the ready timeout multiplies it by the pods an
  update starts one after the other.
* Node start and image pull are conservative allowances already; the margin is not applied to
  them again.

The model's size comes from :mod:`~mlcc_constructs.core.serving.resolve.model_size` (the spec's
``model_bytes``, the staged index when a caller read it, ``model_config``'s parameters x dtype
bytes, else unknown), the same size ``nodes: auto`` sizes the group from.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import InstanceType
from mlcc_constructs.core.serving.resolve.model_size import ModelSize

LoadPath = Literal["mount", "stream", "prefetch", "huggingface"]
PHASES = ("node_start", "image_pull", "weight_load", "engine_warmup")
"""The phases of one node's cold start, in order."""
GROUP_PHASES = ("node_start", "image_pull", "weight_load", "group_init", "engine_warmup")
"""The phases of a group of several nodes, in order."""
DATA_FILE = "cold_start.json"
SAFETY = 1.5
STARTUP_PERIOD_S = 10
"""The startup probe's period: its allowance is a whole number of periods."""
STARTUP_FLOOR_S = 600
UNKNOWN_SIZE_STARTUP_S = 1800


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One phase of a cold start: ``seconds`` (``None``: not computable, the model's size is
    unknown), what it assumes and where the figure comes from."""

    name: str
    seconds: int | None
    assumption: str
    source: str

    def to_json(self) -> dict[str, Any]:
        """The phase as ``mlcc plan`` prints it."""
        return {
            "seconds": self.seconds,
            "assumption": self.assumption,
            "source": self.source,
        }


@dataclass(frozen=True, kw_only=True)
class ColdStart:
    """A deployment's cold start: its phases (estimates), the physical limit, and the budgets
    derived from them (module doc).

    ``load_path``: how the weights reach the GPUs. ``instance``: the instance type the estimate
    is for (the slowest network of the pod's types). ``size``: the weights' size and its source.
    ``load_bytes_per_second``: the weights' read rate (``min`` of the load path's throughput and
    the network). ``phases``: ``node_start``, ``image_pull``, ``weight_load``,
    ``engine_warmup`` (and ``group_init`` before the warm-up for several nodes).
    ``startup_s``, ``pod_start_s``, ``launch_s``: the budgets. ``nodes``: the nodes one model
    copy spans (a LeaderWorkerSet group when > 1), each running these phases in parallel.
    """

    load_path: LoadPath
    instance: InstanceType
    size: ModelSize
    load_bytes_per_second: int
    phases: tuple[Phase, ...]
    startup_s: int
    pod_start_s: int
    launch_s: int
    nodes: int = 1

    def phase(self, name: str) -> Phase:
        """The phase called ``name``."""
        return next(p for p in self.phases if p.name == name)

    @property
    def expected_s(self) -> int | None:
        """The estimated time to serve: every phase added up (``None``: size unknown)."""
        seconds = [p.seconds for p in self.phases]
        return None if None in seconds else sum(s for s in seconds if s is not None)

    @property
    def physical_limit_s(self) -> int | None:
        """Model bytes over the instance's baseline network bandwidth: the shortest weight load
        the instance allows, whatever the load path (``None``: size unknown)."""
        if self.size.bytes is None:
            return None
        return math.ceil(self.size.bytes / self.instance.network_bytes_per_second)

    @property
    def bytes_read(self) -> int | None:
        """Bytes S3 serves for one cold start of the model copy: every node reads the whole
        checkpoint (module doc), ``nodes x model_bytes`` (``None``: size unknown)."""
        return None if self.size.bytes is None else self.nodes * self.size.bytes

    @property
    def node_seconds(self) -> int | None:
        """Node time billed before the copy serves: ``nodes x expected`` (``None``: size
        unknown). A group restart (any of its pods failing) costs it again."""
        expected = self.expected_s
        return None if expected is None else self.nodes * expected

    @property
    def startup_failures(self) -> int:
        """The startup probe's ``failureThreshold`` at :data:`STARTUP_PERIOD_S`."""
        return self.startup_s // STARTUP_PERIOD_S

    def to_json(self) -> dict[str, Any]:
        """The cold start as ``mlcc plan`` prints it (estimates, labelled so)."""
        network = self.instance
        return {
            "estimate": True,
            "instance_type": network.node_name,
            "load_path": self.load_path,
            "model_bytes": self.size.bytes,
            "model_bytes_source": self.size.source,
            "network": {
                "baseline_gbps": network.network_gbps,
                "burst_gbps": network.network_burst_gbps,
                "used": "baseline",
                "source": "mlcc_constructs/data/instance_catalog.json",
            },
            "load_bytes_per_second": self.load_bytes_per_second,
            "phases": {p.name: p.to_json() for p in self.phases},
            "expected_seconds": self.expected_s,
            "nodes": {
                "count": self.nodes,
                "bytes_read_per_node": self.size.bytes,
                "bytes_read_total": self.bytes_read,
                "node_seconds": self.node_seconds,
                "formula": "every node reads the whole checkpoint, in parallel; node seconds = "
                "nodes x expected (billed before the copy serves, again on a group restart)",
                "source": str(_data()["multi_node_reads"]["source"]),
            },
            "physical_limit": {
                "seconds": self.physical_limit_s,
                "formula": "model_bytes / instance baseline network bandwidth",
            },
            "budget": {
                "startup_probe_seconds": self.startup_s,
                "startup_probe_failure_threshold": self.startup_failures,
                "do_not_disrupt_seconds": self.pod_start_s,
                "pod_launch_seconds": self.launch_s,
                "formula": f"startup = max({STARTUP_FLOOR_S}, ceil({SAFETY} x (weight_load + "
                f"group_init + engine_warmup))) ({UNKNOWN_SIZE_STARTUP_S} without a model size); "
                "do-not-disrupt = image_pull + startup; launch = node_start + do-not-disrupt",
            },
        }


@cache
def _data() -> Mapping[str, Any]:
    document: Mapping[str, Any] = json.loads(data_path(DATA_FILE).read_text(encoding="utf-8"))
    return document


def load_paths() -> tuple[str, ...]:
    """Every load path the data knows."""
    return tuple(_data()["load_paths"])


def load_path(
    *, source_kind: str, platform_mounts: bool, prefetch: bool, model_load: str = "mount"
) -> LoadPath:
    """How the weights reach the GPUs: from the Hub; streamed by the engine (``model_load``
    ``stream``); prefetched by the platform (``platform_mounts``: the HyperPod operator mounts
    the model, and copies it first unless ``prefetch`` is off); else read through the mount."""
    if source_kind == "huggingface":
        return "huggingface"
    if model_load == "stream":
        return "stream"
    return "prefetch" if platform_mounts and prefetch else "mount"


def cold_start(
    *,
    size: ModelSize,
    instances: Sequence[InstanceType],
    path: LoadPath,
    launches_nodes: bool,
    nodes: int = 1,
) -> ColdStart:
    """The cold start of a pod loading ``size`` over ``path`` on the slowest network of
    ``instances`` (its instance types), on a new node when ``launches_nodes``; with ``nodes``
    > 1, of a group whose nodes each do so in parallel and then form the group (module doc)."""
    data = _data()
    instance = min(instances, key=lambda i: i.network_gbps)  # first of the slowest
    network = instance.network_bytes_per_second
    path_facts = data["load_paths"][path]
    throughput = int(path_facts["bytes_per_second"])
    rate = min(throughput, network)
    facts = data["phases"]
    node_s = int(facts["node_start"]["seconds"]) if launches_nodes else 0
    pull_s = int(facts["image_pull"]["seconds"])
    warm_s = int(facts["engine_warmup"]["seconds"])
    load_s = None if size.bytes is None else math.ceil(size.bytes / rate)
    bound = "the network" if rate < throughput else f"the {path} load path"
    reads = data["multi_node_reads"]
    load = Phase(
        name="weight_load",
        seconds=load_s,
        assumption=(
            "the model's size is unknown: set model.bytes in the spec"
            if size.bytes is None
            else f"{size.bytes:,} bytes (from {size.source}) at {rate:,} bytes/s, bound by "
            f"{bound}: {path_facts['assumption']}"
        )
        + (f"; on each of the {nodes} nodes at once: {reads['assumption']}" if nodes > 1 else ""),
        source=f"{path_facts['source']}; network: {instance.node_name} baseline "
        f"{instance.network_gbps:g} Gbps (instance_catalog.json)"
        + (f"; several nodes: {reads['source']}" if nodes > 1 else ""),
    )
    node = Phase(
        name="node_start",
        seconds=node_s,
        assumption=facts["node_start"]["assumption"]
        if launches_nodes
        else "the target's nodes exist already (no GPU node to launch)",
        source=facts["node_start"]["source"],
    )
    known = {"node_start": node, "weight_load": load}
    phases = tuple(
        known.get(name) or _phase(name, facts) for name in (GROUP_PHASES if nodes > 1 else PHASES)
    )
    group_s = int(facts["group_init"]["seconds"]) if nodes > 1 else 0
    if load_s is None:
        startup = UNKNOWN_SIZE_STARTUP_S
    else:
        startup = max(STARTUP_FLOOR_S, math.ceil(SAFETY * (load_s + group_s + warm_s)))
    startup = STARTUP_PERIOD_S * math.ceil(startup / STARTUP_PERIOD_S)
    return ColdStart(
        load_path=path,
        instance=instance,
        size=size,
        load_bytes_per_second=rate,
        phases=phases,
        startup_s=startup,
        pod_start_s=pull_s + startup,
        launch_s=node_s + pull_s + startup,
        nodes=nodes,
    )


def _phase(name: str, facts: Mapping[str, Any]) -> Phase:
    fact = facts[name]
    return Phase(
        name=name,
        seconds=int(fact["seconds"]),
        assumption=str(fact["assumption"]),
        source=str(fact["source"]),
    )
