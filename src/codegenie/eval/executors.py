"""What makes a grading's rubric runs, chosen by value: the executors and their registry.

An executor receives a batch of runs and returns their results
(:class:`Executor`); :func:`codegenie.eval.grading.grade` and
:func:`~codegenie.eval.grading.grade_bench` take one by value
(``executor=``), and the report is the same whichever made the runs.

- :class:`LocalExecutor`: this machine's threads (the default).
- :class:`RayExecutor`: each run a Ray task on a cluster (the optional extra
  ``codegenie-eval[ray]``; imported only when this name is looked up).

A kind of executor is registered once (:class:`ExecutorKind`,
:func:`register_executor`): ``codegenie-bench --executor NAME`` then takes
it, with the command-line options it declares; :func:`get_executor` makes
one by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codegenie.eval._exec import (
    Executor,
    ExecutorKind,
    RayMissing,
    executor_kind,
    executor_kinds,
    register_executor,
)
from codegenie.eval._exec.local import LocalExecutor

if TYPE_CHECKING:
    from codegenie.eval._exec.on_ray import RayExecutor

__all__ = (
    "Executor",
    "ExecutorKind",
    "LocalExecutor",
    "RayExecutor",
    "RayMissing",
    "executor_kinds",
    "get_executor",
    "register_executor",
)


def get_executor(name: str, **options: object) -> Executor:
    """Return a new executor of the kind registered as ``name``, made with ``options``.

    ``get_executor("local")``; ``get_executor("ray", address="10.0.0.1:6379")``.
    Raises ``ValueError`` for a name no kind is registered as (or an option
    the kind refuses), and :class:`RayMissing` for ``ray`` where Ray is not
    installed. The caller closes it (:meth:`Executor.close`) once done.
    """
    return executor_kind(name).make(options)


def __getattr__(name: str) -> object:
    if name == "RayExecutor":  # Ray's module only for who asks for it
        from codegenie.eval._exec.on_ray import RayExecutor  # noqa: PLC0415 - see above

        return RayExecutor
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
