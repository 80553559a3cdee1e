"""What one sandboxed run may see and touch.

A :class:`SandboxPolicy` is data: the mode, the interpreter, the task
class's directory (read-only), the run's directory (read-write, at the same
path as outside, so that ``CASE_DIR`` and ``CANDIDATE_DIR`` on the command
line stay valid), and the limits.
:func:`~codegenie.eval._sandbox.confinement.confinement` turns it into the
run's mounts, namespaces and environment, one value that each way of
starting a run renders. Everything not named is invisible: the user's home,
the repository, the rest of ``/etc``, other temporary directories.
"""

from __future__ import annotations

import functools
import os
import site
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, Limits
from codegenie.eval._sandbox.packages import Installed, installed

__all__ = (
    "ETC_FILES",
    "RUBRIC_KIT",
    "Interpreter",
    "SandboxMode",
    "SandboxPolicy",
    "installed_packages",
    "interpreter_prefixes",
    "outermost",
    "read_only_paths",
)

#: ``bwrap``: contained. ``none``: run as the harness itself runs, not contained.
SandboxMode = Literal["bwrap", "none"]

#: What of ``/etc`` is visible (read-only), when it exists: the dynamic
#: linker's cache, the time zone, user and group names (``getpwuid``), the
#: name-service configuration, the hosts file (``localhost``), the
#: ``alternatives`` links (``/usr/bin/awk`` points there on Debian) and the
#: public CA certificates. Not ``/etc/ssl/private``, ``/etc/shadow``,
#: credentials, or anything else.
ETC_FILES: Final = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/pki/tls/certs",
    "/etc/pki/ca-trust",
    "/etc/ca-certificates",
)

#: The directory of the rubric kit, ``codegenie_rubric``: the package's ``_kit/``, which
#: holds that one module and nothing else, so that putting it on a rubric's ``PYTHONPATH``
#: (:mod:`codegenie.eval._sandbox.env`) adds no other importable name. Every run can read it.
RUBRIC_KIT: Final = Path(__file__).resolve().parent.parent / "_kit"

