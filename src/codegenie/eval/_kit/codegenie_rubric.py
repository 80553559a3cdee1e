"""codegenie_rubric: what a rubric needs so that no candidate can fool it, on the standard library.

Every rubric the harness runs can ``import codegenie_rubric``, whatever
interpreter runs it (the harness's, or a task class's own environment):
the sandbox puts this module's directory on the rubric's ``PYTHONPATH``.
It needs Python 3.9 or later and nothing but the standard library.

Imported as ``codegenie_rubric`` (as a rubric imports it), it seals the
rubric's process at once:

- the process becomes undumpable (``prctl(PR_SET_DUMPABLE, 0)`` on Linux;
  nothing elsewhere; :data:`UNDUMPABLE` says whether it took), so no other
  process of the run — a candidate the rubric starts — opens its
  ``/proc/<pid>/fd/1``, ``/mem`` or ``/environ``;
- its standard output is kept for :func:`verdict` alone: file descriptor 1
  is saved (a ``dup``, closed on ``exec``) and then made a copy of standard
  error, so whatever else writes to ``sys.stdout``, ``print``, descriptor 1
  or ``/dev/stdout`` lands on stderr and never in the verdict.

Then a rubric

- runs candidate code in a child process with :func:`check_function` (a
  function checked by the case's test, HumanEval's way),
  :func:`run_tests` (the case's test files, unittest's way) or
  :func:`run_command` (any program), each on a copy of the candidate tree
  in a fresh temporary directory, never the case directory;
- compares values with :func:`same` (exact types, recursively) and
  :func:`plain` (plain data only), and wraps a candidate's function with
  :func:`strict` so that a result equal to everything is refused;
- ends with :func:`verdict`, which writes the one JSON verdict on the saved
  standard output and exits 0 (passed) or 1 (failed).

Loaded under any other name (``codegenie.eval._kit.codegenie_rubric``, or
by a test), it seals nothing. Executed as a child's ``__main__``, it is the driver of the
child process :func:`check_function` and :func:`run_tests` start.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing import at run time: the driver starts a process per run
    from collections.abc import Callable, Mapping, Sequence
    from typing import NoReturn

__all__ = (
    "UNDUMPABLE",
    "NotPlainData",
    "Outcome",
    "check_function",
    "plain",
    "run_command",
    "run_tests",
    "same",
    "strict",
    "verdict",
)

#: Whether this process was made undumpable when the module was imported.
UNDUMPABLE = False

# Kept at import, before anything else of the rubric runs: what verdict() uses.
_VERDICT_FD = -1
_dumps: Callable[..., str] | None = None
_write = os.write
_exit = os._exit

#: The exact types of plain data (:func:`plain`).
PLAIN_TYPES = frozenset(
    (bool, int, float, complex, str, bytes, type(None), list, tuple, dict, set, frozenset)
)
_CONTAINERS = (list, tuple, set, frozenset)
_PLAIN_DEPTH = 200
_REASON_LIMIT = 2000
_NONCE_BYTES = 32
_SPEC_HEADER = 12
_TEST_MODULE = "__codegenie_test__"
_PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ")
# The child's program: this file's code (its cached bytecode when the installation has one,
# which saves compiling it for every run) executed as the child's __main__, which runs _drive.
_BOOT = (
    "import sys\n"
    "from importlib.machinery import SourceFileLoader\n"
    "__file__ = sys.argv[1]\n"
    "exec(SourceFileLoader('codegenie_rubric', __file__).get_code('codegenie_rubric'))\n"
)


def _seal() -> None:
    """Make this process undumpable and keep its stdout for :func:`verdict` alone."""
    global UNDUMPABLE, _VERDICT_FD, _dumps  # noqa: PLW0603 - set once, at import
    # Here, not at the top: the driver (this file run as a script) does without json.
    import json  # noqa: PLC0415 - see the comment above

    _dumps = json.dumps
    if sys.platform.startswith("linux"):
        try:
            # Deferred: only a rubric's import (never the driver) pays for ctypes.
            import ctypes  # noqa: PLC0415 - see the comment above

            libc = ctypes.CDLL(None, use_errno=True)
            UNDUMPABLE = libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
        except (ImportError, OSError, AttributeError):
            UNDUMPABLE = False
    try:
        _VERDICT_FD = os.dup(1)  # not inherited: os.dup's descriptors close on exec
    except OSError:
        _VERDICT_FD = -1
        return
    try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
        sys.stdout.flush()
    except Exception:  # noqa: S110 - a stdout that cannot flush has nothing of ours
        pass
    try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
        os.dup2(2, 1)
    except OSError:  # stdout stays where it was: the verdict still has its own
        pass


# -- the verdict ---------------------------------------------------------------------


def verdict(
    passed: bool, reason: str | None = None, score: float | None = None, **extra: object
) -> NoReturn:
    """Write the verdict on the rubric's own stdout and exit: 0 when ``passed``, else 1.

    ``passed`` must be a ``bool``; ``score``, when given, a number in
    [0, 1] (not a ``bool``); ``reason`` is made one line (newlines become
    spaces) of at most 2000 characters; ``extra`` keys are kept in the
    verdict and must be JSON (finite numbers only). The JSON is written with
    the ``json.dumps`` and ``os.write`` this module kept at import, on the
    descriptor it saved then, and the process ends with ``os._exit`` after
    flushing ``sys.stdout`` and ``sys.stderr`` (both lead to stderr): no
    ``atexit`` hook, ``print``, replaced ``sys.stdout`` or ``json`` changes
    what the harness reads. Raises ``TypeError`` or ``ValueError`` (and
    writes nothing) for a verdict the harness would refuse, and
    ``RuntimeError`` when the module was not imported as
    ``codegenie_rubric`` (nothing was saved).
    """
    given: object = passed
    if type(given) is not bool:
        msg = f"passed must be a bool, got {type(given).__name__}"
        raise TypeError(msg)
    document: dict[str, object] = {"passed": passed}
    if score is not None:
        if type(score) not in (int, float) or not 0.0 <= score <= 1.0:
            msg = f"score must be a number in [0, 1], got {score!r}"
            raise ValueError(msg)
        document["score"] = score
    if reason is not None:
        document["reason"] = _one_line(str(reason))
    document.update(extra)
    if _VERDICT_FD < 0 or _dumps is None:
        msg = "the verdict's stdout was not saved: import this module as codegenie_rubric"
        raise RuntimeError(msg)
    text = _dumps(document, allow_nan=False) + "\n"
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
            stream.flush()
        except Exception:  # noqa: S110 - the verdict matters, not a broken stream
            pass
    view = memoryview(text.encode("utf-8"))
    while view:
        view = view[_write(_VERDICT_FD, view) :]
    _exit(0 if passed else 1)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _REASON_LIMIT else line[: _REASON_LIMIT - 1] + "…"


# -- values --------------------------------------------------------------------------


class NotPlainData(TypeError):
    """A candidate's function returned something that is not plain data (:func:`strict`)."""


