"""Why a deployment's ``nodes`` cannot be served (``nodes: auto`` that no group holds or with
no model size, an engine without a ``multi_node`` launch, a target without a multi-node
workload), and which built-in engines can span nodes. Plain functions over the spec, the
manifest's data and the target's; the resolver calls them once."""

from __future__ import annotations

from collections.abc import Mapping

from mlcc_constructs.core.platform.targets import TargetDescriptor
from mlcc_constructs.core.serving.resolve.node_sizing import NodeSizing
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import Problem


def multi_node_problems(
    spec: DeploymentSpec,
    manifest_raw: Mapping[str, object],
    engine: str,
    target: TargetDescriptor | None,
    sizing: tuple[NodeSizing | None, tuple[Problem, ...]],
    engines_with_launch: tuple[str, ...],
) -> list[Problem]:
    """Why ``spec``'s ``nodes`` cannot be served: ``auto`` without a model size or that no
    group holds (``sizing``: what ``auto`` resolved to, or why it could not), an engine with no
    ``multi_node`` launch in its manifest, a target with no multi-node workload."""
    problems: list[Problem] = []
    resolved, refused = sizing
    if spec.compute.nodes == "auto" and refused:  # the model fits on no number of these nodes
        problems.extend(refused)
    elif spec.compute.nodes == "auto" and resolved is None:
        problems.append(
            Problem(
                message="nodes: auto needs the model's size to derive the node count",
                pointer="/compute/nodes",
                value="auto",
                allowed="1, 2, 3, ... (or auto with model.bytes or model.config)",
                fix="set model.bytes (the model's weights in bytes) or model.config (its "
                "config.json), or give nodes as a number",
            )
        )
    if not isinstance(spec.compute.nodes, int) or spec.compute.nodes <= 1:
        return problems
    if "multi_node" not in manifest_raw:
        problems.append(
            Problem(
                message=f"{engine} declares no multi-node launch (its manifest has no multi_node "
                "block): it serves on one node only",
                pointer="/compute/nodes",
                value=spec.compute.nodes,
                allowed="1" + (f" (multi-node engines: {', '.join(engines_with_launch)})"),
                fix=f"set nodes: 1 with an instance that holds the model, or use "
                f"{' or '.join(engines_with_launch)}",
            )
        )
    if target is not None and target.multi_node_workload is None:
        problems.append(
            Problem(
                message=f"the {target.name} target serves one node per model copy: "
                + target.notes.get("nodes", "it declares no multi-node workload"),
                pointer="/compute/nodes",
                value=spec.compute.nodes,
                allowed="1",
                fix="set nodes: 1, or use the eks target (a LeaderWorkerSet per model copy)",
            )
        )
    return problems


def multi_node_engines() -> tuple[str, ...]:
    """The built-in engines whose manifest declares a ``multi_node`` launch."""
    from mlcc_constructs.core.engines.manifests import builtin_engines

    return tuple(sorted(m.engine for m in builtin_engines() if "multi_node" in m.raw))
