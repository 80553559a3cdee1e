"""``codegenie-bench new SLUG``: scaffold a task class and add it to ``bench.toml``."""

from __future__ import annotations

import argparse

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import PROG, Command, Output, load_manifest

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Create ``<root>/<package>/`` and append the entry; print the files created."""
    from codegenie.eval.problems import display_path  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.scaffold import scaffold_task_class  # noqa: PLC0415 - start-up: only this command pays for it

    manifest = load_manifest(args, out)
    out.slug = args.slug
    created = scaffold_task_class(manifest, args.slug, root=args.root, description=args.description)
    document = {
        "slug": created.slug,
        "module": created.module,
        "directory": str(created.directory),
        "files": [str(f) for f in created.files],
        "manifest": str(created.manifest),
    }
    text = "\n".join(escape_control(display_path(f)) for f in created.files)
    out.result(document, text)
    out.note(
        f"added [task-classes.{created.slug}] to {display_path(created.manifest)}; "
        f"try: {PROG} show {created.slug}"
    )
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the slug, --root and --description."""
    parser.add_argument("slug", help="the new task class's slug, e.g. secret-rotation")
    parser.add_argument(
        "--root", default="bench", help="root directory, relative to bench.toml (default: bench)"
    )
    parser.add_argument("--description", help="one line saying what the task class asks for")


COMMAND = Command(
    name="new",
    summary="Scaffold bench/<package>/ for a new task class and add it to bench.toml.",
    examples="""\
examples:
  codegenie-bench new secret-rotation
  codegenie-bench new secret-rotation --root bench --description "Rotate a leaked credential."
""",
    run=run,
    configure=configure,
)
