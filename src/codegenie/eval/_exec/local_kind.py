"""``--executor local``, registered: this machine's threads (the default executor).

Declared apart from :mod:`codegenie.eval._exec.local`, which imports the
runner, so that the command line lists the executor without importing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from codegenie.eval._exec import ExecutorKind, register_executor

if TYPE_CHECKING:
    from codegenie.eval._exec import Executor

__all__ = ("LOCAL",)


def _make(options: Mapping[str, object]) -> Executor:
    """Return a new local executor; it takes no options."""
    del options
    from codegenie.eval._exec.local import LocalExecutor  # noqa: PLC0415 - start-up: only a batch pays for the runner

    return LocalExecutor()


#: The local executor's kind.
LOCAL: Final = register_executor(
    ExecutorKind("local", "this machine's threads; the default", _make)
)
