"""The one registry of the Kubernetes kinds the library renders.

Each kind is one module of this package defining ``KIND``, a :class:`Kind`: how its objects are
rendered for a deployment (``render``), how they are validated (core kinds against the
Kubernetes schemas, custom resources against rule data kept per CRD version), where they go in
the apply order and what the cluster must hold first (``requires``), and how a live object's
readiness is read. Adding a kind is one module here plus data (its CRD rules, the targets that
yield it); no code outside this package branches on a kind.

A deployment's objects are the kinds its target lists (``targets/<t>/manifest.json`` ``kinds``),
each rendered by its module, in apply order: by ``apply_phase``, then as each module yields them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

# Defined beside the readiness rules the serving stacks' Lambda ships (stdlib only); kept here.
from mlcc_constructs.core.serving.kinds._readiness import (
    Readiness as Readiness,
    ReadinessState as ReadinessState,
)
from mlcc_constructs.core.support.errors import MlccError, Problem, closest

if TYPE_CHECKING:
    from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts


class RenderedObject(NamedTuple):
    """One object of a deployment and the construct id it is emitted under."""

    id: str
    """Construct id, unique within the deployment (``Deployment``, ``ConfigMap``...)."""
    object: dict[str, Any]
    """The Kubernetes object."""


class EngineView(NamedTuple):
    """The engine container of a workload object as the pod gets it."""

    command: tuple[str, ...] | None
    """``None``: the image's entrypoint."""
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    """Every variable in the order the container gets them (``envFrom`` ConfigMaps first); a
    value from a Secret is shown as ``${secret:<name>/<key>}``, never read."""


class PodShape(NamedTuple):
    """One sort of pod a workload object makes (what its NetworkPolicy applies to)."""

    role: str
    """``pod`` (every pod alike), or the role among its group's pods (``leader``, ``worker``)."""
    template: Mapping[str, Any]
    """The pod template (``metadata``, ``spec``), its labels including those the controller adds
    to every such pod."""


@dataclass(frozen=True, kw_only=True)
class Kind:
    """One Kubernetes kind the library renders.

    Fields:

    ``kind``: e.g. ``Deployment``.
    ``api_version``: e.g. ``apps/v1``.
    ``plural``: the resource name the API (and ``kubectl get``) uses, e.g. ``deployments``.
    ``namespaced``: objects live in a namespace.
    ``apply_phase``: objects apply in ascending phase (a deployment's and the app's).
    ``validate``: every problem of one object (empty when it is valid).
    ``readiness``: what a live object (``kubectl get -o json``) says.
    ``render``: the objects of a deployment, for a target that lists this kind; ``None`` for a
        kind the app renders itself (namespaces, the GPU node pool).
    ``requires``: the EKS add-on that installs this kind's CRD, applied before any object of
        it (``None``: the API server serves the kind, or a cluster operator brings it).
    ``check``: what this kind says of a deployment it renders for, from its facts: problems
        (refused) and warnings; ``None``: nothing beyond the object's own validation.
    ``engine``: for a workload kind (a target's ``workload``), the engine container of one of
        its objects, given the deployment's other objects (``envFrom`` ConfigMaps); ``None``
        for every other kind.
    ``filters_traffic``: its objects restrict the traffic of the pods they select (a
        NetworkPolicy): a target listing it denies what its objects do not admit.
    ``pods``: for a kind whose objects make pods, each sort of pod one object makes, as
        :class:`PodShape` (its role and pod template, with the labels its controller adds);
        ``None`` for every other kind.
    """

    kind: str
    api_version: str
    plural: str
    namespaced: bool
    apply_phase: int
    validate: Callable[[Mapping[str, Any]], list[Problem]]
    readiness: Callable[[Mapping[str, Any]], Readiness]
    render: Callable[[DeploymentFacts], list[RenderedObject]] | None = None
    requires: str | None = None
    check: Callable[[DeploymentFacts], tuple[list[Problem], list[str]]] | None = None
    engine: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], EngineView] | None = None
    pods: Callable[[Mapping[str, Any]], list[PodShape]] | None = None
    filters_traffic: bool = False


