"""The reviewer's loop: synthesise only the serving stacks a change touches.

``cdk diff STACK`` and ``cdk synth STACK --exclusively`` still run the whole app (the CLI picks
stacks from the cloud assembly the app wrote), so at fleet size every diff pays for every
deployment's stack. The app's ``deployments`` context (``cdk diff -c deployments=a,b``) names
the serving stacks to build; the shared stacks (buckets, cluster, HyperPod, the namespaces)
are built as always, from every deployment, so they synthesise exactly as in the whole app,
and a selected stack keeps its name and every logical id (a stack depends only on its own
deployment: :mod:`mlcc_constructs.core.serving.plan`).

A name is a serving stack's name as ``cdk ls`` prints it (``mlcc-dev-serving-eks-inference-
llama``), or a deployment's ``name`` (each of its stacks: one per target and namespace).
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcc_constructs.core.support.errors import Problem, closest, json_pointer, raise_if_any

SELECTION_KEY = "deployments"
"""cdk.json / ``-c`` key: the serving stacks to build (default: all)."""


def select_stacks(
    names: Sequence[str],
    stacks: Sequence[tuple[str, str]],
    *,
    where: str = "cdk.json:/context",
) -> tuple[bool, ...]:
    """Which of ``stacks`` (``(stack name, deployment name)`` pairs, in the app's order) the
    selection ``names`` builds: one flag per stack. An empty selection builds every stack; a
    name that is neither a serving stack's nor a deployment's is a problem listing the known
    ones (every unknown name at once)."""
    if not names:
        return tuple(True for _ in stacks)
    wanted = set(names)
    known = {name for pair in stacks for name in pair}
    problems = [
        Problem(
            message="no serving stack or deployment of this name",
            where=where,
            pointer=json_pointer(SELECTION_KEY, index),
            value=name,
            allowed=", ".join(sorted(known)) or "none: the app has no deployments",
            fix=_fix(name, known),
        )
        for index, name in enumerate(names)
        if name not in known
    ]
    raise_if_any(problems)
    return tuple(stack in wanted or deployment in wanted for stack, deployment in stacks)


def _fix(name: str, known: set[str]) -> str:
    near = closest(name, known, limit=1)
    if near:
        return f"did you mean {near[0]!r}?"
    return f"name a deployment or its serving stack (cdk ls), or drop -c {SELECTION_KEY}"
