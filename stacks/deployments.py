"""The app's deployments: cdk.json ``reference_deployments`` (the ``mlcc render -f`` spec
schema), each prepared once. ``dist/`` (app.py), the GPU NodePool (eks-cluster stack) and the
serving stacks all read this one list."""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass

import aws_cdk as cdk

from mlcc_constructs.core.context import RenderContext
from mlcc_constructs.core.errors import MlccError, Problem, raise_if_any
from mlcc_constructs.core.inference_operator import needs_operator
from mlcc_constructs.core.prepare import PreparedDeployment, prepare
from mlcc_constructs.core.spec_file import spec_from_mapping

CONTEXT_KEY = "reference_deployments"
_CACHE: weakref.WeakKeyDictionary[cdk.App, tuple[AppDeployment, ...]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, kw_only=True)
class AppDeployment:
    """One deployment of the app.

    ``where``: its place in cdk.json (``cdk.json:/context/reference_deployments/0``).
    ``context``: the render context (the entry's account/region/profile, else the app's).
    ``prepared``: the prepared deployment (its ``objects`` are what is applied).
    """

    where: str
    context: RenderContext
    prepared: PreparedDeployment

    @property
    def chart_id(self) -> str:
        """``<name>-<target>``: the dist/ file stem."""
        return f"{self.prepared.spec.name}-{self.prepared.target.name}"


def app_deployments(app: cdk.App) -> tuple[AppDeployment, ...]:
    """Every deployment of ``app``'s context, prepared once per app; all problems at once."""
    if app in _CACHE:
        return _CACHE[app]
    problems: list[Problem] = []
    found: list[AppDeployment] = []
    for index, entry in enumerate(app.node.try_get_context(CONTEXT_KEY) or []):
        where = f"cdk.json:/context/{CONTEXT_KEY}/{index}"
        try:
            loaded = spec_from_mapping(entry, where=where)
            context = RenderContext(
                **{
                    key: getattr(loaded.context, key) or app.node.try_get_context(key)
                    for key in ("account", "region", "profile")
                }
            )
            try:
                prepared = prepare(loaded.spec, context=context)
            except MlccError as error:
                raise loaded.locate(error) from None
        except MlccError as error:
            problems.extend(
                p if p.where else dataclasses.replace(p, where=where) for p in error.problems
            )
            continue
        found.append(AppDeployment(where=where, context=context, prepared=prepared))
    raise_if_any(problems)
    _CACHE[app] = result = tuple(found)
    return result


def gpu_instance_types(deployments: tuple[AppDeployment, ...]) -> tuple[str, ...]:
    """The instance types of the deployments whose pods run on the cluster's own nodes."""
    return tuple(
        d.prepared.resolution.instance.name
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
    )


def hyperpod_needs(deployments: tuple[AppDeployment, ...]) -> list[tuple[str, str]]:
    """``(where declared, instance type)`` of each deployment with an object the HyperPod
    inference operator serves (its pods run on the HyperPod cluster's instance groups)."""
    return [
        (d.where, d.prepared.resolution.instance.name)
        for d in deployments
        if any(needs_operator(entry.object) for entry in d.prepared.objects)
    ]
