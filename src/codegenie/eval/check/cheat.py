"""The cheat run of ``check --rubrics``: each rubric proved against candidates that solve nothing.

Besides a case's ``expected/`` (which must pass) and its ``input/`` (which
must fail), ``check --rubrics`` runs each case's rubric on *exploit
candidates*: trees that solve nothing and try to be graded ``passed``
anyway (:mod:`codegenie.eval.exploits`, the catalogue built into the tool,
and the task class's own, ``cases/<id>/exploits/<name>/``). They run exactly
like the other two sides — same sandbox, executor, warm workers,
``--repeat`` and ledger — and an exploit graded ``passed`` is a finding at
the rubric: ``rubric-exploitable``, or ``answer-key-readable`` for the
answer-key family of a task class that declares ``reads_expected`` (its
rubric reads the reference, and candidate code can read it too).

Which cases an exploit runs on (:func:`plan`): an exploit whose success
depends on each case's tests (``reach="case"``: the universal value) runs on
every case it applies to; the others attack how the rubric runs candidate
code and reads its verdict, which is the same for every case of a task
class, so each runs on at least one case of each task class, the cases
spread over the exploits (``k``-th exploit on cases ``k``, ``k + M``, …, of
the cases it applies to, ``M`` the number of such exploits); the resource
exploits, whose every run costs a timeout or a memory limit, on one case of
each task class. A task class's own exploits run on their case. So a cheat
run costs about one run per case more than the universal value's, whatever
the size of the catalogue.

What runs is chosen as codes are (:class:`ExploitSelection`): selectors
``[SLUG:]WHAT``, ``WHAT`` an exploit's name, a family's, ``own`` (a task
class's own exploits) or ``*``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from codegenie.eval import codes
from codegenie.eval.check.exploit_choice import EVERY_EXPLOIT, OWN, ExploitSelection
from codegenie.eval.check.static import display_path
from codegenie.eval.codes import diagnostic
from codegenie.eval.exploits import (
    CATALOGUE,
    CATALOGUE_VERSION,
    Exploit,
    ExploitTree,
    exploit_tree,
    write_tree,
)
from codegenie.eval.rubrics import remove_tree

if TYPE_CHECKING:
    from codegenie.eval.check._sides import CaseRun
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.rubrics import RubricResult

__all__ = ("CheatRun", "CheatSummary", "exploit_diagnostics", "plan", "reading_expected")

#: The directory of a case that holds its own exploits.
OWN_DIR: Final = "exploits"
#: The family whose every run costs a limit: run on one case of each task class.
_ONCE: Final = frozenset({"resources"})
_BY_NAME: Final = {exploit.name: exploit for exploit in CATALOGUE}


@final
@dataclass(frozen=True, slots=True)
class CheatSummary:
    """What the cheat run did: the catalogue's version, the selection, runs made and passed.

    ``skipped`` counts the exploits the selection left out (per task class);
    ``reads_expected`` are the task classes whose rubric reads the
    reference (their runs' ``CASE_DIR`` holds ``expected/``).
    """

    selection: ExploitSelection = EVERY_EXPLOIT
    runs: int = 0
    passed: int = 0
    skipped: int = 0
    reads_expected: tuple[str, ...] = ()

    def sentence(self) -> str:
        """Return what the cheat run did in one line, every selection and ignore named."""
        said = (
            f"cheat run (exploit catalogue {CATALOGUE_VERSION}): {self.runs} exploit "
            f"run{'s' if self.runs != 1 else ''}, {self.passed} graded passed"
        )
        if self.selection.select is not None:
            said += f"; only {', '.join(self.selection.select) or 'none'} selected"
        if self.selection.ignore:
            said += f"; ignored: {', '.join(self.selection.ignore)}"
        if self.reads_expected:
            said += f"; reads expected/: {', '.join(self.reads_expected)}"
        return said

    def to_json(self) -> dict[str, Any]:
        """Return the ``exploits`` part of ``check --rubrics``'s JSON."""
        return {
            "catalogue": CATALOGUE_VERSION,
            **self.selection.to_json(),
            "runs": self.runs,
            "passed": self.passed,
            "skipped": self.skipped,
            "reads_expected": list(self.reads_expected),
        }


@final
@dataclass(slots=True)
class CheatRun:
    """The exploit runs of one check, and the scratch directory their trees are written in.

    A context manager: the trees are removed when it exits, whatever
    happened. Not thread-safe.
    """

    runs: list[CaseRun] = field(default_factory=list)
    skipped: int = 0
    _scratch: str | None = None

    def __enter__(self) -> CheatRun:
        return self

    def __exit__(self, *_: object) -> None:
        if self._scratch is not None:
            remove_tree(self._scratch)
            self._scratch = None

    def scratch(self) -> str:
        """Return the directory exploit trees are written in (made on first use)."""
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="codegenie-exploits-")
        return self._scratch


