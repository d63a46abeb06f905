"""What tells the deployments of one list apart, and the one rule for a list that repeats one.

**Identity.** A deployment is its target, namespace and name (:class:`DeploymentKey`). Two
deployments of one name in different namespaces, or on different targets, are different
deployments: every name derived from a deployment for AWS or the cluster carries its namespace
(the IEC's SageMaker ``endpointName``, the Pod Identity association's namespace and service
account, the cluster-scoped PersistentVolume ``<namespace>-<name>-model``, the TLS prefix
``<namespace>/<name>``; the pods' IAM role is named by CloudFormation), and its serving stack is
``mlcc-<profile>-serving-<target>-<namespace>-<name>``.

**Files.** A deployment of a list is written (``dist/``, ``mlcc render -f LIST --out``) to
``<target>-<namespace>-<name>.k8s.yaml`` (:meth:`DeploymentKey.file_name`): the suffix of its
stack's name, so the file and the stack that applies it read alike.

**The rule** (:func:`duplicate_problems`, used by ``mlcc render`` to stdout and to ``--out``, by
the ``dist/`` writer and by the serving stacks): a list is refused, naming both entries, when two
of its entries

* are one deployment (same target, namespace and name), identical or not: one would overwrite the
  other's file and stack;
* are different deployments whose derived names still meet (the names are joined with ``-``,
  which names also hold: ``a`` + ``b-c`` and ``a-b`` + ``c``): the same file or the same stack;
* apply the same Kubernetes object (kind, namespace, name): one would overwrite the other's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.serving.manifest_ids import object_identity
from mlcc_constructs.core.support.errors import Problem

if TYPE_CHECKING:
    from mlcc_constructs.core.serving.prepared import PreparedDeployment

SERVING = "serving"
# Stack names are at most 128 characters; "mlcc-<profile>-" takes at most 26 (profile <= 20).
SUFFIX_MAX = 128 - 26
FILE_SUFFIX = ".k8s.yaml"


def serving_stack_suffix(target: str, namespace: str, name: str) -> str:
    """``serving-<target>-<namespace>-<name>``; a name too long for a stack keeps its start and
    ends with 8 hex digits of a hash of the whole key."""
    suffix = f"{SERVING}-{target}-{namespace}-{name}"
    if len(suffix) <= SUFFIX_MAX:
        return suffix
    digest = hashlib.sha256(suffix.encode()).hexdigest()[:8]
    return f"{suffix[: SUFFIX_MAX - 9].rstrip('-')}-{digest}"


@dataclass(frozen=True, kw_only=True)
class DeploymentKey:
    """The identity of a deployment: ``target`` (its target's name), ``namespace`` and
    ``name``."""

    target: str
    namespace: str
    name: str

    def file_name(self) -> str:
        """``<target>-<namespace>-<name>.k8s.yaml``: the deployment's file of a list's render
        (``dist/``, ``mlcc render -f LIST --out``)."""
        return f"{self.target}-{self.namespace}-{self.name}{FILE_SUFFIX}"

    def stack_suffix(self) -> str:
        """The name of the deployment's serving stack after ``mlcc-<profile>-``."""
        return serving_stack_suffix(self.target, self.namespace, self.name)

    def label(self) -> str:
        """``<namespace>/<name> on <target>``, for messages."""
        return f"{self.namespace}/{self.name} on {self.target}"


@dataclass(frozen=True, kw_only=True)
class DeclaredDeployment:
    """One entry of a deployment list, as :func:`duplicate_problems` compares them.

    ``where``: the entry (``cdk.json:/context/reference_deployments/1``, ``list.yaml#1``).
    ``key``: its identity.
    ``objects``: the Kubernetes objects it applies (default none: only the names are compared).
    """

    where: str
    key: DeploymentKey
    objects: tuple[Mapping[str, Any], ...] = ()


def declared(where: str, prepared: PreparedDeployment) -> DeclaredDeployment:
    """The list entry at ``where`` of the prepared deployment ``prepared``, with its objects."""
    spec = prepared.spec
    return DeclaredDeployment(
        where=where,
        key=DeploymentKey(
            target=prepared.target.name, namespace=spec.namespace, name=spec.name or ""
        ),
        objects=tuple(entry.object for entry in prepared.objects),
    )


def duplicate_problems(entries: Sequence[DeclaredDeployment]) -> list[Problem]:
    """One problem per entry that repeats an earlier one (module doc: the same deployment, the
    same file or stack, the same object), naming both entries; ``[]`` for a list whose entries
    can all be written and applied side by side."""
    return list(repeated_entries(entries).values())


def repeated_entries(entries: Sequence[DeclaredDeployment]) -> dict[int, Problem]:
    """:func:`duplicate_problems` by the index of the entry that repeats: each later entry is
    compared with the first that claimed the deployment, name or object."""
    problems: dict[int, Problem] = {}
    keys: dict[DeploymentKey, int] = {}
    derived: dict[tuple[str, str], int] = {}
    applied: dict[tuple[str, str, str], int] = {}
    for index, entry in enumerate(entries):
        first = keys.setdefault(entry.key, index)
        problem = (
            _same_deployment(entry, entries[first])
            if first != index
            else _same_derived_name(entries, index, derived)
            or _same_object(entries, index, applied)
        )
        if problem is not None:
            problems[index] = problem
    return problems


def _same_deployment(entry: DeclaredDeployment, first: DeclaredDeployment) -> Problem:
    identical = bool(entry.objects) and entry.objects == first.objects
    same = "a copy of" if identical else "another deployment with the target, namespace and name of"
    return Problem(
        message=f"deployment {entry.key.label()} is declared twice: this entry is {same} "
        f"{first.where}; one would overwrite the other's objects, file and stack",
        where=entry.where,
        pointer="/name",
        value=entry.key.name,
        allowed="one entry per target, namespace and name",
        fix=f"remove one of the two entries, or give this one another name or namespace "
        f"(the other: {first.where})",
    )


def _same_derived_name(
    entries: Sequence[DeclaredDeployment], index: int, derived: dict[tuple[str, str], int]
) -> Problem | None:
    entry = entries[index]
    names = (
        ("file", entry.key.file_name()),
        ("stack", f"mlcc-<profile>-{entry.key.stack_suffix()}"),
    )
    for kind, name in names:
        first_index = derived.setdefault((kind, name), index)
        if first_index != index:
            first = entries[first_index]
            return Problem(
                message=f"deployment {entry.key.label()} and {first.key.label()} "
                f"({first.where}) would both be written to the {kind} {name} (names are joined "
                "with '-'): one would overwrite the other",
                where=entry.where,
                pointer="/name",
                value=entry.key.name,
                allowed=f"a name and namespace whose {kind} no other entry has",
                fix=f"rename this deployment or the other ({first.where})",
            )
    return None


def _same_object(
    entries: Sequence[DeclaredDeployment], index: int, applied: dict[tuple[str, str, str], int]
) -> Problem | None:
    entry = entries[index]
    clash: tuple[tuple[str, str, str], DeclaredDeployment] | None = None
    for obj in entry.objects:
        identity = object_identity(obj)
        owner = applied.setdefault(identity, index)
        if owner != index and clash is None:
            clash = (identity, entries[owner])
    if clash is None:
        return None
    (kind, namespace, name), first = clash
    shown = f"{namespace}/{name}" if namespace else name
    return Problem(
        message=f"deployment {entry.key.label()} and {first.key.label()} ({first.where}) "
        f"both apply the {kind} {shown}: one would overwrite the other's",
        where=entry.where,
        pointer="/name",
        value=entry.key.name,
        allowed="deployments whose objects have names of their own",
        fix=f"rename this deployment or the other ({first.where}), or move one to another "
        "namespace",
    )
