"""Where rubric runs happen: an executor receives runs and returns their results.

``grade`` and ``check --rubrics`` build their runs
(:class:`~codegenie.eval._run.spec.RunSpec`), answer from the validation
ledger what it holds, and hand the rest to an :class:`Executor`; what comes
back is judged, stored and reported the same way whichever executor made
the runs. An executor decides nothing about verdicts, limits or storage.

Executors are found by name in a registry: each kind of executor is
declared once (:class:`ExecutorKind`: its name, how to make one, the
command-line options it takes) and registered with
:func:`register_executor`; ``--executor`` takes the registered names, and
nothing outside an executor's own modules tests its name. The built-ins
are declared at the end of this module, each made by its own module
(:mod:`~codegenie.eval._exec.local`, :mod:`~codegenie.eval._exec.on_ray`)
only when chosen, so that the command line's start-up pays for neither.
``--ray-address`` is the Ray executor's own option, declared with it.

- :class:`~codegenie.eval._exec.local.LocalExecutor` (``--executor local``,
  the default): threads on this machine, each run in its sandbox
  (:func:`codegenie.eval.rubrics.run_rubrics`).
- :class:`~codegenie.eval._exec.on_ray.RayExecutor` (``--executor ray``):
  each run a Ray task, on whichever node of a cluster has room; the trees it
  reads travel through Ray's object store (no shared file system), and the
  node runs it with its own sandbox. Ray is an optional extra,
  ``codegenie-eval[ray]``, imported only when this executor is chosen.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol, final

if TYPE_CHECKING:
    from codegenie.eval._run.spec import RunSpec
    from codegenie.eval._sandbox.provider import Sandbox
    from codegenie.eval.rubrics import RubricResult

__all__ = (
    "EXECUTORS",
    "EXTRA",
    "LOCAL",
    "RAY",
    "Executor",
    "ExecutorKind",
    "RayMissing",
    "executor_kind",
    "executor_kinds",
    "executor_named",
    "register_executor",
)

#: How to install what the Ray executor needs.
EXTRA: Final = "pip install 'codegenie-eval[ray]'"


@final
class RayMissing(Exception):
    """``--executor ray`` where Ray is not installed: ``extra`` says what to install.

    Defined here, not beside the executor, so that a command that catches it
    does not import the Ray executor's module (nor what it imports) to run
    locally.
    """

    def __init__(self, cause: str) -> None:
        self.extra = EXTRA
        self.cause = cause
        super().__init__(f"the ray executor needs Ray, which is not installed ({cause}): {EXTRA}")


class Executor(Protocol):
    """What makes a batch of runs: ``run`` them, ``jobs`` at a time, in ``sandbox``.

    The contract of :func:`codegenie.eval.rubrics.run_rubrics`: results in
    the order of ``runs``; ``on_result(index, result)`` called in the
    calling thread as each run ends; ``KeyboardInterrupt`` (or an exception
    from ``on_result``) stops every run, started or not, and propagates once
    they are stopped. ``name`` is the executor's registered name;
    ``runs_here`` says whether the runs are made on this machine (then the
    sandbox is chosen, and probed, here; else each node chooses its own).
    An executor may hold what its batches share (a Ray instance it started):
    :meth:`close` lets it go, once the last batch is made.
    """

    name: str
    runs_here: bool

    def run(
        self,
        runs: Sequence[RunSpec],
        *,
        jobs: int,
        sandbox: Sandbox,
        on_result: Callable[[int, RubricResult], None] | None = None,
    ) -> list[RubricResult]:
        """Make ``runs``; return their results, in order."""
        ...

    def close(self) -> None:
        """Let go of what the batches shared; the executor makes no batch after."""
        ...


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """Add nothing: an executor without options of its own."""


def _no_options(args: argparse.Namespace) -> dict[str, object]:
    """Read nothing: an executor without options of its own."""
    del args
    return {}


@final
@dataclass(frozen=True, slots=True)
class ExecutorKind:
    """A kind of executor, as registered: what ``--executor NAME`` stands for.

    ``name`` is the word ``--executor`` and the ``executor`` setting take;
    ``help`` what ``--help`` says of it. ``make(options)`` returns a new
    executor from its own options (``{}``: every default); it may raise
    ``ValueError`` for an option it refuses, and raises what the executor
    raises when it cannot be made (:class:`RayMissing`). The executor's own
    command-line options are its business: ``add_arguments(parser)`` adds
    them (their ``dest`` default ``None``: not given), ``flags`` names them
    as typed, and ``options_from(args)`` reads those given into ``make``'s
    options. ``loggers`` are the names of the standard library loggers whose
    notices the command line shows under ``-v`` only.
    """

    name: str
    help: str
    make: Callable[[Mapping[str, object]], Executor]
    add_arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    options_from: Callable[[argparse.Namespace], dict[str, object]] = _no_options
    flags: tuple[str, ...] = ()
    loggers: tuple[str, ...] = ()


_KINDS: dict[str, ExecutorKind] = {}


def register_executor(kind: ExecutorKind) -> ExecutorKind:
    """Register ``kind`` under its name (the last registration of a name wins); return it."""
    _KINDS[kind.name] = kind
    return kind


def executor_kinds() -> tuple[ExecutorKind, ...]:
    """Return every registered kind of executor, in the order they were registered."""
    return tuple(_KINDS.values())


def executor_kind(name: str) -> ExecutorKind:
    """Return the kind registered as ``name``; ``ValueError`` for a name none is."""
    kind = _KINDS.get(name)
    if kind is None:
        msg = f"executor must be one of {', '.join(_KINDS)}, got {name!r}"
        raise ValueError(msg)
    return kind


def executor_named(name: str, *, address: str | None = None) -> Executor:
    """Return a new executor of the kind ``name``; ``address``: the Ray cluster's.

    Raises ``ValueError`` for a name no kind is registered as, and
    :class:`RayMissing` for ``ray`` where Ray is not installed. Nothing
    connects to a cluster before a batch is run.
    """
    options: dict[str, object] = {} if address is None else {"address": address}
    return executor_kind(name).make(options)


# -- the built-in executors: declared here, each made by its own module when chosen ----------


def _make_local(options: Mapping[str, object]) -> Executor:
    """Return a new local executor (it takes no options)."""
    del options
    from codegenie.eval._exec.local import LocalExecutor  # noqa: PLC0415 - start-up: only a batch pays for the runner

    return LocalExecutor()


def _add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--ray-address``, the Ray executor's own option, to a command that runs rubrics."""
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="with --executor ray: the cluster to run on (default: RAY_ADDRESS; without "
        "either, a local Ray instance is started for the command and stopped after it)",
    )


