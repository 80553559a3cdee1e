"""The system calls no sandboxed run may make: a seccomp filter, compiled here to classic BPF.

bubblewrap loads it (``--seccomp FD``) into the sandbox's first process and
its init just before they start, so every process of the run — the rubric,
the candidate it runs, whatever they start — is under it, and nothing can
lift it (a filter can only be added to, never removed). What it denies, and
why (``EPERM`` unless said otherwise):

- **Reaching another process**: ``ptrace``, ``process_vm_readv``,
  ``process_vm_writev``, ``pidfd_getfd``, ``process_madvise``. Without them
  a candidate cannot write into, read from or take a descriptor of any
  process, the rubric that judges it included (a rubric still protects
  ``/proc/PID/mem`` and ``/proc/PID/fd`` itself by not being dumpable; the
  sandbox's own init is hidden from ``/proc``: :func:`policy.bwrap_args`).
- **The kernel's keyrings**: ``keyctl``, ``add_key``, ``request_key``, which
  are not namespaced: a session keyring inherited from the host would be
  readable, and a key left in it would outlive the run.
- **Unix-domain sockets by address**: ``socket(AF_UNIX, …)``. A read-only
  mount does not stop ``connect()`` to a socket file, so a listening socket
  anywhere the run can see (the task class's directory, an interpreter's
  prefix) would be reachable. ``socketpair`` stays allowed for stream and
  sequenced-packet sockets (``asyncio``, ``multiprocessing.Pipe``): such a
  pair is connected to itself and cannot be pointed elsewhere; a datagram
  pair can (``sendto`` names any address), so it is denied.
- **Namespaces and mounts**: ``unshare``, ``setns``, ``clone`` with any
  ``CLONE_NEW*`` flag, ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and
  the new mount API (``open_tree``, ``move_mount``, ``fsopen``,
  ``fsconfig``, ``fsmount``, ``fspick``, ``mount_setattr``,
  ``open_tree_attr``). ``clone3``, whose flags a filter cannot read, fails
  with ``ENOSYS``, so that the C library falls back to ``clone``.
- **Kernel attack surface no grading needs**: ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring_setup``/``enter``/``register`` (io_uring's
  operations are not seen by seccomp), ``open_by_handle_at``,
  ``name_to_handle_at``, ``fanotify_init``, ``syslog``, ``acct``,
  ``quotactl``/``quotactl_fd``, ``kexec_*``, module loading, ``reboot``,
  ``swapon``/``swapoff``, setting the clock, ``lookup_dcookie``,
  ``nfsservctl``, ``uselib``, ``iopl``, ``ioperm``, ``modify_ldt``, and the
  terminal ioctls that push input or talk to the console (``TIOCSTI``,
  ``TIOCLINUX``).
- **Disk space no one sees**: ``fallocate`` (``EOPNOTSUPP``: the C library's
  ``posix_fallocate`` then writes the bytes, at the speed of a write, which
  the disk limits watch), ``open``/``openat`` with ``O_TMPFILE``
  (``EOPNOTSUPP``: a file without a name, which no look at the run's
  directory finds) and ``openat2``, whose flags a filter cannot read
  (``ENOSYS``, so that callers fall back to ``openat``).
- **Another system-call table**: a call made through the 32-bit or x32
  entry points of a 64-bit kernel kills the process (the numbers there
  mean other calls, which this filter would not recognise).

Only the machines this module has a table for get a filter:
``x86_64``, ``aarch64`` and ``riscv64`` (:func:`program` returns ``None``
elsewhere, and the sandbox refuses to start, naming the machine).
"""

from __future__ import annotations

import errno
import functools
import os
import struct
from dataclasses import dataclass
from typing import Final

__all__ = (
    "CLONE_NAMESPACES",
    "DENIED",
    "Machine",
    "machine",
    "program",
)

# Classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it.
_LD_W_ABS: Final = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K: Final = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K: Final = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K: Final = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_AND_K: Final = 0x54  # BPF_ALU | BPF_AND | BPF_K
_RET_K: Final = 0x06  # BPF_RET | BPF_K
_ALLOW: Final = 0x7FFF0000
_KILL_PROCESS: Final = 0x80000000
_ERRNO: Final = 0x00050000
# Offsets in struct seccomp_data: the call's number, the ABI, and each argument's low
# 32 bits (the machines here are little-endian).
_NR: Final = 0
_ARCH: Final = 4


def _arg(index: int) -> int:
    return 16 + 8 * index


#: Every ``CLONE_NEW*`` flag ``clone`` takes (``CLONE_NEWTIME`` is ``clone3``'s and
#: ``unshare``'s only: in ``clone`` its bit is part of the exit signal).
CLONE_NAMESPACES: Final = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
_AF_UNIX: Final = 1
_SOCK_DGRAM: Final = 2
_SOCK_TYPE_MASK: Final = 0xF
# O_TMPFILE without O_DIRECTORY: the same bit on every machine here.
_O_TMPFILE_BIT: Final = 0x400000
_TIOCSTI: Final = 0x5412
_TIOCLINUX: Final = 0x541C
# x32 system calls are the x86_64 numbers with this bit set.
_X32_BIT: Final = 0x40000000

#: The calls denied outright, by name (see the module's docstring for why).
DENIED: Final = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "process_madvise",
    "keyctl",
    "add_key",
    "request_key",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_tree_attr",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "syslog",
    "acct",
    "quotactl",
    "quotactl_fd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "lookup_dcookie",
    "nfsservctl",
    "uselib",
    "iopl",
    "ioperm",
    "modify_ldt",
)

# The numbers every architecture with the generic table shares (aarch64, riscv64),
# from <asm-generic/unistd.h>; the calls it lacks (uselib, iopl…) are absent.
_GENERIC: Final = {
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "unshare": 97,
    "setns": 268,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "bpf": 280,
    "perf_event_open": 241,
    "userfaultfd": 282,
    "open_by_handle_at": 265,
    "name_to_handle_at": 264,
    "fanotify_init": 262,
    "syslog": 116,
    "acct": 89,
    "quotactl": 60,
    "kexec_load": 104,
    "kexec_file_load": 294,
    "init_module": 105,
    "finit_module": 273,
    "delete_module": 106,
    "reboot": 142,
    "swapon": 224,
    "swapoff": 225,
    "settimeofday": 170,
    "clock_settime": 112,
    "clock_adjtime": 266,
    "adjtimex": 171,
    "lookup_dcookie": 18,
    "nfsservctl": 42,
    "clone": 220,
    "socket": 198,
    "socketpair": 199,
    "ioctl": 29,
    "fallocate": 47,
    "openat": 56,
}
# Numbered alike on every architecture since Linux 5.0 (the unified table, 424 on).
_UNIFIED: Final = {
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_tree_attr": 467,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "quotactl_fd": 443,
    "clone3": 435,
    "openat2": 437,
}
# <asm/unistd_64.h> of x86_64.
_X86_64: Final = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "fanotify_init": 300,
    "syslog": 103,
    "acct": 163,
    "quotactl": 179,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
    "lookup_dcookie": 212,
    "nfsservctl": 180,
    "uselib": 134,
    "iopl": 172,
    "ioperm": 173,
    "modify_ldt": 154,
    "clone": 56,
    "socket": 41,
    "socketpair": 53,
    "ioctl": 16,
    "fallocate": 285,
    "open": 2,
    "openat": 257,
}


@dataclass(frozen=True, slots=True)
class Machine:
    """One architecture's system-call table: its audit ABI, and the numbers the filter uses."""

    name: str
    audit_arch: int
    numbers: dict[str, int]
    x32: bool = False


_MACHINES: Final = {
    "x86_64": Machine("x86_64", 0xC000003E, {**_X86_64, **_UNIFIED}, x32=True),
    "aarch64": Machine("aarch64", 0xC00000B7, {**_GENERIC, **_UNIFIED}),
    "riscv64": Machine("riscv64", 0xC00000F3, {**_GENERIC, **_UNIFIED}),
}


