"""What runs in the process that imports one registration for ``check``.

:func:`probe` imports one slug's registration exactly as ``codegenie-bench
show SLUG`` would (through :func:`~codegenie.eval.loader.load_task_class`,
with a fresh registry) and observes what the import did besides: which
rubric files it read or ran (through an audit hook, so ``importlib``,
``runpy`` and ``exec(open(...).read())`` are seen as well as ``import``), and
which threads and child processes it left running. The process it runs in is
disposable: :mod:`codegenie.eval.check._worker` forks one per slug and
discards it afterwards, so nothing here is undone.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Final

from codegenie.eval._manifest.model import BenchManifest, ManifestEntry
from codegenie.eval._process import procfs
from codegenie.eval._resolve import Resolved, resolve
from codegenie.eval._tracebacks import describe_failure
from codegenie.eval.check._protocol import (
    MAX_LISTED_PROBLEMS,
    Failure,
    Parts,
    Probed,
    Raised,
    Request,
)
from codegenie.eval.errors import (
    EvalError,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
)
from codegenie.eval.registry import TaskClassRegistry

__all__ = ("probe", "request_manifest")

RUBRIC_FILE: Final = "rubric.py"
# The longest key or message of a case problem passed on: a case model's error
# message is the registration's, of any length.
_PROBLEM_TEXT_LIMIT: Final = 1000


def request_manifest(request: Request) -> BenchManifest:
    """Return a one-entry manifest for the request's slug, located at the real manifest.

    The static pass has already validated the entry; the worker needs it as a
    ``BenchManifest`` only so that the loader checks the request as it would
    for ``show``.
    """
    entry = ManifestEntry.model_construct(module=request["module"], root=request["root"])
    return BenchManifest.trusted(Path(request["manifest"]), {request["slug"]: entry})


class _RubricWatch:
    """An audit hook that records every rubric imported, opened, compiled or executed.

    ``modules`` holds the names of imported modules called ``rubric``;
    ``files`` the rubric files read or run by any route.
    """

    def __init__(self) -> None:
        self.modules: list[str] = []
        self.files: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "import":
            name = args[0]
            if isinstance(name, str) and (name == "rubric" or name.endswith(".rubric")):
                self.modules.append(name)
            return
        if event == "open":
            target = args[0]
        elif event == "exec":
            target = getattr(args[0], "co_filename", None)
        elif event == "compile":
            target = args[1]
        else:
            return
        if isinstance(target, str | bytes | os.PathLike):
            path = os.fsdecode(target)
            if os.path.basename(path) == RUBRIC_FILE:
                self.files.append(path)

    def names(self) -> list[str]:
        """Name what was loaded: each rubric module, and each rubric file no module came from.

        ``importlib.import_module`` raises no ``import`` event, so modules are
        also found from the files: only when there are any, as walking
        ``sys.modules`` in a forked child copies pages.
        """
        names = {name for name in self.modules if name in sys.modules}
        files = {os.path.realpath(path): path for path in self.files}
        if files:
            for name, module in list(sys.modules.items()):
                file = getattr(module, "__file__", None)
                if isinstance(file, str) and os.path.realpath(file) in files:
                    names.add(name)
                    del files[os.path.realpath(file)]
        return sorted(names) + sorted(files.values())


def _left_running() -> str:
    """Describe the threads and child processes still running, or return ``""``."""
    tasks = procfs.threads()
    threads: list[str] = []
    # Every Python thread is a thread of the process: with one task, there is none
    # to name (and threading's records are not touched, nor their pages copied).
    if len(tasks) != 1:
        threads = sorted(
            thread.name
            for thread in threading.enumerate()
            if thread is not threading.main_thread() and thread.is_alive()
        )
    native = len(tasks) - 1 if tasks else len(threads)
    children = sum(procfs.running(pid) for pid in procfs.children(tasks=tasks or None))
    parts = []
    if threads or native:
        count = max(native, len(threads))
        named = f" ({', '.join(threads)})" if threads else ""
        parts.append(f"{count} thread{'s' if count != 1 else ''}{named}")
    if children:
        parts.append(f"{children} child process{'es' if children != 1 else ''}")
    return " and ".join(parts)


def probe(slug: str, root: Path, manifest: BenchManifest, registry: TaskClassRegistry) -> Probed:
    """Import the registration of ``slug`` into ``registry``; return what happened, JSON-ready.

    ``root`` is the slug's root directory (``manifest.root_dir(slug)``), which
    the caller has at hand. The task class's cases are validated here (``parts``) because the
    case model is the registration's.
    """
    watch = _RubricWatch()
    sys.addaudithook(watch)
    error: Failure | None = None
    registered: tuple[str, ...] = ()
    not_registered = False
    found = None
    try:
        found = resolve(slug, manifest, registry=registry, root=root)
        registered = registry.names()
    except TaskClassNotFound as exc:
        registered = tuple(exc.available_names)
        not_registered = True
    except BaseException as exc:  # KeyboardInterrupt raised by the registration itself too
        error = _failure(exc, root)
    return {
        "registered": list(registered),
        "error": error,
        "not_registered": not_registered,
        "rubric": watch.names(),
        "left_running": _left_running(),
        "parts": None if found is None else _parts(found),
    }


def _failure(exc: BaseException, root: Path) -> Failure:
    """Describe a failed load for the parent, JSON-ready.

    A :class:`~codegenie.eval.check._protocol.Mismatch` when another file
    answered for the module; otherwise a
    :class:`~codegenie.eval.check._protocol.Raised`: what was raised, the
    deepest place under the bench root where it happened and the
    registration's traceback without the loader's frames — what ``show``
    computes from the same exception (:func:`describe_failure`).
    """
    if isinstance(exc, TaskClassModuleMismatch):
        actual = None if exc.actual_file is None else str(exc.actual_file)
        return {"kind": "mismatch", "expected": str(exc.expected_file), "actual": actual}
    found: Raised = {
        "kind": "raised",
        "type": type(exc).__name__,
        "message": "",
        "file": None,
        "line": None,
        "traceback": None,
    }
    if isinstance(exc, TaskClassRegistrationFailed):
        found |= {"type": exc.cause_type, "message": exc.cause_message}
        if exc.__cause__ is not None:
            failure = describe_failure(exc.__cause__, root)
            found |= {"file": failure.file, "line": failure.line, "traceback": failure.traceback}
    elif isinstance(exc, EvalError):
        found["message"] = str(exc)
    return found


def _parts(found: Resolved) -> Parts:
    """Describe the task class's rubric and cases, JSON-ready (the case model stays here).

    Every valid case, and the first :data:`MAX_LISTED_PROBLEMS` problems
    with a count of the rest; ``cases`` comes last (the worker passes the
    cases on one line each).
    """
    rubric = found.task_class.rubric
    scan = found.cases
    listed = scan.problems[:MAX_LISTED_PROBLEMS]
    return {
        "rubric_file": None if rubric is None else str(rubric),
        "rubric_exists": rubric is not None and os.path.isfile(rubric),
        "cases_found": scan.found,
        "case_problems": [
            {
                "file": str(problem.file),
                "line": problem.line,
                "column": problem.column,
                "key": _clip(problem.key),
                "message": _clip(problem.message),
                "code": problem.code,
                "case": problem.case,
            }
            for problem in listed
        ],
        "case_problems_unlisted": len(scan.problems) - len(listed),
        "warm": found.task_class.warm,
        "reads_expected": found.task_class.reads_expected,
        "cases": [
            {
                "id": case.id,
                "directory": str(case.directory),
                "timeout": case.timeout,
                "memory": case.limits.memory,
                "processes": case.limits.processes,
                "file_size": case.limits.file_size,
                "cpu_time": case.limits.cpu_time,
                "disk": case.limits.disk,
                "disk_files": case.limits.disk_files,
            }
            for case in scan.cases
        ],
    }


def _clip(text: str) -> str:
    return text if len(text) <= _PROBLEM_TEXT_LIMIT else text[: _PROBLEM_TEXT_LIMIT - 1] + "…"
