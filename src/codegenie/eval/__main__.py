"""``codegenie-bench`` and ``python -m codegenie.eval``: the console entry point.

The standard streams are made safe first (:func:`~codegenie.eval._output.prepare_console`:
a closed stdout gets ``/dev/null``, any locale can print any text). A plain
``list`` whose manifest is in the cache is then answered here, before the
command line's parser and the package's heavier modules are imported; every
other command line goes to :func:`codegenie.eval.cli.main`, told that it runs
the whole process (``console=True``). A reader that goes away (``| head``)
ends the command quietly, with its usual exit status; Ctrl-C exits 130
without a traceback, and SIGTERM or SIGHUP 128 + the signal. The first of
these signals starts the clean-up (rubrics killed, copies removed); those
that follow are ignored, so that none cuts it short.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
# Seconds the threads bench code left running get to finish before the process ends anyway.
_THREAD_GRACE = 2.0


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` or ``SIGHUP`` received: ``signum`` is which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


# The first of SIGTERM and SIGHUP received, if any: its exit status holds even where code
# between the handler and main() turned the exception into a plain KeyboardInterrupt
# (Ray's waits do, when a signal arrives inside them).
_terminated_by: list[int] = []


def _terminate(signum: int, _frame: object) -> None:
    """Raise :class:`Terminated` once; ignore the signals from then on, so clean-up finishes."""
    _stand_down()
    _terminated_by.append(signum)
    raise Terminated(signum)


def _interrupt(_signum: int, _frame: object) -> None:
    """Raise ``KeyboardInterrupt`` once (Ctrl-C); ignore the signals from then on, as above."""
    _stand_down()
    raise KeyboardInterrupt


def _ignore(_signum: int, _frame: object) -> None:
    """Do nothing: a second Ctrl-C, ``SIGTERM`` or ``SIGHUP`` while the first is handled."""


def _stand_down() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP from now on, where this module handles them.

    A second signal raised as an exception could land anywhere in the
    clean-up the first one started — between a rubric's kill and the
    removal of its copies, or in a ``finally`` clause — and leave things
    behind. A handler, not ``SIG_IGN``: an ignored disposition would pass to
    the processes the clean-up might still start; a handler resets on exec.
    """
    import signal  # noqa: PLC0415 - start-up: the cached list imports nothing else

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) in (_terminate, _interrupt):
            signal.signal(number, _ignore)


def _handle_termination() -> None:
    """Turn ``SIGTERM``, ``SIGHUP`` and Ctrl-C into exceptions raised once, unless ignored."""
    import signal  # noqa: PLC0415 - start-up: the cached list imports nothing else

    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) == signal.SIG_DFL:
            signal.signal(number, _terminate)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    from codegenie.eval._output import finish_console, prepare_console  # noqa: PLC0415 - start-up: the cached list imports nothing else

    prepare_console()
    stopped = True
    try:
        code = _run(args)
        stopped = False
    except Terminated as terminated:
        code = 128 + terminated.signum
    except KeyboardInterrupt:
        code = 128 + _terminated_by[0] if _terminated_by else EXIT_INTERRUPTED
    finally:
        finish_console()
    if stopped:
        _exit_stopped(code)
    _exit_past_leftover_threads(code)
    return code


def _exit_stopped(code: int) -> NoReturn:
    """End a command a signal stopped, now: its clean-up is over, the interpreter's is not needed.

    When the signal's exception reaches :func:`main`, the command's own
    clean-up has run (every rubric killed, every copy, cgroup and warm
    worker gone, the Ray instance it started shut down). What the libraries
    registered with :mod:`atexit` runs, the streams are flushed, and the
    process ends with ``os._exit``, without the interpreter's finalization:
    freeing every module of a process that imported pydantic, the package
    and the bench, which on a loaded machine took longer than all of the
    rest of a stop (0.7 to 1.9 s of a 1 to 2.2 s stop), frees nothing the
    operating system does not free at exit. Threads bench code left running
    are not waited for: the user asked the command to stop.
    """
    import atexit  # noqa: PLC0415 - only when stopped
    import os  # noqa: PLC0415 - only when stopped

    from codegenie.eval._output import finish_console  # noqa: PLC0415 - imported by main already

    atexit._run_exitfuncs()  # prints what a handler raised, as at a normal exit
    finish_console()
    os._exit(code)


def _exit_past_leftover_threads(code: int) -> None:
    """End the process now with ``code`` when code it imported left threads running.

    A registration (bench code, run in this process) may start a thread and
    never stop it; the interpreter would wait for it at exit, forever. The
    command has said all it had to say: the threads get two seconds to
    finish, then stderr names those still running, the streams are flushed,
    and the process ends without waiting for them.
    """
    threading = sys.modules.get("threading")
    if threading is None:
        return
    main_thread = threading.main_thread()
    left = [t for t in threading.enumerate() if t is not main_thread and not t.daemon]
    if not left:
        return
    import time  # noqa: PLC0415 - only when threads were left

    # A short grace, as the interpreter's own wait at exit would give: a thread
    # that is about to finish (a log flush, a late write) finishes.
    deadline = time.monotonic() + _THREAD_GRACE
    for thread in left:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [t for t in left if t.is_alive()]
    if not left:
        return
    import os  # noqa: PLC0415 - only when threads were left

    names = ", ".join(repr(thread.name) for thread in left[:5])
    more = f" and {len(left) - 5} more" if len(left) > 5 else ""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is sys.stderr:
                stream.write(
                    f"codegenie-bench: {len(left)} thread{'s' if len(left) != 1 else ''} "
                    f"started by bench code still running ({names}{more}); "
                    "exiting without waiting for them\n"
                )
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def _run(args: list[str]) -> int:
    from codegenie.eval._cache.listing import fast_list  # noqa: PLC0415 - start-up: the cached list imports nothing else
    from codegenie.eval._output import LineSafeStream  # noqa: PLC0415 - start-up: the cached list imports nothing else

    stdout = sys.stdout
    # The fast path prints cached manifest strings: let no escape sequence through.
    sys.stdout = LineSafeStream(stdout)
    try:
        code = fast_list(args)
    except BrokenPipeError:  # the reader went away: nothing left to say
        return 0
    finally:
        sys.stdout = stdout
    if code is not None:
        return code
    _handle_termination()
    from codegenie.eval.cli import main as full  # noqa: PLC0415 - start-up: the cached list imports nothing else

    return full(args, console=True)


if __name__ == "__main__":
    sys.exit(main())
