"""The NetworkPolicy evaluator against the Kubernetes documentation's own examples and rules.

Every case is a policy of the "Network Policies" page (kubernetes.io/docs/concepts/
services-networking/network-policies/; kubernetes/website
``content/en/docs/concepts/services-networking/network-policies.md`` and its samples
``content/en/examples/service/networking/*.yaml``) and a connection whose verdict the page's
prose states: the example policy (``role: db``, ipBlock ``except``), the default deny and allow
all policies, ``namespaceSelector`` and ``podSelector`` in one ``from`` element versus two,
``endPort``, targeting namespaces by label and by name, ``policyTypes``' default, and "both
the egress policy on the source pod and the ingress policy on the destination pod need to
allow the connection".
"""

from __future__ import annotations

from typing import Any

import pytest

from mlcc_constructs.core.platform.network_policy_eval import (
    ContainerPort,
    Endpoint,
    Pod,
    connection_allowed,
    ip_block_matches,
    policy_types,
    selector_matches,
)


def policy(name: str, spec: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


# The page's example NetworkPolicy (service/networking/networkpolicy.yaml), verbatim as data.
EXAMPLE = policy(
    "test-network-policy",
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"project": "myproject"}}},
                    {"podSelector": {"matchLabels": {"role": "frontend"}}},
                ],
                "ports": [{"protocol": "TCP", "port": 6379}],
            }
        ],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                "ports": [{"protocol": "TCP", "port": 5978}],
            }
        ],
    },
)
DB = Pod(namespace="default", labels={"role": "db"}, name="db")
WEB = Pod(namespace="default", labels={"role": "web"}, name="web")
FRONTEND = Pod(namespace="default", labels={"role": "frontend"})
MYPROJECT = Pod(namespace="team", namespace_labels={"project": "myproject"}, labels={"a": "b"})
FRONTEND_ELSEWHERE = Pod(namespace="team-b", labels={"role": "frontend"})

ONE_ELEMENT = policy(
    "one-element",
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"user": "alice"}},
                        "podSelector": {"matchLabels": {"role": "client"}},
                    }
                ]
            }
        ],
    },
)
TWO_ELEMENTS = policy(
    "two-elements",
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "ingress": [
            {
                "from": [
                    {"namespaceSelector": {"matchLabels": {"user": "alice"}}},
                    {"podSelector": {"matchLabels": {"role": "client"}}},
                ]
            }
        ],
    },
)
ALICE_CLIENT = Pod(
    namespace="alice-ns", namespace_labels={"user": "alice"}, labels={"role": "client"}
)
ALICE_OTHER = Pod(namespace="alice-ns", namespace_labels={"user": "alice"}, labels={"role": "x"})
LOCAL_CLIENT = Pod(namespace="default", labels={"role": "client"})
BOB_CLIENT = Pod(namespace="bob-ns", namespace_labels={"user": "bob"}, labels={"role": "client"})

# The "Default policies" samples (network-policy-*.yaml).
DENY_INGRESS = policy("default-deny-ingress", {"podSelector": {}, "policyTypes": ["Ingress"]})
ALLOW_INGRESS = policy(
    "allow-all-ingress", {"podSelector": {}, "ingress": [{}], "policyTypes": ["Ingress"]}
)
DENY_EGRESS = policy("default-deny-egress", {"podSelector": {}, "policyTypes": ["Egress"]})
ALLOW_EGRESS = policy(
    "allow-all-egress", {"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]}
)
DENY_ALL = policy("default-deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})

# "Targeting a range of ports" (networkpolicy-multiport-egress.yaml).
MULTI_PORT = policy(
    "multi-port-egress",
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}],
            }
        ],
    },
)
# "Targeting multiple namespaces by label" and "Targeting a Namespace by its name".
BY_LABEL = policy(
    "egress-namespaces",
    {
        "podSelector": {"matchLabels": {"app": "myapp"}},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {
                                    "key": "namespace",
                                    "operator": "In",
                                    "values": ["frontend", "backend"],
                                }
                            ]
                        }
                    }
                ]
            }
        ],
    },
)
BY_NAME = policy(
    "by-name",
    {
        "podSelector": {},
        "ingress": [
            {
                "from": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ops"}}}
                ]
            }
        ],
    },
)
MYAPP = Pod(namespace="default", labels={"app": "myapp"})
IN_FRONTEND = Pod(namespace="frontend", namespace_labels={"namespace": "frontend"})
IN_OTHER = Pod(namespace="other", namespace_labels={"namespace": "other"})

