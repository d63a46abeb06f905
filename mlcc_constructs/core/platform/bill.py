"""A bill of hourly prices, as plain data: the items something runs (:class:`BillItem`: what,
its kind, how many), each priced from the pinned table (:func:`price_bill`) into a
:class:`PriceReport`, shown as JSON (:meth:`PriceReport.to_json`) or as a short text table
(:func:`format_report`, byte-stable).

Rules: a count may be a range (an autoscaled deployment: ``min..max`` replicas, ``0..max`` when
it scales to zero), and so is every sum that includes it. An item whose price is not on record
is named with the reason and left out of the totals, never guessed: the totals say they cover
the priced items only. 30 days are 720 hours (:data:`~mlcc_constructs.core.platform.prices`'
``HOURS_PER_30_DAYS``), stated in every report. Usage-billed items (data processed, LCUs,
samples, storage) are named, not priced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from mlcc_constructs.core.platform.prices import (
    KIND_LABELS,
    WHERE,
    Price,
    PriceKind,
    PriceTable,
    price_table,
)

HOURS_PER_30_DAYS = 720
"""The hours a 30-day figure multiplies the hourly one by."""
CENT = Decimal("0.01")
_HOURLY = Decimal("0.0001")


@dataclass(frozen=True, kw_only=True)
class BillItem:
    """Something billed by the hour, before pricing.

    Fields:

    ``kind``: What it is (:data:`~mlcc_constructs.core.platform.prices.KINDS`).
    ``item``: Its key in the price table: an EC2 name (``g5.xlarge``), a HyperPod ``ml.`` name,
        or the fee's name (``standard-support``, ``nat-gateway``, ``application``).
    ``owner``: Whose it is, for grouping lines: ``cluster``, ``hyperpod cluster`` or a
        deployment's ``namespace/name``.
    ``low``/``high``: How many, at least and at most (equal unless autoscaled).
    ``note``: How the count was made (``2 replicas x 2 nodes``), shown beside the line.
    """

    kind: PriceKind
    item: str
    owner: str
    low: int
    high: int
    note: str = ""

    def __post_init__(self) -> None:
        if not 0 <= self.low <= self.high:
            raise ValueError(f"a bill count runs from low to high: {self.low}..{self.high}")

    @property
    def what(self) -> str:
        """The line's name: the kind, and the item when it names an instance type."""
        label = KIND_LABELS[self.kind]
        instance = self.kind in ("ec2_instance", "hyperpod_instance", "auto_mode_fee")
        return f"{label} {self.item}" if instance else label


@dataclass(frozen=True, kw_only=True)
class BillLine:
    """A priced :class:`BillItem`: ``price`` from the table, or ``unpriced`` (the reason)."""

    item: BillItem
    price: Price | None
    unpriced: str | None

    @property
    def per_hour(self) -> tuple[Decimal, Decimal] | None:
        """USD per hour at the low and the high count (``None``: unpriced)."""
        if self.price is None:
            return None
        unit = self.price.usd_per_hour
        return unit * self.item.low, unit * self.item.high


