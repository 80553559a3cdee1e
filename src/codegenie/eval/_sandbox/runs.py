"""How a sandbox makes its runs: by a warm worker where one fits and can start, else plainly.

A :class:`Runs` is a provider's strategy for a batch of runs
(:meth:`codegenie.eval._sandbox.provider.Sandbox.runs`): the runner asks it
where a run's directory goes (:meth:`Runs.place`), then to make the run
(:meth:`Runs.make`), and never knows which way it was made. Under
bubblewrap a batch's runs are made by warm workers
(:mod:`codegenie.eval._sandbox.warm`): a fork of a warm interpreter each,
in the same confinement as a plain run; where no worker can start, or
``CODEGENIE_WARM_WORKERS=0`` asks for it, each run is started plainly (a
bubblewrap and an interpreter each) by the runner's own ``plain`` starter.
Whether a run may go warm at all is decided in one place, :func:`warm_fits`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Final, Protocol, TypeVar, final

from codegenie.eval._process.output import Bounds
from codegenie.eval._process.supervisor import Ending, Flag, NotStarted
from codegenie.eval._sandbox.bwrap import Bubblewrap
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval._sandbox.preparation import PreparedRun
from codegenie.eval._sandbox.warm.worker import WarmWorker, WarmWorkers

__all__ = ("Runs", "Spec", "warm_fits")

_T = TypeVar("_T")
#: The variable that, set to ``0``, makes every run the plain way (for comparing the two,
#: and as a way out).
WARM_VARIABLE: Final = "CODEGENIE_WARM_WORKERS"


class _Tree(Protocol):
    @property
    def path(self) -> str: ...


class Spec(Protocol):
    """What the sandbox reads of a run spec (``codegenie.eval._run.spec.RunSpec`` is one).

    A protocol, so that the sandbox needs nothing above it: the task
    class's directory, the cases directory hidden in it, the limits and the
    interpreter.
    """

    @property
    def task_class(self) -> _Tree: ...
    @property
    def cases(self) -> str: ...
    @property
    def limits(self) -> Limits: ...
    @property
    def interpreter(self) -> Interpreter: ...


class _Preparer(Protocol):
    def __call__(self, spec: Spec, run_dir: Path, *, warm: bool = False) -> PreparedRun: ...


def warm_fits(bwrap: Bubblewrap | None, *, python: bool = True) -> bool:
    """Whether runs may be made by warm workers: contained, a Python rubric, not refused.

    Only under bubblewrap (a worker is a bubblewrap sandbox), only for a
    rubric that is a Python program (a worker is a warm interpreter that
    runs it as ``python RUBRIC`` would), and not where
    ``CODEGENIE_WARM_WORKERS=0``.
    """
    return bwrap is not None and python and os.environ.get(WARM_VARIABLE, "1") != "0"


@final
class Runs:
    """A batch's way of making runs in one sandbox; :meth:`close` ends its warm workers.

    Made by :meth:`Sandbox.runs <codegenie.eval._sandbox.provider.Sandbox.runs>`.
    """

    def __init__(self, prepare: _Preparer, workers: WarmWorkers | None) -> None:
        self._prepare = prepare
        self._workers = workers

    def place(self, spec: Spec, run: Hashable = None, *, python: bool = True) -> Place:
        """Return where the run ``spec`` says is made: a warm worker's place, or a plain one.

        ``run`` says what the run runs (its rubric, case and candidate: no
        worker makes the same twice); ``python`` whether the rubric is a
        Python program. Starts the calling thread's worker where it has
        none for this kind of run.
        """
        if self._workers is None or not python:
            return Place(None)
        worker = self._workers.worker(
            spec.interpreter, Path(spec.task_class.path), (Path(spec.cases),), run=run
        )
        return Place(worker)

    def make(  # noqa: PLR0917 - a run's every part, as the runner has them
        self,
        place: Place,
        spec: Spec,
        run_dir: Path,
        command: list[str],
        limit: float,
        cancel: Flag | None,
        *,
        output: tuple[Bounds, Bounds],
        plain: Callable[[PreparedRun], Ending],
        judge: Callable[[Ending, PreparedRun], _T],
    ) -> _T:
        """Make the run in ``run_dir`` (in ``place``, its copies made); return what ``judge`` says.

        By the place's warm worker, ``output`` the bounds of its stdout and
        stderr, killed at ``limit`` seconds or once ``cancel`` is set; else,
        or where that worker cannot set up a first run here (then no worker
        is used from now on), prepared plainly and started by ``plain``.
        ``judge`` reads the ending and the prepared run before it is closed.
        Raises ``NotStarted`` when the run could not be started.
        """
        worker = place.worker
        if worker is not None:
            try:
                with self._prepare(spec, run_dir, warm=True) as prepared:
                    stdout, stderr = output
                    ending = worker.run(
                        prepared, command, limit, cancel=cancel, stdout=stdout, stderr=stderr
                    )
                    return judge(ending, prepared)
            except NotStarted as exc:
                if not worker.broken or worker.succeeded or self._workers is None:
                    raise
                # The worker could not set up a first run here: the plain way, from now on.
                self._workers.give_up(exc.reason)
        with self._prepare(spec, run_dir) as prepared:
            return judge(plain(prepared), prepared)

    @property
    def unavailable(self) -> str | None:
        """Why runs that would be warm are made plainly (no worker can start here), or ``None``."""
        return None if self._workers is None else self._workers.unavailable

    def close(self) -> None:
        """End the warm workers and remove their directories (idempotent)."""
        if self._workers is not None:
            self._workers.close()


@final
class Place:
    """Where a run is made: ``worker``, a warm worker, or ``None`` (a plain run)."""

    __slots__ = ("worker",)

    def __init__(self, worker: WarmWorker | None) -> None:
        self.worker: Final = worker

    @property
    def directory(self) -> str | None:
        """The directory the run's own directory must be made in, or ``None`` (anywhere)."""
        return None if self.worker is None else str(self.worker.directory)
