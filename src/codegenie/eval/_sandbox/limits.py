"""What one rubric run may use: memory, processes, file size, CPU time, disk.

A limit is data; how it is enforced (a cgroup, an rlimit, or not at all on
this machine) is decided by :func:`codegenie.eval._sandbox.preparation.prepare`,
and what a run breached by :meth:`PreparedRun.verdict_of_limits`. ``None``
means "no limit".

The defaults, and why:

- ``memory`` 2048 MiB. An interpreter, a rubric and the candidate's tests
  fit in a fraction of it; ``grade --jobs 4`` on a 16 GiB CI runner still
  leaves room for the harness. Counts what the whole run holds (page cache
  it caused and its private ``/tmp`` included) where a cgroup enforces it.
- ``processes`` 512. The kernel counts threads as well as processes (both
  the cgroup ``pids`` controller and ``RLIMIT_NPROC`` do): a thread pool per
  core on a 128-core machine must fit, a fork bomb must stop within a
  fraction of a second. The sandbox's own two processes count too.
- ``file_size`` 1024 MiB: no single file larger than the largest tree the
  runner copies in (``rubrics.COPY_BYTES_LIMIT``).
- ``cpu_time`` none. The case's ``timeout`` already bounds a run in wall
  time, and a spinning rubric is reported as a timeout; a CPU limit equal
  to it would only add a second name for the same runaway loop, and would
  misreport a rubric that legitimately uses several cores. A case that
  wants a CPU budget sets one.
- ``disk`` 1024 MiB and ``disk_files`` 20,000: what the run may add to its
  directory (its copies, working directory, ``HOME`` and ``TMPDIR``) beyond
  the copies it was given — bytes as allocated on disk, and entries (files,
  directories, links). A build or a test run of a sizeable project fits;
  200,000 small files, or gigabytes of output, do not, and removing what a
  run left stays a matter of a fraction of a second. The run's private
  ``/tmp`` is memory, counted by ``memory`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Literal

__all__ = (
    "DEFAULT_LIMITS",
    "LIMIT_FIELDS",
    "LIMIT_NAMES",
    "Breach",
    "LimitName",
    "Limits",
)

LimitName = Literal["memory", "processes", "file-size", "cpu-time", "disk", "disk-files"]
#: The limits, under the names ``case.toml`` gives them.
LIMIT_NAMES: Final[tuple[LimitName, ...]] = (
    "memory",
    "processes",
    "file-size",
    "cpu-time",
    "disk",
    "disk-files",
)

_MIB: Final = 1024 * 1024
# Each limit's unit, as messages give it after the number.
_UNITS: Final[dict[LimitName, str]] = {
    "memory": " MiB",
    "processes": "",
    "file-size": " MiB",
    "cpu-time": " s",
    "disk": " MiB",
    "disk-files": " files",
}


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one run: ``memory``, ``file_size``, ``disk`` in MiB, ``cpu_time`` in seconds.

    ``processes`` counts processes and threads at once, ``disk_files`` the
    entries a run may add to its directory. The one definition of the
    limits: their defaults are declared here and nowhere else (a case
    holds one :class:`Limits`, ``case.toml``'s schema, the sandbox, the
    runner, the run's key and the docs read it), and :data:`LIMIT_NAMES`
    names them as ``case.toml`` does.

    Raises ``ValueError`` for a limit that is not a positive number (a
    ``bool`` is not a number here, as TOML tells ``true`` from ``1``).
    """

    memory: int | None = 2048
    processes: int | None = 512
    file_size: int | None = 1024
    cpu_time: float | None = None
    disk: int | None = 1024
    disk_files: int | None = 20_000

    def __post_init__(self) -> None:
        for name in ("memory", "processes", "file_size", "disk", "disk_files"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                msg = f"{name} must be a positive integer or None, got {value!r}"
                raise ValueError(msg)
            if value is not None and value <= 0:
                msg = f"{name} must be a positive integer or None, got {value!r}"
                raise ValueError(msg)
        cpu = self.cpu_time
        if cpu is not None and (
            isinstance(cpu, bool) or not isinstance(cpu, int | float) or not 0 < cpu < float("inf")
        ):
            msg = f"cpu_time must be a positive finite number of seconds or None, got {cpu!r}"
            raise ValueError(msg)

    @property
    def memory_bytes(self) -> int | None:
        """``memory`` in bytes."""
        return None if self.memory is None else self.memory * _MIB

    @property
    def disk_bytes(self) -> int | None:
        """``disk`` in bytes."""
        return None if self.disk is None else self.disk * _MIB

    @property
    def file_size_bytes(self) -> int | None:
        """``file_size`` in bytes."""
        return None if self.file_size is None else self.file_size * _MIB

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Limits:
        """Return the limits ``values`` gives by attribute name (``file_size``); others are default.

        Keys that are not limits are left alone, so a case's fields, or a
        message that carries them beside others, can be given whole.
        """
        return cls(**{name: values[name] for name in LIMIT_FIELDS if name in values})

    def as_dict(self) -> dict[str, int | float | None]:
        """Return every limit by attribute name (``{"memory": 2048, "file_size": 1024, …}``)."""
        return {name: getattr(self, name) for name in LIMIT_FIELDS}

    def value(self, name: LimitName) -> float | None:
        """Return the limit called ``name`` (its ``case.toml`` name), in its own unit."""
        value: float | None = getattr(self, name.replace("-", "_"))
        return value

    def describe(self, name: LimitName) -> str:
        """Return ``"memory limit of 2048 MiB"``: the limit called ``name``, with its unit.

        Both disk limits read as the disk's: ``"disk limit of 1024 MiB"``,
        ``"disk limit of 20000 files"``.
        """
        value = self.value(name)
        shown = "none" if value is None else f"{value:g}"
        unit = _UNITS[name]
        noun = {"processes": "process", "disk-files": "disk"}.get(name, name)
        return f"{noun} limit of {shown}{unit}"


#: The limits of a case that sets none.
DEFAULT_LIMITS: Final = Limits()
#: The limits by attribute name (``file_size``), in :data:`LIMIT_NAMES`' order.
LIMIT_FIELDS: Final[tuple[str, ...]] = tuple(field.name for field in fields(Limits))


@dataclass(frozen=True, slots=True)
class Breach:
    """A limit the run exceeded: the run is an ``error``, never a ``failed``.

    ``limit`` is the limit's name; ``reason`` the sentence for the result
    (``"memory limit of 2048 MiB exceeded"``); ``evidence`` what showed it
    (``"cgroup memory.oom_control: oom_kill 1"``, ``"the rubric was killed
    by SIGXCPU"``), for logs and ``-v``.
    """

    limit: LimitName
    reason: str
    evidence: str
