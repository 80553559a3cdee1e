"""The Ray executor: each run a Ray task, made on whichever node of a cluster has room.

:class:`RayExecutor` connects to the cluster at ``address`` (``--ray-address``,
else ``RAY_ADDRESS``); without either it starts a local Ray instance of
``jobs`` CPUs for the batch and shuts it down after. A batch whose process
already joined a cluster (``ray.init`` by the caller) uses that one and
leaves it up.

Each run is one task of one CPU. The task carries the run's spec (paths,
digests, limits: :class:`~codegenie.eval._run.spec.RunSpec`) and three
references into Ray's object store: the task class's directory outside
``cases/``, the case, and the candidate, each packed once by
:func:`~codegenie.eval._exec.shipping.pack_tree` and put once whatever the
number of runs that read it. The node unpacks and checks them and runs the
spec with its own sandbox (:func:`~codegenie.eval._exec.node.run_shipped`);
the result comes back as a value, its ``node`` set.

Failures are not verdicts. A rubric's pass or fail is a return value, never
retried. A task whose worker process or node died is retried by Ray
(``max_retries``, system failures only); one that still cannot be completed,
or whose trees cannot be sent, is an ``error`` result that says why (node
lost, object too large, ...), never ``failed``. A node without a working
sandbox returns ``SandboxUnavailable`` errors for its runs, the node named.

``KeyboardInterrupt`` (Ctrl-C; the CLI's SIGTERM and SIGHUP) stops every
pending and running task. On a cluster the command joined, each is asked
to stop (``ray.cancel``: the run kills its rubric and removes its copies),
and those still running after a few seconds are killed
(``ray.cancel(force=True)``: Ray kills the worker process, and each run's
bubblewrap dies with its parent; nothing relies on SIGINT reaching a
rubric, which Ray's workers block). On the local instance the command
started, nothing is asked: :meth:`RayExecutor.close` kills the whole
instance at once, runs and all, and removes what it left
(:mod:`codegenie.eval._exec.ray_instance`). What ended before is kept:
``on_result`` saw it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, final

from codegenie.eval._exec import RayMissing
from codegenie.eval._exec.node import Shipped, result_from_node, run_shipped
from codegenie.eval._exec.ray_instance import LocalInstance
from codegenie.eval._exec.shipping import TreeNotShipped, pack_tree
from codegenie.eval._run.spec import Digests
from codegenie.eval._sandbox.policy import Interpreter
from codegenie.eval.errors import ExecutorUnavailable
from codegenie.eval.rubrics import CANCELLED_REASON, RubricResult

if TYPE_CHECKING:
    from codegenie.eval._run.spec import RunSpec
    from codegenie.eval._sandbox.provider import Sandbox

__all__ = ("STARVED_AFTER", "RayExecutor")

#: How often Ray retries a run whose worker or node died before giving up on it.
RETRIES: Final = 3
#: How long a cancelled batch waits for its tasks to stop when asked, then once killed (s).
_ASKED_WITHIN: Final = 3.0
_CANCEL_WITHIN: Final = 10.0
# How long a wait for results lasts at most: a signal's handler runs once Ray's wait returns.
_WAKE_S: Final = 0.05
_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The terminal's colour codes Ray puts in an exception's text.
_ESCAPES: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# How long nothing arrives before the cluster's CPUs are looked at, and how long a cluster
# may have none before its pending runs are given up (a node may join meanwhile).
_LOOK_AFTER: Final = 5.0
#: How long a cluster may have no CPU, in the middle of a batch, before its runs are errors.
STARVED_AFTER: Final = 30.0
_NO_CPU: Final = (
    "the run could not be completed on the Ray cluster: no node of it had a CPU left to make "
    "the run on"
)
# How long a cluster's address may take to accept a connection before it is said not to.
_CONNECT_S: Final = 5.0


def _import_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 - the optional extra, only when chosen
    except ImportError as exc:
        raise RayMissing(str(exc)) from None
    return ray


def ray_task(
    spec: RunSpec, sandbox: str, task_class: bytes, case: bytes, candidate: bytes | None
) -> str:
    """Make one run on the node Ray chose (Ray gives the referenced trees as values)."""
    import ray  # noqa: PLC0415 - on the node, where Ray runs this

    node = ray.get_runtime_context().get_node_id()
    return run_shipped(spec, sandbox, Shipped(task_class, case, candidate), node)


@final
class RayExecutor:
    """``--executor ray``: runs as Ray tasks (see the module's docstring).

    ``address``: the cluster's (``None``: ``RAY_ADDRESS``, else a local
    instance started at the first batch, of as many CPUs as its ``jobs``).
    The first batch connects; :meth:`close` shuts down what it started
    (a process that had joined a cluster before keeps it). Ray is imported
    when the executor is made, so a missing extra is a :class:`RayMissing`
    before anything runs.
    """

    name = "ray"
    runs_here = False

    def __init__(
        self,
        address: str | None = None,
        *,
        retries: int = RETRIES,
        starved_after: float = STARVED_AFTER,
    ) -> None:
        self._ray = _import_ray()
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.retries = retries
        self.starved_after = starved_after
        self._started = False
        self._instance: LocalInstance | None = None

    def run(
        self,
        runs: Sequence[RunSpec],
        *,
        jobs: int,
        sandbox: Sandbox,
        on_result: Callable[[int, RubricResult], None] | None = None,
    ) -> list[RubricResult]:
        """Make ``runs`` on the cluster (see :class:`codegenie.eval._exec.Executor`)."""
        if not runs:
            return []
        self._connect(jobs)
        if _cpus(self._ray) <= 0:
            nodes = len(self._ray.nodes())
            cause = f"the cluster has no CPU to make a run on ({nodes} node(s), none with a CPU)"
            address = self.address or self._ray.get_runtime_context().gcs_address
            raise ExecutorUnavailable("ray", address, cause)
        batch = _Batch(self._ray, runs, sandbox.name, self.retries, on_result)
        return batch.run(self.starved_after, ask=self._instance is None)

    def _connect(self, jobs: int) -> None:
        """Join the cluster, or start a local instance of ``jobs`` CPUs; once an executor."""
        ray = self._ray
        if ray.is_initialized():
            return  # the caller's cluster, or this executor's from an earlier batch
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "configure_logging": False,
        }
        # Ray's driver installs its own handlers of SIGTERM (and more), which end the
        # process on the spot: the ones in place before are put back, so that a signal
        # still cancels the runs (a KeyboardInterrupt, as the CLI makes of it).
        main = threading.current_thread() is threading.main_thread()
        saved = {number: signal.getsignal(number) for number in _SIGNALS} if main else {}
        try:
            if self.address is None:
                self._instance = LocalInstance.start(ray, max(1, jobs), options)
            else:
                _answers(self.address)
                ray.init(address=self.address, **options)
        except ExecutorUnavailable:
            raise
        except Exception as exc:  # Ray's ConnectionError, ValueError, RuntimeError...
            raise ExecutorUnavailable("ray", self.address, _cause(exc)) from None
        finally:
            for number, handler in saved.items():
                if handler is not None:
                    signal.signal(number, handler)
        self._started = True

    def close(self) -> None:
        """Shut down what this executor started: a local instance, whole, or its connection.

        A local instance ends at once, every process killed and everything
        it left removed (:meth:`LocalInstance.end`), whether its batches
        succeeded or were stopped: no run of it is waited for.
        """
        if self._started:
            self._started = False
            instance, self._instance = self._instance, None
            if instance is not None:
                instance.end()
            else:
                self._ray.shutdown()


class _Batch:
    """One batch of runs on the cluster: packing, submitting, collecting, cancelling."""

    def __init__(
        self,
        ray: Any,
        runs: Sequence[RunSpec],
        sandbox: str,
        retries: int,
        on_result: Callable[[int, RubricResult], None] | None,
    ) -> None:
        self.ray = ray
        self.runs = runs
        self.sandbox = sandbox
        self.on_result = on_result
        self.results: list[RubricResult | None] = [None] * len(runs)
        self.task = ray.remote(ray_task).options(
            num_cpus=1, max_retries=retries, retry_exceptions=False
        )
        self.puts: dict[tuple[str, str | None], Any] = {}
        self.digests = Digests()
        self.here = Interpreter.current()

    def run(self, starved_after: float, *, ask: bool = True) -> list[RubricResult]:
        """Make the batch's runs; on an exception stop those in flight and re-raise it.

        ``ask``: ask the tasks in flight to stop, then kill those that do
        not (a cluster's); else leave them to the end of the instance they
        run on, which kills them all at once (the command's own).
        """
        ray = self.ray
        cpus = int(_cpus(ray)) or 1
        window = max(2, 2 * cpus)  # every node fed, and a bounded number of refs to wait on
        pending: dict[Any, int] = {}
        queue = iter(range(len(self.runs)))
        starving = _Starving(ray, starved_after)
        try:
            more = True
            while more or pending:
                while more and len(pending) < window:
                    index = next(queue, None)
                    if index is None:
                        more = False
                        break
                    ref = self._submit(index)
                    if ref is not None:
                        pending[ref] = index
                if not pending:
                    continue
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=_WAKE_S)
                for ref in ready:
                    index = pending.pop(ref)
                    self._arrived(index, self._outcome(ref, self.runs[index]))
                if starving.now(progress=bool(ready)):
                    self._cancel(pending)
                    # Those not submitted yet too: no node could take them either.
                    for index in [*sorted(pending.values()), *queue]:
                        self._arrived(index, _error(self.runs[index], _NO_CPU))
                    pending.clear()
                    more = False
        except BaseException:
            if ask:
                self._cancel(pending)
            raise
        return [result for result in self.results if result is not None]

    def _arrived(self, index: int, result: RubricResult) -> None:
        self.results[index] = result
        if self.on_result is not None:
            self.on_result(index, result)

    def _submit(self, index: int) -> Any:
        """Submit run ``index``; ``None`` when it ended at once (an ``error`` result given)."""
        spec = self.runs[index]
        theirs = (spec.interpreter.version, spec.interpreter.packages)
        if spec.environment.declared is None and theirs != (self.here.version, self.here.packages):
            reason = (
                f"the run's Python ({spec.interpreter.executable}) is neither the harness's nor "
                "a declared environment's, which a node could build"
            )
            self._arrived(index, _error(spec, reason))
            return None
        # What execute() refuses before any copy, refused here in its words: a run's
        # result does not depend on where it was made.
        candidate_path = spec.candidate.path
        refused = None
        if not os.path.isfile(spec.rubric):
            refused = f"the rubric {spec.rubric} does not exist"
        elif not os.path.isdir(candidate_path):
            refused = f"the candidate {candidate_path} is not a directory"
        elif os.path.islink(candidate_path):
            shown = os.readlink(candidate_path)
            refused = (
                f"cannot copy {candidate_path}: the candidate is a symbolic link (to {shown!r}), "
                "not a directory of its own"
            )
        if refused is not None:  # as execute() says it, where the run would have happened
            self._arrived(index, _error(spec, refused).model_copy(update={"sandbox": self.sandbox}))
            return None
        if spec.task_class.digest is None or spec.case.digest is None:
            spec = spec.read(self.digests)
        try:
            task_class = self._put("task class", spec.task_class.path, spec.task_class.digest, spec)
            case = self._put("case", spec.case.path, spec.case.digest, None)
            inside = os.path.dirname(spec.candidate.path) == spec.case.path
            candidate = (
                None
                if inside
                else self._put("candidate", spec.candidate.path, spec.candidate.digest, None)
            )
        except _NotSent as exc:
            self._arrived(index, _error(spec, exc.reason))
            return None
        return self.task.remote(spec, self.sandbox, task_class, case, candidate)

    def _put(self, what: str, path: str, digest: str | None, spec: RunSpec | None) -> Any:
        """Return the object-store reference of the tree at ``path``, packed and put once.

        A task class or a case is kept for the batch (its runs share it); a
        candidate, read by one run, is not: the store lets it go once its
        task is done.
        """
        key = (path, digest)
        if what == "candidate":
            return self._pack_and_put(what, path, frozenset())
        if key not in self.puts:
            exclude: frozenset[str] = frozenset()
            if spec is not None:  # the task class: its cases/ stays home
                inside = os.path.dirname(os.path.normpath(spec.cases)) == os.path.normpath(path)
                exclude = frozenset({os.path.basename(spec.cases)}) if inside else frozenset()
            self.puts[key] = self._pack_and_put(what, path, exclude)
        return self.puts[key]

    def _pack_and_put(self, what: str, path: str, exclude: frozenset[str]) -> Any:
        try:
            # A task class is mounted whole on one machine; a case or candidate copied.
            packed = pack_tree(path, exclude=exclude, caches=what == "task class")
        except TreeNotShipped as exc:
            if what == "task class":  # mounted on one machine, never copied: no such refusal
                raise _NotSent(f"cannot send the task class {exc.path}: {exc.reason}") from None
            # A case or a candidate is refused as its copy refuses it on one machine.
            raise _NotSent(f"cannot copy {exc.path}: {exc.reason}") from None
        try:
            return self.ray.put(packed)
        except Exception as exc:
            reason = f"cannot put the {what} {path} ({len(packed):,} bytes) into Ray's "
            raise _NotSent(f"{reason}object store: {_cause(exc)}") from None

    def _outcome(self, ref: Any, spec: RunSpec) -> RubricResult:
        """Return what the task ``ref`` returned, or the ``error`` that says why it could not."""
        ray = self.ray
        try:
            text = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return _error(spec, CANCELLED_REASON)
        except ray.exceptions.RayError as exc:
            return _error(spec, f"the run could not be completed on the Ray cluster: {_cause(exc)}")
        try:
            return result_from_node(text)
        except (TypeError, ValueError) as exc:  # not JSON, or not a result's fields
            return _error(spec, f"the Ray task returned no result that can be read: {exc}")

    def _cancel(self, pending: dict[Any, int]) -> None:
        """Cancel every task of ``pending``: asked first, then their processes killed.

        Asked (``force=False``): Ray raises ``KeyboardInterrupt`` in the task,
        and the run is stopped as on one machine — its process group or
        sandbox killed, its directory removed, under ``--sandbox none`` too,
        where no bubblewrap dies with its parent. Those still running after
        :data:`_ASKED_WITHIN` seconds are killed (``force=True``: Ray kills the
        worker process; a sandbox dies with it).
        """
        waiting = self._cancelled(list(pending), force=False, within=_ASKED_WITHIN)
        self._cancelled(waiting, force=True, within=_CANCEL_WITHIN)

    def _cancelled(self, refs: list[Any], *, force: bool, within: float) -> list[Any]:
        """Cancel ``refs``; return those not ended within ``within`` seconds."""
        ray = self.ray
        for ref in refs:
            try:
                ray.cancel(ref, force=force)
            except Exception:  # noqa: S112 - ended meanwhile, or its node is gone
                continue
        deadline = time.monotonic() + within
        waiting = refs
        while waiting and time.monotonic() < deadline:
            try:
                _, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=_WAKE_S)
            except KeyboardInterrupt:  # a second Ctrl-C: the tasks are cancelled already
                continue
        return waiting


def _answers(address: str) -> None:
    """Raise ``ExecutorUnavailable`` unless something listens at ``address``'s host and port.

    Ray's ``init`` waits for minutes, retrying, when nothing answers (a
    mistyped address): a connection tried first, for a few seconds, says so
    at once. An address of another form (``auto``) is left to Ray.
    """
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_S):
            pass
    except OSError as exc:
        cause = f"nothing answers at {host}:{port} ({exc.strerror or type(exc).__name__})"
        raise ExecutorUnavailable("ray", address, cause) from None


def _cpus(ray: Any) -> float:
    """Return the CPUs of the cluster's live nodes (Ray's total, not what is free)."""
    return float(ray.cluster_resources().get("CPU", 0))


class _Starving:
    """Whether the cluster has had no CPU for long: runs no node can take would wait forever.

    Ray keeps a task no node can run pending, silently, in case a node
    joins. Looked at only when nothing arrived for a while; a cluster
    without a CPU for ``after`` seconds (:data:`STARVED_AFTER`) ends the
    batch's pending runs, and those not submitted, as errors.
    """

    def __init__(self, ray: Any, after: float) -> None:
        self.ray = ray
        self.after = after
        self.quiet_since = time.monotonic()
        self.starved_since: float | None = None

    def now(self, *, progress: bool) -> bool:
        clock = time.monotonic()
        if progress:
            self.quiet_since, self.starved_since = clock, None
            return False
        if clock - self.quiet_since < _LOOK_AFTER:
            return False
        self.quiet_since = clock  # looked at now; the next look in _LOOK_AFTER
        if _cpus(self.ray) > 0:
            self.starved_since = None
            return False
        if self.starved_since is None:
            self.starved_since = clock
        return clock - self.starved_since >= self.after


class _NotSent(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _cause(exc: BaseException) -> str:
    """Return what went wrong, in one line: the exception a task raised, else Ray's first line.

    A task that raised comes back as Ray's ``RayTaskError`` whose text
    starts with the task's name and pid (coloured); its ``cause`` is the
    exception itself, which says what happened.
    """
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and cause is not exc:
        exc = cause
    lines = _ESCAPES.sub("", str(exc)).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _error(spec: RunSpec, reason: str) -> RubricResult:
    return RubricResult(case=spec.case_id, status="error", reason=reason, duration_s=0.0)
