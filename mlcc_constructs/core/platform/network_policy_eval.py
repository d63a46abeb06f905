"""Whether Kubernetes NetworkPolicies (``networking.k8s.io/v1``) allow one connection.

:func:`connection_allowed` decides a connection from a source to a destination (each a
:class:`Pod` or an IP address) on a protocol and port, given every NetworkPolicy of the cluster
that matters (the policies of the pods' namespaces), with the semantics of the Kubernetes
documentation's "Network Policies" page (kubernetes.io/docs/concepts/services-networking/
network-policies/, kubernetes/website ``content/en/docs/concepts/services-networking/
network-policies.md``):

* A pod is isolated for a direction only when some policy of its namespace selects it
  (``podSelector``; empty: every pod) and has that direction in ``policyTypes``; absent
  ``policyTypes`` means ``Ingress``, plus ``Egress`` when the policy has egress rules. A pod no
  policy isolates for a direction is unrestricted in it.
* An isolated pod admits what the union of its policies' rules of that direction admits. A rule
  admits a connection that matches one of its peers (``from``/``to``; absent or empty: every
  peer) and one of its ports (absent or empty: every port).
* A peer with ``podSelector`` selects pods of the policy's namespace; with
  ``namespaceSelector`` every pod of the selected namespaces; with both in ONE element, the
  selected pods of the selected namespaces; ``ipBlock`` an address in ``cidr`` and in none of
  its ``except`` (IPv4 and IPv6; a block never matches an address of the other family).
* A port entry matches its ``protocol`` (default TCP), any port when ``port`` is absent, the
  range ``port``..``endPort``, or a named port: the destination pod's container port of that
  name and protocol.
* A connection between two pods needs the source's egress AND the destination's ingress.
* A pod cannot block its own loopback (the page: "Pods cannot currently block localhost
  access"): a connection to ``127.0.0.0/8`` or ``::1`` is always allowed.

Not modelled (the caller keeps such connections out of its flows): traffic with the pod's own
node, which the page says is always allowed (the kubelet's probes; the VPC CNI's policy agent
also admits every connection with the node's IP, aws/aws-network-policy-agent PR 65), and
``hostNetwork`` pods (undefined behaviour, the page says); a pod's IP address (a pod is matched
by selectors only, never by an ``ipBlock``); Services (a connection is to the address after
the Service's rewrite; the page leaves it undefined whether a policy sees the address before
or after); protocols other than TCP, UDP and SCTP. Nor what a network plugin does differently:
the VPC CNI's enforcement of ``ipBlock``s on link-local addresses (aws/aws-network-policy-agent
issue 120), a plugin without ``endPort`` support, or a policy not yet applied to a new pod.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Protocol = Literal["TCP", "UDP", "SCTP"]
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every namespace to its name."""
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, kw_only=True)
class ContainerPort:
    """A container port of a pod: what a named port in a policy resolves to."""

    name: str
    port: int
    protocol: Protocol = "TCP"


@dataclass(frozen=True, kw_only=True)
class Pod:
    """A pod as policies see it: its ``namespace``, ``labels``, its namespace's labels
    (``namespace_labels``, beside the ``kubernetes.io/metadata.name`` label every namespace
    has) and its container ``ports``; ``name`` is for messages only."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] | None = None
    ports: tuple[ContainerPort, ...] = ()
    name: str = ""

    def namespace_label_set(self) -> Mapping[str, str]:
        """The namespace's labels, with the name label the API server sets on every one."""
        return {**(self.namespace_labels or {}), NAMESPACE_NAME_LABEL: self.namespace}

    def label(self) -> str:
        """``<namespace>/<name>`` (or its labels), for messages."""
        shown = self.name or ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        return f"{self.namespace}/{shown}"


Endpoint = Pod | str
"""One end of a connection: a pod, or an IP address (an address outside the pod network)."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Whether a connection is allowed, and ``why`` in one sentence."""

    allowed: bool
    why: str


def connection_allowed(
    *,
    source: Endpoint,
    destination: Endpoint,
    port: int,
    protocol: Protocol = "TCP",
    policies: Sequence[Mapping[str, Any]],
) -> Verdict:
    """Whether ``policies`` allow a connection from ``source`` to ``destination`` on
    ``protocol``/``port`` (module doc). A policy without ``metadata.namespace`` raises
    ``ValueError``: it belongs to no namespace yet."""
    if (
        isinstance(source, Pod)
        and not isinstance(destination, Pod)
        and _address(destination).is_loopback
    ):
        return Verdict(allowed=True, why="the pod's own loopback: no policy can block it")
    checks: list[tuple[Pod, Literal["ingress", "egress"], Endpoint]] = []
    if isinstance(source, Pod):
        checks.append((source, "egress", destination))
    if isinstance(destination, Pod):
        checks.append((destination, "ingress", source))
    if not checks:
        raise ValueError("a connection needs a pod at one end at least")
    reasons = []
    for pod, direction, peer in checks:
        verdict = _one_side(pod, direction, peer, destination, port, protocol, policies)
        if not verdict.allowed:
            return verdict
        reasons.append(verdict.why)
    return Verdict(allowed=True, why="; ".join(reasons))


