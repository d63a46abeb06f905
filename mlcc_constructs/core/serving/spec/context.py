"""The environment a deployment is rendered for (account, region, profile)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from mlcc_constructs.core.support.errors import Problem, fail, raise_if_any
from mlcc_constructs.core.support.typecheck import check_fields

_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """The environment a render targets. Every field defaults to ``None``.

    ``account``/``region``/``profile`` name the TLS bucket of an IEC (``stacks/buckets.json``
    ``tls``); ``region`` is also the model bucket's region when the spec gives none. Missing
    account and region are inferred from a model bucket named by ``stacks/buckets.json``.

    Fields:

    ``account``: AWS account id. Default: inferred from the model bucket, else none.
    ``region``: AWS region. Default: inferred from the model bucket, else none.
    ``profile``: Deployment profile (``dev``). Default: inferred from the model bucket, else none.
    ``tls_bucket``: The name of the bucket an IEC writes its TLS certificate to, for a team whose
        operator writes to its own bucket. Default: the ``tls`` bucket of
        ``stacks/buckets.json`` for the account, region and profile.
    ``load_balancer_cidrs``: The CIDRs of the subnets the cluster's load balancers live in, by
        scheme (``internal``, ``internet-facing``): the only sources outside ``allow_from`` the
        deployment's NetworkPolicy admits. Default: those of the VPC a ``ServingCluster``
        creates (:data:`~mlcc_constructs.core.platform.load_balancing.REFERENCE_CIDRS`);
        ``IServingCluster.load_balancer_cidrs`` for any other cluster.
    ``prometheus_query_url``: The query endpoint of the Amazon Managed Service for Prometheus
        workspace the cluster's scraper writes to
        (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>``; KEDA appends
        ``/api/v1/query``; the workspace's ``prometheusEndpoint``, ending in ``/api/v1/``, is
        taken too): where an autoscaled deployment's ScaledObject reads its metric. May be
        a CDK token (``IServingCluster.prometheus_query_url``). Default: none (an autoscaled eks
        deployment is refused: ``mlcc render --prometheus-url``).
    ``metrics_scraper_cidrs``: The CIDRs the cluster's Prometheus scraper reaches the pods from:
        what the deployment's NetworkPolicy admits on the engine port beside the load balancers
        (the engine serves ``/metrics`` there). Default: the ``internal`` load balancer subnets
        (``load_balancer_cidrs``), where the cluster side places the managed scraper's network
        interfaces: subnets that hold no pod, so admitting them admits no other workload.
    ``prometheus_operator_namespace``: The namespace of a Prometheus the Prometheus Operator
        runs (a team's own, beside or instead of the cluster's managed scraper): each deployment
        whose engine serves metrics gets a ``ServiceMonitor`` for it, and its NetworkPolicy
        admits that namespace's pods on the engine port. Default: none (no ServiceMonitor).
    ``image_registry``: The ECR private registry whose pull through cache the cluster has
        (``<account>.dkr.ecr.<region>.amazonaws.com``): images of a cached upstream (Docker
        Hub) are rendered as ``<registry>/<prefix>/<repository>:<tag>``
        (:mod:`mlcc_constructs.core.platform.image_cache`). Default: none (images as given).
    """

    account: str | None = None
    region: str | None = None
    profile: str | None = None
    tls_bucket: str | None = None
    load_balancer_cidrs: Mapping[str, Sequence[str]] | None = None
    prometheus_query_url: str | None = None
    metrics_scraper_cidrs: Sequence[str] | None = None
    prometheus_operator_namespace: str | None = None
    image_registry: str | None = None

    def __post_init__(self) -> None:
        if self.load_balancer_cidrs is not None and isinstance(self.load_balancer_cidrs, Mapping):
            frozen = {k: tuple(v) for k, v in self.load_balancer_cidrs.items()}
            object.__setattr__(self, "load_balancer_cidrs", MappingProxyType(frozen))
        if self.metrics_scraper_cidrs is not None and not isinstance(
            self.metrics_scraper_cidrs, str
        ):
            object.__setattr__(self, "metrics_scraper_cidrs", tuple(self.metrics_scraper_cidrs))
        check_fields(self)
        if self.metrics_scraper_cidrs is not None:
            raise_if_any(_network_problems(self.metrics_scraper_cidrs, "/metrics_scraper_cidrs"))
        namespace = self.prometheus_operator_namespace
        if namespace is not None and not _NAMESPACE.match(namespace):
            raise fail(
                "not a namespace name",
                pointer="/prometheus_operator_namespace",
                value=namespace,
                allowed="1-63 lower-case letters, digits and '-', starting and ending with a "
                "letter or digit",
                fix="name the namespace your Prometheus runs in, e.g. monitoring",
            )
        if self.image_registry is not None:
            from mlcc_constructs.core.platform.image_cache import check_registry

            check_registry(self.image_registry, where="RenderContext", pointer="/image_registry")
        if self.load_balancer_cidrs is not None:
            from mlcc_constructs.core.platform.load_balancing import cidr_problems

            raise_if_any(cidr_problems(self.load_balancer_cidrs, pointer="/load_balancer_cidrs"))
        if self.tls_bucket is not None:
            from mlcc_constructs.core.adapters.path_names import check_bucket

            check_bucket(self.tls_bucket, pointer="/tls_bucket")


def _network_problems(cidrs: Sequence[str], pointer: str) -> list[Problem]:
    """Entries of ``cidrs`` that are not IPv4 networks."""
    import ipaddress

    problems = []
    for index, cidr in enumerate(cidrs):
        try:
            ipaddress.IPv4Network(cidr)
        except ValueError:
            problems.append(
                Problem(
                    message="not an IPv4 network",
                    pointer=f"{pointer}/{index}",
                    value=cidr,
                    allowed="a CIDR such as 10.0.16.0/24",
                )
            )
    return problems
