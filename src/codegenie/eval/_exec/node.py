"""A run made on a node of a cluster: its trees unpacked, checked, run as on one machine.

:func:`run_shipped` is what a node does with one run the driver sent: a
:class:`~codegenie.eval._run.spec.RunSpec` (the driver's paths and
digests), the sandbox's name, and the three trees packed by
:mod:`codegenie.eval._exec.shipping`. It unpacks them into a directory of
its own — the task class at a path of the same name, its ``cases/``
empty (hidden from the run as on the driver), the case and the candidate
beside it —, checks that each hashes to the digest the driver read, and
runs the spec, rewritten to those paths, with
:func:`codegenie.eval.rubrics.execute`: the same copies, sandbox, limits,
supervision and verdict. The directory is removed afterwards, whatever
happened.

What it refuses, as an ``error`` result whose reason names the node: a
tree that does not unpack or does not hash to its digest; a node whose
Python is not the driver's (another version or other packages would make
the run another run than its key says); a declared environment the node
cannot build, or builds into another one than the driver's (another uv or
Python: another digest); a node where the sandbox asked for
cannot start (``SandboxUnavailable``'s cause). Nothing here imports Ray:
the node's name is given.

A run whose spec declares an environment has it built on the node from the
declaration's bytes (:func:`ready_environment`: the node's own store, lock
and rules), once a node and digest. Paths the result names on the node —
the task class's directory, the environment's — are written as the
driver's, so a report is the same whichever machine made the run.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from codegenie.eval._env.declared import ready_environment
from codegenie.eval._env.spec import EnvironmentSpec
from codegenie.eval._exec.shipping import TreeNotShipped, unpack_tree
from codegenie.eval._process import procfs
from codegenie.eval._run.digest import task_class_digest, tree_digest
from codegenie.eval._run.spec import RunSpec, TreeRef
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval._sandbox.provider import choose_sandbox
from codegenie.eval.errors import EvalError, SandboxUnavailable
from codegenie.eval.rubrics import (
    STDERR_TAIL_LIMIT,
    RubricResult,
    execute,
    remove_tree,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    from codegenie.eval._sandbox.provider import Sandbox
    from codegenie.eval._sandbox.runs import Runs

__all__ = ("Shipped", "result_from_node", "run_shipped", "sweep_node_directories")

#: What a node's run directory is called, so a node's leftovers can be recognised.
STAGE_PREFIX: Final = "codegenie-node-"


class Shipped:
    """The three packed trees of a run: its task class (outside ``cases/``), case, candidate.

    ``candidate`` is ``None`` when the candidate lies in its case's
    directory (``expected/``, ``input/``: ``check --rubrics``).
    """

    __slots__ = ("candidate", "case", "task_class")

    def __init__(self, task_class: bytes, case: bytes, candidate: bytes | None) -> None:
        self.task_class = task_class
        self.case = case
        self.candidate = candidate


_lock = threading.Lock()
_workers: dict[str, Runs] = {}
# This process's unpacked task classes, by digest, under one directory of its own.
_task_classes: dict[str, tuple[str, str]] = {}
# The interpreters of the environments this process made ready, by declaration.
_environments: dict[tuple[bytes, str | None], Interpreter] = {}
_home: str | None = None


def _node_sandbox(name: str) -> tuple[Sandbox, Runs]:
    """Return this process's sandbox ``name`` and its way of making runs, chosen once a process."""
    box = choose_sandbox(name)  # probed once a process
    with _lock:
        if name not in _workers:
            if not _workers:
                atexit.register(close_workers)
            _workers[name] = box.runs()
        return box, _workers[name]


def close_workers() -> None:
    """End this process's warm workers (a node process that is told to stop)."""
    with _lock:
        found = list(_workers.values())
        _workers.clear()
    for each in found:
        each.close()


