"""Where a registration failed: the deepest frame under the bench root, its traceback on -v."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegenie.eval._tracebacks import TRACEBACK_LIMIT, describe_failure
from codegenie.eval.errors import TaskClassRegistrationFailed
from codegenie.eval.loader import load_task_class
from codegenie.eval.registry import TaskClassRegistry

from .factory import Bench, make_bench
from .test_cli import run

HELPER = "def fine():\n    return 1\nraise ValueError('bad value')\n"


def _helper_bench(base: Path, helper: str = HELPER) -> Bench:
    bench = make_bench(base, "other-one")
    bench.add("alpha-one", before="from bench.alpha_one import helper")
    (bench.root / "alpha_one" / "helper.py").write_text(helper)
    return bench


def _failure(bench: Bench, slug: str = "alpha-one") -> BaseException:
    with pytest.raises(TaskClassRegistrationFailed) as caught:
        load_task_class(slug, bench.root, registry=TaskClassRegistry())
    assert caught.value.__cause__ is not None
    return caught.value.__cause__


def test_the_deepest_frame_under_the_root_is_the_helper_that_raised(tmp_path: Path) -> None:
    """A ValueError raised in bench/alpha_one/helper.py:3 is located there, not at the import line."""
    bench = _helper_bench(tmp_path)
    failure = describe_failure(_failure(bench), bench.root)
    assert failure.file == str((bench.root / "alpha_one" / "helper.py").resolve())
    assert failure.line == 3


def test_the_traceback_leaves_the_loader_and_the_import_system_out(tmp_path: Path) -> None:
    """The traceback starts at registration.py and shows the helper, without loader frames."""
    bench = _helper_bench(tmp_path)
    text = describe_failure(_failure(bench), bench.root).traceback
    lines = text.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith('  File "')
    assert "alpha_one/registration.py" in lines[1]
    assert 'alpha_one/helper.py", line 3' in text
    assert lines[-1] == "ValueError: bad value"
    for foreign in ("loader.py", "_imports.py", "importlib", "codegenie"):
        assert foreign not in text


def test_a_syntax_error_is_located_at_its_own_line(tmp_path: Path) -> None:
    """A SyntaxError in a helper points at the helper's bad line, whatever the frames say."""
    bench = _helper_bench(tmp_path, "x = 1\ny = (\n")
    failure = describe_failure(_failure(bench), bench.root)
    assert failure.file == str((bench.root / "alpha_one" / "helper.py").resolve())
    assert failure.line == 2
    assert "SyntaxError" in failure.traceback


def test_chained_exceptions_are_trimmed_too(tmp_path: Path) -> None:
    """An exception raised while handling another shows both, each without loader frames."""
    helper = "try:\n    {}['k']\nexcept KeyError as e:\n    raise RuntimeError('wrapped') from e\n"
    bench = _helper_bench(tmp_path, helper)
    failure = describe_failure(_failure(bench), bench.root)
    assert failure.line == 4
    assert "KeyError: 'k'" in failure.traceback
    assert "direct cause" in failure.traceback
    assert "codegenie" not in failure.traceback


def test_a_failure_outside_the_root_has_no_location(tmp_path: Path) -> None:
    """An exception none of whose frames lies under the root is located nowhere."""
    try:
        int("x")
    except ValueError as exc:
        failure = describe_failure(exc, tmp_path)
    assert (failure.file, failure.line) == (None, None)
    assert failure.traceback == "ValueError: invalid literal for int() with base 10: 'x'\n"


def test_a_huge_traceback_is_bounded(tmp_path: Path) -> None:
    """A traceback longer than the limit keeps its beginning and its end."""
    bench = _helper_bench(tmp_path, "raise ValueError('x' * 100_000)\n")
    text = describe_failure(_failure(bench), bench.root).traceback
    assert len(text) < TRACEBACK_LIMIT + 100
    assert "characters not shown" in text
    assert text.startswith("Traceback (most recent call last):")


@pytest.mark.parametrize("command", [["show", "alpha-one"], ["plan"], ["check"]])
def test_verbose_prints_the_registration_traceback(tmp_path: Path, command: list[str]) -> None:
    """-v shows the registration's traceback (helper line included, loader left out); without -v, none."""
    _helper_bench(tmp_path)
    quiet = run(*command, cwd=tmp_path)
    loud = run(*command, "-v", cwd=tmp_path)
    out = (loud.stdout if command == ["check"] else loud.stderr).splitlines()
    located = "bench/alpha_one/helper.py:3:1: error[import-failed]: "
    assert any(line.startswith(located) for line in out)
    assert located in (quiet.stdout + quiet.stderr)
    assert "Traceback" not in quiet.stdout + quiet.stderr
    start = out.index("    Traceback (most recent call last):")
    assert out[start + 1] == '      File "bench/alpha_one/registration.py", line 2, in <module>'
    assert '      File "bench/alpha_one/helper.py", line 3, in <module>' in out
    assert "    ValueError: bad value" in out
    assert not [line for line in out if "codegenie/eval" in line or "importlib" in line]


def test_an_exception_the_loader_was_handling_is_left_out(tmp_path: Path) -> None:
    """A chained exception with no frame under the root (not the bench's doing) is not shown."""
    try:
        raise KeyError("outside")
    except KeyError:
        try:
            int("x")
        except ValueError as exc:
            failure = describe_failure(exc, tmp_path)
    assert "KeyError" not in failure.traceback
    assert "During handling" not in failure.traceback


def test_a_broken_traceback_module_leaves_the_failure_without_a_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registration that broke the traceback module gets a failure without a location, never an error."""
    monkeypatch.setattr("traceback.TracebackException.from_exception", None)
    failure = describe_failure(ValueError("x"), tmp_path)
    assert (failure.file, failure.line) == (None, None)
    assert failure.traceback == "ValueError: <traceback cannot be formatted>\n"
