"""Writing to a terminal or a pipe that we do not control.

Four dangers, four tools:

- a string from a manifest, a path or a registration that holds control
  characters could forge an output line or send an escape sequence to the
  terminal: :func:`escape_control` writes them as visible escapes;
- a reader that stops early (``| head -1``) or a closed stdout (``>&-``) must
  end the command quietly, not with a traceback: :class:`ResultStream` drops
  what can no longer be written, and :func:`prepare_console` and
  :func:`finish_console` make the process's standard streams safe to use and
  to flush;
- a registration may write to file descriptor 1 by any route (``print``,
  ``os.write(1, …)``, ``sys.__stdout__``, a child process, a thread that
  outlives its import): :func:`reserve_stdout` keeps the real stdout for the
  command's results on a private descriptor and points descriptor 1 at stderr;
- text the output's encoding cannot take (``LC_ALL=C`` makes it ASCII), and
  names that the file system or the command line decoded with
  ``surrogateescape`` (``"d\udcc3\udca9p\udcc3\udcb4t"`` for ``dépôt`` under
  ``LC_ALL=C``), which no encoding takes: :func:`readable` turns such a
  string back into the text it stood for, and the :data:`READABLE` error
  handler, which every stream of the command line is set to, does that and
  escapes what is still left over, so that writing any string succeeds.

Only the command line uses this module (the library never prints). It
imports nothing beyond ``codecs``, ``os`` and ``sys`` (the interpreter has
loaded all three before it runs a line of ours): the console entry point runs
it before anything else, on the cached ``list`` path too.
"""

from __future__ import annotations

import codecs
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

