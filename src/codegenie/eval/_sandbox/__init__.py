"""Where rubric runs happen: sandbox providers, an allow-listed environment, per-run limits.

A small, replaceable layer under the one rubric runner, behind one
interface, :class:`Sandbox`: a provider (``bwrap``, bubblewrap with a
seccomp filter and cgroups; ``none``, a plain subprocess with rlimits) is
chosen once per command by name (:func:`choose_sandbox`, from its
registry); for each run the runner asks it to :meth:`Sandbox.prepare` the
run a spec describes, starts ``run.argv(command)`` with ``run.env`` in
``run.cwd`` (passing ``run.pass_fds``) however it supervises processes,
and asks the prepared run what it used (:meth:`PreparedRun.usage`) and
whether it exceeded a limit (:meth:`PreparedRun.verdict_of_limits`) once
the process is reaped. A batch of runs asks the provider for its way of
making them (:meth:`Sandbox.runs`): under bubblewrap, warm workers
(:mod:`codegenie.eval._sandbox.warm`) where they fit and can start, else
plainly. What a contained run sees is one value, its
:class:`~codegenie.eval._sandbox.plan.Confinement`, which both ways
render. Nothing outside this package branches on a provider's name or on
the way a run is made. ADR-0004 says why bubblewrap, and what each part
contains.

The names below are imported on first use: :mod:`codegenie.eval.cases`
reads the limits' defaults from :mod:`codegenie.eval._sandbox.limits`
without paying for the rest of the sandbox (``subprocess``, the cgroup
code) in every command that reads a case.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codegenie.eval._sandbox.bwrap import Bubblewrap, bubblewrap, clear_bubblewrap_cache
    from codegenie.eval._sandbox.bwrap_run import bwrap_args
    from codegenie.eval._sandbox.confinement import confinement
    from codegenie.eval._sandbox.env import sandbox_environment
    from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, Breach, LimitName, Limits
    from codegenie.eval._sandbox.plan import Confinement
    from codegenie.eval._sandbox.policy import Interpreter, SandboxMode, SandboxPolicy
    from codegenie.eval._sandbox.preparation import Enforcement, PreparedRun, Usage, prepare
    from codegenie.eval._sandbox.provider import Sandbox, choose_sandbox
    from codegenie.eval.errors import SandboxUnavailable

__all__ = (
    "DEFAULT_LIMITS",
    "Breach",
    "Bubblewrap",
    "Confinement",
    "Enforcement",
    "Interpreter",
    "LimitName",
    "Limits",
    "PreparedRun",
    "Sandbox",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "Usage",
    "bubblewrap",
    "bwrap_args",
    "choose_sandbox",
    "clear_bubblewrap_cache",
    "confinement",
    "prepare",
    "sandbox_environment",
)

# Where each name of __all__ lives.
_HOME = {
    "Bubblewrap": "bwrap",
    "bubblewrap": "bwrap",
    "clear_bubblewrap_cache": "bwrap",
    "sandbox_environment": "env",
    "DEFAULT_LIMITS": "limits",
    "Breach": "limits",
    "LimitName": "limits",
    "Limits": "limits",
    "Interpreter": "policy",
    "SandboxMode": "policy",
    "SandboxPolicy": "policy",
    "bwrap_args": "bwrap_run",
    "confinement": "confinement",
    "Confinement": "plan",
    "Enforcement": "preparation",
    "PreparedRun": "preparation",
    "Usage": "preparation",
    "prepare": "preparation",
    "Sandbox": "provider",
    "choose_sandbox": "provider",
}


def __getattr__(name: str) -> Any:
    if name == "SandboxUnavailable":
        from codegenie.eval.errors import SandboxUnavailable  # noqa: PLC0415 - a lazy re-export

        return SandboxUnavailable
    home = _HOME.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    # Deferred on purpose: the module docstring says why.
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
