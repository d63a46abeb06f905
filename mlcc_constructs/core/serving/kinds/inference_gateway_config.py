"""``InferenceGatewayConfig`` (``inference.sagemaker.aws.amazon.com/v1alpha1``): the HyperPod
Inference Gateway in front of one deployment, checking a JWT bearer token on every request.
Rendered only when ``endpoint.gateway`` is set, on a target whose manifest says
``inference_gateway``; the HyperPod inference add-on installs the CRD and runs the gateway
controller (:mod:`mlcc_constructs.core.platform.inference_operator`).

Facts: AWS, "Inference Gateway for Amazon SageMaker HyperPod Inference" and its CRD reference
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-inference-gateway.md,
checked 2026-12-01); the rule data ``data/crd_rules/inferencegatewayconfigs...v1alpha1.json``
is that reference.

Decisions (for reviewers):

* **Authored directly, one per deployment.** The reference offers two paths that coexist: the
  operator merging a scheduler into a gateway named by the IEC's ``spec.inferenceGateway``, or
  the resource authored directly. The library authors it: the IEC CRD on record (chart 2.2.2)
  has no ``spec.inferenceGateway``, and the name the operator gives its scheduler entry is not
  documented, so a merge could duplicate ``modelName`` (a rejected resource). One gateway per
  deployment, named like it: a gateway shared by deployments in several stacks would be one
  object that each stack overwrites.
* **One scheduler, Body-Based Router off.** BBR must be on only with more than one scheduler;
  with one, every request goes to its pool (the workshop "Deploy your first gateway",
  https://awslabs.github.io/ai-on-sagemaker-hyperpod/docs/eks-orchestration/inference/inference-gateway/first-gateway).
  The scheduler selects the IEC's pods by the target's ``pod_name_label`` (the operator labels
  its pods ``app=<metadata.name>``, same page), on the engine's port; ``modelName`` is the served
  model name; ``engineType`` comes from the engine manifest's ``inference_gateway``.
* **Always HTTPS.** A bearer token over plain HTTP is readable on the wire: ``tls.acmArn`` is
  ``endpoint.certificate_arn`` when given, else ``tls: {}`` (the gateway issues a certificate
  with cert-manager and imports it into ACM, through the gateway controller's role).
* **Readiness**: the ``Ready`` condition for the current generation (the workshop's conditions:
  ``Accepted``, ``Ready``, ``GatewayProgrammed``...). A live object without ``spec.auth`` fails:
  the API server prunes fields a CRD does not define, and a gateway whose token check was
  pruned must not look ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlcc_constructs.core.platform.inference_operator import ADDON_NAME
from mlcc_constructs.core.serving.kinds._common import metadata
from mlcc_constructs.core.serving.kinds._crd_rules import CrdRules
from mlcc_constructs.core.serving.kinds.registry import (
    Kind,
    Readiness,
    RenderedObject,
    ready_condition,
)
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts
from mlcc_constructs.core.serving.spec.gateway import Gateway, JwtAuth
from mlcc_constructs.core.support.errors import Problem

API_VERSION = "inference.sagemaker.aws.amazon.com/v1alpha1"
RULES = CrdRules(file="inferencegatewayconfigs.inference.sagemaker.aws.amazon.com.v1alpha1.json")
SCHEDULER = "llm-d"
"""The Endpoint Picker the reference defaults to (``llm-d`` or ``epp``)."""


def render(facts: DeploymentFacts) -> list[RenderedObject]:
    """The deployment's gateway, when ``endpoint.gateway`` asks for one."""
    gateway = facts.spec.endpoint.gateway
    if gateway is None:
        return []
    return [RenderedObject("InferenceGatewayConfig", inference_gateway_config(facts, gateway))]


