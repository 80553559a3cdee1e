"""A run's last steps of confinement, inside its sandbox: sealed devices, no capability, a filter.

Standard library only, and never imported by the harness: this file's
source is a program of its own, run where the harness is not importable (by
the run's interpreter, which may be a task class's environment). Two
programs use it:

- a plain run's first process (:func:`head`, run by bubblewrap with
  ``CAP_SYS_ADMIN`` and ``CAP_SETPCAP`` in the sandbox's user namespace and
  no filter yet): ``python -I -S -c SOURCE FILTER_FD -- COMMAND...`` takes
  a mount namespace of its own (which its user namespace owns, so that it
  may remount), seals the device nodes (:func:`seal_device_nodes`), opens
  its standard streams that are devices again through them
  (:func:`reopen_devices`), drops every capability
  (:func:`drop_capabilities`), loads the seccomp filter read from
  ``FILTER_FD`` (:func:`load_filter`) and execs ``COMMAND`` in its place:
  the rubric keeps the process, so bubblewrap's status is the rubric's;
- the warm worker (:mod:`codegenie.eval._sandbox.warm.zygote`), which receives this
  source with its own and runs it as a module, for the same steps in each
  run it forks.

Why the device nodes are sealed: ``/dev/null``, ``zero``, ``full``,
``random``, ``urandom`` and ``tty`` of a sandbox are the host's nodes,
bound. A harness run as root has a sandbox whose uid 0 is the host's root,
the nodes' owner, so without this a run could ``chmod``, ``chown``, set an
ACL on or change the times of the host's nodes; an unprivileged harness's
run could still ``touch`` them (write permission suffices). Each node's
mount is made read-only here, without ``nodev`` (bubblewrap's own read-only
remounts always add it, which would make the nodes unusable): every change
of a node's metadata then fails with ``EROFS``, through its path, a
descriptor or ``/proc/self/fd``, while reading and writing the device
itself is unaffected (a device is exempt from its mount's read-only flag).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import stat
import sys

_LIBC = ctypes.CDLL(None, use_errno=True)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MS_STRICTATIME = 1 << 24
_CLONE_NEWNS = 0x00020000
_PR_CAPBSET_DROP = 24
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SECCOMP_MODE_FILTER = 2
# capset's number by machine: x86_64 has its own table, the others the generic one.
_CAPSET = {"x86_64": 126, "aarch64": 91, "riscv64": 91}
#: The exit status of a run whose confinement failed (as the launcher's, the zygote's).
SETUP_FAILED = 125
# A mount's flags as statvfs says them, and as mount(2) takes them.
_KEPT_FLAGS = (
    (os.ST_RDONLY, MS_RDONLY),
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
)


class SetupError(Exception):
    """A step of a run's setup failed; the message says which and why (``mount /dev/null: ...``)."""


def check(result: int, what: str) -> None:
    """Raise :class:`SetupError` naming ``what`` and ``errno`` when ``result`` is not 0."""
    if result != 0:
        number = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(number)}")


