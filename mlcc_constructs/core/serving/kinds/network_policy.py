"""``NetworkPolicy``: who may reach the engine pods and what they may reach.

Ingress: the engine port from the load balancer subnets of the endpoint's scheme (their CIDRs:
the render context's ``load_balancer_cidrs``; why those subnets hold only load balancers:
:mod:`mlcc_constructs.core.platform.load_balancing`) and from pods of the ``allow_from``
namespaces, and from the cluster's Prometheus scraper for an engine with metrics (its network
interfaces live in the internal load balancer subnets, which hold no pod: the render context's
``metrics_scraper_cidrs``); nothing else (no other pod, not the rest of the VPC). Egress: DNS;
HTTPS for a Hugging Face model (the Hub and its CDN have no fixed addresses) and for a streamed
``s3://`` model (``model_load: stream``: the engine reads S3 itself, and S3's addresses are
AWS's prefix list, which a NetworkPolicy cannot name); for a pod that calls AWS itself (a
streamed model: :func:`~mlcc_constructs.core.serving.prepare.aws_calls.pods_call_aws`), the
EKS Pod Identity agent on TCP 80 at its two link-local addresses only
(:mod:`mlcc_constructs.core.platform.pod_identity`), where the pod gets its credentials; the
CacheBackend's external Redis port; over several nodes (a LeaderWorkerSet), every port among
the deployment's own pods. A mounted ``s3://`` model needs no egress rule: Mountpoint reads it
in the S3 CSI driver's pods, not in the engine pod; synced secrets need none either: the Secrets
Store CSI driver's AWS provider asks the agent for the pod's credentials from its own pod. The
instance metadata service is never admitted (Pod Identity replaces the node's credentials).
What each pod needs and must not reach is derived and checked against this policy
(:mod:`mlcc_constructs.core.serving.flows`).

Enforced on EKS Auto Mode once the cluster side turns the VPC CNI's network policy controller
on (the ``kube-system/amazon-vpc-cni`` ConfigMap). The VPC CNI applies policies to pods with
owner references (a Deployment's), and needs the Service port equal to the container port,
which the library's Service keeps (EKS User Guide networking/cni-network-policy.adoc).
DNS is admitted by port to any address: Auto Mode caches DNS queries on the node ("Caching DNS
queries on the node", EKS User Guide ``automode/auto-networking.adoc``), not in pods a selector
could name, at an address no rule has to know (a link-local one included).
"""

from __future__ import annotations

from typing import Any

from mlcc_constructs.core.platform.pod_identity import AGENT_CIDRS, AGENT_PORT
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, exists
from mlcc_constructs.core.serving.prepare.aws_calls import pods_call_aws
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.prepare.names import pod_selector

NAMESPACE_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every namespace to its name."""


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's NetworkPolicy (module doc)."""
    spec, port = facts.spec, facts.container.port
    engine_port = [{"protocol": "TCP", "port": port}]
    ingress: list[dict[str, Any]] = []
    if facts.load_balancer_cidrs:
        blocks = [{"ipBlock": {"cidr": cidr}} for cidr in facts.load_balancer_cidrs]
        ingress.append({"from": blocks, "ports": engine_port})
    scrapers = [c for c in facts.metrics_scraper_cidrs if c not in facts.load_balancer_cidrs]
    if scrapers:  # the cluster's Prometheus scraper reads /metrics on the engine port
        blocks = [{"ipBlock": {"cidr": cidr}} for cidr in scrapers]
        ingress.append({"from": blocks, "ports": engine_port})
    callers = [*spec.endpoint.allow_from]
    if facts.service_monitor_namespace and facts.service_monitor_namespace not in callers:
        callers.append(facts.service_monitor_namespace)  # the team's Prometheus scrapes /metrics
    if callers:
        namespaces = [
            {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}}}
            for namespace in callers
        ]
        ingress.append({"from": namespaces, "ports": engine_port})
    egress: list[dict[str, Any]] = [
        {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    ]
    # HTTPS out: the Hub and its CDN, or S3 for a streamed model (S3's addresses are AWS's
    # prefix list, which a NetworkPolicy cannot name).
    if facts.source.kind == "huggingface" or facts.resolution.model_load == "stream":
        egress.append({"ports": [{"protocol": "TCP", "port": 443}]})
    if pods_call_aws(facts):  # the pod's own credentials: the Pod Identity agent, nothing more
        agent = [{"ipBlock": {"cidr": cidr}} for cidr in AGENT_CIDRS]
        egress.append({"to": agent, "ports": [{"protocol": "TCP", "port": AGENT_PORT}]})
    if facts.cache is not None and facts.cache.remote_port is not None:
        egress.append({"ports": [{"protocol": "TCP", "port": facts.cache.remote_port}]})
    if facts.resolution.nodes > 1:
        # One model copy over several pods: its ranks reach each other on the engine's
        # rendezvous port and on the ports NCCL picks at run time (any port), only among the
        # deployment's own pods. EFA traffic bypasses the kernel's IP stack the policy filters.
        own = [{"podSelector": {"matchLabels": pod_selector(facts.names)}}]
        ingress.append({"from": own})
        egress.append({"to": own})
    policy: dict[str, Any] = {
        "podSelector": {"matchLabels": pod_selector(facts.names)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": ingress,
        "egress": egress,
    }
    network_policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(facts, facts.names.base),
        "spec": policy,
    }
    return [RenderedObject("NetworkPolicy", network_policy)]


KIND = Kind(
    kind="NetworkPolicy",
    api_version="networking.k8s.io/v1",
    plural="networkpolicies",
    namespaced=True,
    apply_phase=15,
    validate=core_object_problems,
    readiness=exists,
    render=render,
    filters_traffic=True,
)