def inference_gateway_config(facts: DeploymentFacts, gateway: Gateway) -> dict[str, Any]:
    """The ``InferenceGatewayConfig`` (v1alpha1) of the deployment (module doc: *Decisions*)."""
    names, box = facts.names, facts.container
    label = facts.target.pod_name_label
    engine = facts.resolution.manifest.raw.get("inference_gateway") or {}
    assert label is not None and engine, "checked by check()"
    certificate = facts.spec.endpoint.certificate_arn
    scheduler: dict[str, Any] = {
        "name": names.base,
        "modelName": facts.served_name,
        "modelSelector": {"matchLabels": {label: names.base}},
        "targetPort": box.port,
        "scheduler": SCHEDULER,
        "engineType": engine["engine_type"],
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "InferenceGatewayConfig",
        "metadata": metadata(facts, names.base),
        "spec": {
            "bbr": {"enabled": False},  # one scheduler: nothing to route between
            "tls": {"acmArn": certificate} if certificate is not None else {},
            "auth": {"jwt": {"provider": jwt_provider(names.base, gateway.jwt)}},
            "schedulers": [scheduler],
        },
    }


def jwt_provider(name: str, jwt: JwtAuth) -> dict[str, Any]:
    """``auth.jwt.provider``: the token check (audiences and claims only when given)."""
    provider: dict[str, Any] = {
        "name": name,
        "issuer": jwt.issuer,
        "remoteJWKS": {"uri": jwt.jwks_uri},
    }
    if jwt.audiences:
        provider["audiences"] = list(jwt.audiences)
    if jwt.required_claims:
        provider["requiredClaims"] = [
            {"name": claim.name, "valueType": claim.value_type, "values": list(claim.values)}
            for claim in jwt.required_claims
        ]
    return provider


def check(facts: DeploymentFacts) -> tuple[list[Problem], list[str]]:
    """The engine's side of a gateway: its manifest names the scheduler's ``engineType``, and
    the metrics setting it needs is on (a warning otherwise: requests are still routed)."""
    if facts.spec.endpoint.gateway is None:
        return [], []
    manifest = facts.resolution.manifest
    engine = manifest.raw.get("inference_gateway")
    if engine is None:
        return [
            Problem(
                message=f"the Inference Gateway's Endpoint Picker cannot read {manifest.engine}'s "
                "metrics (its engine manifest declares no inference_gateway)",
                pointer="/endpoint/gateway",
                value=manifest.engine,
                allowed="engines whose manifest declares inference_gateway (the engineType of "
                "the gateway's scheduler)",
                fix="drop endpoint.gateway, or serve the model with such an engine",
            )
        ], []
    setting = engine.get("metrics_setting")
    warnings = []
    if setting is not None:
        key = f"{manifest.env_var_prefix}{setting}"
        # the resolved env: a target that scrapes metrics turns them on itself (Tier 1)
        if str(facts.engine_env.get(key, "")).lower() != "true":
            warnings.append(
                f"endpoint.gateway: {manifest.engine} publishes the metrics the gateway's "
                f"Endpoint Picker scores pods with only when {key}=true; without it requests "
                f"are still routed, but not by load (set env {key}: 'true')"
            )
    return [], warnings


def readiness(obj: Mapping[str, Any]) -> Readiness:
    """``Ready`` for the current generation, failed when the token check was pruned (module
    doc: *Readiness*)."""
    if not ((obj.get("spec") or {}).get("auth") or {}).get("jwt"):
        return Readiness(
            "failed",
            "spec.auth.jwt is missing on the live object: the cluster's CRD does not define it "
            "(an add-on older than v2.0.0-eksbuild.2?), so the gateway checks no token",
        )
    return ready_condition(obj)


KIND = Kind(
    kind="InferenceGatewayConfig",
    api_version=API_VERSION,
    plural="inferencegatewayconfigs",
    namespaced=True,
    apply_phase=55,  # after the IEC whose pods it selects
    validate=RULES.problems,
    readiness=readiness,
    render=render,
    requires=ADDON_NAME,
    check=check,
)
