"""``--executor ray``, registered: runs as Ray tasks, and the option only Ray takes.

``--ray-address`` belongs to the Ray executor, not to the commands: it is
added to the command line by :data:`RAY`'s ``add_arguments``, read back by
its ``options_from`` and given to :class:`~codegenie.eval._exec.on_ray.RayExecutor`.
Nothing here imports Ray nor the executor's module (26 ms of imports): only
making an executor of this kind does.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from codegenie.eval._exec import EXTRA, ExecutorKind, register_executor

if TYPE_CHECKING:
    from codegenie.eval._exec import Executor

__all__ = ("RAY",)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ray-address`` to a command that runs rubrics."""
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="with --executor ray: the cluster to run on (default: RAY_ADDRESS; without "
        "either, a local Ray instance is started for the command and stopped after it)",
    )


def _options_from(args: argparse.Namespace) -> dict[str, object]:
    """Return the Ray options the command line gives: ``address`` when ``--ray-address`` is."""
    address = getattr(args, "ray_address", None)
    return {} if address is None else {"address": address}


def _make(options: Mapping[str, object]) -> Executor:
    """Return a new Ray executor; ``ValueError`` for an ``address`` that is blank."""
    address = options.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        msg = "--ray-address needs an address (HOST:PORT), not an empty string"
        raise ValueError(msg)
    from codegenie.eval._exec.on_ray import RayExecutor  # noqa: PLC0415 - start-up: only --executor ray pays for it

    return RayExecutor(address)


#: The Ray executor's kind.
RAY: Final = register_executor(
    ExecutorKind(
        "ray",
        f"a Ray cluster: {EXTRA}",
        _make,
        add_arguments=_add_arguments,
        options_from=_options_from,
        flags=("--ray-address",),
        loggers=("ray",),
    )
)
