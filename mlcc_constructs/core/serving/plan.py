"""How the app's deployments are applied by CloudFormation: which stack holds which object.

**The split.** CloudFormation allows 500 resources per stack and a deployment renders about
eight objects, each applied as its own resource. Every deployment gets a stack of its own,
named from its target, namespace and name (``mlcc-<profile>-serving-eks-inference-llama``);
the namespaces its objects live in are one more stack (``mlcc-<profile>-serving``) that the
deployment stacks depend on. A deployment's stack depends only on that deployment, so adding,
changing or removing one deployment never moves a resource of another (no shard to rebalance,
no stack near the limit), and ``cdk diff`` after changing one deployment shows that one stack
with exactly the changed objects. Numbered shards filled in order would move resources when a
deployment is inserted or removed; hash shards can overflow; nested stacks hide their changes
from ``cdk diff`` behind a changed template URL of the parent.

Objects are the render pipeline's list (:attr:`PreparedDeployment.objects`), unchanged, in
apply order; each resource's logical id comes from :mod:`mlcc_constructs.core.serving.manifest_ids`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.serving.identity import (
    SERVING as SERVING,
    SUFFIX_MAX as SUFFIX_MAX,
    declared,
    repeated_entries,
    serving_stack_suffix as serving_stack_suffix,
)
from mlcc_constructs.core.serving.kinds.namespace import namespace_object
from mlcc_constructs.core.serving.manifest_ids import unique_ids
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any

RESOURCE_LIMIT = 500  # CloudFormation resources per stack


@dataclass(frozen=True, kw_only=True)
class ServingUnit:
    """One deployment's stack.

    Fields:

    ``suffix``: the stack name after ``mlcc-<profile>-``.
    ``where``: where the deployment was declared (for errors).
    ``objects``: its objects, in apply order.
    ``logical_ids``: the logical id of each object's resource, in the same order.
    """

    suffix: str
    where: str
    objects: tuple[Mapping[str, Any], ...]
    logical_ids: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ServingPlan:
    """Every object the app applies, by stack.

    Fields:

    ``namespaces``: the ``Namespace`` objects (stack ``mlcc-<profile>-serving``), sorted.
    ``units``: one per deployment, in declaration order.
    """

    namespaces: tuple[Mapping[str, Any], ...]
    units: tuple[ServingUnit, ...]

    @property
    def objects(self) -> tuple[Mapping[str, Any], ...]:
        """Every object: namespaces first, then each deployment's."""
        return self.namespaces + tuple(o for unit in self.units for o in unit.objects)


def plan_serving(
    deployments: Sequence[tuple[str, PreparedDeployment]], *, where: str = "serving"
) -> ServingPlan:
    """The plan for ``deployments`` (``(where declared, prepared)`` pairs); a deployment the list
    repeats (:func:`~mlcc_constructs.core.serving.identity.duplicate_problems`: one stack, one
    file or one object for two entries), an object applied twice or a stack over the resource
    limit is a problem."""
    entries = [declared(where_declared, prepared) for where_declared, prepared in deployments]
    # The one rule for a list that repeats a deployment (mlcc render, dist/ and these stacks).
    repeated = repeated_entries(entries)
    problems: list[Problem] = list(repeated.values())
    units: list[ServingUnit] = []
    for index, entry in enumerate(entries):
        if index in repeated:
            continue
        declared_at, suffix, objects = entry.where, entry.key.stack_suffix(), entry.objects
        if len(objects) > RESOURCE_LIMIT:
            problems.append(
                Problem(
                    message=f"the deployment renders {len(objects)} objects, more than the "
                    f"{RESOURCE_LIMIT} resources of one CloudFormation stack",
                    where=declared_at,
                    fix="split the deployment",
                )
            )
            continue
        units.append(ServingUnit(suffix=suffix, where=declared_at, objects=objects, logical_ids=()))
    names = sorted(
        {
            str(o["metadata"]["namespace"])
            for u in units
            for o in u.objects
            if "namespace" in o.get("metadata", {})
        }
    )
    namespaces = tuple(namespace_object(name) for name in names)
    try:
        ids = unique_ids([*namespaces, *(o for u in units for o in u.objects)], where=where)
    except MlccError as error:  # collected with the rest
        problems.extend(error.problems)
        ids = []
    raise_if_any(problems)
    position = len(namespaces)
    placed = []
    for unit in units:
        count = len(unit.objects)
        placed.append(
            ServingUnit(
                suffix=unit.suffix,
                where=unit.where,
                objects=unit.objects,
                logical_ids=tuple(ids[position : position + count]),
            )
        )
        position += count
    return ServingPlan(namespaces=namespaces, units=tuple(placed))
