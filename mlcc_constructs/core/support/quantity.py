"""Kubernetes quantities as exact numbers, and their shortest spellings.

The CacheBackend's ``l1Capacity`` and its server's ``resources`` are quantities; admission
compares them exactly (``Fraction``), and the sidecar's ``/dev/shm`` size is spelled back.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_BINARY: dict[str, int] = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_BINARY["Ei"] = 2**60
_DECIMAL: dict[str, Fraction] = {
    suffix: Fraction(10) ** exponent
    for suffix, exponent in (
        ("n", -9),
        ("u", -6),
        ("m", -3),
        ("k", 3),
        ("M", 6),
        ("G", 9),
        ("T", 12),
        ("P", 15),
        ("E", 18),
    )
}


def parse_quantity(value: str | int) -> Fraction:
    """A Kubernetes quantity (``4Gi``, ``500M``, ``1.5e9``, ``4294967296``) as an exact number.

    Raises ``ValueError`` for anything the apiserver's quantity pattern refuses.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"not a quantity: {value!r}")
    match = _QUANTITY.match(str(value))
    if not match:
        raise ValueError(f"not a quantity: {value!r}")
    number = Fraction(match.group("number"))
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        number *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= _DECIMAL[suffix]
    elif suffix:
        number *= Fraction(10) ** int(suffix[1:])
    return -number if match.group("sign") == "-" else number


def format_quantity(amount: Fraction | int) -> str:
    """The shortest exact spelling of a byte count: ``5Gi``, ``4G``, ``4954826Ki``, ``123``."""
    value = Fraction(amount)
    if value.denominator != 1 or value < 0:
        raise ValueError(f"not a whole, non-negative byte count: {amount}")
    whole = int(value)
    candidates = [str(whole)]
    units: list[tuple[str, int]] = list(_BINARY.items())
    units += [(suffix, int(unit)) for suffix, unit in _DECIMAL.items() if unit >= 1000]
    for suffix, unit in units:
        if whole % unit == 0:
            candidates.append(f"{whole // unit}{suffix}")
    # Shortest wins; ties keep the earlier (binary) spelling.
    return min(candidates, key=len)


def gib_text(amount: Fraction) -> str:
    """``--l1-size-gb`` text: LMCache multiplies this float by 2**30."""
    gib = amount / 2**30
    if gib.denominator == 1:
        return str(int(gib))
    return repr(float(gib))


__all__ = ("format_quantity", "gib_text", "parse_quantity")
