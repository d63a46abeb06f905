"""What a deployment's engine container runs, read back from its rendered objects: the argv the
engine process gets and the environment the container is given (``mlcc argv -f``,
``mlcc env -f``).

It is read from the target's workload object (a Deployment's engine container and the
ConfigMaps it takes env from, an IEC's worker) through its kind's ``engine`` view, so a
CacheBackend's flags and env are included, and where the container runs the wrapper, the argv
is what the wrapper builds from that env and the container's own args.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mlcc_constructs.core.serving.kinds.registry import EngineView, kind_named, of_kind
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.support.errors import fail
from mlcc_constructs.core.wrapper import KEYS_ENV, build_argv, merge_args


@dataclass(frozen=True, kw_only=True)
class EngineProcess:
    """The engine container of a rendered deployment.

    Fields:

    ``argv``: The engine's command line; ``None`` where the image's own entrypoint reads the
        env (an ``entrypoint: image`` engine).
    ``env``: The container's environment in the order it gets it (``envFrom`` ConfigMaps
        first); a Secret-backed value shows as ``${secret:<name>/<key>}``.
    """

    argv: tuple[str, ...] | None
    env: tuple[tuple[str, str], ...]


def engine_view(prepared: PreparedDeployment) -> EngineView:
    """The engine container of the deployment's workload object, as rendered."""
    workload = prepared.target.workload_for(prepared.resolution.nodes)
    assert workload is not None  # prepare() refuses a target that renders no objects
    kind = kind_named(workload)
    objects = [entry.object for entry in prepared.objects]
    (found,) = of_kind(objects, workload)
    assert kind.engine is not None  # a workload kind reads its engine container
    return kind.engine(found, objects)


def engine_process(
    prepared: PreparedDeployment, *, pod_env: Mapping[str, str] | None = None
) -> EngineProcess:
    """The argv and env of the deployment's engine container (module doc); ``pod_env``: what
    the platform adds at pod start (a LeaderWorkerSet's ``LWS_*``: a leader's or worker's)."""
    view = engine_view(prepared)
    manifest = prepared.resolution.manifest
    argv: tuple[str, ...] | None
    if prepared.container.delivers_env and manifest.entrypoint == "wrapper":
        env = dict(view.env) | dict(pod_env or {})
        delivered = env.get(KEYS_ENV)  # the wrapper translates exactly these keys
        keys = frozenset(filter(None, delivered.split(","))) if delivered is not None else None
        argv = tuple(merge_args(build_argv(manifest.raw, env, keys=keys), view.args))
    elif view.command is not None:
        argv = view.command + view.args
    else:
        argv = None
    return EngineProcess(argv=argv, env=view.env)


def engine_argv(
    prepared: PreparedDeployment, *, pod_env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The engine's argv (``pod_env``: :func:`engine_process`); an image engine, which owns its
    command line, is refused."""
    process = engine_process(prepared, pod_env=pod_env)
    if process.argv is None:
        manifest = prepared.resolution.manifest
        raise fail(
            f"engine {manifest.engine!r} has entrypoint 'image': its image owns the command "
            f"line and reads {manifest.env_var_prefix}* itself, so there is no argv to show",
            pointer="/engine/name",
            value=manifest.engine,
            fix="use mlcc env -f to see the env the image reads",
        )
    return process.argv
