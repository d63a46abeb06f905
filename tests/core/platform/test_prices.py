"""The pinned price file (``data/prices.json``) and its one reader: every entry has a positive
price, a region, a source page and the date it was checked; every GPU type of the instance
catalog is priced or explicitly unpriced (EC2 and HyperPod, us-east-1); a lookup never guesses
(another region, another kind, a wildcard's reason); a bad entry is refused at its JSON
pointer."""

from __future__ import annotations

import copy
import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.platform.catalog import instance_names, lookup
from mlcc_constructs.core.platform.prices import (
    KINDS,
    Price,
    parse_price_table,
    price_table,
)
from mlcc_constructs.core.support.errors import MlccError

DOCUMENT = json.loads(data_path("prices.json").read_text(encoding="utf-8"), parse_float=Decimal)
GPU_TYPES = sorted(n for n in instance_names() if n.startswith("ml.") and lookup(n).gpus > 0)
DEFAULT_REASON = "no price on record for"


def test_every_entry_has_a_price_a_region_a_source_and_a_date() -> None:
    table = price_table()
    assert len(table.prices) == len(DOCUMENT["prices"]) == 28
    for price in table.prices.values():
        assert price.kind in KINDS
        assert price.usd_per_hour > 0 and isinstance(price.usd_per_hour, Decimal)
        assert price.source.url.startswith("https://") and price.source.what
        assert date.fromisoformat(price.checked) <= date.today()
    for why in table.unpriced.values():
        assert why.strip()
    assert table.checked == ("2026-02-24", "2026-10-01")
    assert "NAT gateway data processing (per GB)" in table.usage_billed
    assert "load balancer capacity units (LCU-hours, from traffic)" in table.usage_billed


def test_every_catalog_gpu_type_is_priced_or_named_unpriced_in_the_default_region() -> None:
    table = price_table()
    ec2 = {n: table.lookup("ec2_instance", lookup(n).node_name, "us-east-1") for n in GPU_TYPES}
    hyperpod = {n: table.lookup("hyperpod_instance", n, "us-east-1") for n in GPU_TYPES}
    for found in [*ec2.values(), *hyperpod.values()]:
        # Priced, or an explicit reason of the file: never the fallback for a missing entry.
        assert isinstance(found, Price) or not found.startswith(DEFAULT_REASON), found
    assert [n for n, found in ec2.items() if not isinstance(found, Price)] == ["ml.p5e.48xlarge"]
    assert [n for n, found in hyperpod.items() if isinstance(found, Price)] == ["ml.g5.8xlarge"]
    assert "Capacity Blocks" in str(ec2["ml.p5e.48xlarge"])
    assert "HyperPod's ml.* rates differ from EC2's" in str(hyperpod["ml.g5.12xlarge"])


@pytest.mark.parametrize(
    ("kind", "item", "usd"),
    [
        ("ec2_instance", "g6.xlarge", "0.8048"),
        ("ec2_instance", "g5.xlarge", "1.006"),
        ("ec2_instance", "g5.2xlarge", "1.212"),
        ("ec2_instance", "g5.12xlarge", "5.672"),
        ("ec2_instance", "p4d.24xlarge", "21.957642"),  # after the 2025 P4/P5 price reduction
        ("ec2_instance", "p5.48xlarge", "55.04"),
        ("hyperpod_instance", "ml.g5.8xlarge", "3.06"),  # not EC2's g5.8xlarge (2.448)
        ("eks_cluster", "standard-support", "0.10"),
        ("nat_gateway", "nat-gateway", "0.045"),
        ("load_balancer", "application", "0.0225"),
    ],
)
def test_the_prices_as_their_sources_state_them(kind: Any, item: str, usd: str) -> None:
    found = price_table().lookup(kind, item, "us-east-1")
    assert isinstance(found, Price)
    assert found.usd_per_hour == Decimal(usd)
    if kind == "ec2_instance" and item in ("g5.xlarge", "p4d.24xlarge", "p5.48xlarge"):
        assert usd in found.source.what  # the later readings that agree are quoted
    if kind != "ec2_instance":
        assert usd.rstrip("0") in found.source.what


def test_a_lookup_never_guesses() -> None:
    table = price_table()
    # Another region: no multiplied guess, even where us-east-1 has the item.
    assert table.lookup("ec2_instance", "g5.xlarge", "eu-west-1") == (
        "no price on record for eu-west-1 in mlcc_constructs/data/prices.json (another "
        "region's is never used)"
    )
    # HyperPod's us-west-2 entry is HyperPod's only: EC2 has nothing there.
    assert isinstance(table.lookup("hyperpod_instance", "ml.p4d.24xlarge", "us-west-2"), Price)
    assert not isinstance(table.lookup("ec2_instance", "p4d.24xlarge", "us-west-2"), Price)
    # An EC2 price is not a HyperPod price, nor an Auto Mode fee.
    assert not isinstance(table.lookup("hyperpod_instance", "ml.g5.12xlarge", "us-east-1"), Price)
    assert str(table.lookup("auto_mode_fee", "g5.xlarge", "us-east-1")).startswith(
        "EKS Auto Mode bills a management fee per instance it manages"
    )
    assert table.lookup("nat_gateway", "nat-gateway", None) == (
        "the region is unknown: give the deployment's region (--region)"
    )


