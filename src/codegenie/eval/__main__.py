"""``codegenie-bench`` and ``python -m codegenie.eval``: the console entry point.

A plain ``list`` whose manifest is in the cache is answered here, before the
command line's parser and the package's heavier modules are imported; every
other command line goes to :func:`codegenie.eval.cli.main`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    from codegenie.eval._listing import fast_list  # noqa: PLC0415

    code = fast_list(args)
    if code is not None:
        return code
    from codegenie.eval.cli import main as full  # noqa: PLC0415

    return full(args)


if __name__ == "__main__":
    sys.exit(main())
