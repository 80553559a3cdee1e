"""A child's output, kept within bounds: its first bytes and its last, never more.

A child can write without end. :class:`Sink` keeps at most ``head`` bytes
from the start of a stream and ``tail`` bytes from its end, and counts the
rest, so the memory a stream costs is bounded whatever it carries; an
:class:`Output` is what was kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol, final

__all__ = ("Bounds", "Output", "Receiver", "Sink")

# How far the tail may grow past its bound before it is cut back: cutting on
# every chunk would copy the whole tail each time.
_SLACK: Final = 2


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much of a stream to keep: the first ``head`` bytes and the last ``tail`` bytes.

    Raises ``ValueError`` for a negative bound.
    """

    head: int = 0
    tail: int = 0

    def __post_init__(self) -> None:
        if self.head < 0 or self.tail < 0:
            msg = f"bounds must not be negative, got head={self.head}, tail={self.tail}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class Output:
    """What was kept of one stream.

    ``head`` is its first bytes (at most the bound), ``tail`` the last bytes
    that followed the head (at most the bound; it never repeats a byte of
    the head), ``size`` the number of bytes written in all.
    """

    head: bytes = b""
    tail: bytes = b""
    size: int = 0

    @property
    def complete(self) -> bool:
        """Whether nothing was dropped: ``head + tail`` is the whole stream."""
        return self.size == len(self.head) + len(self.tail)

    @property
    def overflowed(self) -> bool:
        """Whether the stream held more than its head: something after the head is not in it."""
        return self.size > len(self.head)

    def text(self) -> str:
        """Return head and tail as UTF-8 text (undecodable bytes replaced), stripped.

        When something between them was dropped, ``…`` stands for it.
        """
        gap = b"" if self.complete or not self.head else "\n…\n".encode()
        return (self.head + gap + self.tail).decode("utf-8", "replace").strip()


class Receiver(Protocol):
    """What takes a stream as it is read: a :class:`Sink`, or a caller's own reader.

    ``feed`` gets each chunk in order and must never raise; ``output`` says
    what was kept (a reader that keeps the stream elsewhere returns an
    :class:`Output` with only its ``size``).
    """

    def feed(self, chunk: bytes) -> None:
        """Take the next ``chunk`` of the stream."""

    def output(self) -> Output:
        """Return what was kept so far."""


@final
class Sink:
    """Keeps the head and the tail of a stream within ``bounds`` while it is fed."""

    __slots__ = ("_head", "_tail", "bounds", "size")

    def __init__(self, bounds: Bounds) -> None:
        self.bounds: Final = bounds
        self.size = 0
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, chunk: bytes) -> None:
        """Take the next ``chunk`` of the stream."""
        self.size += len(chunk)
        room = self.bounds.head - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        limit = self.bounds.tail
        if not chunk or not limit:
            return
        if len(chunk) >= limit:
            self._tail[:] = chunk[-limit:]
            return
        self._tail += chunk
        if len(self._tail) > _SLACK * limit:
            del self._tail[: len(self._tail) - limit]

    def output(self) -> Output:
        """Return what was kept so far."""
        limit = self.bounds.tail
        tail = bytes(self._tail[-limit:]) if limit else b""
        return Output(bytes(self._head), tail, self.size)
