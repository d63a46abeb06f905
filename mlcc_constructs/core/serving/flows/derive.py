"""The flows a deployment's pods need (:attr:`FlowPlan.needed`) and must not have
(:attr:`FlowPlan.denied`), from its facts alone (not from its NetworkPolicy, which they check).

A flow is one connection of one of the deployment's pods: its direction, the peer (an IP address
standing for a CIDR or an endpoint, a pod of a namespace with labels, or the deployment's own
pods), the protocol and port, and why. An address range is represented by its lowest and highest
address a host can have (AWS reserves the first four and the last address of every subnet:
EC2 API ``CreateSubnet``), so a rule that admits only part of a range, or a range's ``except``,
is caught. Addresses without a range of their own stand for "any address": a public one from a
documentation range (RFC 5737 ``203.0.113.0/24``, RFC 3849 ``2001:db8::/32``) for the internet,
a private one outside every CIDR the deployment admits for the rest of the VPC (its pods and
nodes).

Needed, for every pod: DNS (UDP and TCP 53; the cluster DNS address in each of the service
ranges EKS picks from, ``10.100.0.0/16`` and ``172.20.0.0/16``, and any other: Auto Mode answers
on the node); for a pod that calls AWS itself (a streamed model), the EKS Pod Identity agent
(TCP 80 at ``169.254.170.23`` and ``fd00:ec2::23``) and S3 (HTTPS, public addresses: the VPC's
S3 gateway endpoint routes to them); for a Hugging Face model, the Hub (HTTPS); a
CacheBackend's MP server sidecar (its port on the pod's loopback) and its external Redis (its
port at its address, or a VPC address for a name); over several nodes, every pod of the group
to and from every other on the engine's rendezvous port and a port NCCL picks at run time
(EFA's traffic bypasses the IP stack a policy filters). Needed by the pods that serve the API
(those the Service selects): the engine port from both ends of each load balancer subnet and
each metrics scraper subnet, from a pod of each ``allow_from`` namespace (``mlcc adapter``'s
callers of the admin API among them, for a LoRA deployment) and of the Prometheus Operator's
namespace.

Denied (only where the target renders a NetworkPolicy; elsewhere the platform makes the pods):
the engine port from a VPC address outside those subnets, from a pod of another namespace and
from another pod of the deployment's namespace (unless ``allow_from`` names them); egress to
a VPC address on a database port, to the instance metadata service, to any address over plain
HTTP, to the Pod Identity agent on another port (for a pod that calls AWS) or at all (for a pod
that does not: synced secrets are read by the CSI driver's provider from its own pod), to any
address over HTTPS when nothing in the pod needs it (a mounted ``s3://`` model: Mountpoint reads
it in the S3 CSI driver's pods), to another pod of the namespace on its engine port; over
several nodes, another pod of the namespace joining the group's rendezvous.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mlcc_constructs.core.cache.admission import split_endpoint
from mlcc_constructs.core.platform.network_policy_eval import Pod, Protocol
from mlcc_constructs.core.platform.pod_identity import (
    AGENT_ADDRESSES,
    AGENT_PORT,
    INSTANCE_METADATA_ADDRESS,
)
from mlcc_constructs.core.serving.kinds.registry import filters_traffic
from mlcc_constructs.core.serving.prepare.aws_calls import pods_call_aws
from mlcc_constructs.core.serving.prepare.facts import DeploymentFacts

Direction = Literal["ingress", "egress"]

PUBLIC_ADDRESS = "203.0.113.7"
"""Any internet address (RFC 5737's TEST-NET-3: a documentation address, never a real host)."""
PUBLIC_ADDRESS_V6 = "2001:db8::7"
"""Any internet address over IPv6 (RFC 3849's documentation prefix)."""
CLUSTER_DNS = ("10.100.0.10", "172.20.0.10")
"""A cluster DNS address in each of the service ranges EKS assigns when none is given (EKS API
``KubernetesNetworkConfigRequest.serviceIpv4Cidr``: ``10.100.0.0/16`` or ``172.20.0.0/16``)."""
VPC_CANDIDATES = ("10.0.40.17", "172.31.40.17", "192.168.40.17")
"""Private addresses standing for the VPC's pods and nodes (the first in a ``ServingCluster``
VPC's private subnets, ``10.0.32.0/19`` on): the first outside every CIDR a deployment admits."""
NCCL_PORT = 43217
"""A port NCCL may bind at run time (it picks ephemeral ports: no fixed port to admit)."""
DATABASE_PORT = 5432
"""PostgreSQL's port: nothing of a serving pod's reaches a database."""
OTHER_NAMESPACE = "mlcc-flows-elsewhere"
"""A namespace none of the deployment's callers is in."""
CALLER_LABELS = {"app.kubernetes.io/name": "mlcc-flows-caller"}
"""The labels of a pod standing for any pod of a namespace."""
PROMETHEUS_LABELS = {"app.kubernetes.io/name": "prometheus"}


@dataclass(frozen=True)
class OwnPods:
    """The peer "each pod of the deployment" (another rank of its group, another replica)."""


OWN_PODS = OwnPods()
Peer = str | Pod | OwnPods


@dataclass(frozen=True, kw_only=True)
class Flow:
    """One connection of a deployment's pod.

    ``direction``: ``egress`` (the pod connects to ``peer``) or ``ingress`` (``peer`` connects
    to the pod). ``peer``: an IP address, a :class:`~mlcc_constructs.core.platform.
    network_policy_eval.Pod`, or :data:`OWN_PODS`. ``serving_only``: the flow concerns only the
    pods that serve the API (those the deployment's Service selects). ``reason``: why it is
    needed, or why it must be denied.
    """

    direction: Direction
    peer: Peer
    port: int
    protocol: Protocol = "TCP"
    reason: str
    serving_only: bool = False

    def label(self) -> str:
        """``egress TCP 80 to 169.254.170.23 (why)``, for messages."""
        side = "to" if self.direction == "egress" else "from"
        peer = self.peer
        shown = (
            "each pod of the deployment"
            if isinstance(peer, OwnPods)
            else peer.label()
            if isinstance(peer, Pod)
            else peer
        )
        return f"{self.direction} {self.protocol} {self.port} {side} {shown} ({self.reason})"


@dataclass(frozen=True, kw_only=True)
class FlowPlan:
    """What a deployment's pods need and must not have (module doc). ``enforced``: its target
    renders a kind that filters traffic, a NetworkPolicy (without one, ``denied`` is empty:
    nothing could deny)."""

    needed: tuple[Flow, ...]
    denied: tuple[Flow, ...]
    enforced: bool


def address_representatives(cidr: str) -> tuple[str, ...]:
    """The lowest and highest address a host of ``cidr`` can have (AWS reserves the first four
    and the last of a subnet); the range's own ends for a range of fewer than eight."""
    network = ipaddress.ip_network(cidr, strict=False)
    if network.num_addresses >= 8:
        return (str(network[4]), str(network[-2]))
    return tuple(dict.fromkeys((str(network[0]), str(network[-1]))))


def vpc_address(admitted: Sequence[str]) -> str:
    """The first of :data:`VPC_CANDIDATES` in none of the ``admitted`` CIDRs."""
    networks = [ipaddress.ip_network(c, strict=False) for c in admitted]
    for candidate in VPC_CANDIDATES:
        address = ipaddress.ip_address(candidate)
        if not any(address in n for n in networks if n.version == address.version):
            return candidate
    raise ValueError(f"every private candidate address is admitted by {list(admitted)}")


def derive_flows(facts: DeploymentFacts) -> FlowPlan:
    """The deployment's :class:`FlowPlan` (module doc)."""
    enforced = filters_traffic(facts.target.kinds)
    return FlowPlan(
        needed=tuple(_needed(facts)),
        denied=tuple(_denied(facts)) if enforced else (),
        enforced=enforced,
    )


def _needed(facts: DeploymentFacts) -> list[Flow]:
    spec, port = facts.spec, facts.container.port
    flows = [
        Flow(direction="egress", peer=dns, port=53, protocol=protocol, reason="cluster DNS")
        for dns in CLUSTER_DNS
        for protocol in ("UDP", "TCP")
    ]
    if pods_call_aws(facts):
        why = "the EKS Pod Identity agent: the pod's own AWS credentials"
        flows += [
            Flow(direction="egress", peer=a, port=AGENT_PORT, reason=why) for a in AGENT_ADDRESSES
        ]
        flows.append(
            Flow(
                direction="egress",
                peer=PUBLIC_ADDRESS,
                port=443,
                reason="S3: the engine streams its model (S3's addresses, through the VPC's "
                "gateway endpoint)",
            )
        )
    if facts.source.kind == "huggingface":
        flows += [
            Flow(direction="egress", peer=a, port=443, reason="the Hugging Face Hub and its CDN")
            for a in (PUBLIC_ADDRESS, PUBLIC_ADDRESS_V6)
        ]
    flows += _cache_flows(facts)
    flows += _group_flows(facts)
    serving = "serves the API"
    balancer = f"the {spec.endpoint.scheme} load balancer"
    callers = [
        *((cidr, f"{balancer} in subnet {cidr}") for cidr in facts.load_balancer_cidrs),
        *(
            (cidr, f"the cluster's Prometheus scraper in subnet {cidr}: /metrics")
            for cidr in facts.metrics_scraper_cidrs
        ),
    ]
    for cidr, reason in callers:  # both ends of each subnet, on the engine port
        flows += [
            Flow(direction="ingress", peer=a, port=port, reason=reason, serving_only=True)
            for a in address_representatives(cidr)
        ]
    for namespace in spec.endpoint.allow_from:
        adapter = " and mlcc adapter's admin API calls" if spec.lora.enabled else ""
        flows.append(
            Flow(
                direction="ingress",
                peer=Pod(namespace=namespace, labels=CALLER_LABELS),
                port=port,
                reason=f"a caller in allow_from namespace {namespace}{adapter}; the pod {serving}",
                serving_only=True,
            )
        )
    if facts.service_monitor_namespace:
        flows.append(
            Flow(
                direction="ingress",
                peer=Pod(namespace=facts.service_monitor_namespace, labels=PROMETHEUS_LABELS),
                port=port,
                reason="the Prometheus Operator's Prometheus (ServiceMonitor): /metrics",
                serving_only=True,
            )
        )
    return flows


def _cache_flows(facts: DeploymentFacts) -> list[Flow]:
    """The CacheBackend's MP server sidecar (loopback) and its external Redis."""
    if facts.cache is None:
        return []
    flows = [
        Flow(
            direction="egress",
            peer="127.0.0.1",
            port=facts.cache.server.port,
            reason="the CacheBackend's MP server sidecar in the same pod",
        )
    ]
    remote = facts.cache.spec.remote_storage
    endpoint = remote.endpoint if remote is not None else None
    found = split_endpoint(endpoint) if endpoint else None
    if found is not None:
        host, redis_port = found
        try:
            peer = str(ipaddress.ip_address(host))
        except ValueError:  # a name: it resolves to an address of the VPC, say
            peer = vpc_address(_admitted(facts))
        flows.append(
            Flow(
                direction="egress",
                peer=peer,
                port=redis_port,
                reason=f"the CacheBackend's external Redis {endpoint}",
            )
        )
    return flows


def _group_flows(facts: DeploymentFacts) -> list[Flow]:
    """Over several nodes: each rank to and from every other."""
    if facts.resolution.nodes <= 1:
        return []
    block = facts.resolution.manifest.raw.get("multi_node") or {}
    ports = [(int(block["master_port"]), "the group's rendezvous")] if block else []
    ports.append((NCCL_PORT, "NCCL between the group's ranks"))
    return [
        Flow(direction=direction, peer=OWN_PODS, port=port, reason=why)
        for port, why in ports
        for direction in ("egress", "ingress")
    ]


def _admitted(facts: DeploymentFacts) -> list[str]:
    return [*facts.load_balancer_cidrs, *facts.metrics_scraper_cidrs]


def _denied(facts: DeploymentFacts) -> list[Flow]:
    spec, port = facts.spec, facts.container.port
    vpc = vpc_address(_admitted(facts))
    flows = [
        Flow(
            direction="ingress",
            peer=vpc,
            port=port,
            reason="a VPC address outside the load balancer and scraper subnets",
        ),
        Flow(
            direction="egress",
            peer=vpc,
            port=_free_port(facts, DATABASE_PORT),
            reason="a database in the VPC: nothing of the pod's",
        ),
        Flow(
            direction="egress",
            peer=INSTANCE_METADATA_ADDRESS,
            port=80,
            reason="the instance metadata service: the node's credentials",
        ),
        Flow(direction="egress", peer=PUBLIC_ADDRESS, port=80, reason="plain HTTP out"),
    ]
    elsewhere = OTHER_NAMESPACE
    while elsewhere in spec.endpoint.allow_from or elsewhere == spec.namespace:
        elsewhere += "-x"
    flows.append(
        Flow(
            direction="ingress",
            peer=Pod(namespace=elsewhere, labels=CALLER_LABELS),
            port=port,
            reason="a pod of a namespace allow_from does not name",
        )
    )
    neighbour = Pod(namespace=spec.namespace, labels=CALLER_LABELS)
    if spec.namespace not in spec.endpoint.allow_from:
        flows.append(
            Flow(
                direction="ingress",
                peer=neighbour,
                port=port,
                reason="another pod of the deployment's namespace",
            )
        )
    flows.append(
        Flow(
            direction="egress",
            peer=neighbour,
            port=port,
            reason="another pod of the namespace on its engine port",
        )
    )
    if pods_call_aws(facts):
        flows.append(
            Flow(
                direction="egress",
                peer=AGENT_ADDRESSES[0],
                port=8080,
                reason="the Pod Identity agent's address on another port than its own",
            )
        )
    else:
        why = "the pod calls no AWS API itself" + (
            " (its synced secrets are read by the CSI driver's provider, from its own pod)"
            if facts.secrets.synced
            else ""
        )
        flows += [
            Flow(direction="egress", peer=a, port=AGENT_PORT, reason=f"Pod Identity agent: {why}")
            for a in AGENT_ADDRESSES
        ]
    if facts.source.kind != "huggingface" and not pods_call_aws(facts):
        flows.append(
            Flow(
                direction="egress",
                peer=PUBLIC_ADDRESS,
                port=443,
                reason="HTTPS out: nothing in the pod needs it (a mounted model is read by "
                "Mountpoint in the S3 CSI driver's pods)",
            )
        )
    if facts.resolution.nodes > 1:
        block = facts.resolution.manifest.raw.get("multi_node") or {}
        flows.append(
            Flow(
                direction="ingress",
                peer=neighbour,
                port=int(block.get("master_port", NCCL_PORT)),
                reason="another pod of the namespace joining the group's rendezvous",
            )
        )
    return flows


def _free_port(facts: DeploymentFacts, wanted: int) -> int:
    """``wanted``, or the next port no egress of the deployment needs (its Redis's)."""
    taken = {53, 443, AGENT_PORT}
    if facts.cache is not None and facts.cache.remote_port is not None:
        taken.add(facts.cache.remote_port)
    while wanted in taken:
        wanted += 1
    return wanted
