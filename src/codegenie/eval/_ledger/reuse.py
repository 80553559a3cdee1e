"""Reusing rubric results: a run whose inputs have not changed is not made again.

:class:`Ledger` is what ``grade`` and ``check --rubrics`` hold while they
run: it keys each run (:func:`codegenie.eval._ledger.key.run_key`), answers
from the store when every input is as it was, and stores what a finished run
gave. Only conclusive outcomes are stored — runs that all ``passed`` or all
``failed`` — so a flaky case (runs that disagree), an error or a timeout is
made again every time, and a result is served only for at least as many
agreeing runs as are asked for (``check --repeat 5`` re-runs what was stored
from one run).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final, final

from pydantic import ValidationError

from codegenie.eval._ledger.key import run_key, task_class_digest, tree_digest
from codegenie.eval._ledger.store import ResultStore
from codegenie.eval._sandbox.limits import LIMIT_NAMES
from codegenie.eval.rubrics import RubricResult, RubricRun, Sandbox

__all__ = ("Ledger",)

_CONCLUSIVE: Final = frozenset({"passed", "failed"})


@final
class Ledger:
    """Stored rubric results, for one command. ``reused`` counts the runs answered from it.

    Opened disabled (``--no-cache``, or no usable store), it keys nothing,
    answers nothing and stores nothing.
    """

    def __init__(self, store: ResultStore | None, sandbox: Sandbox) -> None:
        self._store = store
        self._sandbox = sandbox.mode
        self._task_classes: dict[tuple[str, str], str | None] = {}
        # The last case hashed: the two sides of a case are keyed one after the other.
        self._case: tuple[str, str | None] = ("", None)
        #: Runs answered from the store.
        self.reused = 0

    @classmethod
    def open(cls, *, enabled: bool, sandbox: Sandbox) -> Ledger:
        """Return the ledger of this user's store (disabled when ``enabled`` is false)."""
        return cls(ResultStore.open() if enabled else None, sandbox)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def enabled(self) -> bool:
        """Whether results are looked up and stored."""
        return self._store is not None

    def key(self, run: RubricRun) -> str | None:
        """Return the key of ``run``, or ``None`` when it cannot have one (or the ledger is off).

        The task class's directory is hashed once per command; a candidate
        inside the case directory (``expected/``, ``input/``) is covered by
        the case's digest and named by its place only.
        """
        if self._store is None:
            return None
        case = run.case
        task_class_dir = os.path.dirname(os.path.abspath(run.rubric))
        cases_dir = os.path.dirname(os.fspath(case.directory))
        memo = (task_class_dir, cases_dir)
        if memo not in self._task_classes:
            self._task_classes[memo] = task_class_digest(task_class_dir, cases_dir)
        task_class = self._task_classes[memo]
        directory = os.fspath(case.directory)
        if self._case[0] != directory:
            self._case = (directory, tree_digest(directory))
        case_digest = self._case[1]
        candidate = os.path.abspath(run.candidate)
        inside = os.path.dirname(candidate) == os.path.abspath(case.directory)
        candidate_digest = (
            f"case:{os.path.basename(candidate)}" if inside else tree_digest(candidate)
        )
        if task_class is None or case_digest is None or candidate_digest is None:
            return None
        run_limits = case.limits
        limits: dict[str, object] = {
            "timeout": case.timeout,
            **{name: run_limits.value(name) for name in LIMIT_NAMES},
            "rubric": os.path.basename(run.rubric),
            "case-id": case.id,
        }
        return run_key(
            task_class_dir=task_class,
            case_dir=case_digest,
            candidate=candidate_digest,
            limits=limits,
            sandbox=self._sandbox,
        )

    def lookup(self, key: str | None, *, runs: int = 1) -> list[RubricResult] | None:
        """Return ``runs`` stored results of ``key``, all agreeing; ``None`` for a miss."""
        if self._store is None or key is None:
            return None
        stored = self._store.get(key)
        if stored is None:
            return None
        try:
            results = [RubricResult.model_validate(item) for item in stored.get("runs", ())]
        except (ValidationError, TypeError, AttributeError):
            return None
        if len(results) < runs or not _agree(results):
            return None
        self.reused += runs
        return results[:runs]

    def record(self, key: str | None, results: Sequence[RubricResult]) -> None:
        """Store ``results`` (every run of one key) when they are conclusive and agree."""
        if self._store is None or key is None or not results or not _agree(results):
            return
        document: dict[str, Any] = {"runs": [result.model_dump(mode="json") for result in results]}
        self._store.put(key, document)

    def close(self) -> None:
        """Close the store (pruning it once, if this command wrote to it)."""
        if self._store is not None:
            self._store.close()


def _agree(results: Sequence[RubricResult]) -> bool:
    """Whether every result is the same conclusive verdict (all passed, or all failed)."""
    statuses = {result.status for result in results}
    return len(statuses) == 1 and statuses <= _CONCLUSIVE
