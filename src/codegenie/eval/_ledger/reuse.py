"""Reusing rubric results: a run whose inputs have not changed is not made again.

:class:`Ledger` is what ``grade`` and ``check --rubrics`` hold while they
run: it keys each run by its spec (:meth:`codegenie.eval._run.spec.RunSpec.key`), answers
from the store when every input is as it was, and stores what a finished run
gave. Only conclusive outcomes are stored — runs that all ``passed`` or all
``failed`` — so a flaky case (runs that disagree), an error or a timeout is
made again every time, and a result is served only for at least as many
agreeing runs as are asked for (``check --repeat 5`` re-runs what was stored
from one run).

A result stored for another interpreter is not served (its packages are in
the key), and the ledger says why: beside each result it keeps which
interpreter made it, under the run's key *without* the interpreter, and a
description of each interpreter's packages
(:mod:`codegenie.eval._sandbox.packages`). A lookup that misses where the
same run was stored for another interpreter counts as
``interpreter_changed``, with what changed in words (``ray 2.9.0 added``):
:meth:`Ledger.summary`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final, final

from pydantic import BaseModel, ConfigDict, ValidationError

from codegenie.eval._ledger.store import ResultStore
from codegenie.eval._run.spec import Digests, RunSpec
from codegenie.eval._sandbox.packages import changes
from codegenie.eval._sandbox.policy import Interpreter, installed_packages
from codegenie.eval.rubrics import RubricResult

__all__ = ("Ledger", "LedgerSummary", "described")

_CONCLUSIVE: Final = frozenset({"passed", "failed"})
# What of a run's key document names its interpreter; the rest names the run.
_INTERPRETER_FIELDS: Final = ("python", "packages")
# The most change descriptions a summary keeps.
_CHANGES_KEPT: Final = 8


@final
class LedgerSummary(BaseModel):
    """How the store answered one command: runs looked up, reused, and why others were not.

    ``looked_up`` counts the runs asked of the store, ``reused`` those it
    answered; ``interpreter_changed`` those it held only for another
    interpreter (another Python, other packages, an edited editable
    install), and ``changes`` says what changed, in words (``ray 2.9.0
    added``; the last may be ``and N more``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    looked_up: int = 0
    reused: int = 0
    interpreter_changed: int = 0
    changes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the ``ledger`` part of ``grade``'s and ``check --rubrics``'s JSON."""
        return {
            "looked_up": self.looked_up,
            "reused": self.reused,
            "interpreter_changed": self.interpreter_changed,
            "changes": list(self.changes),
        }

    def not_reused_sentence(self, noun: str = "result") -> str | None:
        """Say why results were not reused, when the interpreter is why; else ``None``.

        ``0 of 40 results reused: the interpreter's packages changed since
        they were stored (ray 2.9.0 added)``.
        """
        if not self.interpreter_changed:
            return None
        what = (
            "the interpreter changed"
            if any(change.startswith("python ") for change in self.changes)
            else "the interpreter's packages changed"
        )
        plural = noun + ("s" if self.looked_up != 1 else "")
        head = f"{self.reused} of {self.looked_up} {plural} reused"
        if self.reused + self.interpreter_changed < self.looked_up or self.reused:
            head += f"; {self.interpreter_changed} not"
        said = f" ({', '.join(self.changes)})" if self.changes else ""
        return f"{head}: {what} since they were stored{said}"


def described(interpreter: Interpreter) -> dict[str, Any]:
    """Return what ``interpreter`` is, as the ledger keeps it to say what changed.

    The running interpreter: its version and its packages' document
    (:func:`codegenie.eval._sandbox.policy.installed_packages`). Another (a
    task class's environment): its version and its packages' identity.
    """
    current = installed_packages()
    if interpreter.packages == current.digest:
        return {"python": interpreter.version, **current.parsed()}
    return {"python": interpreter.version, "environment": interpreter.packages}


def _hashed(label: str, document: dict[str, Any]) -> str:
    encoded = json.dumps([label, document], sort_keys=True).encode("utf-8", "surrogateescape")
    return hashlib.blake2b(encoded, digest_size=32).hexdigest()


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
        self._looked_up = 0
        self._interpreter_changed = 0
        self._changes: list[str] = []
        # Each key's run without its interpreter, and its interpreter: (run, interpreter).
        self._identities: dict[str, tuple[str, str]] = {}
        # What each interpreter of this command is (by its identity), and whether it is stored.
        self._interpreters: dict[str, dict[str, Any]] = {}
        self._kept: set[str] = set()

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
        return self.keyed(spec)[1]

    def keyed(self, spec: RunSpec) -> tuple[RunSpec, str | None]:
        """Return ``spec`` read (the digest of each of its trees) and its key, as :meth:`key`."""
        read = spec.read(self._digests)
        if self._store is None:
            return read, None
        document, key = read.key_document(), read.key()
        if document is None or key is None:
            return read, None
        run = {k: v for k, v in document.items() if k not in _INTERPRETER_FIELDS}
        interpreter = {k: document[k] for k in _INTERPRETER_FIELDS}
        identity = (_hashed("run", run), _hashed("interpreter", interpreter))
        self._identities[key] = identity
        if identity[1] not in self._interpreters:
            self._interpreters[identity[1]] = described(read.interpreter)
        return read, key

    def read(self, spec: RunSpec) -> RunSpec:
        """Return ``spec`` with the digest of each of its trees, read as :meth:`key` reads them."""
        return spec.read(self._digests)

    def summary(self) -> LedgerSummary | None:
        """Return how the store answered this command so far; ``None`` when it is off."""
        if self._store is None:
            return None
        return LedgerSummary(
            looked_up=self._looked_up,
            reused=self.reused,
            interpreter_changed=self._interpreter_changed,
            changes=tuple(self._changes),
        )

    def lookup(self, key: str | None, *, runs: int = 1) -> list[RubricResult] | None:
        """Return ``runs`` stored results of ``key``, all agreeing; ``None`` for a miss."""
        if self._store is None or key is None:
            return None
        self._looked_up += runs
        stored = self._store.get(key)
        results: list[RubricResult] = []
        if stored is not None:
            try:
                results = [RubricResult.model_validate(item) for item in stored.get("runs", ())]
            except (ValidationError, TypeError, AttributeError):
                results = []
        if len(results) < runs or not _agree(results):
            if stored is None:
                self._explain(key, runs)
            return None
        self.reused += runs
        return results[:runs]

    def _explain(self, key: str, runs: int) -> None:
        """Count a miss whose run was stored for another interpreter, and say what changed."""
        assert self._store is not None
        identity = self._identities.get(key)
        if identity is None:
            return
        run, interpreter = identity
        index = self._store.get(run)
        before = None if index is None else index.get("interpreter")
        if not isinstance(before, str) or before == interpreter:
            return
        self._interpreter_changed += runs
        kept = self._store.get(before)
        old = None if kept is None else kept.get("described")
        said = (
            changes(old, self._interpreters[interpreter])
            if isinstance(old, dict)
            else ["what it was is no longer known"]
        )
        for change in said:
            if change not in self._changes and len(self._changes) < _CHANGES_KEPT:
                self._changes.append(change)

    def record(self, key: str | None, results: Sequence[RubricResult]) -> None:
        """Store ``results`` (every run of one key) when they are conclusive and agree."""
        if self._store is None or key is None or not results or not _agree(results):
            return
        document: dict[str, Any] = {"runs": [result.model_dump(mode="json") for result in results]}
        self._store.put(key, document)
        identity = self._identities.get(key)
        if identity is None:
            return
        run, interpreter = identity
        self._store.put(run, {"interpreter": interpreter})
        if interpreter not in self._kept:
            self._kept.add(interpreter)
            self._store.put(interpreter, {"described": self._interpreters[interpreter]})

    def close(self) -> None:
        """Close the store (pruning it once, if this command wrote to it)."""
        if self._store is not None:
            self._store.close()


def _agree(results: Sequence[RubricResult]) -> bool:
    """Whether every result is the same conclusive verdict (all passed, or all failed)."""
    statuses = {result.status for result in results}
    return len(statuses) == 1 and statuses <= _CONCLUSIVE