__all__ = (
    "READABLE",
    "LineSafeStream",
    "ResultStream",
    "escape_control",
    "finish_console",
    "has_lone_surrogates",
    "prepare_console",
    "readable",
    "readable_data",
    "reserve_stdout",
    "wants_colour",
)

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# C0 controls, DEL, C1 controls (U+009B is a one-character CSI on some
# terminals), the Unicode line and paragraph separators, and the bidirectional
# embedding, override and isolate controls (which reorder what a reader sees).
_ESCAPED = [
    *range(0x20),
    0x7F,
    *range(0x80, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_TABLE = {
    code: _NAMED.get(chr(code), f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")
    for code in _ESCAPED
}


def escape_control(text: str) -> str:
    r"""Return ``text`` with every control character written as a visible escape.

    C0 controls (U+0000 to U+001F), DEL (U+007F), C1 controls (U+0080 to U+009F),
    U+2028/U+2029 and the bidirectional controls become Python-style escapes
    (``\n``, ``\t``, ``\r``, ``\x1b``, ``\u202e``), so no string from a
    manifest, a path or a registration can forge an output line or reach the
    terminal as an escape sequence. Everything else, non-ASCII letters
    included, is unchanged; the result holds no control character, so
    escaping twice is escaping once. Apply it to each piece of data, not to a
    whole multi-line output (its own newlines would be escaped too).
    """
    return text.translate(_TABLE)


def has_lone_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (no UTF-8 encoder takes it); cheap for ASCII."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def readable(text: str) -> str:
    r"""Return ``text`` with the bytes that ``surrogateescape`` hid in it turned back into text.

    A name decoded by a locale that could not decode it — a path under
    ``LC_ALL=C``, a command-line argument, a file name that is not UTF-8 —
    holds lone surrogates (U+DC80 to U+DCFF, one per undecodable byte) that
    no encoder takes. Those bytes, with the text around them, are decoded as
    UTF-8: ``"d\udcc3\udca9p\udcc3\udcb4t"`` becomes ``"dépôt"``, and a byte
    that is not UTF-8 becomes a visible escape (``\xff``). Any other lone
    surrogate becomes ``\udXXX``. Text without lone surrogates is returned
    as it is, so this is cheap for the usual string and applying it twice is
    applying it once; the result always encodes as UTF-8.
    """
    if not has_lone_surrogates(text):
        return text
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no decoding made: escape it, keep the rest
        data = b"".join(
            f"\\u{ord(char):04x}".encode()
            if "\ud800" <= char <= "\udfff" and not "\udc80" <= char <= "\udcff"
            else char.encode("utf-8", "surrogateescape")
            for char in text
        )
    return data.decode("utf-8", "backslashreplace")


def readable_data(value: object) -> object:
    """Return ``value`` (JSON data) with every string, keys included, made :func:`readable`."""
    if isinstance(value, str):
        return readable(value)
    if isinstance(value, dict):
        return {readable_data(k): readable_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [readable_data(item) for item in value]
    return value


#: The codec error handler that writes any string on any stream (:func:`_write_unencodable`).
READABLE = "codegenie-readable"


def _write_unencodable(error: UnicodeError) -> tuple[str | bytes, int]:
    r"""Replace what a stream's encoding cannot encode with what it can: :data:`READABLE`.

    The characters are first made :func:`readable` (a name the locale could
    not decode is decoded as UTF-8), then the control characters that gives
    are escaped as :func:`escape_control` escapes them, and whatever the
    encoding still cannot take is written as ``backslashreplace`` writes it:
    ``é`` is ``\xe9`` and ``日`` is ``\u65e5`` on an ASCII stream.
    """
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = readable(error.object[error.start : error.end]).translate(_TABLE)
    # The code pages' codecs all say "charmap": which one is unknown, so ASCII it is.
    encoding = "ascii" if error.encoding == "charmap" else error.encoding
    try:
        replacement = text.encode(encoding, "backslashreplace").decode(encoding)
    except (LookupError, UnicodeError):
        replacement = text.encode("ascii", "backslashreplace").decode("ascii")
    if replacement.isascii():
        return replacement, error.end
    # The UTF-8 encoder takes nothing but ASCII text back from a handler: give it bytes.
    return replacement.encode(error.encoding), error.end


codecs.register_error(READABLE, _write_unencodable)


_TABLE_KEEPING_NEWLINES = {code: text for code, text in _TABLE.items() if code != ord("\n")}
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F)) + b"\n"


def _keeps_ascii(encoding: str) -> bool:
    """Whether ``encoding`` writes printable ASCII and newlines byte for byte."""
    try:
        return "\n ~AZaz09".encode(encoding) == b"\n ~AZaz09"
    except (LookupError, UnicodeError):
        return False


class LineSafeStream:
    """A text stream that escapes every control character but the newline it passes on.

    For output whose only control characters are its own line ends (the
    ``list`` fast path's text and JSON): whatever the data holds, no escape
    sequence or carriage return reaches the terminal.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters other than newlines escaped."""
        return self._stream.write(text.translate(_TABLE_KEEPING_NEWLINES))

    def write_utf8(self, data: bytes) -> None:
        """Write the UTF-8 ``data`` as :meth:`write` writes its text.

        Printable ASCII and newlines (what a listing nearly always is), bound
        for a stream whose encoding writes ASCII as ASCII, go to its binary
        buffer as they are: nothing to escape, decode or encode. Anything
        else is decoded and written through :meth:`write`. Raises
        ``UnicodeDecodeError`` for bytes that are not UTF-8.
        """
        buffer = getattr(self._stream, "buffer", None)
        encoding = getattr(self._stream, "encoding", None) or "?"
        plain = not data.translate(None, _PRINTABLE_ASCII)
        if plain and buffer is not None and _keeps_ascii(encoding):
            self._stream.flush()
            buffer.write(data)
            return
        self.write(data.decode("utf-8"))

    def flush(self) -> None:
        """Flush the underlying stream."""
        self._stream.flush()


def _quiet_errno(error: OSError) -> bool:
    """Whether ``error`` means the reader went away or stdout is closed."""
    import errno  # noqa: PLC0415 - only on the rare error path

    return isinstance(error, BrokenPipeError) or error.errno in {errno.EPIPE, errno.EBADF}


def _silence(fd: int, flags: int = os.O_WRONLY) -> None:
    """Point ``fd`` at ``/dev/null``, so that later writes and flushes succeed unseen."""
    try:
        null = os.open(os.devnull, flags)
    except OSError:
        return
    if null == fd:  # fd was closed, and /dev/null took its place
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)


class ResultStream:
    """Where a command writes its results: a text stream a gone reader cannot break.

    ``write`` writes and flushes. When the reader has gone (``EPIPE``) or the
    stream is closed (``EBADF``, or a closed file object), the text is dropped,
    :attr:`gone` becomes true, every later write is dropped too, and the
    stream's descriptor is pointed at ``/dev/null`` so that nothing complains
    when the process flushes it on exit.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.gone = stream is None

    def write(self, text: str) -> None:
        """Write ``text`` and flush it, or drop it when nobody reads any more."""
        if self.gone or not text:
            return
        assert self._stream is not None
        try:
            self._stream.write(text)
            self._stream.flush()
        except OSError as error:
            if not _quiet_errno(error):
                raise
            self._give_up()
        except ValueError:  # "I/O operation on closed file"
            self._give_up()

    def isatty(self) -> bool:
        """Whether the results go to a terminal (never once the reader has gone)."""
        if self.gone or self._stream is None:
            return False
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def close(self) -> None:
        """Flush and close the underlying stream, quietly when the reader has gone."""
        if self._stream is None:
            return
        try:
            self._stream.close()
        except (OSError, ValueError):
            self._give_up()
            # Closed now, on its descriptor pointing at /dev/null. Not
            # contextlib.suppress: this module must stay cheap to import.
            try:  # noqa: SIM105
                self._stream.close()
            except (OSError, ValueError):
                pass

    def _give_up(self) -> None:
        self.gone = True
        assert self._stream is not None
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError):
            return
        _silence(fd)


def _fd_is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def prepare_console() -> None:
    """Make the standard streams of a command-line process safe to use.

    A closed stdin, stdout or stderr (``>&-``) gets ``/dev/null`` on its
    descriptor, so that no file the command opens later takes descriptor 0, 1
    or 2 (where a registration's input or output would land in it), and
    ``sys.stdout`` exists; what the command prints there is dropped. Both
    streams write what the locale cannot encode as the :data:`READABLE`
    error handler does, so any locale, ``LC_ALL=C`` included, can print any
    text and any path.
    """
    if not _fd_is_open(0):
        _silence(0, os.O_RDONLY)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if not _fd_is_open(fd):
            _silence(fd)
            if getattr(sys, name) is None and _fd_is_open(fd):
                stream: TextIO = open(fd, "w", closefd=False, errors=READABLE)  # noqa: SIM115
                setattr(sys, name, stream)
                setattr(sys, f"__{name}__", stream)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=READABLE)


def finish_console() -> None:
    """Flush stdout and stderr before the process exits, quietly if nobody reads them."""
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            _silence(fd)


def reserve_stdout() -> TextIO | None:
    """Keep the real stdout for results; point descriptor 1 at stderr from now on.

    Returns a text stream on a private, non-inheritable duplicate of
    descriptor 1 (``None`` when stdout cannot be duplicated); afterwards
    descriptor 1 is a duplicate of descriptor 2, so whatever is written to
    descriptor 1 — through ``sys.stdout``, ``sys.__stdout__``, ``os.write``,
    by a child process or a thread — goes to stderr. For a whole process (the
    console script): it is never undone, so that a registration's thread or
    child still running at exit cannot write to stdout either.
    """
    if sys.stdout is not None:
        try:  # noqa: SIM105
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
    try:
        private = os.dup(1)
    except OSError:
        return None
    try:
        os.dup2(2, 1)
    except OSError:  # no stderr: registrations write to /dev/null instead
        _silence(1)
    # What still goes through sys.stdout now lands on stderr: line by line,
    # so that it interleaves with diagnostics in the order it was written.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(line_buffering=True)
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return open(private, "w", encoding=encoding, errors=READABLE)


def wants_colour(stream: object) -> bool:
    """Whether to colour what is written to ``stream``: on a terminal, unless told otherwise.

    ``NO_COLOR`` (set and not empty, https://no-color.org) turns colour off;
    otherwise ``FORCE_COLOR`` (set and not empty) turns it on, terminal or
    not; otherwise colour is used when ``stream`` is a terminal and ``TERM``
    is not ``dumb``. The same answer for diagnostics and console logs.
    """
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False
