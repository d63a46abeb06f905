"""Every flow of every pod of a set of deployments, evaluated against their NetworkPolicies.

The deployments are those applied to one cluster together (the app's list, or one deployment):
each pod is checked against every NetworkPolicy of the set (a policy of one deployment could
select another's pods), with :func:`~mlcc_constructs.core.platform.network_policy_eval.
connection_allowed`. The pods are the ones the deployments' workload objects make (the kinds
registry's :attr:`~mlcc_constructs.core.serving.kinds.registry.Kind.pods`: a Deployment's
template, a LeaderWorkerSet's leader and worker); a deployment whose pods the platform makes (a
HyperPod ``InferenceEndpointConfig``) has none here. A pod serves the API when the deployment's
Service selects it (every pod, without a Service).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mlcc_constructs.core.platform.network_policy_eval import (
    ContainerPort,
    Endpoint,
    Pod,
    Verdict,
    connection_allowed,
)
from mlcc_constructs.core.serving.flows.derive import Flow, OwnPods, derive_flows
from mlcc_constructs.core.serving.kinds.registry import of_kind, pod_shapes
from mlcc_constructs.core.serving.prepared import PreparedDeployment


@dataclass(frozen=True, kw_only=True)
class RenderedPod:
    """One sort of pod a deployment's objects make: its ``role`` (``pod``, ``leader``,
    ``worker``), the ``pod`` as policies see it, and whether it ``serves`` the API."""

    role: str
    pod: Pod
    serves: bool


@dataclass(frozen=True, kw_only=True)
class FlowResult:
    """One flow of one pod, evaluated: ``needed`` (must be allowed) or not (must be denied)."""

    deployment: str
    role: str
    flow: Flow
    needed: bool
    verdict: Verdict

    @property
    def ok(self) -> bool:
        """The policies do what the flow needs."""
        return self.verdict.allowed == self.needed

    def message(self) -> str:
        """One line: which pod, which flow, what was expected and why it failed or held."""
        expected = "needed, denied" if self.needed else "must be denied, allowed"
        state = expected if not self.ok else ("allowed" if self.needed else "denied")
        return f"{self.deployment} {self.role}: {self.flow.label()}: {state}: {self.verdict.why}"


def rendered_pods(prepared: PreparedDeployment) -> tuple[RenderedPod, ...]:
    """The sorts of pod the deployment's objects make (module doc)."""
    objects = [entry.object for entry in prepared.objects]
    selectors = [
        dict((obj.get("spec") or {}).get("selector") or {}) for obj in of_kind(objects, "Service")
    ]
    found = []
    for obj in objects:
        for shape in pod_shapes(obj):
            labels = dict((shape.template.get("metadata") or {}).get("labels") or {})
            spec = shape.template.get("spec") or {}
            pod = Pod(
                namespace=str(obj["metadata"]["namespace"]),
                labels=labels,
                ports=_ports(spec),
                name=f"{obj['metadata']['name']}-{shape.role}",
            )
            serves = not selectors or any(
                all(labels.get(k) == v for k, v in s.items()) for s in selectors
            )
            found.append(RenderedPod(role=shape.role, pod=pod, serves=serves))
    return tuple(found)


def check_flows(deployments: Sequence[PreparedDeployment]) -> list[FlowResult]:
    """Each needed and denied flow (:func:`~mlcc_constructs.core.serving.flows.derive.
    derive_flows`) of each pod of ``deployments``, against all their NetworkPolicies."""
    policies = [
        obj
        for prepared in deployments
        for obj in of_kind([e.object for e in prepared.objects], "NetworkPolicy")
    ]
    results = []
    for prepared in deployments:
        plan = derive_flows(prepared)
        pods = rendered_pods(prepared)
        label = f"{prepared.spec.namespace}/{prepared.names.base} on {prepared.target.name}"
        for subject in pods:
            for needed, flows in ((True, plan.needed), (False, plan.denied)):
                for flow in flows:
                    if flow.serving_only and not subject.serves:
                        continue
                    for peer in _peers(flow, pods):
                        results.append(
                            FlowResult(
                                deployment=label,
                                role=subject.role,
                                flow=flow,
                                needed=needed,
                                verdict=_evaluate(subject.pod, flow, peer, policies),
                            )
                        )
    return results


def flow_failures(deployments: Sequence[PreparedDeployment]) -> list[str]:
    """:meth:`FlowResult.message` of every flow the policies get wrong (empty: none)."""
    return [r.message() for r in check_flows(deployments) if not r.ok]


def _peers(flow: Flow, pods: Sequence[RenderedPod]) -> list[Endpoint]:
    """The flow's peer; :data:`OWN_PODS` is each of the deployment's pods."""
    if isinstance(flow.peer, OwnPods):
        return [p.pod for p in pods]
    return [flow.peer]


def _evaluate(
    subject: Pod, flow: Flow, peer: Endpoint, policies: Sequence[Mapping[str, Any]]
) -> Verdict:
    source, destination = (subject, peer) if flow.direction == "egress" else (peer, subject)
    return connection_allowed(
        source=source,
        destination=destination,
        port=flow.port,
        protocol=flow.protocol,
        policies=policies,
    )


def _ports(spec: Mapping[str, Any]) -> tuple[ContainerPort, ...]:
    """Every named container port of the pod (its sidecars' too)."""
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return tuple(
        ContainerPort(
            name=str(p["name"]), port=int(p["containerPort"]), protocol=p.get("protocol", "TCP")
        )
        for c in containers
        for p in c.get("ports") or []
        if p.get("name")
    )
