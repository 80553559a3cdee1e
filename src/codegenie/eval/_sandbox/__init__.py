"""The rubric sandbox: bubblewrap, an allow-listed environment, and per-run limits.

A small, replaceable layer under the one rubric runner: the runner builds a
:class:`SandboxPolicy` per run, calls :func:`prepare`, starts
``run.argv(command)`` with ``run.env`` in ``run.cwd`` however it supervises
processes, and asks :meth:`PreparedRun.verdict_of_limits` and
:meth:`PreparedRun.usage` once the process is reaped. ADR-0004 says why
bubblewrap, and what each part contains.
"""

from __future__ import annotations

from codegenie.eval._sandbox.bwrap import Bubblewrap, bubblewrap, clear_bubblewrap_cache
from codegenie.eval._sandbox.env import sandbox_environment
from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, Breach, LimitName, Limits
from codegenie.eval._sandbox.policy import Interpreter, SandboxMode, SandboxPolicy, bwrap_args
from codegenie.eval._sandbox.prepare import Enforcement, PreparedRun, Usage, prepare
from codegenie.eval.errors import SandboxUnavailable

__all__ = (
    "DEFAULT_LIMITS",
    "Breach",
    "Bubblewrap",
    "Enforcement",
    "Interpreter",
    "LimitName",
    "Limits",
    "PreparedRun",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "Usage",
    "bubblewrap",
    "bwrap_args",
    "clear_bubblewrap_cache",
    "prepare",
    "sandbox_environment",
)