@cache
def _registered() -> Mapping[str, Kind]:
    """Every kind module of this package (the public ones: helpers start with ``_``)."""
    package = importlib.import_module(__package__ or "")
    found: dict[str, Kind] = {}
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("_") or module.name == "registry":
            continue
        kind = importlib.import_module(f"{package.__name__}.{module.name}").KIND
        if not isinstance(kind, Kind) or kind.kind in found:  # kept under python -O
            raise TypeError(f"{module.name}: KIND is not a Kind, or registers a kind twice")
        found[kind.kind] = kind
    return dict(sorted(found.items()))


def kinds() -> tuple[Kind, ...]:
    """Every registered kind, by name."""
    return tuple(_registered().values())


def kind_named(name: str) -> Kind:
    """The kind called ``name``; an unknown name suggests the closest ones."""
    found = _registered().get(name)
    if found is None:
        near = closest(name, list(_registered()))
        raise MlccError(
            Problem(
                message=f"no registered Kubernetes kind {name!r}",
                value=name,
                allowed=", ".join(_registered()),
                fix=f"did you mean {', '.join(near)}?"
                if near
                else "add a module to mlcc_constructs/core/serving/kinds/",
            )
        )
    return found


def kind_of(obj: Mapping[str, Any]) -> Kind | None:
    """The registered kind of ``obj`` (same kind and apiVersion), or ``None``."""
    found = _registered().get(str(obj.get("kind", "")))
    return found if found is not None and found.api_version == obj.get("apiVersion") else None


def object_problems(obj: Mapping[str, Any]) -> list[Problem]:
    """Problems of any object: its kind's validation, or that no kind of this library is it."""
    kind = kind_of(obj)
    if kind is None:
        return [
            Problem(
                message="the library renders no such kind",
                where=f"{obj.get('kind', '?')}/{obj.get('metadata', {}).get('name', '?')}",
                pointer="/apiVersion",
                value=f"{obj.get('apiVersion')} {obj.get('kind')}",
                allowed=", ".join(f"{k.api_version} {k.kind}" for k in kinds()),
                fix="render only registered kinds (mlcc_constructs/core/serving/kinds/)",
            )
        ]
    return kind.validate(obj)


def validate_objects(objects: Iterable[Mapping[str, Any]]) -> None:
    """Raise one :class:`MlccError` naming every problem of every object, or return."""
    problems = [problem for obj in objects for problem in object_problems(obj)]
    if problems:
        raise MlccError(problems)


def render_objects(facts: DeploymentFacts) -> tuple[RenderedObject, ...]:
    """The deployment's objects: every kind its target lists, in apply order."""
    entries = [
        (kind.apply_phase, entry)
        for kind in (kind_named(name) for name in facts.target.kinds)
        if kind.render is not None
        for entry in kind.render(facts)
    ]
    return tuple(entry for _, entry in sorted(entries, key=lambda pair: pair[0]))


def check_facts(facts: DeploymentFacts) -> tuple[list[Problem], list[str]]:
    """Every problem and warning the target's kinds have with a deployment
    (:attr:`Kind.check`)."""
    problems: list[Problem] = []
    warnings: list[str] = []
    for name in facts.target.kinds:
        kind = kind_named(name)
        if kind.check is not None:
            found, notes = kind.check(facts)
            problems += found
            warnings += notes
    return problems, warnings


