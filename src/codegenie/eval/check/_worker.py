"""A check worker: imports registrations one after another, each in a clean slate.

Run as ``python -m codegenie.eval.check._worker REQUEST_FD RESULT_FD`` by
:mod:`codegenie.eval.check.workers`. It reads one JSON request a line from
``REQUEST_FD`` and writes one JSON answer a line to ``RESULT_FD``; standard
input and output are not used, so nothing a registration reads or prints can
disturb the exchange. Each import gets a fresh registry, and every module it
added is removed afterwards, so slugs that share a worker never see each
other's registrations.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from codegenie.eval._imports import (
    ImportScope,
    failure_line,
    import_fresh,
    is_prefix_of,
    same_file,
    shadow_file,
)
from codegenie.eval.registry import TaskClassRegistry, registering_into

__all__ = ("check_one", "main")

MESSAGE_LIMIT = 500


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the registration called sys.exit({exc.code!r})"
    return str(exc)[:MESSAGE_LIMIT]


def _is_rubric_module(name: str, module: object) -> bool:
    file = getattr(module, "__file__", None) or ""
    return name.rsplit(".", 1)[-1] == "rubric" or Path(file).name == "rubric.py"


def check_one(request: dict[str, Any]) -> dict[str, Any]:
    """Import one registration in a clean slate and say what happened."""
    module_name: str = request["module"]
    expected = Path(request["expected_file"])
    scope = ImportScope(os.path.join(request["path_entry"], module_name.split(".", 1)[0]))
    scope.open(request["path_entry"])
    registry = TaskClassRegistry()
    error: dict[str, Any] | None = None
    with registering_into(registry) as session:
        try:
            module = import_fresh(module_name)
        except BaseException as exc:  # every way an import fails is reported
            if isinstance(exc, ModuleNotFoundError) and is_prefix_of(exc.name, module_name):
                shadow = shadow_file(module_name)
                message = f"the import system did not find {module_name} at {expected}"
                if shadow is not None:
                    message += f"; another package answered: {shadow}"
                error = {"type": "TaskClassModuleMismatch", "message": message, "line": None}
            else:
                error = {
                    "type": type(exc).__name__,
                    "message": _describe(exc),
                    "line": failure_line(exc, expected),
                }
        else:
            if not same_file(module, str(expected)):
                actual = getattr(module, "__file__", None)
                error = {
                    "type": "TaskClassModuleMismatch",
                    "message": f"{module_name} was imported from {actual}, not {expected}",
                    "line": None,
                }
    rubric = sorted(
        name for name in scope.added() if _is_rubric_module(name, sys.modules.get(name))
    )
    registered = list(session.names())
    session.rollback()
    scope.undo()
    return {"slug": request["slug"], "registered": registered, "error": error, "rubric": rubric}


def _send(stream: BinaryIO, document: dict[str, Any]) -> None:
    stream.write(json.dumps(document).encode() + b"\n")
    stream.flush()


def main(argv: list[str]) -> int:
    """Serve requests until the request stream closes."""
    requests = os.fdopen(int(argv[1]), "rb")
    results = os.fdopen(int(argv[2]), "wb")
    _send(results, {"ready": True})
    for line in requests:
        _send(results, check_one(json.loads(line)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
