"""The codes ``check`` reports: the package-wide vocabulary, :mod:`codegenie.eval.codes`."""

from __future__ import annotations

from codegenie.eval.codes import CODES, Code, diagnostic

__all__ = ("CODES", "Code", "diagnostic")