def _ray_options(args: argparse.Namespace) -> dict[str, object]:
    """Return the Ray options the command line gives: ``address`` when ``--ray-address`` is."""
    address = getattr(args, "ray_address", None)
    return {} if address is None else {"address": address}


def _make_ray(options: Mapping[str, object]) -> Executor:
    """Return a new Ray executor; ``ValueError`` for an ``address`` that is blank."""
    address = options.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        msg = "--ray-address needs an address (HOST:PORT), not an empty string"
        raise ValueError(msg)
    from codegenie.eval._exec.on_ray import RayExecutor  # noqa: PLC0415 - start-up: only --executor ray pays for it (26 ms)

    return RayExecutor(address)


#: The local executor's kind: this machine's threads.
LOCAL: Final = register_executor(
    ExecutorKind("local", "this machine's threads; the default", _make_local)
)
#: The Ray executor's kind, with ``--ray-address``, its own option.
RAY: Final = register_executor(
    ExecutorKind(
        "ray",
        f"a Ray cluster: {EXTRA}",
        _make_ray,
        add_arguments=_add_ray_arguments,
        options_from=_ray_options,
        flags=("--ray-address",),
        loggers=("ray",),
    )
)
#: The built-in executors' names, as ``--executor`` and the setting ``executor`` take them.
EXECUTORS: Final = tuple(_KINDS)
