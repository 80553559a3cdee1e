"""``codegenie-bench show SLUG``: resolve one task class and print it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import Command, Output, load_manifest

if TYPE_CHECKING:
    from pathlib import Path

    from codegenie.eval.manifest import BenchManifest
    from codegenie.eval.models import TaskClass

__all__ = ("COMMAND", "describe", "root_for")


def root_for(manifest: BenchManifest, slug: str) -> Path:
    """Return the root to load ``slug`` from: its declared one.

    An undeclared slug is refused by the loader (with suggestions) before it
    looks at the root, so any existing directory will do.
    """
    return manifest.root_dir(slug) if slug in manifest else manifest.directory


def describe(task_class: TaskClass) -> str:
    """Return ``show``'s text: one ``key: value`` line per field, paths as shown, values escaped."""
    from codegenie.eval.problems import display_path  # noqa: PLC0415

    document = task_class.to_json()
    for key in ("source", "rubric", "cases"):
        if isinstance(document.get(key), str):
            document[key] = display_path(document[key])
    width = max(len(key) for key in document) + 1
    return "\n".join(
        f"{key + ':':<{width}} {escape_control(str(value))}" for key, value in document.items()
    )


def run(args: argparse.Namespace, out: Output) -> int:
    """Import the slug's registration (through ``load_task_class``) and print its task class."""
    from codegenie.eval.loader import load_task_class  # noqa: PLC0415
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415

    manifest = load_manifest(args, out)
    out.slug = args.slug
    task_class = load_task_class(
        args.slug, root_for(manifest, args.slug), registry=TaskClassRegistry(), manifest=manifest
    )
    out.result(task_class.to_json(), describe(task_class))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the slug argument."""
    parser.add_argument("slug", help="the task class, e.g. vuln-remediation")


COMMAND = Command(
    name="show",
    summary="Resolve one task class (import its registration) and print it.",
    examples="""\
examples:
  codegenie-bench show vuln-remediation
  codegenie-bench show vuln-remediation --format json
  codegenie-bench show vuln-remediation -v     the registration's traceback, if it raises
""",
    run=run,
    configure=configure,
    imports_registrations=True,
)
