"""On-demand hourly prices, read from ``data/prices.json`` (its one reader, checked entry by
entry), and the lookup that says a price or why there is none.

Each price carries its region, its source and the date it was checked. A price that is not on
record is never guessed: :meth:`PriceTable.lookup` returns the reason instead (the ``why`` of
the file's ``unpriced`` entry for that item, or of the wildcard ``*`` entry of its kind and
region, else "no price on record"), and the bill names the item as unpriced. Amounts are
:class:`~decimal.Decimal`, read from the file's decimal text, so sums and the 30-day figures are
exact and byte-stable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache
from types import MappingProxyType
from typing import Any, Literal, get_args

from mlcc_constructs.core._resources import data_path
from mlcc_constructs.core.support.errors import MlccError, Problem, json_pointer

PRICES_FILE = "prices.json"
WHERE = f"mlcc_constructs/data/{PRICES_FILE}"
ANY_ITEM = "*"
"""The ``item`` of an ``unpriced`` entry that covers every item of its kind and region."""

PriceKind = Literal[
    "ec2_instance",
    "hyperpod_instance",
    "auto_mode_fee",
    "eks_cluster",
    "nat_gateway",
    "load_balancer",
    "vpc_interface_endpoint",
]
KINDS: tuple[PriceKind, ...] = get_args(PriceKind)
KIND_LABELS: Mapping[PriceKind, str] = MappingProxyType(
    {
        "ec2_instance": "EC2 instance",
        "hyperpod_instance": "HyperPod instance",
        "auto_mode_fee": "Auto Mode fee",
        "eks_cluster": "EKS cluster",
        "nat_gateway": "NAT gateway",
        "load_balancer": "load balancer",
        "vpc_interface_endpoint": "interface endpoint",
    }
)
"""How a report names each kind."""

_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_PRICE_KEYS = ("kind", "item", "region", "usd_per_hour", "source", "checked")
_UNPRICED_KEYS = ("kind", "item", "region", "why")


@dataclass(frozen=True, kw_only=True)
class Source:
    """Where prices were read: ``name`` (its key in the file), ``url`` and ``what`` it says."""

    name: str
    url: str
    what: str


@dataclass(frozen=True, kw_only=True)
class Price:
    """One on-demand hourly price (USD) of ``item`` of ``kind`` in ``region``, read from
    ``source`` and checked on ``checked`` (ISO date)."""

    kind: PriceKind
    item: str
    region: str
    usd_per_hour: Decimal
    source: Source
    checked: str


@dataclass(frozen=True, kw_only=True)
class PriceTable:
    """The content of ``prices.json``.

    Fields:

    ``prices``: (kind, item, region) → its price.
    ``unpriced``: (kind, item or ``*``, region) → why it has no price.
    ``usage_billed``: What is billed by use and so not priced per hour (named in reports).
    ``not_counted``: What the bill leaves out, named in reports.
    """

    prices: Mapping[tuple[str, str, str], Price]
    unpriced: Mapping[tuple[str, str, str], str]
    usage_billed: tuple[str, ...]
    not_counted: tuple[str, ...]

    def lookup(self, kind: PriceKind, item: str, region: str | None) -> Price | str:
        """The price of ``item`` of ``kind`` in ``region``, or why there is none (module
        doc); an unknown region (``None``) prices nothing."""
        if region is None:
            return "the region is unknown: give the deployment's region (--region)"
        found = self.prices.get((kind, item, region))
        if found is not None:
            return found
        for key in ((kind, item, region), (kind, ANY_ITEM, region)):
            if key in self.unpriced:
                return self.unpriced[key]
        return f"no price on record for {region} in {WHERE} (another region's is never used)"

    @property
    def checked(self) -> tuple[str, str]:
        """The oldest and newest dates its prices were checked."""
        dates = sorted(p.checked for p in self.prices.values())
        return dates[0], dates[-1]


@cache
def price_table() -> PriceTable:
    """The pinned prices (read and checked once per process)."""
    text = data_path(PRICES_FILE).read_text(encoding="utf-8")
    return parse_price_table(json.loads(text, parse_float=Decimal), where=WHERE)


def parse_price_table(document: Any, *, where: str = WHERE) -> PriceTable:
    """``document`` (``prices.json`` parsed with decimal floats) as a :class:`PriceTable`;
    every bad entry is one problem at its JSON pointer, all raised at once."""
    problems: list[Problem] = []
    if not isinstance(document, Mapping):
        raise MlccError(
            Problem(message="not a JSON object", where=where, value=type(document).__name__)
        )
    sources = _sources(document.get("sources"), where, problems)
    prices: dict[tuple[str, str, str], Price] = {}
    unpriced: dict[tuple[str, str, str], str] = {}
    for index, entry in enumerate(_list(document, "prices", where, problems)):
        pointer = json_pointer("prices", index)
        if _keys_problem(entry, _PRICE_KEYS, where, pointer, problems):
            continue
        key = _identity(entry, where, pointer, problems, wildcard=False)
        amount = _amount(entry["usd_per_hour"], where, pointer, problems)
        source = _source(entry["source"], sources, where, pointer, problems)
        checked = _checked(entry["checked"], where, pointer, problems)
        if key in prices:
            problems.append(_duplicate(where, pointer, key))
        elif key is not None and amount is not None and source and checked is not None:
            prices[key] = Price(
                kind=_kind(key[0]),
                item=key[1],
                region=key[2],
                usd_per_hour=amount,
                source=source,
                checked=checked,
            )
    for index, entry in enumerate(_list(document, "unpriced", where, problems)):
        pointer = json_pointer("unpriced", index)
        if _keys_problem(entry, _UNPRICED_KEYS, where, pointer, problems):
            continue
        key = _identity(entry, where, pointer, problems, wildcard=True)
        why = entry["why"]
        if not isinstance(why, str) or not why.strip():
            problems.append(
                Problem(
                    message="an unpriced item needs the reason it has no price",
                    where=where,
                    pointer=f"{pointer}/why",
                    value=why,
                    allowed="a non-empty text",
                )
            )
        elif key is not None and (key in prices or key in unpriced):
            problems.append(_duplicate(where, pointer, key))
        elif key is not None:
            unpriced[key] = why
    notes = {
        name: _texts(document, name, where, problems) for name in ("usage_billed", "not_counted")
    }
    if problems:
        raise MlccError(problems)
    return PriceTable(
        prices=MappingProxyType(prices),
        unpriced=MappingProxyType(unpriced),
        usage_billed=notes["usage_billed"],
        not_counted=notes["not_counted"],
    )


def _sources(value: Any, where: str, problems: list[Problem]) -> dict[str, Source]:
    if not isinstance(value, Mapping) or not value:
        problems.append(
            Problem(
                message="the file names no sources",
                where=where,
                pointer="/sources",
                value=value,
                allowed="an object: name → {url, what}",
            )
        )
        return {}
    sources: dict[str, Source] = {}
    for name, entry in value.items():
        pointer = json_pointer("sources", name)
        url = entry.get("url") if isinstance(entry, Mapping) else None
        what = entry.get("what") if isinstance(entry, Mapping) else None
        if not (isinstance(url, str) and url.startswith("https://") and isinstance(what, str)):
            problems.append(
                Problem(
                    message="a source is the https:// page a price was read from and what it says",
                    where=where,
                    pointer=pointer,
                    value=entry,
                    allowed='{"url": "https://...", "what": "..."}',
                )
            )
            continue
        sources[str(name)] = Source(name=str(name), url=url, what=what)
    return sources


def _list(document: Mapping[str, Any], name: str, where: str, problems: list[Problem]) -> list[Any]:
    value = document.get(name)
    if isinstance(value, list):
        return value
    problems.append(
        Problem(message=f"{name} must be a list", where=where, pointer=f"/{name}", value=value)
    )
    return []


def _texts(
    document: Mapping[str, Any], name: str, where: str, problems: list[Problem]
) -> tuple[str, ...]:
    value = document.get(name)
    if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    problems.append(
        Problem(
            message=f"{name} must be a list of texts",
            where=where,
            pointer=f"/{name}",
            value=value,
        )
    )
    return ()


def _keys_problem(
    entry: Any, keys: tuple[str, ...], where: str, pointer: str, problems: list[Problem]
) -> bool:
    """Record the problem of an entry that is not an object of exactly ``keys``."""
    if isinstance(entry, Mapping) and set(entry) == set(keys):
        return False
    found = sorted(entry) if isinstance(entry, Mapping) else type(entry).__name__
    problems.append(
        Problem(
            message="an entry has exactly these fields",
            where=where,
            pointer=pointer,
            value=found,
            allowed=", ".join(keys),
        )
    )
    return True


def _identity(
    entry: Mapping[str, Any], where: str, pointer: str, problems: list[Problem], *, wildcard: bool
) -> tuple[str, str, str] | None:
    """(kind, item, region) of an entry, or ``None`` (its problems recorded)."""
    kind, item, region = entry["kind"], entry["item"], entry["region"]
    found = len(problems)
    if kind not in KINDS:
        problems.append(
            Problem(
                message="not a price kind",
                where=where,
                pointer=f"{pointer}/kind",
                value=kind,
                allowed=", ".join(KINDS),
            )
        )
    if not isinstance(item, str) or not item or (item == ANY_ITEM and not wildcard):
        problems.append(
            Problem(
                message="not an item name",
                where=where,
                pointer=f"{pointer}/item",
                value=item,
                allowed="an instance type (its EC2 name; the ml. name for hyperpod_instance) or "
                "the fee's name" + ("" if wildcard else "; '*' (every item) only in /unpriced"),
            )
        )
    if not isinstance(region, str) or not _REGION.match(region):
        problems.append(
            Problem(
                message="not an AWS region",
                where=where,
                pointer=f"{pointer}/region",
                value=region,
                allowed="a region code such as us-east-1",
            )
        )
    return None if len(problems) > found else (str(kind), str(item), str(region))


def _kind(name: str) -> PriceKind:
    """``name``, a member of :data:`KINDS` (checked by :func:`_identity`), as a kind."""
    return next(kind for kind in KINDS if kind == name)


def _source(
    name: Any, sources: Mapping[str, Source], where: str, pointer: str, problems: list[Problem]
) -> Source | None:
    found = sources.get(name) if isinstance(name, str) else None
    if found is None and sources:  # no sources at all is its own problem
        problems.append(
            Problem(
                message="not a source of the file",
                where=where,
                pointer=f"{pointer}/source",
                value=name,
                allowed=", ".join(sorted(sources)),
                fix="name one of /sources, or add the page the price was read from there",
            )
        )
    return found


def _amount(value: Any, where: str, pointer: str, problems: list[Problem]) -> Decimal | None:
    if isinstance(value, int | Decimal) and not isinstance(value, bool) and value > 0:
        return Decimal(value)
    problems.append(
        Problem(
            message="not an hourly price",
            where=where,
            pointer=f"{pointer}/usd_per_hour",
            value=value,
            allowed="a positive number of US dollars per hour",
            fix="write the price as its source states it, or move the item to /unpriced with "
            "the reason",
        )
    )
    return None


def _checked(value: Any, where: str, pointer: str, problems: list[Problem]) -> str | None:
    if isinstance(value, str) and _DATE.match(value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    problems.append(
        Problem(
            message="not the date the price was checked",
            where=where,
            pointer=f"{pointer}/checked",
            value=value,
            allowed="an ISO date, YYYY-MM-DD",
        )
    )
    return None


def _duplicate(where: str, pointer: str, key: tuple[str, str, str]) -> Problem:
    return Problem(
        message="a second entry for the same item",
        where=where,
        pointer=pointer,
        value="/".join(key),
        fix="keep one entry per kind, item and region",
    )