# Directories the interpreter's own prefixes never widen to: binding one of
# them would show the whole system, a home, or every temporary directory.
_TOO_WIDE: Final = frozenset({"/", "/home", "/root", "/tmp", "/var", "/etc", "/opt", "/usr"})  # noqa: S108 - never bound


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The Python that runs rubrics, and the directories it needs to start and import.

    ``executable`` is the path the rubric is started with (a virtual
    environment's ``bin/python``, a link into its base installation);
    ``prefixes`` are the directories bound read-only for it: its prefixes
    (a virtual environment and its base, so ``pyvenv.cfg`` and the standard
    library are there) and its site-packages, each also where links lead
    (``realpath``). Nothing else of a home that holds one (pyenv under
    ``~/.pyenv``) is visible. Not included: the user's site-packages and
    the source trees of editable installs (``.pth`` files naming them
    find nothing inside; bind them with ``SandboxPolicy.read_only`` if a
    rubric needs them).

    ``version`` (``sys.version`` and the implementation's cache tag) and
    ``packages`` (a digest of what its site-packages directories hold: the
    names of the installed distributions, their versions among them, the
    ``.pth`` files and what they say, and the module files of each
    editable install's source: :mod:`codegenie.eval._sandbox.packages`)
    identify what runs: after a ``pip install -U`` of a package a rubric
    imports, or an edit of a module of an editable install, ``packages``
    differs, and no result of the earlier runs is served again.
    """

    executable: Path
    prefixes: tuple[Path, ...]
    version: str = ""
    packages: str = ""

    @classmethod
    def current(cls) -> Interpreter:
        """Return the running interpreter (``sys.executable``), as rubrics are started with it.

        Worked out once per ``sys.executable`` and process (it reads links
        and site-packages: a third of a millisecond, paid by every run
        otherwise).
        """
        return _interpreter(sys.executable)


@functools.lru_cache(maxsize=8)
def _interpreter(executable: str) -> Interpreter:
    found = [
        sys.prefix,
        sys.exec_prefix,
        sys.base_prefix,
        sys.base_exec_prefix,
        *site.getsitepackages(),
    ]
    version = f"{sys.version} {sys.implementation.cache_tag}"
    packages = installed_packages().digest
    prefixes = interpreter_prefixes(executable, found)
    return Interpreter(Path(executable), prefixes, version, packages)


def interpreter_prefixes(executable: str, prefixes: Iterable[str]) -> tuple[Path, ...]:
    """Return what to bind for ``executable``: ``prefixes`` and its links' directories, resolved.

    Each directory on the way from ``executable`` through its links to the
    binary, and each of ``prefixes``; every one both as written (absolute)
    and with its links resolved; sorted, each once.
    """
    found = list(prefixes)
    hop = executable
    for _ in range(40):
        found.append(os.path.dirname(hop))
        if not os.path.islink(hop):
            break
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    resolved = {os.path.realpath(p) for p in found} | {os.path.abspath(p) for p in found}
    return tuple(Path(p) for p in sorted(resolved))


@functools.lru_cache(maxsize=1)
def installed_packages() -> Installed:
    """Return what the running interpreter's site-packages hold, read once per process."""
    return installed(site.getsitepackages())


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """One run's sandbox: what it may read, where it may write, what it may use.

    ``run_dir`` is the run's own temporary directory: it holds the copies
    (``CASE_DIR``, ``CANDIDATE_DIR``), the working directory
    (:attr:`workdir`), ``TMPDIR`` (:attr:`tmpdir`) and ``HOME``
    (:attr:`home`), and is the only host directory the run can write.
    ``task_class_dir`` (the rubric's directory) is readable, not writable.
    ``read_only`` adds directories to read (an editable install's source);
    each must exist. ``hidden`` lists
    directories inside the readable ones that the run must not see (the task
    class's ``cases/``, which holds every case's known-good solution): each
    shows as an empty, read-only directory. ``interpreter`` defaults to the
    running one. Paths must be absolute.
    """

    mode: SandboxMode
    run_dir: Path
    task_class_dir: Path
    limits: Limits = DEFAULT_LIMITS
    interpreter: Interpreter = field(default_factory=Interpreter.current)
    read_only: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in ("bwrap", "none"):
            msg = f"mode must be 'bwrap' or 'none', got {self.mode!r}"
            raise ValueError(msg)
        for path in (self.run_dir, self.task_class_dir, *self.read_only, *self.hidden):
            if not path.is_absolute():
                msg = f"sandbox paths must be absolute, got {str(path)!r}"
                raise ValueError(msg)

    @property
    def workdir(self) -> Path:
        """The rubric's working directory: ``run_dir/work``."""
        return self.run_dir / "work"

    @property
    def tmpdir(self) -> Path:
        """``TMPDIR`` of the run: ``run_dir/tmp``."""
        return self.run_dir / "tmp"

    @property
    def home(self) -> Path:
        """``HOME`` of the run: ``run_dir/home``."""
        return self.run_dir / "home"


def outermost(paths: Iterable[str]) -> list[str]:
    """Return ``paths`` without those inside another of them, sorted."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def read_only_paths(policy: SandboxPolicy) -> list[str]:
    """Return the host directories bound read-only besides ``/usr`` and ``/etc``'s few files.

    The interpreter's prefixes (those under ``/usr`` are there already; one
    that would widen to ``/``, a home or ``/tmp`` is refused, so a
    ``sys.prefix`` of ``/`` never exposes the machine, nor one that holds
    the user's home all of it), the task class's
    directory, the rubric kit's (:data:`RUBRIC_KIT`: visible whatever
    interpreter runs the rubric, a task class's environment or an editable
    install's) and ``policy.read_only``; each realpath'd, nested ones
    dropped.
    """
    wanted: list[str] = []
    home = os.path.realpath(os.path.expanduser("~"))
    for prefix in policy.interpreter.prefixes:
        text = str(prefix)
        if text in _TOO_WIDE or text == "/usr" or text.startswith("/usr/"):
            continue
        if home == text or home.startswith(text.rstrip("/") + "/"):
            continue  # a prefix of $HOME would show all of it
        if os.path.isdir(text):
            wanted.append(text)
    for extra in (policy.task_class_dir, RUBRIC_KIT, *policy.read_only):
        wanted += [str(extra), os.path.realpath(extra)]
    return [p for p in outermost(wanted) if os.path.exists(p)]
