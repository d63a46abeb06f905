"""Regenerate the deployment spec's JSON schema and CLI flag table from the dataclasses
(``make regen``): ``mlcc_constructs/data/deployment-spec.schema.json`` and
``mlcc_constructs/data/spec-flags.json``. ``--check`` exits 1 when a committed file is stale."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mlcc_constructs.core.serving.spec.schema_gen import flags_document, spec_fields, spec_schema

DATA = Path(__file__).resolve().parent.parent / "mlcc_constructs" / "data"


def generated() -> dict[Path, str]:
    """Each generated file -> its text."""
    return {
        DATA / "deployment-spec.schema.json": json.dumps(spec_schema(), indent=2) + "\n",
        DATA / "spec-flags.json": json.dumps(flags_document(list(spec_fields())), indent=2) + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say whether files are stale")
    args = parser.parse_args(argv)
    stale = [p for p, text in generated().items() if not p.exists() or p.read_text() != text]
    if args.check:
        for path in stale:
            print(f"stale: {path} (run python tools/spec_schema.py)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(generated()[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
