"""The command line: the only module that prints, reads ``sys.argv`` or exits.

For now one job: resolve every task class of the manifest and print it (the
``codegenie-bench`` subcommands grow from here).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codegenie.eval.errors import BenchManifestInvalid, EvalError
from codegenie.eval.loader import load_task_class
from codegenie.eval.manifest import BenchManifest
from codegenie.eval.registry import TaskClassRegistry

__all__ = ("main",)

_EXAMPLES = """\
examples:
  codegenie-bench                      resolve every task class of ./bench.toml
  codegenie-bench --manifest other/bench.toml --format json
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="codegenie-bench",
        description="Resolve every task class declared in bench.toml and print it.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        help="the bench.toml to use (default: the nearest one in . or its parents)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    return parser


def _jsonable(value: object) -> object:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


def _report(error: EvalError, fmt: str) -> int:
    if fmt == "json":
        document = {
            "error": {
                "type": type(error).__name__,
                "exit_code": error.exit_code,
                "message": str(error),
                "attributes": _jsonable(error.attributes()),
            }
        }
        print(json.dumps(document, indent=2))
    elif isinstance(error, BenchManifestInvalid):
        for problem in error.problems:
            print(f"{problem.render(error.path)}  [{error.code}]", file=sys.stderr)
        print(f"hint: {error.hint}", file=sys.stderr)
    else:
        print(f"error[{error.code}]: {error}", file=sys.stderr)
        if error.hint:
            print(f"hint: {error.hint}", file=sys.stderr)
    return error.exit_code


def _configure_logging() -> None:
    import logging  # noqa: PLC0415 - only for the level constant

    import structlog  # noqa: PLC0415 - the library never configures it; the CLI does

    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        # Looked up per logger, so a replaced sys.stderr (tests, redirection) is honoured.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    _configure_logging()
    try:
        manifest = BenchManifest.load(args.manifest) if args.manifest else BenchManifest.discover()
        registry = TaskClassRegistry()
        resolved = []
        # A registration's prints must not reach stdout, which carries results.
        with contextlib.redirect_stdout(sys.stderr):
            for slug in manifest.slugs():
                root = manifest.root_dir(slug)
                resolved.append(load_task_class(slug, root, registry=registry, manifest=manifest))
    except EvalError as error:
        return _report(error, args.format)
    if args.format == "json":
        task_classes = [
            {
                "slug": tc.name,
                "module": tc.module,
                "source": str(tc.source),
                "description": tc.description,
                "rubric": str(tc.rubric),
                "cases": str(tc.cases),
            }
            for tc in resolved
        ]
        print(json.dumps({"manifest": str(manifest.path), "task_classes": task_classes}, indent=2))
    else:
        for tc in resolved:
            print(f"{tc.name}\t{tc.module}\t{tc.source}")
    return 0
