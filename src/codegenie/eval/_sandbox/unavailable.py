"""The one error of the sandbox layer: no sandbox can start on this machine.

It lives here until it moves into :mod:`codegenie.eval.errors`; it follows
that module's conventions (``code``, ``exit_code``, ``fields``, ``hint``,
pickling through the named fields) and imports nothing else of the package.
"""

from __future__ import annotations

from typing import final

from codegenie.eval.errors import EvalError

__all__ = ("SandboxUnavailable",)


@final
class SandboxUnavailable(EvalError):
    """Rubrics were to run in a sandbox, and no sandbox can start here.

    Raised before any rubric runs. ``mode`` is the sandbox that was asked for
    (``"auto"`` or ``"bwrap"``); ``cause`` says in one sentence why none can
    start (with what bubblewrap said, when it said something); ``fixes`` lists
    what the user can do, most specific first, the last being to run without
    a sandbox knowingly (``--sandbox none``). Exit 4, like every environment
    that cannot do what was asked.
    """

    code = "sandbox-unavailable"
    exit_code = 4
    fields = ("mode", "cause", "fixes")

    def __init__(self, mode: str, cause: str, fixes: tuple[str, ...] = ()) -> None:
        self.mode = mode
        self.cause = cause
        self.fixes = tuple(fixes)
        super().__init__(f"cannot start the rubric sandbox (--sandbox {mode}): {cause}")

    @property
    def hint(self) -> str:
        if not self.fixes:
            return "run with --sandbox none to grade without a sandbox, knowingly"
        return "; or ".join(self.fixes)
