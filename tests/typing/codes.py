"""Type-checked, never run: a check code is a constant, and a mistyped one is a type error.

Each ``type: ignore`` below is needed (mypy --strict warns of an unused
one), so each line pins an error that mypy reports.
"""

from __future__ import annotations

from typing import assert_type

from codegenie.eval import codes
from codegenie.eval.codes import Code, diagnostic
from codegenie.eval.diagnostics import Diagnostic

assert_type(codes.GOLDEN_FAILS, Code)
assert_type(diagnostic(codes.GOLDEN_FAILS, "the gold fails"), Diagnostic)
diagnostic("golden-fails", "a code's name is not a code")  # type: ignore[arg-type]
diagnostic(codes.GOLDEN_FAIL, "a mistyped constant")  # type: ignore[attr-defined]
codes.GOLDEN_FAILS.name = "renamed"  # type: ignore[misc]