def run_shipped(
    spec: RunSpec,
    sandbox: str,
    shipped: Shipped,
    node: str,
    cancel: threading.Event | None = None,
) -> str:
    """Make run ``spec`` on this node, from ``shipped``; return its result as JSON text.

    The text is :class:`RubricResult`'s fields, ``node`` set, the node's
    paths written as the driver's; :func:`result_from_node` reads it back.
    Text, not the model: a verdict as deep as the standard library's JSON
    reader accepts (the rubric's stdout was read with it) is written by its
    writer, where pickling the model would hit the recursion limit first.
    """

    def error(reason: str) -> str:
        failed = RubricResult(
            case=spec.case_id, status="error", reason=f"{reason} (on node {node})", duration_s=0.0
        )
        return _as_the_driver_sees_it(failed, {}, node)

    if spec.environment.declared is not None:
        try:
            here = _environment(spec)
        except EvalError as exc:
            return error(f"cannot make the task class's environment ready: {exc}")
        if (spec.interpreter.version, spec.interpreter.packages) != (here.version, here.packages):
            return error(
                "the node built another environment than the driver's "
                f"({here.packages}, not {spec.interpreter.packages}): the same Python and uv "
                "on every node build the same one"
            )
    else:
        here = Interpreter.current()
        if (spec.interpreter.version, spec.interpreter.packages) != (here.version, here.packages):
            return error(
                f"the node's Python ({here.version.split()[0]} at {here.executable}) is not the "
                f"driver's ({spec.interpreter.version.split()[0]}), or has other packages: "
                "install the same Python and packages on every node"
            )
    try:
        box, workers = _node_sandbox(sandbox)
    except SandboxUnavailable as exc:
        return error(f"SandboxUnavailable: {exc.cause}")
    with _lock:
        home = _process_home()
    stage = tempfile.mkdtemp(prefix="run-", dir=home)
    try:
        try:
            local = _unpacked(spec, shipped, stage)
        except TreeNotShipped as exc:
            return error(f"the run's trees did not arrive whole: {exc.reason}")
        except OSError as exc:  # a full disk, say: the node's trouble, not the run's
            where = f" {exc.filename}" if exc.filename else ""
            return error(f"the run's trees cannot be made on the node{where}: {exc.strerror}")
        # The same version and packages, here.
        local = replace(local, environment=replace(local.environment, interpreter=here))
        result = execute(local, box, cancel=cancel, runs=workers)
        moved = {
            local.task_class.path: spec.task_class.path,
            local.case.path: spec.case.path,
            local.candidate.path: spec.candidate.path,
        }
        if spec.environment.declared is not None:  # the environment's directory: <it>/bin/python
            moved[str(here.executable.parent.parent)] = str(
                spec.interpreter.executable.parent.parent
            )
        return _as_the_driver_sees_it(result, moved, node)
    finally:
        remove_tree(stage)


def _unpacked(spec: RunSpec, shipped: Shipped, stage: str) -> RunSpec:
    """Unpack the run's trees under ``stage``; return the spec at their paths (digests kept)."""
    task_class, cases = _task_class(spec, shipped.task_class)
    case = os.path.join(stage, "case", os.path.basename(spec.case.path))
    os.mkdir(os.path.dirname(case))
    unpack_tree(shipped.case, case)
    if shipped.candidate is None:
        relative = os.path.relpath(spec.candidate.path, spec.case.path)
        candidate = os.path.join(case, relative)
    else:
        candidate = os.path.join(stage, "candidate", os.path.basename(spec.candidate.path))
        os.mkdir(os.path.dirname(candidate))
        unpack_tree(shipped.candidate, candidate)
    _same(tree_digest(case), spec.case.digest, "the case")
    if shipped.candidate is not None:
        _same(tree_digest(candidate), spec.candidate.digest, "the candidate")
    rubric = os.path.join(task_class, os.path.basename(spec.rubric))
    return replace(
        spec,
        rubric=rubric,
        task_class=TreeRef(task_class, spec.task_class.digest),
        cases=cases,
        case=TreeRef(case, spec.case.digest),
        candidate=TreeRef(candidate, spec.candidate.digest),
    )


def _environment(spec: RunSpec) -> Interpreter:
    """Return the interpreter of ``spec``'s declared environment on this node, built if need be.

    Built from the declaration's bytes (written to a file of this process's
    directory: the driver's path means nothing here) with this node's uv
    and Python, under the environments' own rules and lock, once a node and
    digest; remembered for this process. Raises ``EvalError`` subclasses
    (``PythonUnavailable``, ``EnvironmentBuildFailed``).
    """
    declared = spec.environment.declared
    assert declared is not None
    memo = (declared.data, declared.python)
    with _lock:
        found = _environments.get(memo)
        if found is not None:
            return found
        home = _process_home()
    requirements = None
    if declared.requirements is not None:
        name = hashlib.blake2b(declared.data, digest_size=16).hexdigest()
        requirements = Path(home, f"requirements-{name}.txt")
        requirements.write_bytes(declared.data)
    local = EnvironmentSpec(requirements, declared.data, declared.python)
    task_class = os.path.basename(spec.task_class.path)
    ready = ready_environment(local, task_class=task_class).interpreter()
    with _lock:
        _environments[memo] = ready
    return ready