def mount(source: str | None, target: str, kind: str | None, flags: int, data: str = "") -> None:
    """Mount as ``mount(2)`` does; raise :class:`SetupError` naming ``target`` when it fails."""
    check(
        _LIBC.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if kind is None else kind.encode(),
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def mount_flags(path: str) -> int:
    """Return the flags of the mount ``path`` is on, as ``mount(2)`` takes them.

    Every per-mount flag, the access-time ones included: a mount that came
    from a more privileged namespace has them locked, and a remount that
    would change one is refused.
    """
    said = os.statvfs(path).f_flag
    flags = 0
    for bit, flag in _KEPT_FLAGS:
        if said & bit:
            flags |= flag
    if not said & os.ST_NOATIME:
        flags |= MS_RELATIME if said & os.ST_RELATIME else MS_STRICTATIME
    return flags


def device_mounts(top: str = "/dev") -> list[str]:
    """Return the mount points under ``top`` that are device nodes (this process's mount table)."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
        for line in table:
            point = line.split()[4]
            point = point.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            point = point.replace("\\134", "\\")
            if not point.startswith(top + "/"):
                continue
            try:
                mode = os.stat(point).st_mode
            except OSError:
                continue
            if (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and point not in found:
                found.append(point)
    return found


def seal_device_nodes(top: str = "/dev") -> list[str]:
    """Make the mount of each device node under ``top`` read-only, devices still allowed.

    Each node's mount keeps its other flags (``nosuid``, the access-time
    ones) and never gains ``nodev``. Returns the nodes sealed; raises
    :class:`SetupError` naming the node that could not be (which needs
    ``CAP_SYS_ADMIN`` in the mount namespace's user namespace).
    """
    nodes = device_mounts(top)
    for node in nodes:
        kept = mount_flags(node) & ~MS_NODEV
        mount(None, node, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
    return nodes


def reopen_devices(fds: tuple[int, ...] = (0, 1, 2), top: str = "/dev") -> list[int]:
    """Open again, from the sealed nodes under ``top``, each of ``fds`` that is a device.

    The harness opens a run's stdin (``/dev/null``) outside the sandbox: a
    descriptor of the host's node, through the host's writable mount, on
    which ``fchmod`` or ``futimens`` (or a path through ``/proc/self/fd``)
    would change the host's node. Each such descriptor is replaced by the
    same device (its numbers) opened through its sealed mount, with the
    same access mode and status flags. Returns the descriptors replaced; a
    device no sealed node matches is left as it is (a run's streams are
    ``/dev/null`` and pipes).
    """
    sealed: dict[int, str] = {}
    for node in device_mounts(top):
        sealed.setdefault(os.stat(node).st_rdev, node)
    replaced = []
    for fd in fds:
        try:
            held = os.fstat(fd)
        except OSError:
            continue
        same = sealed.get(held.st_rdev) if stat.S_ISCHR(held.st_mode) else None
        if same is None:
            continue
        flags = fcntl.fcntl(fd, fcntl.F_GETFL) & (os.O_ACCMODE | os.O_APPEND | os.O_NONBLOCK)
        opened = os.open(same, flags | os.O_NOCTTY)
        try:
            os.dup2(opened, fd, inheritable=os.get_inheritable(fd))
        finally:
            os.close(opened)
        replaced.append(fd)
    return replaced


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


class _Program(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def drop_capabilities() -> None:
    """Drop every capability: the bounding set (while ``CAP_SETPCAP`` allows), ambient, the rest.

    With the bounding set empty, not even an exec as the namespace's root
    gives any back.
    """
    for capability in range(64):
        if _LIBC.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel has
    _LIBC.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two data words
    data = (_CapData * 2)()
    check(_LIBC.syscall(_CAPSET[os.uname().machine], ctypes.byref(header), data), "capset")


def load_filter(code: bytes) -> None:
    """Set ``no_new_privs`` and load the seccomp filter ``code`` (its BPF instructions)."""
    check(_LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    buffer = ctypes.create_string_buffer(code, len(code))
    program = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(
        _LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0), "seccomp"
    )


def head(argv: list[str]) -> None:
    """Confine this process, then exec the command; never return.

    ``argv`` is ``[FILTER_FD, "--", COMMAND...]``. A step that fails ends
    the process with :data:`SETUP_FAILED`, its reason on stderr; a program
    of the command that cannot be started ends it with 127 (not found) or
    126 (not a program it may run), as a shell does, naming the program.
    """
    try:
        fd = int(argv[0])
        if argv[1] != "--" or len(argv) < 3:
            raise SetupError("usage: FILTER_FD -- COMMAND...")
        code = b""
        while chunk := os.read(fd, 65536):
            code += chunk
        os.close(fd)
        # A mount namespace of its own, owned by the user namespace it is in: bubblewrap's
        # is owned by the first it made, and the command is in a second one whenever the
        # sandbox's uid is not that namespace's or new ones are disabled (--disable-userns).
        check(_LIBC.unshare(_CLONE_NEWNS), "unshare")
        seal_device_nodes()
        reopen_devices()
        drop_capabilities()
        load_filter(code)
        command = argv[2:]
    except BaseException as exc:  # whatever it is, the run does not start
        # The words are confining.FAILED's: the harness knows a failed confinement by them.
        os.write(2, f"codegenie sandbox: cannot confine the run: {exc}\n".encode())
        os._exit(SETUP_FAILED)
    try:
        os.execvp(command[0], command)  # noqa: S606 - the run's own command, as bubblewrap runs it
    except BaseException as exc:  # confined, but its program cannot start: the command's fault
        # As a shell says it: 127 for a program that is not there, 126 for one that cannot run.
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        line = f"codegenie sandbox: cannot run the command's program {command[0]!r}: {said}\n"
        os.write(2, line.encode("utf-8", "backslashreplace"))
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    head(sys.argv[1:])