def _one_side(
    pod: Pod,
    direction: Literal["ingress", "egress"],
    peer: Endpoint,
    destination: Endpoint,
    port: int,
    protocol: Protocol,
    policies: Sequence[Mapping[str, Any]],
) -> Verdict:
    """The verdict of ``pod``'s policies of ``direction`` on a connection with ``peer``."""
    applying = [p for p in policies if _applies(p, pod, direction)]
    if not applying:
        return Verdict(
            allowed=True, why=f"no policy isolates {pod.label()} for {direction}: unrestricted"
        )
    key, peers_key = ("ingress", "from") if direction == "ingress" else ("egress", "to")
    for policy in applying:
        namespace = _namespace(policy)
        for index, rule in enumerate(policy["spec"].get(key) or []):
            peers = rule.get(peers_key) or []
            if peers and not any(_peer_matches(p, peer, namespace) for p in peers):
                continue
            entries = rule.get("ports") or []
            if entries and not any(_port_matches(e, port, protocol, destination) for e in entries):
                continue
            name = policy["metadata"].get("name")
            return Verdict(
                allowed=True, why=f"{direction} of {pod.label()}: {name} {key}[{index}] admits it"
            )
    names = ", ".join(str(p["metadata"].get("name")) for p in applying)
    return Verdict(
        allowed=False,
        why=f"{direction} of {pod.label()}: isolated by {names}, and no rule admits "
        f"{protocol} {port} {'from' if direction == 'ingress' else 'to'} {_shown(peer)}",
    )


def _applies(policy: Mapping[str, Any], pod: Pod, direction: str) -> bool:
    spec = policy.get("spec") or {}
    if _namespace(policy) != pod.namespace:
        return False
    if not selector_matches(spec.get("podSelector") or {}, pod.labels):
        return False
    return direction.capitalize() in policy_types(spec)


def policy_types(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """``spec.policyTypes``, or when absent its default: ``Ingress``, and ``Egress`` when the
    policy has egress rules."""
    given = spec.get("policyTypes")
    if given:
        return tuple(given)
    return ("Ingress", "Egress") if spec.get("egress") else ("Ingress",)


def _namespace(policy: Mapping[str, Any]) -> str:
    namespace = (policy.get("metadata") or {}).get("namespace")
    if not namespace:
        name = (policy.get("metadata") or {}).get("name")
        raise ValueError(f"NetworkPolicy {name!r} has no metadata.namespace")
    return str(namespace)


def _peer_matches(peer: Mapping[str, Any], endpoint: Endpoint, namespace: str) -> bool:
    """One ``from``/``to`` element against ``endpoint``, for a policy of ``namespace``."""
    if "ipBlock" in peer:
        return not isinstance(endpoint, Pod) and ip_block_matches(peer["ipBlock"], endpoint)
    if not isinstance(endpoint, Pod):
        return False  # selectors name pods; an address outside the pod network is no pod
    pods = peer.get("podSelector")
    namespaces = peer.get("namespaceSelector")
    if pods is None and namespaces is None:
        raise ValueError(f"a NetworkPolicy peer names no ipBlock nor selector: {dict(peer)}")
    if namespaces is None:
        in_namespace = endpoint.namespace == namespace
    else:
        in_namespace = selector_matches(namespaces, endpoint.namespace_label_set())
    return in_namespace and (pods is None or selector_matches(pods, endpoint.labels))


def ip_block_matches(block: Mapping[str, Any], address: str) -> bool:
    """``address`` is in ``block['cidr']`` and in none of ``block['except']``."""
    found = _address(address)
    network = ipaddress.ip_network(block["cidr"], strict=False)
    if found.version != network.version or found not in network:
        return False
    return not any(
        found in ipaddress.ip_network(cidr, strict=False)
        for cidr in block.get("except") or []
        if ipaddress.ip_network(cidr, strict=False).version == found.version
    )


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A label selector (``matchLabels`` and ``matchExpressions``, ANDed; empty: everything)
    against ``labels``. ``NotIn`` and ``DoesNotExist`` match a missing key (Kubernetes'
    labels.Selector)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = set(expression.get("values") or [])
        present = key in labels
        if operator == "In":
            ok = present and labels[key] in values
        elif operator == "NotIn":
            ok = not present or labels[key] not in values
        elif operator == "Exists":
            ok = present
        elif operator == "DoesNotExist":
            ok = not present
        else:
            raise ValueError(f"unknown label selector operator {operator!r}")
        if not ok:
            return False
    return True


def _port_matches(
    entry: Mapping[str, Any], port: int, protocol: Protocol, destination: Endpoint
) -> bool:
    """One ``ports`` entry against the connection's destination ``port`` and ``protocol``."""
    if entry.get("protocol", "TCP") != protocol:
        return False
    given = entry.get("port")
    if given is None:
        return True  # every port of the protocol
    if isinstance(given, str) and not given.isdigit():
        # A named port: the destination pod's container port of that name and protocol; an
        # address outside the pod network has no names.
        if not isinstance(destination, Pod):
            return False
        return any(
            c.name == given and c.port == port and c.protocol == protocol for c in destination.ports
        )
    start = int(given)
    end = int(entry.get("endPort") or start)
    return start <= port <= end


def _address(value: str) -> Address:
    return ipaddress.ip_address(value)


def _shown(endpoint: Endpoint) -> str:
    return endpoint.label() if isinstance(endpoint, Pod) else endpoint
