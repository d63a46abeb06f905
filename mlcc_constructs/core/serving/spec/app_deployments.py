"""A list of deployment entries (cdk.json ``reference_deployments``, the ``mlcc render -f``
spec schema), each checked and prepared once: what the serving stacks apply, ``dist/`` holds and
the GPU NodePool sizes for. Plain data in, prepared deployments out (no CDK app needed)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlcc_constructs.core.platform.catalog import GPU_RESOURCE, InstanceType
from mlcc_constructs.core.platform.context_values import context_source, decode_context
from mlcc_constructs.core.platform.image_cache import SECRETS_KEY, ecr_registry
from mlcc_constructs.core.platform.load_balancing import SCHEMES, reference_cidrs
from mlcc_constructs.core.serving.prepared import PreparedDeployment
from mlcc_constructs.core.serving.render import Rendered
from mlcc_constructs.core.serving.renderer import RenderedEntry, RenderEntry, Renderer
from mlcc_constructs.core.serving.spec.context import RenderContext
from mlcc_constructs.core.serving.spec.files import load_spec_documents, spec_from_mapping
from mlcc_constructs.core.support.errors import MlccError, fail, raise_if_any

if TYPE_CHECKING:
    from mlcc_constructs.core.platform.app_settings import AppEnvironment

CONTEXT_KEY = "reference_deployments"
FILE_KEY = "deployments_file"
"""cdk.json / ``-c`` key: a spec list file (``mlcc render -f`` format) whose deployments replace
:data:`CONTEXT_KEY`'s, e.g. ``examples/reference.yaml`` (the reference set)."""


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
    def file_name(self) -> str:
        """Its dist/ file: ``<target>-<namespace>-<name>.k8s.yaml``
        (:attr:`RenderedEntry.file_name`)."""
        return self.rendered.file_name

    @property
    def rendered(self) -> RenderedEntry:
        """The deployment as the render path returned it (its files: ``renderer.list_files``)."""
        rendered = Rendered(entries=self.prepared.objects, prepared=self.prepared)
        return RenderedEntry(where=self.where, context=self.context, rendered=rendered)


def prepare_deployments(
    entries: list[Any],
    *,
    defaults: dict[str, Any],
    load_balancer_cidrs: Mapping[str, Sequence[str]] | None = None,
    prometheus_query_url: str | None = None,
    image_registry: str | None = None,
    where: str = f"cdk.json:/context/{CONTEXT_KEY}",
    renderer: Renderer | None = None,
) -> tuple[AppDeployment, ...]:
    """Each ``reference_deployments`` entry prepared (no CDK app needed): the entry's account,
    region and profile, else ``defaults``; every entry with ``load_balancer_cidrs`` (the
    cluster's load balancer subnets, what their NetworkPolicies admit; default ``None``: the
    render context's default) and ``prometheus_query_url`` (where autoscaled entries' scalers
    read metrics: the cluster's Prometheus workspace, e.g. ``IServingCluster``'s; default
    ``None``: an autoscaled eks entry is refused) and ``image_registry`` (the cluster's ECR
    registry with its pull through cache; default ``None``: images as given); ``where``: where
    the list came from, its entries' problems name ``<where>/<index>`` (default
    ``cdk.json:/context/reference_deployments``; ``-c reference_deployments`` for the CLI's
    text); two entries of one deployment (target, namespace and name), file, stack or object
    are refused (:func:`~mlcc_constructs.core.serving.identity.duplicate_problems`); all
    problems at once. The objects are rendered and validated by ``renderer`` (default ``None``:
    a :class:`~mlcc_constructs.core.serving.renderer.Renderer` of the built-in engines), the
    one path of ``mlcc render -f`` and ``dist/``."""
    return prepare_labelled(
        [(f"{where}/{index}", entry) for index, entry in enumerate(entries)],
        defaults=defaults,
        load_balancer_cidrs=load_balancer_cidrs,
        prometheus_query_url=prometheus_query_url,
        image_registry=image_registry,
        renderer=renderer,
    )


def prepare_labelled(
    labelled: Sequence[tuple[str, Any]],
    *,
    defaults: dict[str, Any],
    load_balancer_cidrs: Mapping[str, Sequence[str]] | None = None,
    prometheus_query_url: str | None = None,
    image_registry: str | None = None,
    renderer: Renderer | None = None,
) -> tuple[AppDeployment, ...]:
    """:func:`prepare_deployments` of entries each labelled with where it is declared (a spec
    list file's ``FILE#<i>``: :func:`~mlcc_constructs.core.serving.spec.files.load_spec_documents`);
    the same keywords."""
    listed: list[RenderEntry | MlccError] = []  # each entry, or why it did not load
    for entry_where, entry in labelled:
        try:
            loaded = spec_from_mapping(entry, where=entry_where)
            context = RenderContext(
                **{
                    key: getattr(loaded.context, key) or defaults.get(key)
                    for key in ("account", "region", "profile")
                },
                load_balancer_cidrs=load_balancer_cidrs,
                prometheus_query_url=prometheus_query_url,
                image_registry=image_registry,
            )
        except MlccError as error:
            listed.append(_named(error, entry_where))
            continue
        locate = functools.partial(_located, loaded.locate, entry_where)
        listed.append(
            RenderEntry(where=entry_where, spec=loaded.spec, context=context, locate=locate)
        )
    # The one render path (mlcc render -f, dist/): validated objects, and the rules that span
    # deployments (a repeated deployment, a shared load balancer's host), all problems at once.
    outcome = (renderer or Renderer()).render_each(listed)
    problems = list(outcome.problems)
    found = [
        AppDeployment(where=r.where, context=r.context, prepared=r.rendered.prepared)
        for r in outcome.rendered
    ]
    raise_if_any(problems)
    return tuple(found)


