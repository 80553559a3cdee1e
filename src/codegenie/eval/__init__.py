"""codegenie-eval: a manifest-first registry and loader for task classes.

``load_task_class`` lives in :mod:`codegenie.eval.loader`, the errors in
:mod:`codegenie.eval.errors`.

The names below are imported on first use, so that ``import codegenie.eval``
(and the command line's cheap paths, such as ``--help`` or ``list``) costs
only what it touches.
"""

from __future__ import annotations

from codegenie.eval._version import __version__ as __version__

# Not typing.TYPE_CHECKING: importing typing would cost every command line
# run, the cheapest ones included. Type checkers treat this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from codegenie.eval.errors import EvalError
    from codegenie.eval.manifest import BenchManifest, ManifestEntry
    from codegenie.eval.models import TaskClass
    from codegenie.eval.registry import TaskClassRegistry, default_registry, register_task_class
    from codegenie.eval.runner import Runner, RunPlan

__all__ = (
    "BenchManifest",
    "EvalError",
    "ManifestEntry",
    "RunPlan",
    "Runner",
    "TaskClass",
    "TaskClassRegistry",
    "default_registry",
    "register_task_class",
)

_HOMES = {
    "BenchManifest": "codegenie.eval.manifest",
    "EvalError": "codegenie.eval.errors",
    "ManifestEntry": "codegenie.eval.manifest",
    "RunPlan": "codegenie.eval.runner",
    "Runner": "codegenie.eval.runner",
    "TaskClass": "codegenie.eval.models",
    "TaskClassRegistry": "codegenie.eval.registry",
    "default_registry": "codegenie.eval.registry",
    "register_task_class": "codegenie.eval.registry",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        msg = f"module 'codegenie.eval' has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib  # noqa: PLC0415 - keeps importing the package itself cheap

    # Not cached in the module namespace: default_registry is looked up anew
    # each time, so it always is the registry module's current one.
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