def plain(value: object) -> bool:
    """Return whether ``value`` is plain data: exact builtin types all the way down.

    Plain: ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``,
    ``None``, and ``list``, ``tuple``, ``set``, ``frozenset`` and ``dict``
    (keys and values) holding only plain data — each of exactly that type,
    never a subclass. No method of ``value`` runs (``type()`` cannot be
    faked; iterating an exact builtin container calls nothing), so an object
    equal to everything is never plain. A container that holds itself, or
    nesting deeper than 200 levels, is not plain.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    on_path: set[int] = set()
    # (the stack's length once a container's contents are done, its id), innermost last
    leaving: list[tuple[int, int]] = []
    while stack:
        while leaving and len(stack) <= leaving[-1][0]:
            on_path.discard(leaving.pop()[1])
        item, depth = stack.pop()
        kind = type(item)
        if kind not in PLAIN_TYPES:
            return False
        if kind is dict or kind in _CONTAINERS:
            if depth >= _PLAIN_DEPTH or id(item) in on_path:
                return False
            on_path.add(id(item))
            leaving.append((len(stack), id(item)))
            if isinstance(item, dict):
                for key, entry in item.items():
                    stack.append((key, depth + 1))
                    stack.append((entry, depth + 1))
            elif isinstance(item, (list, tuple, set, frozenset)):
                stack.extend((entry, depth + 1) for entry in item)
    return True


def same(a: object, b: object) -> bool:
    """Return whether ``a`` and ``b`` are the same plain data: exact types, equal, recursively.

    Both must be :func:`plain`; then ``type(a) is type(b) and a == b`` at
    every level (``1``, ``1.0`` and ``True`` differ; ``[1]`` and ``(1,)``
    differ; a ``float`` NaN is not the same as itself, as ``==`` says).
    Anything that is not plain data is the same as nothing.
    """
    if not (plain(a) and plain(b)):
        return False
    return _same(a, b)


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        stored = {key: key for key in b}  # b's own key for each key equal to it
        return all(
            key in stored and _same(key, stored[key]) and _same(value, b[key])
            for key, value in a.items()
        )
    if isinstance(a, (set, frozenset)) and isinstance(b, (set, frozenset)):
        stored = {item: item for item in b}
        return len(a) == len(b) and all(x in stored and _same(x, stored[x]) for x in a)
    return bool(a == b)


def strict(
    function: Callable[..., object],
    name: str | None = None,
    failures: list[str] | None = None,
    *,
    _plain: Callable[[object], bool] = plain,
) -> Callable[..., object]:
    """Return ``function`` wrapped so that a result that is not :func:`plain` data fails the call.

    The wrapper calls ``function`` with its arguments and returns its result
    when it is plain data; otherwise it raises :class:`NotPlainData` naming
    the function and the result's type, in the caller's frame (the
    candidate's code has returned: it cannot catch it). When ``failures`` is
    given, each refusal is also appended to it, so a test that swallows the
    exception does not hide it. ``name`` defaults to the function's
    ``__name__``.
    """
    called = name if name is not None else str(getattr(function, "__name__", "the function"))
    is_plain = _plain

    def checked(*args: object, **kwargs: object) -> object:
        result = function(*args, **kwargs)
        if not is_plain(result):
            try:
                kind = str(type(result).__name__)
            except Exception:
                kind = "an object"
            reason = f"{called} returned {kind}, not plain data"
            if failures is not None:
                failures.append(reason)
            raise NotPlainData(reason)
        return result

    checked.__name__ = called
    return checked


# -- running candidate code ----------------------------------------------------------


class Outcome:
    """What became of candidate code run in a child process; read-only.

    ``passed``: for :func:`check_function` and :func:`run_tests`, the
    driver's report over the private channel said that every test ran to
    its end and passed, the child exited 0, and nothing the driver checks
    was replaced (see :func:`check_function`); for :func:`run_command`, the
    command exited 0 — which its own code can always make it do.
    ``reason`` says why, in one line. ``exit_status`` is the child's
    (negative: the signal that ended it; ``None`` when it did not start);
    ``timed_out`` whether it was killed at the timeout (never a pass).
    ``stdout`` and ``stderr`` are the last bytes of the child's own output,
    at most the ``output_limit`` given.
    """

    __slots__ = ("exit_status", "passed", "reason", "stderr", "stdout", "timed_out")

    passed: bool
    reason: str
    exit_status: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes

    def __init__(  # noqa: PLR0917 - a value read back by name, never built by a rubric
        self,
        passed: bool,
        reason: str,
        exit_status: int | None = None,
        timed_out: bool = False,
        stdout: bytes = b"",
        stderr: bytes = b"",
    ) -> None:
        for field, value in (
            ("passed", passed),
            ("reason", reason),
            ("exit_status", exit_status),
            ("timed_out", timed_out),
            ("stdout", stdout),
            ("stderr", stderr),
        ):
            object.__setattr__(self, field, value)

    def __setattr__(self, name: str, value: object) -> None:
        msg = "an Outcome is read-only"
        raise AttributeError(msg)

    def __repr__(self) -> str:
        return (
            f"Outcome(passed={self.passed!r}, reason={self.reason!r}, "
            f"exit_status={self.exit_status!r}, timed_out={self.timed_out!r})"
        )


def check_function(
    candidate: str | os.PathLike[str],
    *,
    module: str,
    entry: str,
    tests: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    context: str | os.PathLike[str] | None = None,
    timeout: float = 10.0,
    memory: int | None = None,
    site: bool = False,
    output_limit: int = 65536,
) -> Outcome:
    """Check the function ``entry`` of the candidate's module ``module`` with the case's tests.

    HumanEval's way, in a child process. The child (this file run by
    ``sys.executable -I -S -B``: no ``PYTHONPATH``, no ``site``, so no
    ``sitecustomize``, ``usercustomize`` or ``.pth`` of anyone's; with
    ``site=True``, ``-I -B``: the interpreter's site-packages, still none of
    the candidate's hooks) runs in a fresh temporary directory holding a
    copy of the ``candidate`` tree (without ``__pycache__``), which is its
    working directory and the *last* entry of ``sys.path`` (the standard
    library wins over a candidate's ``random.py``). Its argv and
    environment name no path of the rubric's (``PATH``, the locale, ``TZ``,
    ``HOME`` and ``TMPDIR`` in the temporary directory); stdin is
    ``/dev/null``; stdout and stderr are pipes of its own.

    In the child, in this order: the builtins, ``sys.exit``, ``os._exit``
    and the functions the driver uses are kept; ``context`` (a file of the
    case: HumanEval's prompt, whose helpers a test calls) is executed in the
    tests' namespace; ``module`` is imported from the copy; ``entry`` is
    put in the namespace wrapped by :func:`strict`; each test source is
    executed there (a test ends by calling ``check(<entry>)``, as
    HumanEval's do). The tests pass when each ran to its end (a
    ``SystemExit``, even 0, is not an end), no result of ``entry`` was
    refused, no builtin or kept function was replaced, no trace or profile
    function is set and no thread candidate code started still runs. Only
    then does the driver read the rubric's random nonce from a private pipe
    and report with it on another; the child must also exit 0.

    ``tests`` and ``context`` are files the rubric reads (its case's),
    never the candidate's: one inside ``candidate`` raises ``ValueError``;
    their text, not their path, reaches the child. ``timeout`` (seconds;
    keep it below the case's) kills the child's process group, which is a
    failure; ``memory`` (MiB) sets the child's ``RLIMIT_AS``.
    """
    spec: dict[str, object] = {
        "mode": "function",
        "module": module,
        "entry": entry,
        "tests": _sources(candidate, tests),
        "context": _sources(candidate, context)[0] if context is not None else None,
    }
    return _drive_child(candidate, spec, timeout, memory, site, output_limit)


def run_tests(
    candidate: str | os.PathLike[str],
    tests: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    timeout: float = 10.0,
    memory: int | None = None,
    site: bool = False,
    output_limit: int = 65536,
) -> Outcome:
    """Run the case's test files against a copy of ``candidate``, in a child process.

    As :func:`check_function` (the same child, copy, channel and checks),
    but each test file is executed as a module of its own (named so that an
    ``if __name__ == "__main__"`` block does not run), importing the
    candidate's modules from the copy. When a test's text mentions
    ``unittest``, the driver imports ``unittest`` before any candidate code
    and keeps its ``TestCase``, ``TestResult``, ``TestSuite`` and
    ``TestLoader``; the ``unittest.TestCase`` classes each test file
    defines are run, and the tests pass only when at least one ran, none
    failed, erred or was skipped, and nothing kept was replaced. A test file
    without test cases passes when it runs to its end.
    """
    spec: dict[str, object] = {"mode": "script", "tests": _sources(candidate, tests)}
    return _drive_child(candidate, spec, timeout, memory, site, output_limit)


def run_command(
    argv: Sequence[str],
    candidate: str | os.PathLike[str],
    *,
    timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    output_limit: int = 65536,
) -> Outcome:
    """Run ``argv`` in a copy of ``candidate``, as :func:`check_function` runs its child.

    The same copy, working directory, environment (``env`` replaces it),
    stdin, own pipes, process group and timeout; no channel, so ``passed``
    is the command's exit status 0 — which code of the candidate's that the
    command runs (a ``conftest.py``, an ``atexit`` hook) can always forge.
    Judge its output with care, or use :func:`run_tests`.
    """
    if not argv:
        msg = "argv must name a program"
        raise ValueError(msg)
    return _run_child(list(argv), candidate, None, timeout, env, output_limit)


def _sources(
    candidate: str | os.PathLike[str],
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[list[str]]:
    """Return ``[name, text]`` of each file of ``paths``; refuse one in the candidate's tree."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    tree = os.path.realpath(candidate)
    found = []
    for path in paths:
        real = os.path.realpath(path)
        if real == tree or real.startswith(tree.rstrip(os.sep) + os.sep):
            msg = f"{os.fspath(path)} is in the candidate's tree: tests come from the case"
            raise ValueError(msg)
        with open(real, encoding="utf-8") as source:
            found.append([os.path.basename(real), source.read()])
    if not found:
        msg = "no test file given"
        raise ValueError(msg)
    return found


def _drive_child(  # noqa: PLR0917 - private: its two callers name what they pass
    candidate: str | os.PathLike[str],
    spec: dict[str, object],
    timeout: float,
    memory: int | None,
    site: bool,
    output_limit: int,
) -> Outcome:
    tests = spec["tests"]
    assert isinstance(tests, list)
    spec["memory"] = None if memory is None else int(memory) * 1024 * 1024
    spec["unittest"] = any("unittest" in text for _, text in tests)
    argv = [sys.executable, "-I", "-B"] if site else [sys.executable, "-I", "-S", "-B"]
    argv += ["-c", _BOOT, os.path.abspath(__file__)]
    return _run_child(argv, candidate, spec, timeout, None, output_limit)


def _child_environment(tmp: str) -> dict[str, str]:
    env = {"HOME": tmp, "TMPDIR": tmp}
    for name, value in os.environ.items():
        if name in _PASSED_THROUGH or name.startswith("LC_"):
            env[name] = value
    env.setdefault("PATH", os.defpath)
    return env


def _run_child(  # noqa: PLR0915, PLR0917 - one loop: the child's pipes, channel and deadline together
    argv: list[str],
    candidate: str | os.PathLike[str],
    spec: dict[str, object] | None,
    timeout: float,
    env: Mapping[str, str] | None,
    output_limit: int,
) -> Outcome:
    # Deferred: the driver (this file run as a script) never needs them.
    import selectors  # noqa: PLC0415 - see the comment above
    import shutil  # noqa: PLC0415 - see the comment above
    import signal  # noqa: PLC0415 - see the comment above
    import subprocess  # noqa: PLC0415 - see the comment above
    import tempfile  # noqa: PLC0415 - see the comment above
    import time  # noqa: PLC0415 - see the comment above

    if isinstance(timeout, bool) or not timeout > 0:
        msg = f"timeout must be a positive number of seconds, got {timeout!r}"
        raise ValueError(msg)
    if not os.path.isdir(candidate):
        return Outcome(False, f"the candidate {os.fspath(candidate)} is not a directory")
    work = tempfile.mkdtemp(prefix="codegenie-kit-")
    opened: list[int] = []
    process = None
    try:
        tree = os.path.join(work, "candidate")
        tmp = os.path.join(work, "tmp")
        os.mkdir(tmp, 0o700)
        try:
            shutil.copytree(
                candidate, tree, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        except (OSError, shutil.Error) as exc:
            return Outcome(False, f"cannot copy the candidate: {exc}")
        passed_fds: tuple[int, ...] = ()
        channel_fd = feed_fd = -1
        feed = b""
        if spec is not None:
            child_in, feed_fd = os.pipe()
            channel_fd, child_out = os.pipe()
            opened += [child_in, feed_fd, channel_fd, child_out]
            passed_fds = (child_in, child_out)
            argv = [*argv, str(child_in), str(child_out)]
            body = marshal.dumps(spec)  # the child is this interpreter: the same format
            feed = b"%0*d" % (_SPEC_HEADER, len(body)) + body
        group: dict[str, object] = (
            {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
        )
        try:
            process = subprocess.Popen(  # type: ignore[call-overload]
                argv,
                cwd=tree,
                env=dict(env) if env is not None else _child_environment(tmp),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=passed_fds,
                close_fds=True,
                **group,
            )
        except OSError as exc:
            return Outcome(False, f"cannot start {argv[0]}: {exc.strerror or exc}")
        assert process is not None
        assert process.stdout is not None
        assert process.stderr is not None
        if spec is not None:
            os.close(passed_fds[0])
            os.close(passed_fds[1])
            opened = [fd for fd in opened if fd not in passed_fds]
        outputs = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        channel = bytearray()
        nonce = os.urandom(_NONCE_BYTES // 2).hex().encode("ascii")
        selector = selectors.DefaultSelector()
        for fd in outputs:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        if spec is not None:
            os.set_blocking(channel_fd, False)
            os.set_blocking(feed_fd, False)
            selector.register(channel_fd, selectors.EVENT_READ)
            selector.register(feed_fd, selectors.EVENT_WRITE)
        exited = _exit_watch(process.pid, selector, opened)
        deadline = time.monotonic() + timeout
        timed_out = False
        asked = False

        def take(fd: int) -> bool:
            """Read what ``fd`` holds now (a bounded amount); return whether it is at its end."""
            for _ in range(16):
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    return False
                except OSError:
                    return True
                if not chunk:
                    return True
                if fd == channel_fd:
                    channel.extend(chunk[: 4096 - len(channel)])
                else:
                    kept = outputs[fd]
                    kept.extend(chunk)
                    if len(kept) > output_limit:
                        del kept[: len(kept) - output_limit]
            return False

        while process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, events in selector.select(min(left, 0.05 if exited is None else left)):
                fd = key.fd
                if events & selectors.EVENT_WRITE:
                    try:
                        written = os.write(fd, feed)
                    except BlockingIOError:
                        continue
                    except OSError:
                        written = len(feed)
                    feed = feed[written:]
                    if not feed:
                        selector.unregister(fd)
                elif fd == exited or take(fd):
                    selector.unregister(fd)
                if spec is not None and not asked and channel.startswith(b"R\n"):
                    asked = True
                    if feed:  # asked before its spec was read whole: not the driver
                        feed = b""
                    else:
                        feed = nonce
                        selector.register(feed_fd, selectors.EVENT_WRITE)
        try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:  # the group has ended already
            pass
        status = process.wait()
        for fd in (*outputs, channel_fd):
            if fd >= 0:
                take(fd)
        stdout = bytes(outputs[process.stdout.fileno()])
        stderr = bytes(outputs[process.stderr.fileno()])
        selector.close()
        if timed_out:
            reason = f"timed out after {timeout:g} s: the candidate's processes were killed"
            return Outcome(False, reason, status, True, stdout, stderr)
        if spec is None:
            ended = _ending(status)
            return Outcome(status == 0, ended, status, False, stdout, stderr)
        passed, reason = _judge(bytes(channel), nonce, status)
        return Outcome(passed, reason, status, False, stdout, stderr)
    finally:
        if process is not None:
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            if process.returncode is None:
                try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
                    os.killpg(process.pid, signal.SIGKILL)
                except OSError:  # the group has ended already
                    pass
                process.wait()
        for fd in opened:
            try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
                os.close(fd)
            except OSError:  # closed already
                pass
        _remove(work)


def _exit_watch(pid: int, selector: object, opened: list[int]) -> int | None:
    """Register a pidfd of ``pid`` with ``selector``; return it, or ``None`` (then poll)."""
    import selectors  # noqa: PLC0415 - imported already by the caller: a lookup

    try:
        fd = os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        return None
    opened.append(fd)
    assert isinstance(selector, selectors.BaseSelector)
    selector.register(fd, selectors.EVENT_READ)
    return int(fd)


def _ending(status: int) -> str:
    if status < 0:
        return f"killed by signal {-status}"
    return f"exited {status}"


def _judge(channel: bytes, nonce: bytes, status: int) -> tuple[bool, str]:
    r"""Read the driver's report off ``channel``: ``R\\n``, then ``D <nonce> <0|1> <reason>\\n``."""
    if not channel.startswith(b"R\n"):
        return False, f"the tests did not run to their end ({_ending(status)})"
    report = channel[2:]
    head = b"D " + nonce + b" "
    if not report:
        return False, f"the tests did not report ({_ending(status)})"
    if not report.startswith(head) or not report.endswith(b"\n") or report.count(b"\n") != 1:
        return False, "the test driver's channel was written by someone else"
    flag, _, said = report[len(head) : -1].partition(b" ")
    reason = said.decode("utf-8", "replace")
    if flag != b"1":
        return False, reason or "the tests failed"
    if status != 0:
        return False, f"the tests passed, but the candidate's process {_ending(status)}"
    return True, reason or "tests passed"


def _remove(path: str) -> None:
    import shutil  # noqa: PLC0415 - imported already by the caller: a lookup

    def unlock(function: object, name: str, _: object) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
        except OSError:
            return
        if os.path.isdir(name) and not os.path.islink(name):
            shutil.rmtree(name, ignore_errors=True)
        else:
            try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
                os.unlink(name)
            except OSError:  # gone already, or the rmtree after reports it
                pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=unlock)
    else:
        shutil.rmtree(path, onerror=unlock)


# -- the driver: this file run as a script, in the child -----------------------------


def _drive() -> NoReturn:  # noqa: PLR0915 - one program, in the order it must run
    """Run the child's tests, then report: ``python -I -S -B -c BOOT THIS FD_IN FD_OUT``.

    Everything it uses once candidate code has run is bound here first, to
    the originals: candidate code that rebinds a builtin, ``os.write`` or a
    name of this module does not change what the driver calls, and the
    rebinding itself is found and fails the tests.
    """
    read, write, end = os.read, os.write, os._exit
    fd_in, fd_out = int(sys.argv[-2]), int(sys.argv[-1])
    header = _read_exactly(read, fd_in, _SPEC_HEADER)
    spec = marshal.loads(_read_exactly(read, fd_in, int(header)))  # noqa: S302 - the rubric's
    if spec["memory"]:
        import resource  # noqa: PLC0415 - only a limited child needs it

        resource.setrlimit(resource.RLIMIT_AS, (spec["memory"], spec["memory"]))
    # The driver's own, before any candidate code; _signal is signal's C half (the Python
    # half imports enum, a tenth of the child's start).
    import _signal  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415
    import builtins  # noqa: PLC0415 - see the comment above
    import gc  # noqa: PLC0415 - see the comment above
    import importlib  # noqa: PLC0415 - see the comment above

    kept: list[tuple[str, object, str, object]] = []
    for owner, label, names in (
        (builtins, "builtins", tuple(vars(builtins))),
        (sys.modules[__name__], "the driver", tuple(vars(sys.modules[__name__]))),
        (sys, "sys", ("exit", "settrace", "setprofile", "gettrace", "getprofile", "modules")),
        (os, "os", ("_exit", "read", "write", "close", "listdir")),
        (importlib, "importlib", ("import_module",)),
    ):
        kept += [(f"{label}.{name}", owner, name, vars(owner)[name]) for name in names]
    if spec["unittest"]:
        import unittest  # noqa: PLC0415 - its machinery kept before any candidate code

        classes = (unittest.TestCase, unittest.TestResult, unittest.TestSuite, unittest.TestLoader)
        for cls in classes:
            label = f"unittest.{cls.__name__}"
            kept += [(f"{label}.{name}", cls, name, value) for name, value in vars(cls).items()]
        names = ("TestCase", "TestResult", "TestSuite", "TestLoader", "SkipTest")
        kept += [(f"unittest.{name}", unittest, name, vars(unittest)[name]) for name in names]
    compile_, exec_, type_, vars_ = compile, exec, type, vars
    import_module, make_strict, check_plain = importlib.import_module, strict, plain
    run_unittest, describe, one_line, count_threads = _unittest, _describe, _one_line, _threads
    read_exactly = _read_exactly
    gettrace, getprofile, disable = sys.gettrace, sys.getprofile, gc.disable
    sigmask, every_signal = getattr(_signal, "pthread_sigmask", None), _signal.valid_signals()
    block: int = _signal.SIG_BLOCK
    modules, append_path, cwd, missing = sys.modules, sys.path.append, os.getcwd(), _MISSING
    threads = count_threads()
    failures: list[str] = []
    try:
        append_path(cwd)  # last: the standard library wins over a candidate's random.py
        if spec["mode"] == "function":
            module = type_(sys)(_TEST_MODULE)
            namespace = vars_(module)
            namespace["__builtins__"] = builtins
            modules[_TEST_MODULE] = module
            if spec["context"] is not None:
                name, text = spec["context"]
                exec_(compile_(text, name, "exec", dont_inherit=True), namespace)
            function = getattr(import_module(spec["module"]), spec["entry"])
            namespace[spec["entry"]] = make_strict(
                function, spec["entry"], failures, _plain=check_plain
            )
            for name, text in spec["tests"]:
                exec_(compile_(text, name, "exec", dont_inherit=True), namespace)
        else:
            for index, (name, text) in enumerate(spec["tests"]):
                module_name = f"{_TEST_MODULE}{index}"
                module = type_(sys)(module_name)
                vars_(module).update(__builtins__=builtins, __file__=name)
                modules[module_name] = module
                exec_(compile_(text, name, "exec", dont_inherit=True), vars_(module))
                if spec["unittest"]:
                    run_unittest(module, module_name, failures)
    except BaseException as exc:
        failures.append(describe(exc, spec))
    replaced = [
        label for label, owner, name, value in kept if vars_(owner).get(name, missing) is not value
    ]
    if replaced:
        failures.append("candidate code replaced " + ", ".join(replaced[:8]))
    if gettrace() is not None or getprofile() is not None:
        failures.append("candidate code set a trace or profile function")
    left = count_threads()
    if left > threads:
        failures.append(f"candidate code left {left - threads} thread(s) running")
    disable()
    if sigmask is not None:
        sigmask(block, every_signal)
    message = one_line(failures[0] if failures else "tests passed").encode("utf-8", "replace")
    flag = b"0" if failures else b"1"
    try:
        write(fd_out, b"R\n")
        nonce = read_exactly(read, fd_in, _NONCE_BYTES)
        write(fd_out, b"D " + nonce + b" " + flag + b" " + message + b"\n")
    except BaseException:
        end(3)
    if failures:  # the candidate's own output helps to say why; it can change nothing now
        for stream in (sys.stdout, sys.stderr):
            try:  # noqa: SIM105 - no contextlib: the driver imports as little as it can
                stream.flush()
            except BaseException:  # noqa: S110 - the report is out
                pass
        end(1)
    end(0)


_MISSING = object()


def _read_exactly(
    read: Callable[[int, int], bytes],
    fd: int,
    size: int,
    length: Callable[[bytes], int] = len,  # bound now: candidate code may replace builtins.len
) -> bytes:
    data = b""
    while length(data) < size:
        chunk = read(fd, size - length(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _threads() -> int:
    """Return how many threads this process has (``/proc/self/task``), or 1 where unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _unittest(module: object, module_name: str, failures: list[str]) -> None:
    import unittest  # noqa: PLC0415 - imported before any candidate code: a lookup

    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    for value in list(vars(module).values()):
        if (
            isinstance(value, type)
            and issubclass(value, unittest.TestCase)
            and value.__module__ == module_name
        ):
            suite.addTests(loader.loadTestsFromTestCase(value))
    if suite.countTestCases() == 0:
        return
    result = unittest.TestResult()
    suite.run(result)
    if result.failures or result.errors:
        test, trace = (result.failures + result.errors)[0]
        failures.append(f"{test.id().rsplit('.', 1)[-1]}: {trace.strip().splitlines()[-1]}")
    elif result.skipped:
        failures.append(f"{len(result.skipped)} test(s) skipped: a skipped test is not a pass")
    elif result.unexpectedSuccesses or result.testsRun == 0:
        failures.append("the tests did not pass")


def _describe(exc: BaseException, spec: dict[str, object]) -> str:
    """Return ``exc`` as a failure: its type, message and the test's line it came through."""
    try:
        kind = str(type(exc).__name__)
        said = str(exc)[:300]
    except BaseException:
        kind, said = "an exception", ""
    tests = spec.get("tests")
    names = {name for name, _ in tests} if isinstance(tests, list) else set()
    where = ""
    trace = exc.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if code.co_filename in names:
            where = f" ({code.co_filename} line {trace.tb_lineno})"
        trace = trace.tb_next
    if isinstance(exc, SystemExit):
        return f"the tests were ended by SystemExit({said}){where}"
    return f"{kind}{': ' + said if said else ''}{where}"


if __name__ == "__main__":
    _drive()
elif __name__ == "codegenie_rubric":
    _seal()
