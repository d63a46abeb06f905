"""``python -m mlcc_constructs.cli``: the ``mlcc`` command."""

import sys

from mlcc_constructs.cli import main

sys.exit(main())
