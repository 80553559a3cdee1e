"""codegenie-eval: a manifest-first registry and loader for task classes.

``load_task_class`` lives in :mod:`codegenie.eval.loader`; the errors in
:mod:`codegenie.eval.errors`.
"""

from __future__ import annotations

from codegenie.eval.errors import EvalError
from codegenie.eval.manifest import BenchManifest, ManifestEntry
from codegenie.eval.models import TaskClass
from codegenie.eval.registry import TaskClassRegistry, default_registry, register_task_class

__all__ = (
    "BenchManifest",
    "EvalError",
    "ManifestEntry",
    "TaskClass",
    "TaskClassRegistry",
    "default_registry",
    "register_task_class",
)
