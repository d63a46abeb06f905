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

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.serving.kinds.namespace import namespace_object
from mlcc_constructs.core.serving.manifest_ids import unique_ids
from mlcc_constructs.core.serving.prepare.deployment import PreparedDeployment
from mlcc_constructs.core.support.errors import MlccError, Problem, raise_if_any

SERVING = "serving"
RESOURCE_LIMIT = 500  # CloudFormation resources per stack
# Stack names are at most 128 characters; "mlcc-<profile>-" takes at most 26 (profile <= 20).
SUFFIX_MAX = 128 - 26


def serving_stack_suffix(target: str, namespace: str, name: str) -> str:
    """``serving-<target>-<namespace>-<name>``; a name too long for a stack keeps its start and
    ends with 8 hex digits of a hash of the whole key."""
    suffix = f"{SERVING}-{target}-{namespace}-{name}"
    if len(suffix) <= SUFFIX_MAX:
        return suffix
    digest = hashlib.sha256(suffix.encode()).hexdigest()[:8]
    return f"{suffix[: SUFFIX_MAX - 9].rstrip('-')}-{digest}"


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
    """The plan for ``deployments`` (``(where declared, prepared)`` pairs); two deployments
    with one stack, an object applied twice or a stack over the resource limit is a problem."""
    problems: list[Problem] = []
    units: list[ServingUnit] = []
    owners: dict[str, str] = {}
    for declared, prepared in deployments:
        spec = prepared.spec
        assert spec.name is not None  # prepare() refuses a spec without a name
        suffix = serving_stack_suffix(prepared.target.name, spec.namespace, spec.name)
        if suffix in owners:
            problems.append(
                Problem(
                    message=f"two deployments {spec.name!r} on {prepared.target.name} in "
                    f"namespace {spec.namespace!r} (the other: {owners[suffix]})",
                    where=declared,
                    value=spec.name,
                    fix="rename one of them, or move it to another namespace",
                )
            )
            continue
        owners[suffix] = declared
        objects = tuple(entry.object for entry in prepared.objects)
        if len(objects) > RESOURCE_LIMIT:
            problems.append(
                Problem(
                    message=f"the deployment renders {len(objects)} objects, more than the "
                    f"{RESOURCE_LIMIT} resources of one CloudFormation stack",
                    where=declared,
                    fix="split the deployment",
                )
            )
            continue
        units.append(ServingUnit(suffix=suffix, where=declared, objects=objects, logical_ids=()))
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
