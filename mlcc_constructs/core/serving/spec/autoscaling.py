"""``autoscaling``: how many replicas a deployment runs, driven by one of its engine's metrics
(:class:`Autoscaling`), and the checks of its values (:func:`autoscaling_problems`), each naming
its field.

Defaults follow the vLLM production-stack's KEDA example (one ScaledObject per model on
``vllm:num_requests_waiting``: threshold 5, polling every 15 s, cooldown 360 s): ``metric`` is the
engine's queue-depth metric and ``target`` the default its manifest names for it
(``metrics.autoscaling_target``, 5 for vLLM and SGLang). A queue-depth target is the number of
waiting requests per replica the autoscaler aims for: above it, a replica is added.

``min_replicas`` is the floor while the deployment serves traffic; ``scale_to_zero`` lets it
drop to zero replicas when no request arrives for ``cooldown_seconds`` and come back on the first
request (eks: a wake-up trigger on the load balancer's CloudWatch metrics, because no pod is left
to report a queue; the README says what the first request sees).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlcc_constructs.core.engines.metrics import HISTOGRAMS, ROLE_RANGES, EngineMetrics
from mlcc_constructs.core.support.errors import Problem, closest
from mlcc_constructs.core.support.field_meta import meta
from mlcc_constructs.core.support.typecheck import check_fields

INT32_MAX = 2**31 - 1
DEFAULT_COOLDOWN_S = 360
"""Seconds without load before scaling in (to ``min_replicas``, or to zero): production-stack's
``cooldownPeriod``."""
DEFAULT_POLLING_S = 15
"""Seconds between two reads of the metric: production-stack's ``pollingInterval``."""
DEFAULT_METRIC_ROLE = "queue_depth"


@dataclass(frozen=True, kw_only=True)
class Autoscaling:
    """Replicas driven by an engine metric (eks: a KEDA ScaledObject; hyperpod-eks: the
    InferenceEndpointConfig's ``autoScalingSpec``). The Deployment's replica count is then the
    autoscaler's."""

    max_replicas: int
    """The most replicas (each one instance's GPUs): the bound of the GPU spend, so it has no
    default. At least 1, and at least ``min_replicas``."""
    min_replicas: int = 1
    """The fewest replicas while the deployment serves traffic. At least 1. Default: 1."""
    metric: str | None = field(default=None, metadata=meta(minLength=1))
    """The engine metric to scale on: a metric name the engine's manifest names
    (``vllm:num_requests_waiting``) or its role (``queue_depth``, ``running_requests``,
    ``kv_cache_usage``). Default: the engine's queue-depth metric."""
    target: float | None = None
    """The metric's value per replica the autoscaler aims for. Default: the engine manifest's
    ``metrics.autoscaling_target`` for its queue-depth metric (5 for vLLM and SGLang); another
    metric needs one."""
    scale_to_zero: bool = False
    """Scale to zero replicas after ``cooldown_seconds`` without requests, and back to
    ``min_replicas`` on the next one (which waits for a pod to start: see the README). Default:
    false."""
    cooldown_seconds: int = DEFAULT_COOLDOWN_S
    """Seconds without load before scaling in. Default: 360."""
    polling_seconds: int = DEFAULT_POLLING_S
    """Seconds between two reads of the metric. Default: 15."""

    def __post_init__(self) -> None:
        if isinstance(self.target, int) and not isinstance(self.target, bool):
            object.__setattr__(self, "target", float(self.target))
        check_fields(self)


@dataclass(frozen=True, kw_only=True)
class ScalingMetric:
    """The metric an autoscaled deployment scales on, resolved against its engine's manifest.

    Fields:

    ``name``: The Prometheus metric (``vllm:num_requests_waiting``).
    ``role``: Its role in the manifest (``queue_depth``).
    ``target``: The value per replica the autoscaler aims for.
    ``model_label``: The label holding the served model name, or ``None``.
    """

    name: str
    role: str
    target: float
    model_label: str | None


def scaling_roles(metrics: EngineMetrics) -> dict[str, str]:
    """The roles an autoscaler may scale on (gauges: histograms are not per-replica loads)."""
    return {role: name for role, name in metrics.names.items() if role not in HISTOGRAMS}


def scaling_metric(autoscaling: Autoscaling, metrics: EngineMetrics) -> ScalingMetric | None:
    """The metric ``autoscaling`` names (its role or metric name), or ``None`` when the engine
    exports no such metric (:func:`autoscaling_problems` reports it)."""
    roles = scaling_roles(metrics)
    wanted = autoscaling.metric or roles.get(DEFAULT_METRIC_ROLE)
    role = next((r for r, n in roles.items() if wanted in (r, n)), None)
    if role is None:
        return None
    target = autoscaling.target
    if target is None and role == DEFAULT_METRIC_ROLE:
        target = metrics.autoscaling_target
    if target is None:
        return None
    return ScalingMetric(
        name=roles[role], role=role, target=target, model_label=metrics.model_label
    )


