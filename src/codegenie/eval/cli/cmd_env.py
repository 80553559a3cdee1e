"""``codegenie-bench env build|list|prune``: the task classes' own environments.

``build [SLUG…]`` builds the environment of each named task class (default:
every one that declares one) that is not built yet; ``list`` shows each
declared environment, its digest, its size and whether it is built;
``prune`` removes every kept environment this manifest does not name (and
what interrupted builds left). ``grade`` and ``check --rubrics`` build
what they need themselves; this command is for doing it beforehand (a CI
step whose directory is cached, an offline machine given a wheel
directory) and for the disk.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import Command, Output, UsageError, load_manifest

if TYPE_CHECKING:
    from codegenie.eval._manifest.model import BenchManifest

__all__ = ("COMMAND",)

_USAGE = "usage: codegenie-bench env [-h] {build,list,prune} [SLUG ...]"


def run(args: argparse.Namespace, out: Output) -> int:
    """Build, list or prune the manifest's environments."""
    if args.action != "build" and args.slugs:
        raise UsageError(_USAGE, f"env {args.action} takes no SLUG")
    manifest = load_manifest(args, out)
    if args.action == "build":
        return _build(manifest, args.slugs, out)
    if args.action == "list":
        return _list(manifest, out)
    return _prune(manifest, out)


def _size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if amount < 1000 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{size} B"  # pragma: no cover - the loop returns


def _build(manifest: BenchManifest, slugs: list[str], out: Output) -> int:
    from codegenie.eval._env.spec import short_digest  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.environments import build_environments  # noqa: PLC0415 - start-up: only this command pays for it

    def progress(_slug: str, line: str) -> None:
        if not out.quiet:
            out.stderr.write(f"codegenie-bench: {escape_control(line)}\n")

    def undeclared(slug: str) -> None:
        out.note(f"{slug} declares no environment: its rubric runs in yours")

    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for ready in build_environments(manifest, slugs, progress=progress, on_undeclared=undeclared):
        environment, slug = ready.environment, ready.task_class
        state = "built" if ready.built else "kept"
        rows.append(
            {
                "task_class": slug,
                "digest": environment.digest,
                "python": environment.python,
                "path": str(environment.path),
                "size": environment.size,
                "state": state,
            }
        )
        lines.append(
            f"{state:<6} {escape_control(slug)}  {short_digest(environment.digest)}  "
            f"Python {environment.python}  {_size(environment.size)}"
        )
    out.result({"environments": rows}, "\n".join(lines))
    return 0


def _list(manifest: BenchManifest, out: Output) -> int:
    from codegenie.eval._env.spec import short_digest  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.environments import declared_environments, environments_dir  # noqa: PLC0415 - start-up: only this command pays for it

    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for declared in declared_environments(manifest):
        slug, digest, environment = declared.task_class, declared.digest, declared.environment
        requirements = None if declared.requirements is None else str(declared.requirements)
        rows.append(
            {
                "task_class": slug,
                "requirements": requirements,
                "python_request": declared.python_request,
                "python": declared.python,
                "digest": digest,
                "built": environment is not None,
                "state": declared.state,
                "damage": declared.damage,
                "size": None if environment is None else environment.size,
                "path": None if environment is None else str(environment.path),
            }
        )
        if declared.python is None:
            state = f"Python {declared.python_request} not found on this machine"
        elif declared.damage is not None:
            state = (
                f"{short_digest(digest or '')}  Python {declared.python}  damaged: "
                f"{escape_control(declared.damage)} "
                f"(`env build {escape_control(slug)}` builds it again)"
            )
        elif environment is None:
            state = f"{short_digest(digest or '')}  Python {declared.python}  not built"
        else:
            size = _size(environment.size)
            state = f"{short_digest(environment.digest)}  Python {declared.python}  built, {size}"
        lines.append(f"{escape_control(slug)}  {state}")
    if not rows:
        lines.append("no task class declares an environment")
    directory = str(environments_dir())
    lines.append(f"environments are kept in {escape_control(directory)}")
    out.result({"directory": directory, "environments": rows}, "\n".join(lines))
    return 0


def _prune(manifest: BenchManifest, out: Output) -> int:
    from codegenie.eval._env.store import prune  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.environments import declared_environments  # noqa: PLC0415 - start-up: only this command pays for it

    keep = {d.digest for d in declared_environments(manifest) if d.digest is not None}
    removed = prune(keep)
    lines = [f"removed {escape_control(str(path))}" for path in removed]
    lines.append(f"{len(removed)} removed, {len(keep)} kept (named by {manifest.path.name})")
    out.result({"removed": [str(path) for path in removed], "kept": sorted(keep)}, "\n".join(lines))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ACTION and SLUG…."""
    parser.add_argument(
        "action",
        choices=("build", "list", "prune"),
        metavar="{build,list,prune}",
        help="build: build what is not built (of each SLUG, default every task class); "
        "list: each declared environment and whether it is built; "
        "prune: remove every kept environment this manifest does not name",
    )
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="env build: the task classes")


COMMAND = Command(
    name="env",
    summary="Build, list or prune the task classes' own environments (Python and packages).",
    examples="""\
examples:
  codegenie-bench env build
  codegenie-bench env build np-task
  UV_FIND_LINKS=wheels UV_NO_INDEX=1 codegenie-bench env build
  codegenie-bench env list --format json
  codegenie-bench env prune
""",
    run=run,
    configure=configure,
)