# policyTypes' default: Ingress always, Egress only with egress rules.
INGRESS_RULES_ONLY = policy(
    "no-types-ingress", {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]}
)
EGRESS_RULES = policy(
    "no-types-egress",
    {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}]}]},
)
NAMED_PORT = policy(
    "named",
    {"podSelector": {"matchLabels": {"role": "db"}}, "ingress": [{"ports": [{"port": "http"}]}]},
)
DB_WITH_PORT = Pod(
    namespace="default", labels={"role": "db"}, ports=(ContainerPort(name="http", port=8000),)
)
IPV6 = policy(
    "v6",
    {
        "podSelector": {},
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": "fd00:ec2::23/128"}}], "ports": [{"port": 80}]}],
    },
)

CASES: list[tuple[str, list[dict[str, Any]], Endpoint, Endpoint, int, str, bool]] = [
    # The example: ingress to role=db on TCP 6379 from the three peers, egress to 10.0.0.0/24:5978.
    ("example: frontend pod in default", [EXAMPLE], FRONTEND, DB, 6379, "TCP", True),
    ("example: any pod of project=myproject", [EXAMPLE], MYPROJECT, DB, 6379, "TCP", True),
    ("example: 172.17.0.0-172.17.0.255", [EXAMPLE], "172.17.0.255", DB, 6379, "TCP", True),
    ("example: except 172.17.1.0/24", [EXAMPLE], "172.17.1.9", DB, 6379, "TCP", False),
    ("example: 172.17.2.0-172.17.255.255", [EXAMPLE], "172.17.2.0", DB, 6379, "TCP", True),
    ("example: outside the block", [EXAMPLE], "172.18.0.1", DB, 6379, "TCP", False),
    ("example: another port", [EXAMPLE], FRONTEND, DB, 6380, "TCP", False),
    ("example: another protocol", [EXAMPLE], FRONTEND, DB, 6379, "UDP", False),
    ("example: other pod of default", [EXAMPLE], WEB, DB, 6379, "TCP", False),
    (
        "example: podSelector is the policy's namespace",
        [EXAMPLE],
        FRONTEND_ELSEWHERE,
        DB,
        6379,
        "TCP",
        False,
    ),
    ("example: egress to 10.0.0.0/24 on 5978", [EXAMPLE], DB, "10.0.0.7", 5978, "TCP", True),
    ("example: egress elsewhere", [EXAMPLE], DB, "10.0.1.7", 5978, "TCP", False),
    ("example: egress on another port", [EXAMPLE], DB, "10.0.0.7", 5979, "TCP", False),
    ("example: an unselected pod is not isolated", [EXAMPLE], "192.0.2.1", WEB, 1, "TCP", True),
    ("example: nor for egress", [EXAMPLE], WEB, "192.0.2.1", 1, "UDP", True),
    # namespaceSelector and podSelector: one element is AND, two elements are OR.
    ("one element: client in alice's namespace", [ONE_ELEMENT], ALICE_CLIENT, DB, 1, "TCP", True),
    (
        "one element: client in the local namespace",
        [ONE_ELEMENT],
        LOCAL_CLIENT,
        DB,
        1,
        "TCP",
        False,
    ),
    ("one element: other pod in alice's", [ONE_ELEMENT], ALICE_OTHER, DB, 1, "TCP", False),
    ("two elements: local client", [TWO_ELEMENTS], LOCAL_CLIENT, DB, 1, "TCP", True),
    ("two elements: any pod in alice's", [TWO_ELEMENTS], ALICE_OTHER, DB, 1, "TCP", True),
    ("two elements: client in bob's", [TWO_ELEMENTS], BOB_CLIENT, DB, 1, "TCP", False),
    # Default policies.
    ("default deny ingress", [DENY_INGRESS], FRONTEND, DB, 6379, "TCP", False),
    ("default deny ingress: addresses too", [DENY_INGRESS], "10.0.0.1", DB, 6379, "TCP", False),
    ("default deny ingress: egress unaffected", [DENY_INGRESS], DB, "10.9.9.9", 1, "TCP", True),
    ("allow all ingress", [ALLOW_INGRESS], "198.51.100.1", DB, 9, "UDP", True),
    ("allow all ingress beats a deny", [DENY_INGRESS, ALLOW_INGRESS], FRONTEND, DB, 1, "TCP", True),
    ("default deny egress", [DENY_EGRESS], DB, "10.0.0.7", 5978, "TCP", False),
    ("default deny egress: ingress unaffected", [DENY_EGRESS], "10.0.0.1", DB, 1, "TCP", True),
    ("allow all egress", [DENY_EGRESS, ALLOW_EGRESS], DB, "198.51.100.1", 1, "TCP", True),
    ("default deny all: ingress", [DENY_ALL], FRONTEND, "10.0.0.1", 1, "TCP", False),
    ("default deny all: egress", [DENY_ALL], DB, "10.0.0.1", 1, "TCP", False),
    # A pod-to-pod connection needs the source's egress and the destination's ingress.
    (
        "both ends: destination's ingress denies",
        [DENY_INGRESS, ALLOW_EGRESS],
        WEB,
        DB,
        1,
        "TCP",
        False,
    ),
    ("both ends: source's egress denies", [DENY_EGRESS, ALLOW_INGRESS], WEB, DB, 1, "TCP", False),
    ("both ends: both allow", [ALLOW_EGRESS, ALLOW_INGRESS], WEB, DB, 1, "TCP", True),
    # endPort: 32000..32768 inclusive, TCP only.
    ("endPort: first", [MULTI_PORT], DB, "10.0.0.7", 32000, "TCP", True),
    ("endPort: last", [MULTI_PORT], DB, "10.0.0.7", 32768, "TCP", True),
    ("endPort: past the end", [MULTI_PORT], DB, "10.0.0.7", 32769, "TCP", False),
    ("endPort: before the start", [MULTI_PORT], DB, "10.0.0.7", 31999, "TCP", False),
    ("endPort: protocol", [MULTI_PORT], DB, "10.0.0.7", 32000, "UDP", False),
    # Namespaces by label (matchExpressions In) and by name (the API server's label).
    ("namespaces by label: frontend", [BY_LABEL], MYAPP, IN_FRONTEND, 1, "TCP", True),
    ("namespaces by label: other", [BY_LABEL], MYAPP, IN_OTHER, 1, "TCP", False),
    ("namespace by name: ops", [BY_NAME], Pod(namespace="ops"), DB, 1, "TCP", True),
    ("namespace by name: another", [BY_NAME], Pod(namespace="dev"), DB, 1, "TCP", False),
    # policyTypes absent: Ingress always, Egress when there are egress rules.
    (
        "no policyTypes, ingress rules: egress free",
        [INGRESS_RULES_ONLY],
        DB,
        "1.2.3.4",
        1,
        "TCP",
        True,
    ),
    (
        "no policyTypes, ingress rules: ingress isolated",
        [INGRESS_RULES_ONLY],
        "1.2.3.4",
        DB,
        1,
        "TCP",
        False,
    ),
    (
        "no policyTypes, egress rules: egress isolated",
        [EGRESS_RULES],
        DB,
        "1.2.3.4",
        1,
        "TCP",
        False,
    ),
    ("no policyTypes, egress rules: to the block", [EGRESS_RULES], DB, "10.0.0.9", 7, "UDP", True),
    # A named port is the destination pod's container port of that name.
    ("named port: its number", [NAMED_PORT], "10.1.1.1", DB_WITH_PORT, 8000, "TCP", True),
    ("named port: another number", [NAMED_PORT], "10.1.1.1", DB_WITH_PORT, 8001, "TCP", False),
    ("named port: a pod without it", [NAMED_PORT], "10.1.1.1", DB, 8000, "TCP", False),
    # IPv6 blocks, and the loopback no policy can block.
    ("IPv6 block", [IPV6], DB, "fd00:ec2::23", 80, "TCP", True),
    ("IPv6 block: another address", [IPV6], DB, "fd00:ec2::24", 80, "TCP", False),
    ("IPv6 block: not an IPv4 address", [IPV6], DB, "169.254.170.23", 80, "TCP", False),
    ("loopback", [DENY_ALL], DB, "127.0.0.1", 5555, "TCP", True),
]