def machine(name: str | None = None) -> Machine | None:
    """Return the table of machine ``name`` (default: this one, ``uname -m``), or ``None``."""
    return _MACHINES.get(os.uname().machine if name is None else name)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _deny(number: int, errno_value: int) -> list[bytes]:
    """``if nr == number: return ERRNO(errno_value)``."""
    return [_op(_JEQ_K, number, 0, 1), _op(_RET_K, _ERRNO | errno_value)]


def _when(number: int, body: list[bytes]) -> list[bytes]:
    """``if nr == number: body`` (every path of which returns), else go on after it."""
    return [_op(_JEQ_K, number, 0, len(body)), *body]


def program(name: str | None = None) -> bytes | None:
    """Return the filter for machine ``name`` (default: this one), as ``--seccomp`` reads it.

    Compiled once per machine name and process (every run hands it to
    bubblewrap).

    ``None`` for a machine without a table here. The program checks the
    ABI first (another one kills the process), then denies each call of
    :data:`DENIED` with ``EPERM``, ``clone3`` and ``openat2`` with
    ``ENOSYS``, ``fallocate`` with ``EOPNOTSUPP``, and looks at the
    arguments of ``open``, ``openat``, ``clone``, ``socket``, ``socketpair``
    and ``ioctl``.
    """
    return _compiled(os.uname().machine if name is None else name)


@functools.cache
def _compiled(name: str) -> bytes | None:
    table = machine(name)
    if table is None:
        return None
    numbers = table.numbers
    allow = _op(_RET_K, _ALLOW)
    eperm = _op(_RET_K, _ERRNO | errno.EPERM)
    ops = [
        _op(_LD_W_ABS, _ARCH),
        _op(_JEQ_K, table.audit_arch, 1, 0),
        _op(_RET_K, _KILL_PROCESS),
        _op(_LD_W_ABS, _NR),
    ]
    if table.x32:
        ops += [_op(_JGE_K, _X32_BIT, 0, 1), _op(_RET_K, _KILL_PROCESS)]
    for call in DENIED:
        if call in numbers:
            ops += _deny(numbers[call], errno.EPERM)
    ops += _deny(numbers["clone3"], errno.ENOSYS)
    ops += _deny(numbers["openat2"], errno.ENOSYS)
    ops += _deny(numbers["fallocate"], errno.EOPNOTSUPP)
    # open(path, flags) and openat(dirfd, path, flags): no O_TMPFILE.
    for call, flags in (("open", 1), ("openat", 2)):
        if call in numbers:
            ops += _when(
                numbers[call],
                [
                    _op(_LD_W_ABS, _arg(flags)),
                    _op(_JSET_K, _O_TMPFILE_BIT, 0, 1),
                    _op(_RET_K, _ERRNO | errno.EOPNOTSUPP),
                    allow,
                ],
            )
    # Each block below returns on every path: the number in A is not needed after it.
    ops += _when(
        numbers["clone"],
        [_op(_LD_W_ABS, _arg(0)), _op(_JSET_K, CLONE_NAMESPACES, 0, 1), eperm, allow],
    )
    ops += _when(
        numbers["socket"],
        [_op(_LD_W_ABS, _arg(0)), _op(_JEQ_K, _AF_UNIX, 0, 1), eperm, allow],
    )
    ops += _when(
        numbers["socketpair"],
        [
            _op(_LD_W_ABS, _arg(0)),
            _op(_JEQ_K, _AF_UNIX, 0, 4),
            _op(_LD_W_ABS, _arg(1)),
            _op(_AND_K, _SOCK_TYPE_MASK),
            _op(_JEQ_K, _SOCK_DGRAM, 0, 1),
            eperm,
            allow,
        ],
    )
    ops += _when(
        numbers["ioctl"],
        [
            _op(_LD_W_ABS, _arg(1)),
            _op(_JEQ_K, _TIOCSTI, 1, 0),
            _op(_JEQ_K, _TIOCLINUX, 0, 1),
            eperm,
            allow,
        ],
    )
    ops.append(allow)
    return b"".join(ops)
