"""Where a run's command runs: a root, and what is mounted on it.

A rubric run is a command (:class:`codegenie.eval._command.RubricCommand`)
in an environment. The environment is a :class:`RunEnvironment`: the root
the run sees as ``/`` (today always the host's own, which the sandbox shows
read-only and in part) and what is mounted on it: the interpreter
``{python}`` names (the harness's own, or a task class's uv environment,
whose prefixes the sandbox binds read-only). A root of another kind (a root
file system a task class declares) is one more value of :attr:`RunEnvironment.root`,
and callers that build or read an environment do not change for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._sandbox.policy import Interpreter

__all__ = ("HOST_ROOT", "RunEnvironment")

#: The root of a run that declares none: the host's own ``/``.
HOST_ROOT: Final = "/"


@final
@dataclass(frozen=True, slots=True)
class RunEnvironment:
    """A run's environment: its ``root``, and the ``interpreter`` mounted on it.

    ``interpreter`` is what ``{python}`` runs (its version and packages are
    part of the run's key, where it lies is not); ``root`` the root the run
    sees (:data:`HOST_ROOT`). ``declared``: the declaration of the task
    class's environment when ``interpreter`` is that environment's, what
    another machine builds it from; not part of the key, which the
    interpreter's identity (the environment's digest) covers.
    """

    interpreter: Interpreter
    declared: EnvironmentSpec | None = None
    root: str = HOST_ROOT

    @classmethod
    def host(
        cls, interpreter: Interpreter | None = None, declared: EnvironmentSpec | None = None
    ) -> RunEnvironment:
        """Return the host's root with ``interpreter`` (by default the running one) on it."""
        return cls(Interpreter.current() if interpreter is None else interpreter, declared)

    def keyed(self) -> dict[str, str]:
        """Return what of this environment a run's key covers: the root, Python and packages."""
        return {
            "root": self.root,
            "python": self.interpreter.version,
            "packages": self.interpreter.packages,
        }