def _as_the_driver_sees_it(result: RubricResult, places: dict[str, str], node: str) -> str:
    """Return ``result`` as JSON text, ``node`` set, the paths of ``places`` as the driver's.

    A traceback, a reason or a verdict (its keys as its values) that names
    the rubric's file, the case or the candidate it was copied from (a
    refused link, say), or the environment's ``sys.prefix``, names it as a
    run on the driver would. The paths are rewritten in the JSON text, where
    each is a string's escaped form, whatever the depth of the verdict. The
    node's directories are named after random tokens and an environment's
    after its digest, so nothing else is rewritten by accident; the longest
    is rewritten first (the candidate may be in the case).
    """
    fields = {name: getattr(result, name) for name in RubricResult.model_fields}
    fields["node"] = node
    text = json.dumps(fields)
    for here, there in sorted(places.items(), key=lambda item: -len(item[0])):
        text = text.replace(json.dumps(here)[1:-1], json.dumps(there)[1:-1])
    return text


def result_from_node(text: str) -> RubricResult:
    """Return the result :func:`run_shipped` wrote; its stderr tail within the usual bound.

    Its tail is cut again to :data:`~codegenie.eval.rubrics.STDERR_TAIL_LIMIT`
    bytes after the node's paths were written as the driver's: where the
    driver's paths are longer, the tail holds the end of what the run wrote,
    as on one machine.
    """
    fields = json.loads(text)
    tail = fields.get("stderr_tail")
    if isinstance(tail, str):
        encoded = tail.encode("utf-8", "surrogatepass")
        if len(encoded) > STDERR_TAIL_LIMIT:
            fields["stderr_tail"] = encoded[-STDERR_TAIL_LIMIT:].decode("utf-8", "replace")
    return RubricResult.model_validate(fields)


def _process_home() -> str:
    """Return this process's directory on the node, made on first use; call with ``_lock``.

    Everything a run leaves on the node is in it: the unpacked task
    classes, the runs' directories, the warm workers' (the process's
    temporary directory becomes it). Ray ends its worker processes without
    running ``atexit``, so the first use in a process also removes the
    directories of this user's processes that are gone.
    """
    global _home  # noqa: PLW0603 - one directory a process, made on first use
    if _home is None:
        parent = tempfile.gettempdir()
        sweep_node_directories(parent)
        _home = tempfile.mkdtemp(prefix=f"{STAGE_PREFIX}{os.getpid()}-", dir=parent)
        atexit.register(remove_tree, _home)
        tempfile.tempdir = _home
    return _home


def sweep_node_directories(parent: str, pids: Collection[int] | None = None) -> None:
    """Remove the node directories in ``parent`` of this user's processes that are gone.

    ``pids``: only those of these processes, which the caller ended (the
    worker processes of a local Ray instance it killed), once each has
    ended — a zombie that nobody reaped yet has. Without it, those of every
    process of this user that no longer exists (a worker that Ray ended
    without running ``atexit``, found by the next one).
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid_text = name[len(STAGE_PREFIX) :].partition("-")[0]
        if not name.startswith(STAGE_PREFIX) or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        path = os.path.join(parent, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            if pids is not None:
                if pid in pids and not procfs.running(pid):
                    remove_tree(path)
                continue
            os.kill(pid, 0)
        except ProcessLookupError:
            remove_tree(path)
        except OSError:  # alive (another user's), or already gone
            continue


def _task_class(spec: RunSpec, packed: bytes) -> tuple[str, str]:
    """Return where the task class of ``packed`` is unpacked in this process, and its ``cases``.

    Unpacked and checked once a process, tree (its digest, else the packed
    value's hash) and name: the runs of one task class then have one path,
    and one warm worker. The directory goes when the process exits.
    """
    digest = spec.task_class.digest or hashlib.blake2b(packed, digest_size=32).hexdigest()
    name = os.path.basename(spec.task_class.path)
    # Two task classes of one content are still two directories, each of its own name.
    key = hashlib.blake2b(f"{digest} {name}".encode(), digest_size=16).hexdigest()
    with _lock:
        found = _task_classes.get(key)
        if found is not None:
            return found
        place = os.path.join(_process_home(), key)
        task_class = os.path.join(place, name)
        parent = os.path.normpath(spec.task_class.path)
        inside = os.path.dirname(os.path.normpath(spec.cases)) == parent
        # The cases live beside the rubric (else elsewhere): an empty directory stands for them.
        cases = os.path.join(task_class if inside else place, os.path.basename(spec.cases))
        try:
            os.mkdir(place, 0o700)
            unpack_tree(packed, task_class)
            if not os.path.isdir(cases):
                os.mkdir(cases, 0o755)
            _same(task_class_digest(task_class, cases), spec.task_class.digest, "the task class")
        except BaseException:
            remove_tree(place)
            raise
        _task_classes[key] = (task_class, cases)
        return task_class, cases


def _same(found: str | None, sent: str | None, what: str) -> None:
    if sent is not None and found != sent:
        raise TreeNotShipped(what, f"{what} hashes to another digest than the driver read")
