"""Reusing rubric results: a run whose inputs have not changed is not made again.

:class:`Ledger` is what ``grade`` and ``check --rubrics`` hold while they
run: it keys each run by its spec (:meth:`codegenie.eval._run.spec.RunSpec.key`), answers
from the store when every input is as it was, and stores what a finished run
gave. Only conclusive outcomes are stored — runs that all ``passed`` or all
``failed`` — so a flaky case (runs that disagree), an error or a timeout is
made again every time, and a result is served only for at least as many
agreeing runs as are asked for (``check --repeat 5`` re-runs what was stored
from one run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, final

from pydantic import ValidationError

from codegenie.eval._ledger.store import ResultStore
from codegenie.eval._run.spec import Digests, RunSpec
from codegenie.eval.rubrics import RubricResult

__all__ = ("Ledger",)

_CONCLUSIVE: Final = frozenset({"passed", "failed"})


@final
class Ledger:
    """Stored rubric results, for one command. ``reused`` counts the runs answered from it.

    Opened disabled (``--no-cache``, or no usable store), it keys nothing,
    answers nothing and stores nothing.
    """

    def __init__(self, store: ResultStore | None) -> None:
        self._store = store
        self._digests = Digests()
        #: Runs answered from the store.
        self.reused = 0

    @classmethod
    def open(cls, *, enabled: bool) -> Ledger:
        """Return the ledger of this user's store (disabled when ``enabled`` is false)."""
        return cls(ResultStore.open() if enabled else None)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def enabled(self) -> bool:
        """Whether results are looked up and stored."""
        return self._store is not None

    def key(self, spec: RunSpec) -> str | None:
        """Return the key of the run ``spec`` says; ``None`` when it has none or the ledger is off.

        The key is the spec's (:meth:`RunSpec.key`), once its trees are read:
        the task class's directory once per command, a case once for the
        runs of it that come one after the other.
        """
        if self._store is None:
            return None
        return spec.read(self._digests).key()

    def read(self, spec: RunSpec) -> RunSpec:
        """Return ``spec`` with the digest of each of its trees, read as :meth:`key` reads them."""
        return spec.read(self._digests)

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
