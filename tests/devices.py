"""The host's device nodes as a sandboxed run sees them: a rubric that tries to change them, and a look from outside.

:data:`CHANGE_NODES` is a rubric that tries every change of metadata it can
think of on each node a sandbox binds (``null``, ``zero``, ``full``,
``random``, ``urandom``, ``tty``): through its path, a descriptor, an
``O_PATH`` descriptor and ``/proc/self/fd``; and its neighbours (``mknod``,
a hard link, renaming or removing the node). It prints what each attempt
did (``"OK"``, or the error's name) and whether it ran in a warm worker.
:func:`host_nodes` is what the host's nodes are, from outside; :func:`restore`
puts back what a run changed (a safety net for the host when the sandbox
does not hold, as on the code before it did).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

NODES = ("null", "zero", "full", "random", "urandom", "tty")

CHANGE_NODES = r"""
import errno, json, os, stat, sys

NODES = ("null", "zero", "full", "random", "urandom", "tty")
# A minimal access ACL (user, group and other: rw), as setfacl writes it.
ACL = bytes.fromhex("02000000" "01000600ffffffff" "04000600ffffffff" "20000600ffffffff")
tried = {}


def attempt(what, action):
    try:
        action()
        tried[what] = "OK"
    except OSError as exc:
        tried[what] = errno.errorcode.get(exc.errno, str(exc.errno))


for name in NODES:
    path = f"/dev/{name}"
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666
    other = mode ^ 0o001
    attempt(f"{name} chmod", lambda: os.chmod(path, other))
    attempt(f"{name} chmod same", lambda: os.chmod(path, mode))
    attempt(f"{name} chown own", lambda: os.chown(path, os.getuid(), os.getgid()))
    attempt(f"{name} chown other", lambda: os.chown(path, 1, 1))
    attempt(f"{name} touch", lambda: os.utime(path))
    attempt(f"{name} utime", lambda: os.utime(path, (1, 1)))
    attempt(f"{name} lutime", lambda: os.utime(path, (2, 2), follow_symlinks=False))
    for key, value in (("system.posix_acl_access", ACL), ("user.mark", b"1"),
                       ("trusted.mark", b"1"), ("security.mark", b"1")):
        attempt(f"{name} setxattr {key}", lambda: os.setxattr(path, key, value))
        attempt(f"{name} removexattr {key}", lambda: os.removexattr(path, key))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        tried[f"{name} open"] = errno.errorcode.get(exc.errno, str(exc.errno))
    else:
        attempt(f"{name} fchmod", lambda: os.fchmod(fd, other))
        attempt(f"{name} fchown", lambda: os.fchown(fd, os.getuid(), os.getgid()))
        attempt(f"{name} futimens", lambda: os.utime(fd))
        attempt(f"{name} futimens times", lambda: os.utime(fd, (3, 3)))
        attempt(f"{name} fsetxattr", lambda: os.setxattr(fd, "system.posix_acl_access", ACL))
        attempt(f"{name} proc chmod", lambda: os.chmod(f"/proc/self/fd/{fd}", other))
        attempt(f"{name} proc touch", lambda: os.utime(f"/proc/self/fd/{fd}"))
        os.close(fd)
    opath = os.open(path, os.O_PATH)
    attempt(f"{name} o_path chmod", lambda: os.chmod(f"/proc/self/fd/{opath}", other))
    attempt(f"{name} o_path touch", lambda: os.utime(f"/proc/self/fd/{opath}"))
    attempt(f"{name} o_path chown", lambda: os.chown(f"/proc/self/fd/{opath}", os.getuid(), os.getgid()))
    os.close(opath)
    attempt(f"{name} link", lambda: os.link(path, f"/dev/linked-{name}"))
    attempt(f"{name} rename", lambda: os.rename(path, f"/dev/renamed-{name}"))
    attempt(f"{name} unlink", lambda: os.unlink(path))
    attempt(f"{name} mknod", lambda: os.mknod(f"/dev/made-{name}", 0o666 | stat.S_IFCHR, os.makedev(1, 3)))
    attempt(f"{name} mknod tmp", lambda: os.mknod(f"/tmp/made-{name}", 0o666 | stat.S_IFCHR, os.makedev(1, 3)))