def _refused(mutate: Any) -> list[str]:
    document = copy.deepcopy(DOCUMENT)
    mutate(document)
    with pytest.raises(MlccError) as caught:
        parse_price_table(document)
    return [str(p) for p in caught.value.problems]


W = "mlcc_constructs/data/prices.json"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda d: d["prices"][3].update(usd_per_hour="2.448"),
            f"{W}:/prices/3/usd_per_hour: not an hourly price (got '2.448'; allowed: a positive "
            "number of US dollars per hour; fix: write the price as its source states it, or "
            "move the item to /unpriced with the reason)",
        ),
        (
            lambda d: d["prices"][0].update(usd_per_hour=0),
            f"{W}:/prices/0/usd_per_hour: not an hourly price (got 0; allowed: a positive "
            "number of US dollars per hour; fix: write the price as its source states it, or "
            "move the item to /unpriced with the reason)",
        ),
        (
            lambda d: d["prices"][4].update(checked="2026-13-01"),
            f"{W}:/prices/4/checked: not the date the price was checked (got '2026-13-01'; "
            "allowed: an ISO date, YYYY-MM-DD)",
        ),
        (
            lambda d: d["prices"][5].update(source="nowhere"),
            f"{W}:/prices/5/source: not a source of the file (got 'nowhere'; allowed: alb-fee, "
            "ec2-price-list-2026-07-20, eks-cluster-fee, hyperpod-price-list-2026-09-16, "
            "hyperpod-price-list-2026-10-01, nat-gateway-fee; fix: name one of /sources, or add "
            "the page the price was read from there)",
        ),
        (
            lambda d: d["prices"][6].update(item="*"),
            f"{W}:/prices/6/item: not an item name (got '*'; allowed: an instance type (its EC2 "
            "name; the ml. name for hyperpod_instance) or the fee's name; '*' (every item) only "
            "in /unpriced)",
        ),
        (
            lambda d: d["prices"][7].update(kind="gpu"),
            f"{W}:/prices/7/kind: not a price kind (got 'gpu'; allowed: ec2_instance, "
            "hyperpod_instance, auto_mode_fee, eks_cluster, nat_gateway, load_balancer, "
            "vpc_interface_endpoint)",
        ),
        (
            lambda d: d["prices"][8].update(region="virginia"),
            f"{W}:/prices/8/region: not an AWS region (got 'virginia'; allowed: a region code "
            "such as us-east-1)",
        ),
        (
            lambda d: d["prices"][9].pop("checked"),
            f"{W}:/prices/9: an entry has exactly these fields (got ['item', 'kind', 'region', "
            "'source', 'usd_per_hour']; allowed: kind, item, region, usd_per_hour, source, "
            "checked)",
        ),
        (
            lambda d: d["unpriced"][0].update(item="g5.xlarge"),
            f"{W}:/unpriced/0: a second entry for the same item (got "
            "'ec2_instance/g5.xlarge/us-east-1'; fix: keep one entry per kind, item and region)",
        ),
        (
            lambda d: d["unpriced"][1].update(why=" "),
            f"{W}:/unpriced/1/why: an unpriced item needs the reason it has no price (got ' '; "
            "allowed: a non-empty text)",
        ),
        (
            lambda d: d["sources"]["alb-fee"].update(url="http://example.com"),
            f"{W}:/sources/alb-fee: a source is the https:// page a price was read from and what "
            "it says (got {'url': 'http://example.com', 'what': "
            + repr(DOCUMENT["sources"]["alb-fee"]["what"])
            + '}; allowed: {"url": "https://...", "what": "..."})',
        ),
    ],
)
def test_a_bad_entry_is_refused_at_its_pointer(mutate: Any, message: str) -> None:
    assert _refused(mutate)[0] == message


def test_every_bad_entry_is_reported_at_once() -> None:
    def mutate(document: dict[str, Any]) -> None:
        document["prices"][0]["usd_per_hour"] = -1
        document["prices"][1]["region"] = "nowhere"

    assert [p.split(": ", 1)[0] for p in _refused(mutate)] == [
        f"{W}:/prices/0/usd_per_hour",
        f"{W}:/prices/1/region",
    ]
