"""How much GPU capacity the GPU NodePool may hold, and when Auto Mode may take its nodes away.

**Limits.** A NodePool's ``limits`` cap the resources of all its nodes together: Karpenter
launches no node that would take the pool over them (Karpenter v1 NodePool ``spec.limits``;
EKS Auto Mode serves the same API, https://docs.aws.amazon.com/eks/latest/userguide/
create-node-pool.html). The pool is limited on ``nvidia.com/gpu`` to what the deployments can
use at most: the sum over the eks deployments of max replicas x GPUs per pod
(:func:`default_gpu_limit`), or the ``gpu_limit`` context value. A limit below one replica's GPUs
could never launch that deployment, and is refused (:func:`gpu_limit_problems`).

**Disruption.** Karpenter disrupts nodes voluntarily for drift (a newer Auto Mode AMI, a changed
NodePool) and consolidation; NodePool ``disruption.budgets`` (``nodes``, optional ``reasons``
among ``Drifted``, ``Underutilized``, ``Empty``, and an optional cron ``schedule`` with a
``duration`` during which the budget is active) bound how many nodes may be disrupting at once;
with several budgets the most restrictive active one wins, and with none defined Karpenter
allows 10% (https://karpenter.sh/docs/concepts/disruption/, "NodePool Disruption Budgets").

* Consolidation is ``WhenEmpty``: Karpenter consolidates only nodes with no workload pods, so it
  never evicts a running serving pod, whether or not a replacement could start
  (``WhenEmptyOrUnderutilized`` would repack running servers onto other nodes, and a GPU
  server's replacement needs a free GPU node and minutes of weight loading). A budget of ``0``
  for ``Underutilized`` says so again, should the policy ever change.
* Drift: a budget of ``0`` for ``Drifted`` blocks it. With a maintenance window
  (:class:`MaintenanceWindow`, context ``gpu_maintenance_window``) drift may replace one node at a
  time inside the window and none outside it: a ``0`` budget is scheduled over the rest of the
  day (or week), since a budget holds only while its schedule is active.
* Expiry is forced and ignores budgets: Auto Mode replaces every node within 21 days
  ("nodes launched by EKS Auto Mode have a maximum lifetime of 21 days", EKS User Guide,
  automode.html) and its sample NodePools expire nodes after ``336h``. The pool says ``336h``
  (:data:`EXPIRE_AFTER`) explicitly. When a node expires, its pods are evicted (PodDisruptionBudgets
  respected) and deleted after the node's ``terminationGracePeriod``
  (:data:`TERMINATION_GRACE_PERIOD`, 2h: the longest ready timeout a replacement replica may take,
  55 minutes, plus the pod's own drain). A single-replica deployment is down from its pod's
  eviction until its replacement is ready (a new GPU node, the image, the weights: the
  deployment's ready timeout); two replicas with a PodDisruptionBudget keep serving.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.support.errors import Problem, fail

EXPIRE_AFTER = "336h"
"""Each GPU node's lifetime (Auto Mode's default; its maximum is 21 days, 504h)."""
MAX_EXPIRE_HOURS = 21 * 24
TERMINATION_GRACE_PERIOD = "2h"
"""How long a node being removed waits for its pods to drain before deleting them."""
CONSOLIDATION_POLICY = "WhenEmpty"
WINDOW_DRIFT_NODES = "1"
"""Nodes drift may replace at once inside the maintenance window."""
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron day-of-week 0..6
_WINDOW = re.compile(
    r"^(?P<day>daily|sun|mon|tue|wed|thu|fri|sat) (?P<hour>[01][0-9]|2[0-3]):(?P<minute>[0-5][0-9])"
    r" (?P<hours>[0-9]{1,2})h$"
)
_DURATION = re.compile(r"^([0-9]+(s|m|h))+$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
WINDOW_FORMAT = "'<daily|sun|mon|...|sat> HH:MM <hours>h' in UTC, e.g. 'sun 02:00 4h'"


def default_gpu_limit(pairs: Iterable[tuple[int, int]]) -> int:
    """The GPUs the deployments use at most: the sum of ``max replicas x GPUs per pod`` over
    ``(max replicas, GPUs per pod)`` pairs."""
    return sum(replicas * gpus for replicas, gpus in pairs)


def gpu_limit_problems(
    limit: object, pairs: Iterable[tuple[int, int]], *, where: str, pointer: str = "/gpu_limit"
) -> list[Problem]:
    """The problems of a ``gpu_limit``: not a positive whole number, or below one replica's
    GPUs of a deployment (that deployment could never start a pod)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return [
            Problem(
                message="the GPU NodePool's limit must be a whole number of GPUs, at least 1",
                where=where,
                pointer=pointer,
                value=limit,
                allowed="1, 2, ...",
                fix="set the GPUs the pool may hold, or leave it unset (the deployments' "
                "max replicas x GPUs per pod)",
            )
        ]
    widest = max((gpus for _, gpus in pairs), default=0)
    if limit < widest:
        return [
            Problem(
                message=f"the GPU NodePool's limit is below one replica's GPUs ({widest}): that "
                "deployment could never start",
                where=where,
                pointer=pointer,
                value=limit,
                allowed=f"{widest} or more",
                fix=f"raise gpu_limit to at least {widest}",
            )
        ]
    return []


