"""Building an environment with uv: once, atomically, with uv's own words when it fails.

:func:`build_environment` returns the built environment of a spec: the
kept one when it is there and whole, else one built now — ``uv venv`` with
the asked-for interpreter, then ``uv pip install -r`` the requirements
(bytecode compiled, since the sandbox mounts the environment read-only;
files copied, not hard-linked from uv's cache, so that an environment and
the cache never share a file),
in a directory of its own under the store, recorded, then renamed into
place. Under the digest's lock (:mod:`.lock`): a second command that needs
the same environment waits, then finds it built. Whatever interrupts a
build — uv failing, an exception, Ctrl-C — removes its directory; the kept
environments are untouched. A damaged environment is removed and built
again.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from codegenie.eval._atomic import write_atomically
from codegenie.eval._env.lock import hold_lock
from codegenie.eval._env.pip_config import uv_environment
from codegenie.eval._env.python import Python
from codegenie.eval._env.spec import (
    DIGEST_LABEL,
    REQUIREMENTS_LIMIT,
    EnvironmentSpec,
    short_digest,
    uv_binary,
    uv_version,
)
from codegenie.eval._env.store import (
    RECORD_FORMAT,
    RECORD_NAME,
    WORK_PREFIX,
    Environment,
    contents_digest,
    environments_dir,
    inspect_environment,
    installed_digest,
    listing_digest,
    open_environment,
    remove_tree,
    store_problem,
)
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval.errors import EnvironmentBuildFailed

__all__ = ("build_environment",)

# What the new environment's interpreter says about itself, once, at build time.
_PROBE: Final = (
    "import json, platform, sys; print(json.dumps({"
    "'version': platform.python_version(), 'sys_version': sys.version, "
    "'cache_tag': sys.implementation.cache_tag, "
    "'base_prefixes': sorted({sys.base_prefix, sys.base_exec_prefix})}))"
)


def _run(
    command: Sequence[str],
    *,
    step: str,
    cwd: str,
    failure: Callable[[str, str], Exception],
    check: bool = True,
) -> str:
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            env=uv_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
    except OSError as exc:
        raise failure(step, f"cannot run {command[0]}: {exc.strerror or exc}") from None
    output = done.stdout.decode("utf-8", "replace")
    if check and done.returncode != 0:
        raise failure(step, output or f"{command[0]} exited with status {done.returncode}")
    return output


def _unchanged(spec: EnvironmentSpec, failure: Callable[[str, str], Exception]) -> None:
    """Refuse to go on if the requirements file no longer holds the bytes the digest covers."""
    if spec.requirements is None:
        return
    try:
        data, _ = read_regular_file(str(spec.requirements), REQUIREMENTS_LIMIT)
    except (OSError, FileRefused) as exc:
        raise failure("install", f"{spec.requirements}: cannot read it again: {exc}") from None
    if data != spec.data:
        raise failure("install", f"{spec.requirements} changed while it was built; run again")


def build_environment(
    spec: EnvironmentSpec,
    python: Python,
    *,
    task_class: str,
    progress: Callable[[str], None] | None = None,
) -> Environment:
    """Return the built environment of ``spec`` with ``python``: kept, or built now.

    ``task_class`` names it in messages; ``progress`` is told, in one line,
    when a build starts. Raises ``EnvironmentBuildFailed`` (with uv's output)
    when it cannot be built; then nothing of the attempt is left.
    """
    digest = spec.digest(python)
    kept = open_environment(digest)
    if kept is not None:
        return kept
    hex_digest = digest.removeprefix(DIGEST_LABEL)

    def failure(step: str, output: str) -> Exception:
        return EnvironmentBuildFailed(task_class, spec.requirements, digest, step, output)

    root = environments_dir()
    target = root / hex_digest
    with contextlib.ExitStack() as held:
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            problem = store_problem(root)
            if problem is None:
                held.enter_context(hold_lock(root, hex_digest))
        except OSError as exc:
            raise failure("store", f"cannot use {root}: {exc.strerror or exc}") from None
        if problem is not None:
            raise failure("store", f"will not keep environments in {root}: {problem}")
        found = inspect_environment(digest)  # built by another while this one waited?
        if found.environment is not None:
            return found.environment
        if os.path.lexists(target):
            remove_tree(target)  # damaged: never used, built again
        if progress is not None and found.damage is not None:
            progress(
                f"the environment of {task_class} ({short_digest(digest)}) is damaged: "
                f"{found.damage}; removed"
            )
        if progress is not None:
            progress(
                f"building the environment of {task_class} ({short_digest(digest)}, "
                f"Python {python.version}) with uv"
            )
        work = root / f"{WORK_PREFIX}{hex_digest}-{uuid.uuid4().hex[:8]}"
        try:
            _build_into(work, spec, python, digest, failure)
            os.rename(work, target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    built = open_environment(digest)
    if built is None:
        raise failure("store", f"the environment built in {target} cannot be read back")
    return built


def _build_into(
    work: Path,
    spec: EnvironmentSpec,
    python: Python,
    digest: str,
    failure: Callable[[str, str], Exception],
) -> None:
    uv = uv_binary()
    cwd = str(spec.requirements.parent) if spec.requirements is not None else str(work.parent)
    venv = [uv, "venv", "--quiet", "--relocatable", "--no-project"]
    _run([*venv, "--python", python.executable, str(work)], step="venv", cwd=cwd, failure=failure)
    executable = work / "bin" / "python"
    if spec.requirements is not None:
        _unchanged(spec, failure)
        # Copies, not links into uv's cache: damage to one never reaches the other.
        install = [uv, "pip", "install", "--python", str(executable), "--link-mode", "copy"]
        _run([*install, "-r", str(spec.requirements)], step="install", cwd=cwd, failure=failure)
        _unchanged(spec, failure)
        # Compiled here, not by uv (--compile-bytecode starts the environment's Python with
        # site, which runs the packages' .pth files on the host): -S, so nothing of them runs.
        # A file that does not compile stays as it is, as with uv and pip.
        compiling = [str(executable), "-I", "-S", "-m", "compileall", "-qq", "-j", "0"]
        _run([*compiling, str(work / "lib")], step="install", cwd=cwd, failure=failure, check=False)
    # -S: the probe, too, runs nothing of the packages (a .pth file runs at every start).
    probe = [str(executable), "-I", "-S", "-c", _PROBE]
    said = _run(probe, step="python", cwd=cwd, failure=failure)
    try:
        facts = json.loads(said.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise failure("python", f"the environment's interpreter said: {said[-500:]}") from None
    if facts.get("version") != python.version:  # its digest names python's: nothing else
        raise failure(
            "python",
            f"asked for Python {python.version} ({python.executable}), "
            f"got Python {facts.get('version')}",
        )
    packages = installed_digest(work)
    contents = contents_digest(work)
    listing, size, files = listing_digest(work)
    record = {
        "format": RECORD_FORMAT,
        "digest": digest,
        "python": facts["version"],
        "python_request": spec.python,
        "requirements": None if spec.requirements is None else str(spec.requirements),
        "uv": uv_version(),
        "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "sys_version": facts["sys_version"],
        "cache_tag": facts["cache_tag"],
        "base_prefixes": facts["base_prefixes"],
        "packages": packages,
        "size": size,
        "files": files,
        "listing": listing,
        "contents": contents,
    }
    write_atomically(work / RECORD_NAME, json.dumps(record, indent=2).encode() + b"\n")
