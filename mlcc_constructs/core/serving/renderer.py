"""Many deployments rendered in one process, everything expensive done once: the one path from a
list of deployment specs to their validated objects and their files.

``mlcc render`` (one spec or a list, to stdout or ``--out``), ``make synth``'s ``dist/`` writer
and the serving stacks (``app_deployments``) all render through :class:`Renderer`. Each
deployment's objects are exactly :func:`~mlcc_constructs.core.serving.render.render`'s for its
spec (the same prepare, the same validation): the renderer only keeps what does not depend on
the deployment, so a long-lived process (a controller, a GitOps generator, the benchmark's
library call) pays it once:

* the engine registry (built-ins and plugins), loaded when the renderer is made;
* the strict Kubernetes schemas and the CRD rules of every kind, compiled on the first object of
  each kind for the life of the process (``kinds._schemas``, ``kinds._crd_rules``);
* the data files (engine manifests, wrapper text, instance catalog, targets, versions), read once
  per process by the loaders' own caches.

A list is one unit: every problem of every entry is reported at once, each named by its entry
(``list.yaml#2``, ``cdk.json:/context/reference_deployments/2``), and a list that repeats a
deployment, a file, a stack or an object is refused by the one rule of
:mod:`~mlcc_constructs.core.serving.identity`. Nothing is returned (so nothing is written) while
any problem stands.

Example::

    renderer = Renderer(RenderOptions())
    entries = [RenderEntry(where=f"fleet#{i}", spec=s, context=ctx) for i, s in enumerate(specs)]
    for entry in renderer.render_list(entries):
        print(entry.file_name, len(entry.rendered.objects))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlcc_constructs.core.engines.manifests import EngineRegistry
from mlcc_constructs.core.serving.identity import declared
from mlcc_constructs.core.serving.render import Rendered, render
from mlcc_constructs.core.serving.spanning import spanning_problems
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.deployment import DeploymentSpec
from mlcc_constructs.core.support.errors import MlccError, Problem


@dataclass(frozen=True, kw_only=True)
class RenderOptions:
    """How a :class:`Renderer` renders.

    ``registry``: the engines specs may name (default ``None``: the built-in engines only,
    without ``$MLCC_ENGINE_PATH``: a library call does not depend on the process environment;
    pass ``EngineRegistry.load(...)`` for plugins).
    ``validate``: check every object against its kind's rules (the strict Kubernetes schema, a
    CRD's rules) before returning it (default ``True``; ``False`` only for callers that validate
    later themselves).
    """

    registry: EngineRegistry | None = None
    validate: bool = True


def _unlocated(error: MlccError) -> MlccError:
    return error


@dataclass(frozen=True, kw_only=True)
class RenderEntry:
    """One deployment of a list.

    ``where``: the entry, as problems and the duplicate rule name it (``list.yaml#1``).
    ``spec``: the deployment.
    ``context``: its render context (account, region, profile, the cluster's facts; default: an
    empty context).
    ``locate``: maps a problem of the spec to the file or flag its field came from (a loaded
    spec's :meth:`~mlcc_constructs.core.serving.spec.files.SpecFile.locate`; default: as is).
    """

    where: str
    spec: DeploymentSpec
    context: RenderContext = field(default_factory=RenderContext)
    locate: Callable[[MlccError], MlccError] = _unlocated


@dataclass(frozen=True, kw_only=True)
class RenderedEntry:
    """A rendered list entry: ``where`` and ``context`` as given, ``rendered`` its objects (in
    apply order) and notes."""

    where: str
    context: RenderContext
    rendered: Rendered

    @property
    def file_name(self) -> str:
        """Its file of a list's render: ``<target>-<namespace>-<name>.k8s.yaml``
        (:meth:`~mlcc_constructs.core.serving.identity.DeploymentKey.file_name`)."""
        return declared(self.where, self.rendered.prepared).key.file_name()


@dataclass(frozen=True, kw_only=True)
class RenderOutcome:
    """What :meth:`Renderer.render_each` found: the entries that rendered, in list order, and
    every problem of the list (the entries that did not, and the duplicate rule's)."""

    rendered: tuple[RenderedEntry, ...]
    problems: tuple[Problem, ...]


class Renderer:
    """Renders deployments with the engine registry loaded once and the kinds' schemas compiled
    once (module doc); one renderer serves any number of lists. Thread-compatible: it holds no
    state a render changes."""

    def __init__(self, options: RenderOptions | None = None) -> None:
        self.options = options or RenderOptions()
        self.registry = self.options.registry or EngineRegistry.load(use_env=False)

    def render(self, spec: DeploymentSpec, *, context: RenderContext | None = None) -> Rendered:
        """One deployment: :func:`~mlcc_constructs.core.serving.render.render` with this
        renderer's registry and options; raises :class:`MlccError`."""
        return render(spec, context=context, registry=self.registry, validate=self.options.validate)

    def render_each(self, entries: Iterable[RenderEntry | MlccError]) -> RenderOutcome:
        """Every entry rendered, and every problem in list order: an entry's own (located by
        its ``locate``), then those of the rules that span deployments (a repeated deployment,
        file or object; a load balancer's host and paths claimed twice:
        :func:`~mlcc_constructs.core.serving.spanning.spanning_problems`). An item that
        is an :class:`MlccError` stands for an entry that did not load: its problems are
        reported in its place."""
        rendered: list[RenderedEntry] = []
        problems: list[Problem] = []
        for entry in entries:
            if isinstance(entry, MlccError):
                problems.extend(entry.problems)
                continue
            try:
                result = self.render(entry.spec, context=entry.context)
            except MlccError as error:
                problems.extend(entry.locate(error).problems)
                continue
            rendered.append(
                RenderedEntry(where=entry.where, context=entry.context, rendered=result)
            )
        # The rules that span deployments, one for stdout, --out, dist/ and the stacks: a list
        # never repeats a deployment, and a shared load balancer tells its deployments apart.
        problems += spanning_problems([(r.where, r.rendered.prepared) for r in rendered])
        return RenderOutcome(rendered=tuple(rendered), problems=tuple(problems))

    def render_list(self, entries: Iterable[RenderEntry | MlccError]) -> tuple[RenderedEntry, ...]:
        """Every entry rendered (:meth:`render_each`), or one :class:`MlccError` naming every
        problem of the list."""
        outcome = self.render_each(entries)
        if outcome.problems:
            raise MlccError(outcome.problems)
        return outcome.rendered


def render_many(
    entries: Iterable[RenderEntry | MlccError], options: RenderOptions | None = None
) -> tuple[RenderedEntry, ...]:
    """:meth:`Renderer.render_list` with a renderer made for the call."""
    return Renderer(options).render_list(entries)


def list_files(
    rendered: Sequence[RenderedEntry],
    *,
    text: Callable[[str], str] | None = None,
) -> dict[str, str]:
    """The files of a list's render (``dist/``, ``mlcc render -f LIST --out``): one
    ``<target>-<namespace>-<name>.k8s.yaml`` per deployment holding its objects as
    :func:`~mlcc_constructs.core.support.yaml_output.to_yaml` writes them; ``text``: applied to
    each file's text (``dist/``'s lazy values; default none)."""
    from mlcc_constructs.core.support.yaml_output import to_yaml

    files: dict[str, str] = {}
    for entry in rendered:
        body = to_yaml(entry.rendered.objects)
        files[entry.file_name] = text(body) if text is not None else body
    return files


def object_files(rendered: RenderedEntry) -> Mapping[str, str]:
    """One deployment's objects one file each (``mlcc render --out`` of a single deployment):
    :func:`~mlcc_constructs.core.support.yaml_output.file_name` to its YAML."""
    from mlcc_constructs.core.support.yaml_output import file_name, to_yaml

    return {file_name(obj): to_yaml([obj]) for obj in rendered.rendered.objects}


def stream_text(rendered: Sequence[RenderedEntry]) -> str:
    """Every object of every deployment, in list then apply order, as one multi-document YAML
    stream (``mlcc render`` to stdout)."""
    from mlcc_constructs.core.support.yaml_output import to_yaml

    objects: list[dict[str, Any]] = [o for r in rendered for o in r.rendered.objects]
    return to_yaml(objects)
