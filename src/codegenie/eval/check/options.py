"""What a ``check`` run is asked to do: one frozen :class:`CheckOptions` value.

``run_check`` takes one value instead of a dozen keywords: the import
settings every check uses (``jobs``, ``timeout``), what it looks at
(``shard``, ``slugs``), what it reports (``select``, ``ignore``), and, only
when rubrics run (``check --rubrics``), a :class:`RubricChecks` saying where
they run, how many times and whether stored results answer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, final

from codegenie.eval.check.exploit_choice import EVERY_EXPLOIT, ExploitSelection

if TYPE_CHECKING:
    from codegenie.eval._exec import Executor
    from codegenie.eval.rubrics import Sandbox

__all__ = ("DEFAULT_TIMEOUT", "CheckOptions", "RubricChecks", "Shard")

#: How long one registration may take to import, in seconds, when not told.
DEFAULT_TIMEOUT: Final = 60.0


@final
@dataclass(frozen=True, slots=True)
class Shard:
    """Slice ``index`` (1-based) of ``count``: a stable share of the slugs.

    A slug belongs to the slice its SHA-256 picks, so the assignment does not
    depend on the manifest's order, the machine or the Python version.
    Diagnostics that belong to no slug go to slice 1.
    """

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            msg = f"shard {self.index}/{self.count}: need 1 <= K <= N"
            raise ValueError(msg)

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Parse ``K/N``; raise ``ValueError`` when it is not one."""
        index, sep, count = text.partition("/")
        if not sep or not index.isdigit() or not count.isdigit():
            msg = f"shard must look like K/N (e.g. 1/4), not {text!r}"
            raise ValueError(msg)
        return cls(int(index), int(count))

    def __contains__(self, slug: object) -> bool:
        if self.count == 1:
            return True
        if not isinstance(slug, str):
            return self.index == 1
        digest = hashlib.sha256(slug.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


@final
@dataclass(frozen=True, slots=True)
class RubricChecks:
    """How ``check --rubrics`` runs every case's rubric on ``expected/`` and ``input/``.

    ``sandbox``: a :class:`~codegenie.eval.rubrics.Sandbox`, or a
    ``--sandbox`` word (``SandboxUnavailable`` is raised before anything
    runs when bubblewrap cannot start); each side runs ``repeat`` times (a
    case whose runs disagree is ``case-flaky``); with ``reuse``, a side
    whose rubric, case and candidate are unchanged is answered from the
    store of results. A task class that declares an environment has its
    rubric run in it: built first, before any rubric runs (``on_build`` is
    told of each build, in one line), or with ``build`` false refused
    (``EnvironmentNotBuilt``). ``executor`` makes the runs
    (:mod:`codegenie.eval._exec`; ``None``: the local executor).
    ``exploits`` chooses the exploits of the cheat run
    (:mod:`codegenie.eval.check.cheat`; by default every one; none with
    ``ExploitSelection(select=())``).
    """

    sandbox: Sandbox | str = "auto"
    repeat: int = 1
    reuse: bool = True
    build: bool = True
    on_build: Callable[[str], None] | None = None
    executor: Executor | None = None
    exploits: ExploitSelection = EVERY_EXPLOIT


@final
@dataclass(frozen=True, slots=True)
class CheckOptions:
    """Everything a ``check`` run is asked to do (the defaults: check everything, report all).

    ``jobs`` slugs are imported at once (``None``: the number of CPUs), each
    within ``timeout`` seconds; ``shard`` keeps a stable slice of the slugs;
    ``slugs`` restricts the check to those task classes (``None``: every
    one); only the diagnostics whose code is in ``select`` (``None``: every
    code) and not in ``ignore`` are reported. ``rubrics`` runs every case's
    rubric too (``None``: no rubric runs).
    """

    jobs: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    shard: Shard | None = None
    slugs: Collection[str] | None = None
    select: Collection[str] | None = None
    ignore: Collection[str] = ()
    rubrics: RubricChecks | None = None
