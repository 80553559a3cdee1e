"""Where rubric runs happen: an executor receives runs and returns their results.

``grade`` and ``check --rubrics`` build their runs
(:class:`~codegenie.eval._run.spec.RunSpec`), answer from the validation
ledger what it holds, and hand the rest to an :class:`Executor`; what comes
back is judged, stored and reported the same way whichever executor made
the runs. An executor decides nothing about verdicts, limits or storage.

- :class:`~codegenie.eval._exec.local.LocalExecutor` (``--executor local``,
  the default): threads on this machine, each run in its sandbox
  (:func:`codegenie.eval.rubrics.run_rubrics`).
- :class:`~codegenie.eval._exec.on_ray.RayExecutor` (``--executor ray``):
  each run a Ray task, on whichever node of a cluster has room; the trees it
  reads travel through Ray's object store (no shared file system), and the
  node runs it with its own sandbox. Ray is an optional extra,
  ``codegenie-eval[ray]``, imported only when this executor is chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Protocol, final

if TYPE_CHECKING:
    from codegenie.eval._run.spec import RunSpec
    from codegenie.eval._sandbox.provider import Sandbox
    from codegenie.eval.rubrics import RubricResult

__all__ = ("EXECUTORS", "EXTRA", "Executor", "RayMissing", "executor_named")

#: The executors' names, as ``--executor`` and the setting ``executor`` take them.
EXECUTORS: Final = ("local", "ray")
#: How to install what the Ray executor needs.
EXTRA: Final = "pip install 'codegenie-eval[ray]'"


@final
class RayMissing(Exception):
    """``--executor ray`` where Ray is not installed: ``extra`` says what to install.

    Defined here, not beside the executor, so that a command that catches it
    does not import the Ray executor's module (nor what it imports) to run
    locally.
    """

    def __init__(self, cause: str) -> None:
        self.extra = EXTRA
        self.cause = cause
        super().__init__(f"the ray executor needs Ray, which is not installed ({cause}): {EXTRA}")


class Executor(Protocol):
    """What makes a batch of runs: ``run`` them, ``jobs`` at a time, in ``sandbox``.

    The contract of :func:`codegenie.eval.rubrics.run_rubrics`: results in
    the order of ``runs``; ``on_result(index, result)`` called in the
    calling thread as each run ends; ``KeyboardInterrupt`` (or an exception
    from ``on_result``) stops every run, started or not, and propagates once
    they are stopped. ``name`` is the executor's name (:data:`EXECUTORS`).
    An executor may hold what its batches share (a Ray instance it started):
    :meth:`close` lets it go, once the last batch is made.
    """

    name: str

    def run(
        self,
        runs: Sequence[RunSpec],
        *,
        jobs: int,
        sandbox: Sandbox,
        on_result: Callable[[int, RubricResult], None] | None = None,
    ) -> list[RubricResult]:
        """Make ``runs``; return their results, in order."""
        ...

    def close(self) -> None:
        """Let go of what the batches shared; the executor makes no batch after."""
        ...


def executor_named(name: str, *, address: str | None = None) -> Executor:
    """Return the executor ``name`` (``local`` or ``ray``); ``address``: the Ray cluster's.

    Raises ``ValueError`` for another name, and
    :class:`RayMissing` for ``ray`` where Ray is
    not installed. Nothing connects to a cluster before a batch is run.
    """
    if name == "local":
        from codegenie.eval._exec.local import LocalExecutor  # noqa: PLC0415 - start-up

        return LocalExecutor()
    if name == "ray":
        from codegenie.eval._exec.on_ray import RayExecutor  # noqa: PLC0415 - start-up

        return RayExecutor(address)
    msg = f"executor must be one of {', '.join(EXECUTORS)}, got {name!r}"
    raise ValueError(msg)
