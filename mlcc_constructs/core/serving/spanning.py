"""The rules that span deployments, in one place for every path that puts several deployments
together: a list rendered at once (:class:`~mlcc_constructs.core.serving.renderer.Renderer`:
``mlcc render -f LIST``, ``dist/``, the app's stacks) and the ``ServedModel`` constructs a team
adds to one cluster one by one.

- no deployment, object name or file repeats another
  (:func:`~mlcc_constructs.core.serving.identity.duplicate_problems`);
- deployments sharing a load balancer tell their requests apart by host and path
  (:func:`~mlcc_constructs.core.serving.shared_hosts.shared_host_problems`).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcc_constructs.core.serving.identity import declared, duplicate_problems
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.serving.shared_hosts import shared_host_problems
from mlcc_constructs.core.support.errors import Problem


def spanning_problems(entries: Sequence[tuple[str, PreparedDeployment]]) -> list[Problem]:
    """Every problem of ``entries`` (``(where, prepared)`` in the order they were declared)
    that no single deployment shows: each names the later entry and the one it collides with
    (module doc)."""
    return [
        *duplicate_problems([declared(where, prepared) for where, prepared in entries]),
        *shared_host_problems(entries),
    ]