@pytest.mark.parametrize(
    ("source", "destination", "port", "protocol", "expected", "policies"),
    [(c[2], c[3], c[4], c[5], c[6], c[1]) for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_the_documented_verdict(
    source: Endpoint,
    destination: Endpoint,
    port: int,
    protocol: Any,
    expected: bool,
    policies: list[dict[str, Any]],
) -> None:
    verdict = connection_allowed(
        source=source, destination=destination, port=port, protocol=protocol, policies=policies
    )
    assert verdict.allowed is expected, verdict.why


def test_a_denial_names_the_isolating_policies_and_the_connection() -> None:
    verdict = connection_allowed(source=DB, destination="10.0.1.7", port=5978, policies=[EXAMPLE])
    assert verdict.why == (
        "egress of default/db: isolated by test-network-policy, and no rule admits TCP 5978 "
        "to 10.0.1.7"
    )
    allowed = connection_allowed(source=FRONTEND, destination=DB, port=6379, policies=[EXAMPLE])
    assert allowed.why == (
        "no policy isolates default/role=frontend for egress: unrestricted; "
        "ingress of default/db: test-network-policy ingress[0] admits it"
    )


def test_policies_of_another_namespace_do_not_apply() -> None:
    elsewhere = policy("deny", {"podSelector": {}, "policyTypes": ["Ingress"]}, namespace="x")
    assert connection_allowed(
        source="10.0.0.1", destination=DB, port=1, policies=[elsewhere]
    ).allowed


def test_policy_types_default() -> None:
    assert policy_types({"ingress": []}) == ("Ingress",)
    assert policy_types({"egress": [{}]}) == ("Ingress", "Egress")
    assert policy_types({"egress": [], "policyTypes": ["Egress"]}) == ("Egress",)


def test_selectors_follow_kubernetes_label_semantics() -> None:
    labels = {"tier": "db", "env": "prod"}
    assert selector_matches({}, labels)
    assert selector_matches(
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, labels
    )
    assert selector_matches(
        {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, labels
    )
    assert not selector_matches(
        {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}, labels
    )
    assert selector_matches({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, labels)
    assert not selector_matches(
        {
            "matchLabels": {"tier": "db"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}],
        },
        labels,
    )
    with pytest.raises(ValueError, match="unknown label selector operator 'Gt'"):
        selector_matches({"matchExpressions": [{"key": "env", "operator": "Gt"}]}, labels)


def test_ip_block_except_of_the_other_family_is_ignored() -> None:
    block = {"cidr": "0.0.0.0/0", "except": ["::/0", "169.254.0.0/16"]}
    assert ip_block_matches(block, "203.0.113.1")
    assert not ip_block_matches(block, "169.254.170.23")
    assert not ip_block_matches(block, "2001:db8::1")


def test_malformed_input_is_refused() -> None:
    unnamespaced = {"metadata": {"name": "p"}, "spec": {"podSelector": {}}}
    with pytest.raises(ValueError, match=r"NetworkPolicy 'p' has no metadata\.namespace"):
        connection_allowed(source="10.0.0.1", destination=DB, port=1, policies=[unnamespaced])
    with pytest.raises(ValueError, match="a connection needs a pod at one end"):
        connection_allowed(source="10.0.0.1", destination="10.0.0.2", port=1, policies=[])
    empty_peer = policy("p", {"podSelector": {}, "ingress": [{"from": [{}]}]})
    with pytest.raises(ValueError, match="names no ipBlock nor selector"):
        connection_allowed(source=FRONTEND, destination=DB, port=1, policies=[empty_peer])