def of_kind(objects: Sequence[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    """The objects of kind ``name`` among ``objects``."""
    kind = kind_named(name)
    return [obj for obj in objects if kind_of(obj) is kind]


def filters_traffic(names: Sequence[str]) -> bool:
    """Some kind of ``names`` (a target's ``kinds``) restricts its pods' traffic
    (:attr:`Kind.filters_traffic`)."""
    return any(kind_named(name).filters_traffic for name in names)


def pod_shapes(obj: Mapping[str, Any]) -> list[PodShape]:
    """The sorts of pod ``obj`` makes (:attr:`Kind.pods`); none for a kind that makes no pod."""
    kind = kind_of(obj)
    return kind.pods(obj) if kind is not None and kind.pods is not None else []


def requirement(obj: Mapping[str, Any]) -> str | None:
    """The EKS add-on whose CRD ``obj`` needs (:attr:`Kind.requires`), if any."""
    kind = kind_of(obj)
    return kind.requires if kind is not None else None


def readiness(obj: Mapping[str, Any] | None, kind: Kind) -> Readiness:
    """What the live object says (``None``: it does not exist)."""
    if obj is None:
        return Readiness("absent", "not found")
    return kind.readiness(obj)


# -- readiness readers shared by several kinds ------------------------------------------


def exists(obj: Mapping[str, Any]) -> Readiness:
    """Ready as soon as the API server holds it (ConfigMaps, ServiceAccounts...)."""
    return Readiness("ready", "exists")


def load_balancer_address(obj: Mapping[str, Any]) -> Readiness:
    """Ready once a load balancer has an address (``status.loadBalancer.ingress``: an Ingress,
    a LoadBalancer Service)."""
    found = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    if found:
        return Readiness("ready", str(found[0].get("hostname") or found[0].get("ip")))
    return Readiness("progressing", "no load balancer address yet")


def condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    """The status condition of ``type_``, if the object reports one."""
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(entry, Mapping) and entry.get("type") == type_:
            return entry
    return None


def ready_condition(obj: Mapping[str, Any]) -> Readiness:
    """Ready when its ``Ready`` condition is ``True`` for the current generation."""
    found = condition(obj, "Ready")
    if found is None:
        return Readiness("progressing", "no Ready condition yet")
    generation = (obj.get("metadata") or {}).get("generation")
    observed = found.get("observedGeneration")
    if generation is not None and observed is not None and observed < generation:
        return Readiness("progressing", f"generation {generation} not observed yet")
    detail = str(found.get("reason") or found.get("message") or found.get("status"))
    if found.get("status") == "True":
        return Readiness("ready", detail)
    return Readiness("progressing", detail)


# -- what a workload's engine container gets ---------------------------------------------


def secret_placeholder(name: str, key: str) -> str:
    """How a Secret-backed value is shown: ``${secret:<name>/<key>}``."""
    return f"${{secret:{name}/{key}}}"


def env_of(
    container: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], *, namespace: str | None
) -> tuple[tuple[str, str], ...]:
    """``container``'s env as the pod gets it: ``envFrom`` ConfigMaps (found among ``objects``),
    then its ``env`` entries (:class:`EngineView`)."""
    config_maps = {
        str(o["metadata"]["name"]): o
        for o in of_kind(objects, "ConfigMap")
        if o["metadata"].get("namespace") == namespace
    }
    pairs: list[tuple[str, str]] = []
    for source in container.get("envFrom") or []:
        name = (source.get("configMapRef") or {}).get("name")
        data = (config_maps.get(str(name)) or {}).get("data") or {}
        pairs += [(str(key), str(value)) for key, value in data.items()]
    for entry in container.get("env") or []:
        pairs.append((str(entry["name"]), env_value(entry)))
    return tuple(pairs)


def pod_engine(
    pod: Mapping[str, Any],
    name: str,
    objects: Sequence[Mapping[str, Any]],
    *,
    namespace: str | None,
) -> EngineView:
    """The command, args and env (:func:`env_of`) of ``pod``'s container ``name``: the engine of
    a workload whose pod template is the library's (a Deployment's, an LWS leader's)."""
    container = next(c for c in pod["containers"] if c["name"] == name)
    return EngineView(
        command=tuple(container["command"]) if "command" in container else None,
        args=tuple(container.get("args", ())),
        env=env_of(container, objects, namespace=namespace),
    )


def env_value(entry: Mapping[str, Any]) -> str:
    """The value of one env entry, a Secret reference shown by :func:`secret_placeholder`."""
    if "value" in entry:
        return str(entry["value"])
    source = entry.get("valueFrom") or {}
    secret = source.get("secretKeyRef")
    if secret is not None:
        return secret_placeholder(str(secret.get("name")), str(secret.get("key")))
    ((what, ref),) = source.items()
    return f"${{{what}:{ref.get('name', ref.get('fieldPath', ''))}/{ref.get('key', '')}}}"
