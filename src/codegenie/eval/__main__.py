"""``python -m codegenie.eval``: the same as the ``codegenie-bench`` command."""

from __future__ import annotations

import sys

from codegenie.eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
