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
    from codegenie.eval._env.spec import EnvironmentSpec
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


def _declared(manifest: BenchManifest) -> list[tuple[str, EnvironmentSpec]]:
    """Each task class that declares an environment, and its spec (in manifest order)."""
    from codegenie.eval._env.declared import declared_spec  # noqa: PLC0415 - start-up: only this command pays for it

    found = []
    for slug in manifest.slugs():
        entry = manifest.entry(slug)
        spec = declared_spec(manifest.path.parent, entry.environment, entry.python, task_class=slug)
        if spec is not None:
            found.append((slug, spec))
    return found


def _size(size: int) -> str:
    amount = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if amount < 1000 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1000
    return f"{size} B"  # pragma: no cover - the loop returns


def _build(manifest: BenchManifest, slugs: list[str], out: Output) -> int:
    from codegenie.eval._env.declared import ready_environment  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._env.spec import short_digest  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.errors import InvalidTaskClassName  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.naming import slug_problem  # noqa: PLC0415 - start-up: only this command pays for it

    for slug in slugs:
        # Before anything is built: a slug that breaks the rules (exit 1, as in every command),
        # then one not declared (TaskClassNotFound); both with the declared slugs close to it.
        reason = slug_problem(slug)
        if reason is not None:
            raise InvalidTaskClassName(slug, reason)
        manifest.entry(slug)
    declared = dict(_declared(manifest))
    chosen = slugs or list(declared)
    rows: list[dict[str, Any]] = []
    lines: list[str] = []

    built: set[str] = set()  # the task classes whose environment a build was started for

    for slug in chosen:

        def progress(line: str, slug: str = slug) -> None:
            built.add(slug)
            if not out.quiet:
                out.stderr.write(f"codegenie-bench: {escape_control(line)}\n")

        spec = declared.get(slug)
        if spec is None:
            out.note(f"{slug} declares no environment: its rubric runs in yours")
            continue
        environment = ready_environment(
            spec, task_class=slug, manifest=manifest.path, build=True, progress=progress
        )
        state = "built" if slug in built else "kept"
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
    from codegenie.eval._env.python import find_python  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._env.spec import short_digest  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._env.store import Inspected, environments_dir, inspect_environment  # noqa: PLC0415 - start-up: only this command pays for it

    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    for slug, spec in _declared(manifest):
        python = find_python(spec.python)
        digest = None if python is None else spec.digest(python)
        found = Inspected(None) if digest is None else inspect_environment(digest)
        environment = found.environment
        requirements = None if spec.requirements is None else str(spec.requirements)
        rows.append(
            {
                "task_class": slug,
                "requirements": requirements,
                "python_request": spec.python,
                "python": None if python is None else python.version,
                "digest": digest,
                "built": environment is not None,
                "state": (
                    "built"
                    if environment is not None
                    else "not built"
                    if found.damage is None
                    else "damaged"
                ),
                "damage": found.damage,
                "size": None if environment is None else environment.size,
                "path": None if environment is None else str(environment.path),
            }
        )
        if python is None:
            state = f"Python {spec.python} not found on this machine"
        elif found.damage is not None:
            state = (
                f"{short_digest(digest or '')}  Python {python.version}  damaged: "
                f"{escape_control(found.damage)} "
                f"(`env build {escape_control(slug)}` builds it again)"
            )
        elif environment is None:
            state = f"{short_digest(digest or '')}  Python {python.version}  not built"
        else:
            size = _size(environment.size)
            state = f"{short_digest(environment.digest)}  Python {python.version}  built, {size}"
        lines.append(f"{escape_control(slug)}  {state}")
    if not rows:
        lines.append("no task class declares an environment")
    directory = str(environments_dir())
    lines.append(f"environments are kept in {escape_control(directory)}")
    out.result({"directory": directory, "environments": rows}, "\n".join(lines))
    return 0


def _prune(manifest: BenchManifest, out: Output) -> int:
    from codegenie.eval._env.python import find_python  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._env.store import prune  # noqa: PLC0415 - start-up: only this command pays for it

    keep = set()
    for _slug, spec in _declared(manifest):
        python = find_python(spec.python)
        if python is not None:
            keep.add(spec.digest(python))
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
