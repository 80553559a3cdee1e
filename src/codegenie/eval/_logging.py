"""The library's log events: through structlog, for processes that use structlog.

Importing structlog costs a command-line run tens of milliseconds (it pulls in
asyncio). The loader therefore emits its events through :class:`LazyLogger`,
which hands them to ``structlog.get_logger(name)`` once structlog has been
imported by anyone — the application, its logging set-up, the command line's
``-v``, ``structlog.testing.capture_logs`` — and drops them while it has not:
in a process that never imported structlog, nobody configured it and nobody
is listening. The library never configures structlog itself.
"""

from __future__ import annotations

import sys
from typing import Any, final

__all__ = ("LazyLogger",)


@final
class LazyLogger:
    """A structlog logger obtained on first use, when structlog is in use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def _target(self) -> Any:
        if self._logger is None:
            structlog = sys.modules.get("structlog")
            if structlog is None:
                return None
            self._logger = structlog.get_logger(self._name)
        return self._logger

    def debug(self, event: str, **fields: Any) -> None:
        """Log ``event`` at debug level."""
        target = self._target()
        if target is not None:
            target.debug(event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        """Log ``event`` at info level."""
        target = self._target()
        if target is not None:
            target.info(event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        """Log ``event`` at error level."""
        target = self._target()
        if target is not None:
            target.error(event, **fields)