def autoscaling_problems(
    autoscaling: Autoscaling,
    *,
    replicas: int,
    engine: str,
    metrics: EngineMetrics | None,
    pointer: str = "/scaling/autoscaling",
) -> list[Problem]:
    """Every problem of ``autoscaling`` for a deployment of ``engine`` (whose manifest declares
    ``metrics``, or ``None``) with the spec's fixed ``replicas``."""
    problems: list[Problem] = []
    low, high = autoscaling.min_replicas, autoscaling.max_replicas
    if not 1 <= high <= INT32_MAX:
        problems.append(
            Problem(
                message="max_replicas must be at least 1: it bounds the replicas (and GPUs) the "
                "autoscaler may start",
                pointer=f"{pointer}/max_replicas",
                value=high,
                allowed=f"1..{INT32_MAX}",
                fix="set the most replicas you are willing to pay for",
            )
        )
    if not 1 <= low <= INT32_MAX:
        problems.append(
            Problem(
                message="min_replicas must be at least 1 (the floor while serving traffic)",
                pointer=f"{pointer}/min_replicas",
                value=low,
                allowed=f"1..{INT32_MAX}",
                fix="to run no replica while idle, keep min_replicas 1 and set "
                "autoscaling.scale_to_zero: true",
            )
        )
    elif 1 <= high < low:
        problems.append(
            Problem(
                message="min_replicas is above max_replicas",
                pointer=f"{pointer}/min_replicas",
                value=low,
                allowed=f"1..{high} (max_replicas)",
                fix=f"lower min_replicas to at most {high}, or raise max_replicas",
            )
        )
    for name, value, floor in (
        ("cooldown_seconds", autoscaling.cooldown_seconds, 0),
        ("polling_seconds", autoscaling.polling_seconds, 1),
    ):
        if not floor <= value <= INT32_MAX:
            problems.append(
                Problem(
                    message=f"{name} must be {'non-negative' if floor == 0 else 'positive'} "
                    "seconds",
                    pointer=f"{pointer}/{name}",
                    value=value,
                    allowed=f"{floor}..{INT32_MAX}",
                    fix=f"leave it unset for the default "
                    f"({DEFAULT_COOLDOWN_S if floor == 0 else DEFAULT_POLLING_S} s)",
                )
            )
    if autoscaling.target is not None and not autoscaling.target > 0:
        problems.append(
            Problem(
                message="target must be a positive value of the metric per replica",
                pointer=f"{pointer}/target",
                value=autoscaling.target,
                allowed="a number above 0",
            )
        )
    if replicas > 1:
        what = "scale_to_zero" if autoscaling.scale_to_zero else "autoscaling"
        problems.append(
            Problem(
                message=f"replicas is fixed at {replicas}, but {what} sets the replica count: "
                "the two would fight over it",
                pointer="/scaling/replicas",
                value=replicas,
                allowed="1 (the default) with autoscaling",
                fix="drop scaling.replicas and set scaling.autoscaling.min_replicas (and "
                "max_replicas) instead",
            )
        )
    problems += _metric_problems(autoscaling, engine, metrics, pointer)
    return problems


def _metric_problems(
    autoscaling: Autoscaling, engine: str, metrics: EngineMetrics | None, pointer: str
) -> list[Problem]:
    if metrics is None:
        return [
            Problem(
                message=f"engine {engine!r} exports no Prometheus metrics on record (its "
                "manifest declares no metrics), so nothing can drive an autoscaler",
                pointer=pointer,
                value=engine,
                fix="serve it with a fixed replicas, or declare the engine's metrics in its "
                "manifest (metrics.names.queue_depth at least)",
            )
        ]
    roles = scaling_roles(metrics)
    if autoscaling.metric is not None and autoscaling.metric not in {*roles, *roles.values()}:
        offered = [*roles.values(), *roles]
        near = closest(autoscaling.metric, offered)
        return [
            Problem(
                message=f"engine {engine!r} exports no scaling metric {autoscaling.metric!r}",
                pointer=f"{pointer}/metric",
                value=autoscaling.metric,
                allowed=", ".join(f"{name} ({role})" for role, name in roles.items()),
                fix=f"did you mean {', '.join(near)}?"
                if near
                else "name one of the allowed metrics or roles",
            )
        ]
    metric = scaling_metric(autoscaling, metrics)
    if metric is None:
        role = next(r for r, n in roles.items() if autoscaling.metric in (r, n))
        return [
            Problem(
                message=f"the metric {roles[role]} ({role}) has no default target: only the "
                "queue-depth metric has one",
                pointer=f"{pointer}/target",
                value=None,
                fix=f"set scaling.autoscaling.target (the {role} value per replica to aim for)",
            )
        ]
    return _target_range_problems(metric, pointer)


def _target_range_problems(metric: ScalingMetric, pointer: str) -> list[Problem]:
    """A target the metric never passes (its role's :data:`ROLE_RANGES` maximum or above):
    the autoscaler would never scale out. A target in percent of a share gets its share."""
    span = ROLE_RANGES.get(metric.role)
    if span is None or span.maximum is None or metric.target < span.maximum:
        return []
    as_share = metric.target / 100
    fix = (
        f"give the target as a share: {as_share:g} for {metric.target:g} %"
        if span.maximum == 1 and 1 < metric.target < 100
        else f"give the target in the metric's unit, e.g. {span.example}"
    )
    return [
        Problem(
            message=f"target {metric.target:g} is out of the range of {metric.name} "
            f"({metric.role}: the {span.unit}): the metric never passes {span.maximum:g}, so "
            "the autoscaler would never scale out",
            pointer=f"{pointer}/target",
            value=metric.target,
            allowed=f"above 0 and below {span.maximum:g}",
            fix=fix,
        )
    ]
