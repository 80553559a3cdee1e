"""How many children fit in the open-file limit: one rule for every pool of children.

A pool that starts more children at once than ``ulimit -n`` leaves room for
turns good work into "Too many open files" errors; each pool says how many
descriptors one of its children holds, and this says how many fit.
"""

from __future__ import annotations

__all__ = ("RESERVED_FDS", "most_at_once")

#: Descriptors left for the rest of the process (its streams, caches, logs).
RESERVED_FDS = 64


def most_at_once(fds_each: int) -> int | None:
    """Return how many children holding ``fds_each`` descriptors fit; ``None``: no limit known.

    Always at least 1.
    """
    try:
        import resource  # noqa: PLC0415 - POSIX only

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    return max(1, (soft - RESERVED_FDS) // fds_each)
