"""Locate the data folders the package ships (stdlib only: the wrapper uses this too).

In a wheel, ``engines/``, ``targets/`` and ``stacks/buckets.json`` are inside the package
(``mlcc_constructs/engines``...); in a source checkout they sit at the repository root.
Either way they are found relative to this file, never to the working directory.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent
_CHECKOUT = _PACKAGE.parent


def shipped_path(relative: str) -> Path:
    """Path of a shipped file or folder such as ``"engines"`` or ``"stacks/buckets.json"``."""
    packaged = _PACKAGE / relative
    if packaged.exists():
        return packaged
    return _CHECKOUT / relative


def data_path(name: str) -> Path:
    """Path of a file in ``mlcc_constructs/data``."""
    return _PACKAGE / "data" / name
