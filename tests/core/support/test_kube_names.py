"""Kubernetes name rules in one place (core/support/kube_names.py), table-driven, and the
command-line checks that use them (a CLI --namespace once let 'a..b'-style subdomains through)."""

from __future__ import annotations

import pytest

from mlcc_constructs.cli._inputs import dns_problems
from mlcc_constructs.core.serving.prepare.names import name_problems, namespace_problems
from mlcc_constructs.core.support.kube_names import is_label, is_rfc1035_label, is_subdomain

#  name, DNS-1123 label, RFC 1035 label, DNS-1123 subdomain
NAMES = [
    ("a", True, True, True),
    ("llama-vllm", True, True, True),
    ("0abc", True, False, True),
    ("a" * 63, True, True, True),
    ("a" * 64, False, False, True),
    ("a.b", False, False, True),
    ("a..b", False, False, False),
    ("a.-b", False, False, False),
    ("a-.b", False, False, False),
    (".a", False, False, False),
    ("a.", False, False, False),
    ("-a", False, False, False),
    ("a-", False, False, False),
    ("A", False, False, False),
    ("a_b", False, False, False),
    ("", False, False, False),
    (".".join(["a" * 63] * 4), False, False, False),  # 255 characters
    (".".join(["a" * 63] * 3 + ["a" * 61]), False, False, True),  # 253
]


@pytest.mark.parametrize(("name", "label", "rfc1035", "subdomain"), NAMES)
def test_name_rules(name: str, label: bool, rfc1035: bool, subdomain: bool) -> None:
    assert (is_label(name), is_rfc1035_label(name), is_subdomain(name)) == (
        label,
        rfc1035,
        subdomain,
    )


@pytest.mark.parametrize(("name", "label", "rfc1035", "subdomain"), NAMES)
def test_the_checks_follow_the_rules(
    name: str, label: bool, rfc1035: bool, subdomain: bool
) -> None:
    assert (not dns_problems("--namespace", name, label=True)) == label
    assert (not dns_problems("--name", name, label=False)) == subdomain
    assert (not namespace_problems(name)) == label
    if name:  # an empty base name has its own message
        assert (not name_problems(name)) == rfc1035
