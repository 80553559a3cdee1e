"""What one rubric run is, as one frozen value: the run spec, and the key derived from it.

A :class:`RunSpec` says everything a run depends on: the rubric, the trees
it reads — the task class's directory (``cases/`` left out), the case, the
candidate, each by path and, once read (:meth:`RunSpec.read`), by digest —,
the command that runs it and the environment it runs in (a root and the
interpreter on it: its version and what its site-packages hold), the
limits and timeout, and the sandbox provider's policy. Nothing
else decides what a run is: the runner executes a spec
(:func:`codegenie.eval.rubrics.execute`), the validation ledger stores
results under :meth:`RunSpec.key`, which reads the spec and nothing else,
and a spec pickles without any bench code (it holds paths, digests and
numbers, not the task class's case model), so it can be handed to another
process or machine.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from codegenie.eval._command import RubricCommand
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._run.digest import task_class_digest, tree_digest
from codegenie.eval._run.environment import RunEnvironment
from codegenie.eval._sandbox.limits import LIMIT_NAMES, Limits
from codegenie.eval._sandbox.packages import UNKEYED
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval._version import __version__

if TYPE_CHECKING:
    from codegenie.eval.cases import Case

__all__ = ("LEFT_OUT_OF_CASE", "Digests", "RunSpec", "TreeRef")

#: What a run's ``CASE_DIR`` leaves out of the case: its reference (``expected/``, the
#: bench's answer key, there only for a task class that declares ``reads_expected``) and
#: its own cheating candidates (``exploits/``, which ``check --rubrics`` runs).
LEFT_OUT_OF_CASE: Final = frozenset({"expected", "exploits"})

# 6: CASE_DIR leaves the case's expected/ (and exploits/) out, unless the task class reads the
# reference (``reads_expected``, in the key); 5: a run is a command in an environment: the command's
# words (a task class may declare its own) and the environment's root joined the key, so that a
# changed command re-runs; 4: the copies carry only what the key covers (fixed modes and times), and
# the key the name the candidate's copy keeps; 3: the interpreter's packages and the sandbox's
# policy revision joined it (2 was the sandbox of the seccomp filter, 1 the sandbox before it).
_FORMAT: Final = "codegenie-eval run key 6"


@final
@dataclass(frozen=True, slots=True)
class TreeRef:
    """A tree a run reads: its ``path``, and once read its ``digest``.

    ``digest`` is ``None`` before :meth:`RunSpec.read`, and after it when the
    tree cannot be read whole (beyond the walk's bounds): such a run has no
    key. A candidate that lies in its case's directory (``expected/``,
    ``input/``, as ``check --rubrics`` runs them) is covered by the case's
    digest: its own is ``"case:<name>"``.
    """

    path: str
    digest: str | None = None


@final
@dataclass(frozen=True, slots=True)
class RunSpec:
    """One rubric run: what it reads, what runs it, within what bounds, in which sandbox.

    ``rubric`` is the rubric file (in ``task_class``'s directory);
    ``cases`` the task class's cases directory, left out of
    ``task_class``'s digest and hidden from the run; ``case_id`` and
    ``case`` the case; ``candidate`` the tree graded; ``command`` the
    rubric's command, its placeholders unreplaced (the run's copies are
    made where it runs); ``environment`` what it runs in: the root and the
    Python ``{python}`` names (:attr:`interpreter`), with the declaration
    of the task class's environment when it is that environment's;
    ``limits`` and ``timeout`` (seconds) its bounds; ``sandbox`` the
    provider's policy (``"bwrap/2"``); ``warm``: ``False`` when the task
    class asks for an interpreter of the run's own
    (``register_task_class(..., warm=False)``), never a warm worker's fork;
    ``reads_expected``: ``True`` when the task class's rubric reads the
    case's reference (``register_task_class(..., reads_expected=True)``),
    the only runs whose ``CASE_DIR`` holds ``expected/``
    (:data:`LEFT_OUT_OF_CASE` says what every other run's leaves out).
    Make one with :meth:`of`. Paths are absolute.
    """

    rubric: str
    task_class: TreeRef
    cases: str
    case_id: str
    case: TreeRef
    candidate: TreeRef
    command: RubricCommand
    environment: RunEnvironment
    limits: Limits
    timeout: float
    sandbox: str
    warm: bool = True
    reads_expected: bool = False

    @classmethod
    def of(
        cls,
        rubric: Path | str,
        case: Case,
        candidate: Path | str,
        *,
        sandbox: str,
        timeout: float | None = None,
        interpreter: Interpreter | None = None,
        environment: EnvironmentSpec | None = None,
        command: RubricCommand | None = None,
        warm: bool = True,
        reads_expected: bool = False,
    ) -> RunSpec:
        """Return the spec of running ``rubric`` on ``candidate`` for ``case`` (not yet read).

        ``timeout`` defaults to the case's; ``interpreter`` to the running
        one, on the host's root; ``environment`` is the declaration of the
        task class's environment when ``interpreter`` is its; ``command``
        defaults to the rubric protocol's (``{python} {rubric} {case}
        {candidate}``); ``sandbox`` is the provider's policy
        (:attr:`codegenie.eval._sandbox.provider.Sandbox.policy`).
        """
        rubric_file = os.path.abspath(rubric)
        return cls(
            rubric=rubric_file,
            task_class=TreeRef(os.path.dirname(rubric_file)),
            cases=os.path.dirname(os.path.abspath(case.directory)),
            case_id=case.id,
            case=TreeRef(os.path.abspath(case.directory)),
            candidate=TreeRef(os.path.abspath(candidate)),
            command=RubricCommand() if command is None else command,
            environment=RunEnvironment.host(interpreter, environment),
            limits=case.limits,
            timeout=case.timeout if timeout is None else timeout,
            sandbox=sandbox,
            warm=warm,
            reads_expected=reads_expected,
        )

    def read(self, digests: Digests | None = None) -> RunSpec:
        """Return this spec with the digest of each of its trees (``digests`` remembers them)."""
        memo = Digests() if digests is None else digests
        candidate = self.candidate.path
        if os.path.dirname(candidate) == self.case.path:
            candidate_digest: str | None = f"case:{os.path.basename(candidate)}"
        else:
            candidate_digest = tree_digest(candidate)
        task_class = memo.task_class(self.task_class.path, self.cases)
        return replace(
            self,
            task_class=TreeRef(self.task_class.path, task_class),
            case=TreeRef(self.case.path, memo.case(self.case.path)),
            candidate=TreeRef(candidate, candidate_digest),
        )

    @property
    def interpreter(self) -> Interpreter:
        """The Python that ``{python}`` names: the environment's."""
        return self.environment.interpreter

    @property
    def left_out_of_case(self) -> frozenset[str]:
        """The names of the case's top-level entries its ``CASE_DIR`` copy leaves out."""
        if self.reads_expected:
            return LEFT_OUT_OF_CASE - {"expected"}
        return LEFT_OUT_OF_CASE

    @property
    def candidate_name(self) -> str:
        """The name of the candidate's copy (``CANDIDATE_DIR``'s last part): its directory's."""
        return os.path.basename(self.candidate.path) or "candidate"

    def with_candidate_digest(self, digest: str | None) -> RunSpec:
        """Return this spec with its candidate's ``digest`` (read elsewhere), no other tree read."""
        return replace(self, candidate=TreeRef(self.candidate.path, digest))

    def key(self) -> str | None:
        """Return the key of this run, from the spec alone; ``None`` unless every tree has a digest.

        Covered: the package's version, the rubric's name, the digests of the
        three trees, the case's id, the name the candidate's copy keeps (its
        directory's), the command's words, the environment's root and its
        interpreter's version and packages, every limit
        and the timeout, and the sandbox's policy (``None`` also when the
        packages have no digest: an editable source beyond its bounds), and
        whether the run must end as the interpreter ends (``warm=False``:
        in the key only then, so that the keys of every other run stay as
        they were), and whether ``CASE_DIR`` holds the case's reference
        (``reads_expected``). The
        copies a run reads
        carry nothing the digests do not cover
        (:mod:`codegenie.eval._run.digest`). Not covered: the rest of the
        paths (the same trees elsewhere are the same run), and files outside
        the task class that a rubric reads.
        """
        document = self.key_document()
        if document is None:
            return None
        encoded = json.dumps(document, sort_keys=True).encode()
        return hashlib.blake2b(encoded, digest_size=32).hexdigest()

    def key_document(self) -> dict[str, object] | None:
        """Return what :meth:`key` hashes; ``None`` when a tree or the packages have no digest."""
        trees = (self.task_class.digest, self.case.digest, self.candidate.digest)
        if any(digest is None for digest in trees) or self.interpreter.packages == UNKEYED:
            return None
        document: dict[str, object] = {
            "format": _FORMAT,
            "package": __version__,
            "rubric": os.path.basename(self.rubric),
            "task_class": self.task_class.digest,
            "case_id": self.case_id,
            "case": self.case.digest,
            "candidate": self.candidate.digest,
            "candidate_name": self.candidate_name,
            "command": list(self.command.words),
            **self.environment.keyed(),
            "limits": {name: self.limits.value(name) for name in LIMIT_NAMES},
            "timeout": self.timeout,
            "sandbox": self.sandbox,
            "reads_expected": self.reads_expected,
        }
        if not self.warm:
            document["warm"] = False
        return document


@final
class Digests:
    """The digests a command has read, so that each tree is read once: not thread-safe.

    A task class's directory is read once per command; a case's, once for
    the runs of it that come one after the other (its two sides).
    """

    def __init__(self) -> None:
        self._task_classes: dict[tuple[str, str], str | None] = {}
        self._last: tuple[str, str | None] = ("", None)

    def task_class(self, directory: str, cases: str) -> str | None:
        """Return the digest of the task class's ``directory`` without ``cases``."""
        memo = (directory, cases)
        if memo not in self._task_classes:
            self._task_classes[memo] = task_class_digest(directory, cases)
        return self._task_classes[memo]

    def case(self, path: str) -> str | None:
        """Return the digest of the case directory at ``path`` (the last one is remembered)."""
        if self._last[0] != path:
            self._last = (path, tree_digest(path))
        return self._last[1]