@dataclass(frozen=True, kw_only=True)
class PriceReport:
    """What a set of items costs per hour and per 30 days in ``region``.

    Fields:

    ``region``: The region priced (``None``: unknown, nothing priced).
    ``lines``: Every item priced or not, in the order given.
    ``notes``: What the caller says about its items (what runs elsewhere, ...).
    ``usage_billed``/``not_counted``: From the price table: named, not priced.
    ``checked``: The oldest and newest dates of the table's prices (see :attr:`dates`).
    """

    region: str | None
    lines: tuple[BillLine, ...]
    notes: tuple[str, ...]
    usage_billed: tuple[str, ...]
    not_counted: tuple[str, ...]
    checked: tuple[str, str]

    @property
    def dates(self) -> tuple[str, str]:
        """The oldest and newest check dates of the prices this report uses (the table's when
        it uses none)."""
        used = sorted(line.price.checked for line in self.lines if line.price is not None)
        return (used[0], used[-1]) if used else self.checked

    @property
    def per_hour(self) -> tuple[Decimal, Decimal]:
        """The priced lines' total per hour, low and high."""
        priced = [line.per_hour for line in self.lines if line.per_hour is not None]
        return sum((p[0] for p in priced), Decimal(0)), sum((p[1] for p in priced), Decimal(0))

    @property
    def per_30_days(self) -> tuple[Decimal, Decimal]:
        """:attr:`per_hour` x :data:`HOURS_PER_30_DAYS`, in cents."""
        low, high = self.per_hour
        return _cents(low * HOURS_PER_30_DAYS), _cents(high * HOURS_PER_30_DAYS)

    @property
    def unpriced(self) -> tuple[str, ...]:
        """Each unpriced item named with its count, owner and the reason."""
        return tuple(
            f"{line.item.what} x {_span(line.item.low, line.item.high)} ({line.item.owner}): "
            f"{line.unpriced}"
            for line in self.lines
            if line.unpriced is not None
        )

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (amounts as numbers: hourly exact, 30 days in cents)."""
        return {
            "region": self.region,
            "currency": "USD",
            "hours_per_30_days": HOURS_PER_30_DAYS,
            "prices_file": WHERE,
            "prices_checked": {"oldest": self.dates[0], "newest": self.dates[1]},
            "lines": [_line_json(line) for line in self.lines],
            "usd_per_hour": _range_json(self.per_hour),
            "usd_per_30_days": _range_json(self.per_30_days),
            "totals_cover": "priced lines only" if self.unpriced else "every line",
            "unpriced": list(self.unpriced),
            "notes": list(self.notes),
            "usage_billed": list(self.usage_billed),
            "not_counted": list(self.not_counted),
        }


def price_bill(
    items: Sequence[BillItem],
    *,
    region: str | None,
    notes: Sequence[str] = (),
    table: PriceTable | None = None,
) -> PriceReport:
    """Price ``items`` in ``region`` from ``table`` (default: the pinned ``prices.json``)."""
    table = table or price_table()
    lines = []
    for item in items:
        found = table.lookup(item.kind, item.item, region)
        priced = isinstance(found, Price)
        lines.append(
            BillLine(
                item=item,
                price=found if isinstance(found, Price) else None,
                unpriced=None if priced else str(found),
            )
        )
    return PriceReport(
        region=region,
        lines=tuple(lines),
        notes=tuple(notes),
        usage_billed=table.usage_billed,
        not_counted=table.not_counted,
        checked=table.checked,
    )


def format_report(report: PriceReport, *, title: str = "Price", footnotes: bool = True) -> str:
    """``report`` as a text table: a header (region, the 720-hour month, the table's dates),
    one row per line (owner and item, count, USD/h each, USD/h, USD/30 days), the totals,
    then the unpriced items and notes, and (``footnotes``) the usage-billed and uncounted
    items (:func:`format_footnotes`). Byte-stable."""
    header = (
        f"{title}: {report.region or 'region unknown'}, on-demand list prices in USD from "
        f"{WHERE} (checked {_span_text(*report.dates)}); 30 days = "
        f"{HOURS_PER_30_DAYS} h"
    )
    rows = [("item", "count", "USD/h each", "USD/h", "USD/30 days")]
    for line in report.lines:
        hourly = line.per_hour
        rows.append(
            (
                f"{line.item.owner}: {line.item.what}"
                + (f" ({line.item.note})" if line.item.note else ""),
                _span(line.item.low, line.item.high),
                "unpriced" if line.price is None else _plain(line.price.usd_per_hour),
                "-" if hourly is None else _money(hourly, _HOURLY),
                "-" if hourly is None else _money(_month(hourly), CENT),
            )
        )
    total = "total" + (" (priced lines only)" if report.unpriced else "")
    rows.append((total, "", "", _money(report.per_hour, _HOURLY), _money(report.per_30_days, CENT)))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [header]
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)]
        lines.append(("  " + "  ".join(cells)).rstrip())
    reasons: dict[str, list[str]] = {}  # each reason once, with the items it covers
    for line in report.lines:
        if line.unpriced is not None:
            reasons.setdefault(line.unpriced, []).append(
                f"{line.item.what} x {_span(line.item.low, line.item.high)} ({line.item.owner})"
            )
    if reasons:
        lines.append("  unpriced (named, never guessed):")
        for reason, named in reasons.items():
            lines.append(f"    - {reason}:")
            lines += [f"        {name}" for name in named]
    lines += _listed((("notes", report.notes),))
    return "\n".join(lines) + "\n" + (format_footnotes(report) if footnotes else "")


def format_footnotes(report: PriceReport) -> str:
    """The usage-billed and the uncounted items of ``report``'s price table, as text."""
    listed = _listed(
        (
            ("usage-billed, not priced", report.usage_billed),
            ("not counted", report.not_counted),
        )
    )
    return "".join(line + "\n" for line in listed)


def _listed(sections: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    lines: list[str] = []
    for heading, entries in sections:
        if entries:
            lines.append(f"  {heading}:")
            lines += [f"    - {entry}" for entry in entries]
    return lines


def _line_json(line: BillLine) -> dict[str, Any]:
    item, price, hourly = line.item, line.price, line.per_hour
    return {
        "owner": item.owner,
        "what": item.what,
        "kind": item.kind,
        "item": item.item,
        "count": {"min": item.low, "max": item.high},
        "note": item.note or None,
        "usd_per_hour_each": None if price is None else float(price.usd_per_hour),
        "usd_per_hour": None if hourly is None else _range_json(hourly),
        "usd_per_30_days": None if hourly is None else _range_json(_month(hourly)),
        "source": None if price is None else {"url": price.source.url, "what": price.source.what},
        "checked": None if price is None else price.checked,
        "unpriced": line.unpriced,
    }


def _month(hourly: tuple[Decimal, Decimal]) -> tuple[Decimal, Decimal]:
    return _cents(hourly[0] * HOURS_PER_30_DAYS), _cents(hourly[1] * HOURS_PER_30_DAYS)


def _cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _range_json(values: tuple[Decimal, Decimal]) -> dict[str, float]:
    return {"min": float(values[0]), "max": float(values[1])}


def _span(low: int, high: int) -> str:
    return _span_text(str(low), str(high))


def _span_text(low: str, high: str) -> str:
    return low if low == high else f"{low}..{high}"


def _plain(amount: Decimal) -> str:
    """A unit price as its source gives it (``1.006``, ``0.0225``), at least two decimals."""
    text = format(amount.normalize(), "f")
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


def _money(values: tuple[Decimal, Decimal], step: Decimal) -> str:
    low, high = (v.quantize(step, rounding=ROUND_HALF_UP) for v in values)
    return f"{low:,}" if low == high else f"{low:,}..{high:,}"
