"""The local executor: runs in threads of this process, each in its sandbox, as always."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, final

from codegenie.eval.rubrics import run_rubrics

if TYPE_CHECKING:
    from codegenie.eval._run.spec import RunSpec
    from codegenie.eval._sandbox.provider import Sandbox
    from codegenie.eval.rubrics import RubricResult

__all__ = ("LocalExecutor",)


@final
class LocalExecutor:
    """``--executor local``: :func:`codegenie.eval.rubrics.run_rubrics`, ``jobs`` threads."""

    name = "local"
    runs_here = True

    def run(
        self,
        runs: Sequence[RunSpec],
        *,
        jobs: int,
        sandbox: Sandbox,
        on_result: Callable[[int, RubricResult], None] | None = None,
    ) -> list[RubricResult]:
        """Make ``runs`` here (see :class:`codegenie.eval._exec.Executor`)."""
        return run_rubrics(runs, jobs=jobs, sandbox=sandbox, on_result=on_result)

    def close(self) -> None:
        """Nothing to let go: each batch ends its threads and warm workers."""
