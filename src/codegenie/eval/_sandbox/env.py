"""The environment of a sandboxed run: an allow-list, never the harness's environment.

Under ``bwrap`` the run sees only what is listed here — so no
``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, proxy setting, ``PYTHONPATH`` of
the harness's or anything else the harness was started with. Under ``none``
it sees the harness's environment unchanged but for ``TMPDIR`` (as rubrics
have always been run) and the rubric kit first on ``PYTHONPATH``: that mode
does not contain anything, the environment included.

Either way ``PYTHONPATH`` starts with the rubric kit's directory
(:data:`~codegenie.eval._sandbox.policy.RUBRIC_KIT`), so every rubric can
``import codegenie_rubric`` whatever interpreter runs it; a warm worker is
started with the same environment, so its forks have it on ``sys.path``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from codegenie.eval._sandbox.policy import RUBRIC_KIT, SandboxPolicy

__all__ = ("PASSED_THROUGH", "sandbox_environment")

#: Variables taken from the harness's environment when set: the locale and
#: the time zone, which change how text and times are printed, not what is
#: reachable. Every ``LC_*`` variable is passed too.
PASSED_THROUGH: Final = ("LANG", "LANGUAGE", "TZ")

# Longer values are not locale names; a variable that large is not passed.
_VALUE_LIMIT: Final = 256


def sandbox_environment(
    policy: SandboxPolicy, parent: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Return the environment to start ``policy``'s run with, from ``parent`` (``os.environ``).

    Under ``bwrap``: ``PATH`` (the interpreter's ``bin`` directory, then
    the system's), ``HOME`` and ``TMPDIR`` inside the run's directory,
    ``PYTHONDONTWRITEBYTECODE=1`` (so a Python the rubric starts does not
    try to write ``__pycache__`` into the read-only task-class directory),
    ``PYTHONPATH`` the rubric kit's directory (:data:`RUBRIC_KIT`), and the
    locale and time zone (:data:`PASSED_THROUGH`, ``LC_*``). Nothing else.
    Under ``none``: ``parent`` with ``TMPDIR`` set and the kit's directory
    put before ``parent``'s ``PYTHONPATH``.
    """
    source = os.environ if parent is None else parent
    kit = str(RUBRIC_KIT)
    if policy.mode == "none":
        path = source.get("PYTHONPATH")
        python_path = f"{kit}{os.pathsep}{path}" if path else kit
        return {**source, "TMPDIR": str(policy.tmpdir), "PYTHONPATH": python_path}
    bin_dir = os.path.dirname(str(policy.interpreter.executable))
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(policy.home),
        "TMPDIR": str(policy.tmpdir),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": kit,
    }
    for name, value in source.items():
        wanted = name in PASSED_THROUGH or name.startswith("LC_")
        if wanted and len(value) <= _VALUE_LIMIT and "\0" not in value:
            env[name] = value
    return env
