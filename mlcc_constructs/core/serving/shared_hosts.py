"""The rule that spans deployments sharing a load balancer: requests must tell them apart.

Deployments with the same ``endpoint.scheme`` and ``endpoint.group`` are Ingresses of one
Application Load Balancer (the group's IngressClass). Two of them with the same host (or both
with none) and overlapping paths give the load balancer two rules for the same requests, and
one deployment gets the other's traffic while its own is never called. Each such pair is
refused, naming both entries; deployments without a group each have a load balancer of their
own. Applied wherever a list of deployments is rendered together (``mlcc render -f LIST``,
``dist/``, the app's stacks: :class:`~mlcc_constructs.core.serving.renderer.Renderer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcc_constructs.core.serving.kinds.ingress import routes
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import Problem


def overlapping(paths: Sequence[str], others: Sequence[str]) -> tuple[str, ...]:
    """The path prefixes of ``paths`` that share requests with one of ``others`` (one is a
    prefix of the other: ``/`` overlaps every path)."""
    return tuple(p for p in paths if any(p.startswith(o) or o.startswith(p) for o in others))


def shared_host_problems(entries: Sequence[tuple[str, PreparedDeployment]]) -> list[Problem]:
    """One problem per deployment (``(where, prepared)``, in list order) whose host and paths
    an earlier deployment of its load balancer group already routes (module doc)."""
    problems: list[Problem] = []
    claimed: dict[tuple[str, str, str | None], list[tuple[str, PreparedDeployment]]] = {}
    for where, prepared in entries:
        endpoint = prepared.spec.endpoint
        if not endpoint.exposed or endpoint.group is None:
            continue
        key = (endpoint.scheme, endpoint.group, endpoint.hostname)
        paths = routes(prepared)
        for first_where, first in claimed.get(key, []):
            shared = overlapping(paths, routes(first))
            if not shared:
                continue
            host = endpoint.hostname or "any host (no hostname)"
            problems.append(
                Problem(
                    message=f"shares load balancer group {endpoint.group!r} ({endpoint.scheme}),"
                    f" {host} and the paths {', '.join(shared)} with {first_where} "
                    f"({first.spec.name}): the load balancer cannot tell their requests apart",
                    where=where,
                    pointer="/endpoint/hostname",
                    value=endpoint.hostname,
                    allowed="a hostname no other deployment of the group uses",
                    fix="give each deployment of the group its own endpoint.hostname, or its "
                    "own endpoint.group",
                )
            )
            break
        claimed.setdefault(key, []).append((where, prepared))
    return problems