def parse_gpu_limit(value: object, *, where: str, key: str = "gpu_limit") -> int | None:
    """A ``gpu_limit`` context value: ``None`` (unset), a whole number, or its digits (``-c``)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise fail(
        "the GPU NodePool's limit must be a whole number of GPUs",
        where=where,
        pointer=f"/{key}",
        value=value,
        allowed="1, 2, ...",
        fix=f"pass -c {key}=8 or set a number in cdk.json",
    )


@dataclass(frozen=True, kw_only=True)
class MaintenanceWindow:
    """When drift may replace GPU nodes: ``hours`` from ``hour``:``minute`` UTC, every day
    (``day`` ``None``) or on one day of the week (0 Sunday .. 6 Saturday)."""

    day: int | None
    hour: int
    minute: int
    hours: int

    @property
    def period_hours(self) -> int:
        """24 (daily) or 168 (weekly)."""
        return 24 if self.day is None else 7 * 24

    def start_cron(self) -> str:
        """The cron schedule of the window's start."""
        return _cron(self.minute, self.hour, self.day)

    def end_cron(self) -> str:
        """The cron schedule of the window's end (the next day's when it crosses midnight)."""
        total = self.hour + self.hours
        day = None if self.day is None else (self.day + total // 24) % 7
        return _cron(self.minute, total % 24, day)


def _cron(minute: int, hour: int, day: int | None) -> str:
    return f"{minute} {hour} * * {'*' if day is None else day}"


def parse_maintenance_window(
    value: object, *, where: str, pointer: str = "/gpu_maintenance_window"
) -> MaintenanceWindow | None:
    """A maintenance window written ``'<daily|sun|...|sat> HH:MM <hours>h'`` (UTC), or ``None``
    (no window: drift never replaces a GPU node; expiry still does)."""
    if value is None or value == "":
        return None
    match = _WINDOW.match(value) if isinstance(value, str) else None
    if match is not None:
        day = None if match["day"] == "daily" else _DAYS.index(match["day"])
        hours = int(match["hours"])
        window = MaintenanceWindow(
            day=day, hour=int(match["hour"]), minute=int(match["minute"]), hours=hours
        )
        if 1 <= hours < window.period_hours and hours <= 24:
            return window
    raise fail(
        "not a maintenance window",
        where=where,
        pointer=pointer,
        value=value,
        allowed=WINDOW_FORMAT + ", 1 to 23 hours daily or 1 to 24 on one day",
        fix="e.g. 'sun 02:00 4h' (Sundays 02:00-06:00 UTC) or 'daily 03:00 2h'",
    )


def disruption_budgets(window: MaintenanceWindow | None) -> list[dict[str, Any]]:
    """The GPU pool's ``disruption.budgets`` (module doc): no consolidation of running pods;
    no drift, or one node at a time inside ``window`` and none outside it."""
    budgets: list[dict[str, Any]] = [{"nodes": "0", "reasons": ["Underutilized"]}]
    if window is None:
        return [*budgets, {"nodes": "0", "reasons": ["Drifted"]}]
    return [
        *budgets,
        {
            "nodes": WINDOW_DRIFT_NODES,
            "reasons": ["Drifted"],
            "schedule": window.start_cron(),
            "duration": f"{window.hours}h",
        },
        {
            "nodes": "0",
            "reasons": ["Drifted"],
            "schedule": window.end_cron(),
            "duration": f"{window.period_hours - window.hours}h",
        },
    ]


def duration_hours(text: str) -> float:
    """Hours of a Karpenter duration (``336h``, ``1h30m``); raises ``ValueError`` otherwise."""
    if not _DURATION.match(text):
        raise ValueError(text)
    return (
        sum(
            int(number) * _UNIT_SECONDS[unit]
            for number, unit in re.findall(r"([0-9]+)(s|m|h)", text)
        )
        / 3600
    )


def lifetime_problems(
    *, expire_after: str, termination_grace_period: str, where: str
) -> list[Problem]:
    """An ``expireAfter`` that is not a duration of at most 21 days (Auto Mode's maximum node
    lifetime), or a ``terminationGracePeriod`` that is not a positive duration."""
    problems = []
    for field, text, bound in (
        ("expire_after", expire_after, MAX_EXPIRE_HOURS),
        ("termination_grace_period", termination_grace_period, None),
    ):
        try:
            hours = duration_hours(text)
        except (TypeError, ValueError):
            hours = -1.0
        if hours <= 0 or (bound is not None and hours > bound):
            problems.append(
                Problem(
                    message="not a node lifetime Auto Mode honours"
                    if bound
                    else "not a positive duration",
                    where=where,
                    pointer=f"/{field}",
                    value=text,
                    allowed=f"a duration such as 336h, at most {bound}h (21 days)"
                    if bound
                    else "a duration such as 2h or 90m",
                    fix=f"use e.g. {EXPIRE_AFTER if bound else TERMINATION_GRACE_PERIOD}",
                )
            )
    return problems
