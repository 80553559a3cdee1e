"""Where a grading's rubric runs happen, chosen by value: the sandbox providers and their registry.

:func:`choose_sandbox` returns the :class:`Sandbox` a word names (``auto``,
``bwrap``, ``none``), found and probed once, before anything runs (it
raises ``SandboxUnavailable`` when bubblewrap cannot start here);
:func:`named_sandbox` names one without probing, for runs another machine
makes. :func:`codegenie.eval.grading.grade` and
:func:`~codegenie.eval.grading.grade_bench` take the value (``sandbox=``).
A provider is registered once (:class:`SandboxProvider`,
:func:`register_sandbox`).
"""

from __future__ import annotations

from codegenie.eval._sandbox.provider import (
    Sandbox,
    SandboxProvider,
    choose_sandbox,
    named_sandbox,
    register_sandbox,
)

__all__ = ("Sandbox", "SandboxProvider", "choose_sandbox", "named_sandbox", "register_sandbox")