def plan(sides: Sequence[CaseRun], selection: ExploitSelection) -> CheatRun:
    """Return the exploit runs of the cases of ``sides`` (their ``expected`` runs), trees written.

    The caller exits the returned :class:`CheatRun` once the runs are made.
    Which exploit runs on which case: see the module's docstring.
    """
    cheat = CheatRun()
    try:
        by_slug: dict[str, list[CaseRun]] = {}
        for run in sides:
            if run.side == "expected":
                by_slug.setdefault(run.slug, []).append(run)
        for slug, runs in by_slug.items():
            runs.sort(key=lambda run: run.case_id)
            chosen = [e for e in CATALOGUE if selection.chosen(slug, e.name, e.family)]
            cheat.skipped += len(CATALOGUE) - len(chosen)
            for base, exploit, directory in _assigned(runs, chosen, cheat):
                cheat.runs.append(
                    replace(
                        base,
                        side="exploit",
                        exploit=exploit.name,
                        family=exploit.family,
                        candidate=directory,
                    )
                )
            if selection.chosen(slug, "", OWN):
                for base in runs:
                    for name, directory in _own(base):
                        cheat.runs.append(
                            replace(
                                base,
                                side="exploit",
                                exploit=f"{OWN_DIR}/{name}",
                                family=OWN,
                                candidate=directory,
                            )
                        )
    except BaseException:
        cheat.__exit__()
        raise
    return cheat


def _assigned(
    runs: Sequence[CaseRun], chosen: Sequence[Exploit], cheat: CheatRun
) -> Iterator[tuple[CaseRun, Exploit, Path]]:
    """Yield ``(case's run, exploit, its tree)`` for each exploit run of one task class."""
    spread = [e for e in chosen if e.reach != "case"]
    for exploit in chosen:
        if exploit.reach == "case":
            for run in runs:
                written = _written(run, exploit, cheat)
                if written is not None:
                    yield run, exploit, written
            continue
        offset = spread.index(exploit)
        trees = ((run, _tree_of(run, exploit)) for run in runs)
        applicable = [(run, tree) for run, tree in trees if tree is not None]
        if not applicable:
            continue
        step = len(applicable) if exploit.family in _ONCE else len(spread)
        for run, tree in applicable[offset % len(applicable) :: step]:
            yield run, exploit, _write(run, exploit, tree, cheat)


def _tree_of(run: CaseRun, exploit: Exploit) -> ExploitTree | None:
    return exploit_tree(exploit, run.directory / "expected", run.directory / "input")


def _written(run: CaseRun, exploit: Exploit, cheat: CheatRun) -> Path | None:
    tree = _tree_of(run, exploit)
    return None if tree is None else _write(run, exploit, tree, cheat)


def _write(run: CaseRun, exploit: Exploit, tree: ExploitTree, cheat: CheatRun) -> Path:
    """Write ``tree`` where the run finds it: ``<scratch>/<slug>/<exploit>/<case-id>``.

    The candidate's copy keeps the case id as its name, as a graded
    candidate's (``CANDIDATES/<case-id>``) does.
    """
    parent = os.path.join(cheat.scratch(), run.slug, exploit.name)
    os.makedirs(parent, exist_ok=True)
    target = os.path.join(parent, run.case_id)
    write_tree(tree, target)
    return Path(target)


def _own(run: CaseRun) -> Iterator[tuple[str, Path]]:
    """Yield ``(name, directory)`` of each of the case's own exploits, by name."""
    top = run.directory / OWN_DIR
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return
    for name in names:
        directory = top / name
        if not directory.is_symlink() and directory.is_dir():
            yield name, directory


def exploit_diagnostics(run: CaseRun, results: Sequence[RubricResult]) -> Iterator[Diagnostic]:
    """Yield the finding of one exploit's runs: none unless one of them was graded ``passed``."""
    passing = [result for result in results if result.status == "passed"]
    if not passing or run.exploit is None:
        return
    reason = passing[0].reason
    said = f" (the rubric said: {reason!r})" if reason else ""
    times = "" if len(results) == 1 else f" in {len(passing)} of {len(results)} runs"
    exploit = _BY_NAME.get(run.exploit)
    does = exploit.does if exploit is not None else f"the case's own exploit {run.exploit}/"
    where = display_path(run.rubric)
    name = f"case {run.case_id!r} of {run.slug!r}"
    if run.family == "answer-key" and run.reads_expected:
        yield diagnostic(
            codes.ANSWER_KEY_READABLE,
            f"the rubric declares that it reads the reference (reads_expected), and candidate "
            f"code read it too: the exploit {run.exploit!r} ({does}) passed on {name}"
            f"{times}{said}",
            where,
            slug=run.slug,
        )
        return
    hint = _as_hint(exploit.harden) if exploit is not None else codes.RUBRIC_EXPLOITABLE.hint
    yield diagnostic(
        codes.RUBRIC_EXPLOITABLE,
        f"the rubric graded the exploit {run.exploit!r} passed on {name}{times}: it {does}{said}",
        where,
        slug=run.slug,
        hint=f"{hint}; `codegenie-bench explain rubric-exploitable` says how to harden a rubric",
    )


def _as_hint(sentences: str) -> str:
    """Return an exploit's ``harden`` sentences as a hint is worded: no capital, no full stop."""
    return sentences[:1].lower() + sentences[1:].rstrip(".")


def reading_expected(runs: Collection[CaseRun]) -> tuple[str, ...]:
    """Return the slugs of ``runs`` whose task class declares ``reads_expected``, sorted."""
    return tuple(sorted({run.slug for run in runs if run.reads_expected}))
