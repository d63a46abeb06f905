"""``Ingress``: how clients reach the engine, on EKS Auto Mode's built-in Application Load
Balancer (the IngressClass ``mlcc-<scheme>[-<group>]`` the cluster side creates: scheme,
subnets, shared group and the idle timeout are the class's; see
:mod:`mlcc_constructs.core.platform.load_balancing`). Rendered unless ``endpoint.scheme`` is
``none``.

Only the engine's inference API is routed (its manifest's ``api_paths``): the admin routes
(dynamic LoRA loading, weight updates) stay reachable from the ``allow_from`` namespaces only.
This also matters for vLLM, whose API key guards the ``/v1``, ``/v2`` and ``/inference``
routes only (vLLM docs/usage/security.md).

Annotations (``alb.ingress.kubernetes.io/*``, the AWS Load Balancer Controller's, which Auto
Mode reads; its documented exceptions, such as ``group.name`` on an Ingress, are not used:
EKS User Guide automode/auto-configure-alb.adoc at 1eb6aa42): ``target-type: ip`` (the
ClusterIP Service needs IP targets; Auto Mode's default too), the health check on the engine's
health path, the target group's deregistration delay at the spec's ``max_request_seconds`` (a
draining pod's open requests may finish: ELB *Edit target group attributes*, "Deregistration
delay", default 300 s, 0-3600 s), and with a certificate HTTPS on 443 with a TLS 1.3/1.2
policy and HTTP on 80 redirected to it.
"""

from __future__ import annotations

import json
from typing import Any

from mlcc_constructs.core.platform.load_balancing import ingress_class_name
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._schemas import core_object_problems
from mlcc_constructs.core.serving.kinds.registry import Kind, RenderedObject, load_balancer_address
from mlcc_constructs.core.serving.kinds.scaled_object import load_balancer_tag
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.support.errors import Problem

ANNOTATION = "alb.ingress.kubernetes.io/"
SSL_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
"""TLS 1.3 and 1.2 only (the ELB security policy the ALB console proposes by default)."""


EVERY_PATH = ("/",)


def routes(facts: DeploymentFacts) -> tuple[str, ...]:
    """The path prefixes the load balancer routes: the manifest's ``api_paths``, else every
    path (a plugin engine that declares none; :func:`check` warns)."""
    return facts.resolution.manifest.api_paths or EVERY_PATH


def check(facts: DeploymentFacts) -> tuple[list[Problem], list[str]]:
    """An engine without ``api_paths`` behind a load balancer: every path is routed, its admin
    routes included; refused on the internet, a warning inside the VPC."""
    manifest, endpoint = facts.resolution.manifest, facts.spec.endpoint
    if endpoint.scheme == "none" or manifest.api_paths:
        return [], []
    if endpoint.scheme == "internet-facing":
        problem = Problem(
            message=f"engine {manifest.engine!r} declares no api_paths: an internet-facing "
            "load balancer would route every path to it, its admin routes included",
            pointer="/endpoint/scheme",
            value=endpoint.scheme,
            allowed="internal or none",
            fix="declare api_paths (its inference routes) in the engine's manifest",
        )
        return [problem], []
    return [], [
        f"engine {manifest.engine!r} declares no api_paths: its internal load balancer routes "
        "every path to it (admin routes included); declare api_paths in its manifest, or set "
        "endpoint.scheme none"
    ]


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's Ingress, unless its endpoint is ``none``."""
    endpoint = facts.spec.endpoint
    if endpoint.scheme == "none":
        return []
    annotations = {
        f"{ANNOTATION}target-type": "ip",
        f"{ANNOTATION}healthcheck-path": facts.container.health_path,
        f"{ANNOTATION}success-codes": "200",
        # A draining target keeps its open requests this long (ELB default 300 s, 0..3600; it
        # completes at once when none is open): as long as the pod's drain waits for them.
        f"{ANNOTATION}target-group-attributes": (
            f"deregistration_delay.timeout_seconds={facts.spec.endpoint.max_request_seconds}"
        ),
    }
    listeners: list[dict[str, int]] = [{"HTTP": 80}]
    if endpoint.certificate_arn is not None:
        listeners.append({"HTTPS": 443})
        annotations[f"{ANNOTATION}certificate-arn"] = endpoint.certificate_arn
        annotations[f"{ANNOTATION}ssl-policy"] = SSL_POLICY
        annotations[f"{ANNOTATION}ssl-redirect"] = "443"
    annotations[f"{ANNOTATION}listen-ports"] = json.dumps(listeners, separators=(",", ":"))
    if facts.scales_to_zero:
        # The tag the ScaledObject's wake-up triggers find the load balancer's CloudWatch
        # metrics by (kinds/scaled_object.py).
        key, value = load_balancer_tag(facts)
        annotations[f"{ANNOTATION}tags"] = f"{key}={value}"
    meta = metadata(facts, facts.names.base)
    meta["annotations"] = dict(sorted(annotations.items()))
    rule: dict[str, Any] = {}
    if endpoint.hostname is not None:
        rule["host"] = endpoint.hostname
    rule["http"] = {
        "paths": [
            {
                "path": path,
                "pathType": "Prefix",
                "backend": {"service": {"name": facts.names.base, "port": {"name": "http"}}},
            }
            for path in routes(facts)
        ]
    }
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": meta,
        "spec": {
            "ingressClassName": ingress_class_name(endpoint.scheme, endpoint.group),
            "rules": [rule],
        },
    }
    return [RenderedObject("Ingress", ingress)]


KIND = Kind(
    kind="Ingress",
    api_version="networking.k8s.io/v1",
    plural="ingresses",
    namespaced=True,
    apply_phase=70,
    validate=core_object_problems,
    readiness=load_balancer_address,
    render=render,
    check=check,
)