# The run's standard streams that are devices: the harness opens stdin, the host's
# /dev/null, outside the sandbox (stdout and stderr are the run's own pipes).
streams = {}
for fd, link in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
    held = os.fstat(fd)
    streams[link] = "device" if stat.S_ISCHR(held.st_mode) else "not a device"
    if not stat.S_ISCHR(held.st_mode):
        continue
    other = stat.S_IMODE(held.st_mode) ^ 0o001
    attempt(f"{link} fchmod", lambda: os.fchmod(fd, other))
    attempt(f"{link} futimens", lambda: os.utime(fd))
    attempt(f"{link} fchown", lambda: os.fchown(fd, os.getuid(), os.getgid()))
    attempt(f"{link} fsetxattr", lambda: os.setxattr(fd, "system.posix_acl_access", ACL))
    attempt(f"{link} proc chmod", lambda: os.chmod(f"/proc/self/fd/{fd}", other))
    attempt(f"{link} proc touch", lambda: os.utime(f"/proc/self/fd/{fd}"))
    attempt(f"{link} link touch", lambda: os.utime(f"/dev/{link}"))
# The devices themselves still work.
works = {}
with open("/dev/null", "wb") as sink:
    works["write null"] = sink.write(b"x") == 1
with open("/dev/zero", "rb") as zeros:
    works["read zero"] = zeros.read(4) == bytes(4)
with open("/dev/urandom", "rb") as noise:
    works["read urandom"] = len(noise.read(4)) == 4
try:
    with open("/dev/full", "wb", buffering=0) as full:
        full.write(b"x")
    works["write full"] = "written"
except OSError as exc:
    works["write full"] = errno.errorcode.get(exc.errno, str(exc.errno))
with open("/proc/self/cmdline", "rb") as own:
    warm = b"codegenie-warm-worker" in own.read()
changed = sorted(what for what, said in tried.items() if said == "OK")
said = {"warm": warm, "changed": changed, "tried": tried, "works": works, "streams": streams}
print(json.dumps({"passed": not changed, "reason": json.dumps(said)}))
sys.exit(0 if not changed else 1)
"""


class Node(NamedTuple):
    """A host node's metadata, as a run could change it."""

    mode: int
    uid: int
    gid: int
    atime_ns: int
    mtime_ns: int
    ctime_ns: int
    xattrs: tuple[str, ...]


def host_nodes() -> dict[str, Node]:
    """Return each host node's mode, owner, group, times (ns) and extended attributes' names."""
    found: dict[str, Node] = {}
    for name in NODES:
        path = f"/dev/{name}"
        each = os.stat(path)
        try:
            names = tuple(sorted(os.listxattr(path)))
        except OSError as exc:
            names = (f"listxattr: {exc.strerror}",)
        found[name] = Node(
            each.st_mode,
            each.st_uid,
            each.st_gid,
            each.st_atime_ns,
            each.st_mtime_ns,
            each.st_ctime_ns,
            names,
        )
    return found


def restore(before: dict[str, Node]) -> None:
    """Put back what a run changed of the host's nodes (all but ``ctime``), where allowed."""
    for name, node in before.items():
        path = Path("/dev", name)
        with contextlib.suppress(OSError):
            for extra in set(os.listxattr(path)) - set(node.xattrs):
                os.removexattr(path, extra)
        with contextlib.suppress(OSError):
            os.chown(path, node.uid, node.gid)
        with contextlib.suppress(OSError):
            os.chmod(path, node.mode & 0o7777)
        with contextlib.suppress(OSError):
            os.utime(path, ns=(node.atime_ns, node.mtime_ns))
