"""``python -m mlcc_constructs.cli``: the ``mlcc`` command."""

from mlcc_constructs.cli import run

run()