def prepare_app_deployments(
    get: Callable[[str], object], *, environment: AppEnvironment, prometheus_query_url: str
) -> tuple[AppDeployment, ...]:
    """The deployments the app's context lists (:func:`context_entries`), prepared as the app's
    cluster serves them: its account, region and profile as defaults, its load balancer
    subnets (:func:`~mlcc_constructs.core.platform.load_balancing.reference_cidrs`), its
    pull-through cache when the context makes one, and ``prometheus_query_url`` (the context's,
    or a stand-in for the cluster's, which is known only at deploy time). The one reading of
    the app's deployments: the stacks and ``mlcc preflight`` both take it."""
    zones = len(environment.availability_zones)
    return prepare_labelled(
        context_entries(get),
        defaults={key: get(key) for key in ("account", "region", "profile")},
        load_balancer_cidrs={str(s): cidrs for s, cidrs in reference_cidrs(zones).items()},
        prometheus_query_url=prometheus_query_url,
        image_registry=ecr_registry(environment.account, environment.region)
        if get(SECRETS_KEY) is not None
        else None,
    )


def _named(error: MlccError, where: str) -> MlccError:
    """``error`` with its problems that name no place named ``where`` (their entry)."""
    return MlccError(p if p.where else dataclasses.replace(p, where=where) for p in error.problems)


def _located(locate: Callable[[MlccError], MlccError], where: str, error: MlccError) -> MlccError:
    """A spec's problem at the file or flag of its field (``locate``), else at its entry."""
    return _named(locate(error), where)


def served_load_balancers(deployments: Sequence[AppDeployment]) -> dict[str, tuple[str, ...]]:
    """The load balancer schemes and groups the cluster's IngressClasses serve: ``internal``
    always (the default endpoint), and every scheme and group of a deployment whose pods run on
    the cluster's own nodes (``cluster_gpu_nodes``: its Ingress is the cluster's; the HyperPod
    inference operator makes an IEC's load balancer itself)."""
    served: dict[str, set[str]] = {"internal": set()}
    for deployment in deployments:
        endpoint = deployment.prepared.spec.endpoint
        if deployment.prepared.target.cluster_gpu_nodes and endpoint.scheme != "none":
            groups = served.setdefault(endpoint.scheme, set())
            if endpoint.group:
                groups.add(endpoint.group)
    return {scheme: tuple(sorted(served[scheme])) for scheme in SCHEMES if scheme in served}


def gpu_instance_types(deployments: Sequence[AppDeployment]) -> tuple[InstanceType, ...]:
    """The instance types (catalog entries, as prepared) of the deployments whose pods run on
    the cluster's own nodes, their fallback ``instance_types`` included (the GPU NodePool offers
    every family of them)."""
    return tuple(
        instance
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
        for instance in d.prepared.instance_types
    )


def gpu_demand(deployments: Sequence[AppDeployment]) -> tuple[tuple[int, int], ...]:
    """``(max replicas, GPUs per replica)`` of each deployment whose pods run on the cluster's
    own GPU nodes (what the GPU NodePool's limit covers): a replica over several nodes is a
    LeaderWorkerSet group of one pod per node."""
    return tuple(
        (
            d.prepared.max_replicas,
            int(d.prepared.container.requests[GPU_RESOURCE]) * d.prepared.resolution.nodes,
        )
        for d in deployments
        if d.prepared.target.cluster_gpu_nodes
    )


def wants_inference_gateway(deployments: Sequence[AppDeployment]) -> bool:
    """Some deployment asks for the HyperPod Inference Gateway (``endpoint.gateway``): the
    inference-operator stack turns it on."""
    return any(d.prepared.spec.endpoint.gateway is not None for d in deployments)


def context_entries(get: Callable[[str], object]) -> list[tuple[str, Any]]:
    """The app's deployment entries, each with where it is declared, from its CDK context
    (``get``: a key -> its value): the :data:`FILE_KEY` spec list file's (``FILE#<i>``), else
    :data:`CONTEXT_KEY`'s list (``cdk.json:/context/reference_deployments/<i>``, or ``-c
    reference_deployments/<i>`` for JSON text given on the command line)."""
    file = get(FILE_KEY)
    if file:
        return load_spec_documents(str(file))
    raw = get(CONTEXT_KEY)
    entries = decode_context(raw, CONTEXT_KEY) or []
    where = context_source(raw, CONTEXT_KEY, otherwise=f"cdk.json:/context/{CONTEXT_KEY}")
    if not isinstance(entries, list):
        raise fail(
            f"{CONTEXT_KEY} must be a list of deployment entries",
            where=where,
            value=raw,
            allowed="a JSON list of entries, as in the mlcc render -f spec",
            fix=f"edit {CONTEXT_KEY} in cdk.json, or pass -c {CONTEXT_KEY}='[{{...}}]'",
        )
    return [(f"{where}/{index}", entry) for index, entry in enumerate(entries)]
