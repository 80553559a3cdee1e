"""Ctrl-C inside one call, and nowhere else: tests that interrupt their own process.

A test that sends itself SIGINT races with the code it interrupts: a signal
that lands after the call under test has already raised (a second Ctrl-C
sent 20 ms after the first, on a loaded machine) would raise
``KeyboardInterrupt`` in pytest's own code, and pytest-xdist then takes the
whole worker down. :func:`interrupts_inside` raises ``KeyboardInterrupt``
only while one of the given functions is on the interrupted thread's stack,
and counts a signal that arrives outside them instead; it also sets the
disposition it relies on, whatever the suite was started under (``nohup``,
a background job with SIGINT ignored).
"""

from __future__ import annotations

import contextlib
import signal
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Interrupts:
    """What the SIGINTs sent during the block did: raised inside a call, or ignored outside."""

    raised: int = 0
    ignored: int = 0
    codes: frozenset[types.CodeType] = field(default_factory=frozenset)

    def handle(self, signum: int, frame: types.FrameType | None) -> None:
        """Raise KeyboardInterrupt if one of the watched calls is on the stack, else count it."""
        while frame is not None:
            if frame.f_code in self.codes:
                self.raised += 1
                raise KeyboardInterrupt
            frame = frame.f_back
        self.ignored += 1


@contextlib.contextmanager
def interrupts_inside(*functions: Callable[..., Any]) -> Iterator[Interrupts]:
    """SIGINT raises KeyboardInterrupt within ``functions`` only, for the block's length."""
    codes = frozenset(_code(function) for function in functions)
    interrupts = Interrupts(codes=codes)
    previous = signal.signal(signal.SIGINT, interrupts.handle)
    try:
        yield interrupts
    finally:
        signal.signal(signal.SIGINT, previous)


def _code(function: Callable[..., Any]) -> types.CodeType:
    code = getattr(function, "__code__", None)
    if not isinstance(code, types.CodeType):
        raise TypeError(f"{function!r} has no code object to watch for")
    return code
