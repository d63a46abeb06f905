"""An engine's Prometheus metrics, as its manifest declares them (``metrics``).

The names are data: each built-in manifest names the metrics of the pinned engine version, read
from the engine's source (the recorded facts under ``tests/engine_parsers/metrics/``, which the
tests compare every name with). Autoscaling queries, ``--enable-metrics`` and the Grafana
dashboard read them here; nothing branches on an engine's name.

Roles (``names`` keys), each a metric of the engine's ``/metrics`` (``launch.metrics_path``):

* ``queue_depth``: requests waiting to be scheduled (a gauge): the default autoscaling metric,
  as in the vLLM production-stack's KEDA example (``vllm:num_requests_waiting``, threshold 5).
* ``running_requests``: requests in the running batch (a gauge).
* ``kv_cache_usage``: the KV cache's used share, 0..1 (a gauge).
* ``time_to_first_token`` and ``inter_token_latency``: histograms, in seconds.

An engine without Prometheus metrics on record (TensorRT-LLM 1.0.0, LMI, llama.cpp) declares
no ``metrics``: autoscaling it is refused with the reason (:func:`metrics_problems` checks a
declared block; the spec checks refuse a metric an engine lacks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mlcc_constructs.core.support.errors import Problem, json_pointer

ROLES = (
    "queue_depth",
    "running_requests",
    "kv_cache_usage",
    "time_to_first_token",
    "inter_token_latency",
)
"""The metric roles a manifest may name, in the dashboard's order."""
HISTOGRAMS = frozenset({"time_to_first_token", "inter_token_latency"})
"""Roles whose metric is a histogram (queried as ``<name>_bucket``)."""


@dataclass(frozen=True, kw_only=True)
class RoleRange:
    """What a role's metric measures and the values it takes: an autoscaling target outside
    them is never reached (a share's target of 50 never scales out)."""

    unit: str
    """What one unit of the metric is (``requests``, ``share of the KV cache``)."""
    maximum: float | None = None
    """The largest value the metric takes, or ``None`` (unbounded). A target must stay below
    it: at the maximum the metric can only equal the target, never pass it."""
    example: str = ""
    """A target in the unit, for a fix (``0.8 for 80 %``)."""


ROLE_RANGES: Mapping[str, RoleRange] = MappingProxyType(
    {
        "queue_depth": RoleRange(unit="waiting requests per replica", example="5"),
        "running_requests": RoleRange(unit="running requests per replica", example="16"),
        # a share: vllm 0.31.0 vllm/v1/metrics/loggers.py documents vllm:kv_cache_usage_perc
        # as "KV-cache usage. 1 means 100 percent usage."; sglang 0.5.21
        # srt/observability/metrics_collector.py token_usage is the KV pool's used share
        "kv_cache_usage": RoleRange(
            unit="used share of the KV cache, 0..1", maximum=1.0, example="0.8 for 80 %"
        ),
        "time_to_first_token": RoleRange(unit="seconds"),
        "inter_token_latency": RoleRange(unit="seconds"),
    }
)
"""Each role's unit and range (every engine's metric of a role is in the role's unit)."""
ENABLE_CAPABILITY = "metrics_enable"
"""The capability (boolean) that turns the engine's ``/metrics`` on where it is off by default
(SGLang ``--enable-metrics``): emitted whenever the target scrapes metrics."""


@dataclass(frozen=True, kw_only=True)
class EngineMetrics:
    """The ``metrics`` block of an engine manifest.

    Fields:

    ``path``: The HTTP path of the Prometheus exposition (``launch.metrics_path``).
    ``names``: Role (:data:`ROLES`) → metric name, e.g. ``queue_depth`` →
        ``vllm:num_requests_waiting``. A role the engine does not export is absent.
    ``model_label``: The label holding the served model name on every series
        (``model_name``). Default: none (queries cannot select one model's series).
    ``autoscaling_target``: The default target of the ``queue_depth`` metric per replica.
    ``enable_capability``: The capability that turns metrics on, or ``None`` when the engine
        serves them by default.
    ``source``: Where the names were read (engine version and file).
    """

    path: str
    names: Mapping[str, str]
    model_label: str | None
    autoscaling_target: float
    enable_capability: str | None
    source: str

    def name(self, role: str) -> str | None:
        """The metric of ``role``, or ``None`` when the engine exports none."""
        return self.names.get(role)


def engine_metrics(raw: Mapping[str, Any]) -> EngineMetrics | None:
    """The metrics of the manifest document ``raw``, or ``None`` when it declares none."""
    block = raw.get("metrics")
    path = (raw.get("launch") or {}).get("metrics_path")
    if not block or path is None:
        return None
    enable = block.get("enable_capability")
    return EngineMetrics(
        path=str(path),
        names=MappingProxyType({k: str(v) for k, v in block["names"].items()}),
        model_label=block.get("model_label"),
        autoscaling_target=float(block["autoscaling_target"]),
        enable_capability=str(enable) if enable else None,
        source=str(block["source"]),
    )


def metrics_problems(document: Mapping[str, Any], where: str) -> list[Problem]:
    """Rules of a ``metrics`` block the schema cannot express: it needs the metrics path, and
    its ``enable_capability`` is a boolean capability of the manifest."""
    block = document.get("metrics")
    if not block:
        return []
    problems = []
    if (document.get("launch") or {}).get("metrics_path") is None:
        problems.append(
            Problem(
                message="metrics are declared but the engine has no metrics path",
                where=where,
                pointer="/launch/metrics_path",
                fix='set launch.metrics_path (e.g. "/metrics")',
            )
        )
    enable = block.get("enable_capability")
    if enable is not None:
        capability = (document.get("capability_map") or {}).get(enable)
        if capability is None or capability.get("value_type") != "boolean":
            problems.append(
                Problem(
                    message="enable_capability must name a boolean capability of the manifest",
                    where=where,
                    pointer=json_pointer("metrics", "enable_capability"),
                    value=enable,
                    fix=f'declare "{enable}": {{"suffix": "...", "value_type": "boolean"}} '
                    "in capability_map",
                )
            )
    return problems
