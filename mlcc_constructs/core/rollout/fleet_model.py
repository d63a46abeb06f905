"""A fleet stage's app context: the fleet's context and deployments, the stage's environment
and permitted overrides, and the pinned model served from the stage's own models bucket.

The result has the shape of ``cdk.json``'s ``context`` (``profile``, ``account``, ``region``,
``availability_zones``, ``reference_deployments``, ...), so a stage is read by the same
readers as the single-environment app (:func:`~mlcc_constructs.core.platform.app_settings.
read_environment`, :func:`~mlcc_constructs.core.serving.spec.app_deployments.
prepare_app_deployments`), and ``mlcc preflight`` checks the stage's account from it.

Models reach each stage's bucket through ``mlcc model promote`` run by the stage's pre step
(from the pin's ``home``, checked against its content hash): the deployment's ``model.uri``
is the promoted layout home in the stage's bucket
(:func:`~mlcc_constructs.core.adapters.s3_layout.full_finetune`), and preflight checks that
the weights are there before the stage deploys.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from mlcc_constructs.core.adapters.s3_layout import full_finetune
from mlcc_constructs.core.platform.buckets import bucket_name
from mlcc_constructs.core.platform.fleet import WHERE, FleetStage, stage_pointer
from mlcc_constructs.core.platform.fleet_pin import ModelPin
from mlcc_constructs.core.support.errors import Problem, raise_if_any

PINNED: tuple[str, ...] = ("/model/uri", "/engine/image", "/engine/version")
"""What the fleet's model pin sets in every deployment (a deployment that sets one is
refused: the pin is the one place a version is written)."""

ENVIRONMENT_KEYS: tuple[str, ...] = ("profile", "account", "region", "availability_zones")
"""What each stage sets (a fleet context that sets one is refused)."""

DEPLOYMENTS_KEY = "reference_deployments"


def fleet_problems(
    context: Mapping[str, Any],
    deployments: Sequence[Mapping[str, Any]],
    models: Mapping[str, ModelPin],
) -> list[Problem]:
    """The fleet's own declaration: no environment key in its context, each deployment
    named, once, with a pin, and setting no pinned field itself."""
    problems = [
        Problem(
            message=f"the fleet's context sets {key!r}, which each stage sets",
            where=WHERE,
            pointer=f"/context/{key}",
            fix="set it on each stage (FleetStage)",
        )
        for key in (*ENVIRONMENT_KEYS, DEPLOYMENTS_KEY)
        if key in context
    ]
    names: list[str] = []
    for index, deployment in enumerate(deployments):
        name = deployment.get("name")
        if not isinstance(name, str) or name in names:
            problems.append(
                Problem(
                    message="each fleet deployment has a name of its own",
                    where=WHERE,
                    pointer=f"/deployments/{index}/name",
                    value=name,
                )
            )
            continue
        names.append(name)
        if name not in models:
            problems.append(
                Problem(
                    message=f"deployment {name!r} has no pinned model version",
                    where=WHERE,
                    pointer=f"/models/{name}",
                    fix="pin it in the fleet's models (ModelPin)",
                )
            )
        for pointer in PINNED:
            if _get(deployment, pointer) is not None:
                problems.append(
                    Problem(
                        message=f"deployment {name!r} sets {pointer}, which the fleet's model "
                        "pin sets in every stage",
                        where=WHERE,
                        pointer=f"/deployments/{index}{pointer}",
                        fix=f"drop it; pin the version in models[{name!r}]",
                    )
                )
    problems.extend(
        Problem(
            message=f"a model is pinned for {name!r}, which is no deployment of the fleet",
            where=WHERE,
            pointer=f"/models/{name}",
            allowed=", ".join(names),
        )
        for name in sorted(set(models) - set(names))
    )
    return problems


def stage_context(
    context: Mapping[str, Any],
    deployments: Sequence[Mapping[str, Any]],
    models: Mapping[str, ModelPin],
    stage: FleetStage,
) -> dict[str, Any]:
    """The stage's app context (module doc). ``models``: the pin each deployment serves in
    this stage (the fleet's, or the rollout stage's own)."""
    names = [str(d.get("name")) for d in deployments]
    raise_if_any(
        Problem(
            message=f"stage {stage.name!r} overrides deployment {name!r}, which the fleet "
            "does not have",
            where=WHERE,
            pointer=stage_pointer(stage, f"/overrides/{name}"),
            allowed=", ".join(names),
        )
        for name in sorted(set(stage.overrides) - set(names))
    )
    core = bucket_name("core", account=stage.account, region=stage.region, profile=stage.profile)
    entries = []
    for deployment in deployments:
        entry = copy.deepcopy(dict(deployment))
        name = str(entry["name"])
        pin = models[name]
        for pointer, value in sorted(stage.overrides.get(name, {}).items()):
            _set(entry, pointer, copy.deepcopy(value))
        _set(entry, "/model/uri", full_finetune(core, pin.project, pin.name).uri)
        _set(entry, "/engine/image", pin.engine_image)
        _set(entry, "/engine/version", pin.engine_version)
        entries.append(entry)
    result = {key: copy.deepcopy(value) for key, value in context.items()}
    result.update(copy.deepcopy(dict(stage.context)))
    result.update(
        profile=stage.profile,
        account=stage.account,
        region=stage.region,
        availability_zones=list(stage.availability_zones),
    )
    result[DEPLOYMENTS_KEY] = entries
    return result


def _parts(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def _get(document: Mapping[str, Any], pointer: str) -> Any:
    node: Any = document
    for part in _parts(pointer):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _set(document: dict[str, Any], pointer: str, value: Any) -> None:
    parts = _parts(pointer)
    node = document
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value
