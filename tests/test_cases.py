"""codegenie.eval.cases and loader.load_cases: case ids, case.toml, every problem located."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, create_model
from structlog.testing import capture_logs

from codegenie.eval import TaskClassRegistry, register_task_class
from codegenie.eval.cases import (
    CASE_ID_PATTERN,
    RESERVED_KEYS,
    Case,
    case_id_problem,
    read_cases,
    scan_cases,
)
from codegenie.eval.errors import BenchCasesInvalid, CaseProblem, TaskClassNotFound
from codegenie.eval.loader import load_cases, load_task_class
from codegenie.eval.models import TaskClass
from tests.factory import Bench, make_bench, write_case

REPO = Path(__file__).resolve().parent.parent

PINS_REGISTRATION = '''\
from pydantic import BaseModel, ConfigDict, Field, create_model

from codegenie.eval.registry import register_task_class


class PinCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    package: str
    fixed_version: str = Field(alias="fixed-version")
    severity: int = 0


@register_task_class("pins", case_model=PinCase)
class Pins:
    """Pin a fixed release."""
'''

GOOD = """\
package = "jinja2"
fixed-version = "3.1.3"
"""


def pins_bench(base: Path) -> Bench:
    """A bench with the task class ``pins`` (case model PinCase) and no cases yet."""
    bench = Bench(base)
    bench.add("pins", source=PINS_REGISTRATION)
    return bench


def cases_dir(bench: Bench, slug: str = "pins") -> Path:
    return bench.root / slug.replace("-", "_") / "cases"


def problems_of(bench: Bench, slug: str = "pins") -> list[str]:
    """Load the cases, expecting BenchCasesInvalid; return its problems rendered relative to the bench."""
    with pytest.raises(BenchCasesInvalid) as info:
        load_cases(slug, bench.root, registry=TaskClassRegistry())
    assert info.value.task_class == slug
    prefix = str(cases_dir(bench, slug)) + os.sep
    return [p.render().replace(prefix, "") for p in info.value.problems]


# -- valid cases ------------------------------------------------------------------


def test_load_cases_returns_validated_cases_sorted_by_id(tmp_path: Path) -> None:
    """Cases come back sorted by id, with their paths, common keys and validated model."""
    bench = pins_bench(tmp_path)
    for case_id in ("zeta", "alpha-1", "m.2_x"):
        write_case(cases_dir(bench), case_id, GOOD)
    cases = load_cases("pins", bench.root, registry=TaskClassRegistry())
    assert [case.id for case in cases] == ["alpha-1", "m.2_x", "zeta"]
    first = cases[0]
    directory = (cases_dir(bench) / "alpha-1").resolve()
    assert first.task_class == "pins"
    assert first.directory == directory
    assert first.input == directory / "input"
    assert first.expected == directory / "expected"
    assert (first.description, first.tags, first.timeout) == (None, (), 60.0)
    assert isinstance(first.data, BaseModel)
    assert type(first.data).__name__ == "PinCase"
    assert first.data.model_dump(by_alias=True) == {
        "package": "jinja2",
        "fixed-version": "3.1.3",
        "severity": 0,
    }


def test_common_keys_are_read_and_typed(tmp_path: Path) -> None:
    """description, tags and timeout (an integer is a number of seconds) land on the Case."""
    bench = pins_bench(tmp_path)
    write_case(
        cases_dir(bench),
        "one",
        'description = "One case."\ntags = ["a", "b"]\ntimeout = 5\nid = "one"\n' + GOOD,
    )
    (case,) = load_cases("pins", bench.root, registry=TaskClassRegistry())
    assert (case.description, case.tags, case.timeout) == ("One case.", ("a", "b"), 5.0)
    assert isinstance(case.timeout, float)


def test_without_a_case_model_other_keys_are_kept_as_a_dict(tmp_path: Path) -> None:
    """A task class without case_model keeps every non-common key as it is, in a dict."""
    bench = make_bench(tmp_path, "plain")
    write_case(
        cases_dir(bench, "plain"),
        "c1",
        'timeout = 1.5\nanything = [1, "x"]\n[nested]\nkey = true\n',
    )
    (case,) = load_cases("plain", bench.root, registry=TaskClassRegistry())
    assert case.timeout == 1.5
    assert case.data == {"anything": [1, "x"], "nested": {"key": True}}


def test_a_task_class_without_cases_directory_has_no_cases(tmp_path: Path) -> None:
    """No cases/ directory: an empty tuple, and a scan that says it was not found."""
    bench = make_bench(tmp_path, "plain")
    registry = TaskClassRegistry()
    assert load_cases("plain", bench.root, registry=registry) == ()
    scan = scan_cases(load_task_class("plain", bench.root, registry=registry))
    assert (scan.found, scan.cases, scan.problems) == (False, (), ())


def test_hidden_entries_are_ignored_and_linked_case_directories_count(tmp_path: Path) -> None:
    """Names starting with '.' are skipped; a symbolic link to a case directory is a case."""
    bench = pins_bench(tmp_path)
    cases = cases_dir(bench)
    write_case(cases, "real", GOOD)
    (cases / ".gitkeep").write_text("")
    (cases / ".hidden-dir").mkdir()
    elsewhere = write_case(tmp_path / "shared", "linked", GOOD)
    (cases / "linked").symlink_to(elsewhere, target_is_directory=True)
    loaded = load_cases("pins", bench.root, registry=TaskClassRegistry())
    assert [case.id for case in loaded] == ["linked", "real"]


def test_case_serialises_to_json_with_the_file_keys(tmp_path: Path) -> None:
    """Case.to_json writes paths as strings and the model's data by alias, as case.toml spells it."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "one", 'tags = ["t"]\n' + GOOD)
    (case,) = load_cases("pins", bench.root, registry=TaskClassRegistry())
    document = json.loads(json.dumps(case.to_json()))
    assert document["data"] == {"package": "jinja2", "fixed-version": "3.1.3", "severity": 0}
    assert document["directory"] == str(case.directory)
    assert document["tags"] == ["t"]
    assert json.loads(case.model_dump_json()) == document
    assert hash(case) == hash(case.model_copy())


# -- problems, located ----------------------------------------------------------------

INVALID_FILES = [
    pytest.param(
        "timeout = 0\n" + GOOD,
        ["c/case.toml:1:11: timeout: must be greater than 0"],
        id="timeout-zero",
    ),
    pytest.param(
        "timeout = true\n" + GOOD,
        ["c/case.toml:1:11: timeout: expected a number, got a boolean"],
        id="timeout-bool",
    ),
    pytest.param(
        "timeout = inf\n" + GOOD,
        ["c/case.toml:1:11: timeout: must be a finite number"],
        id="timeout-inf",
    ),
    pytest.param(
        'timeout = "60"\n' + GOOD,
        ["c/case.toml:1:11: timeout: expected a number, got a string"],
        id="timeout-string",
    ),
    pytest.param(
        'tags = ["ok",\n  2]\n' + GOOD,
        ["c/case.toml:2:3: tags[1]: expected a string, got an integer"],
        id="tag-not-string",
    ),
    pytest.param(
        'tags = "one"\n' + GOOD,
        ["c/case.toml:1:8: tags: expected an array, got a string"],
        id="tags-not-array",
    ),
    pytest.param(
        "description = 3\n" + GOOD,
        ["c/case.toml:1:15: description: expected a string, got an integer"],
        id="description-int",
    ),
    pytest.param(
        'id = "other"\n' + GOOD,
        [
            "c/case.toml:1:6: id: the case id is the directory name 'c', but this file "
            "says 'other'; remove the key, or make it match"
        ],
        id="id-mismatch",
    ),
    pytest.param(
        GOOD + 'pakage = "x"\n',
        ["c/case.toml:3:1: pakage: unknown key 'pakage'; did you mean 'package'?"],
        id="unknown-key-suggestion",
    ),
    pytest.param(
        GOOD + "timout = 3\n",
        ["c/case.toml:3:1: timout: unknown key 'timout'; did you mean 'timeout'?"],
        id="common-key-typo",
    ),
    pytest.param(
        'fixed-version = "1"\n',
        ["c/case.toml:1:1: missing required key 'package'"],
        id="missing-key",
    ),
    pytest.param(
        'package = "jinja2"\nfixed-version = 3.1\nseverity = 2.0\n',
        [
            "c/case.toml:2:17: fixed-version: expected a string, got a float",
            "c/case.toml:3:12: severity: expected an integer, got a float",
        ],
        id="model-types-every-problem",
    ),
    pytest.param(
        'package = "x"\nfixed-version =\n',
        ["c/case.toml:2:16: TOML syntax error: Invalid value"],
        id="syntax",
    ),
    pytest.param(
        "x = " + "[" * 40 + "]" * 40 + "\n",
        ["c/case.toml:1:37: arrays and inline tables are nested more than 32 deep"],
        id="too-deep",
    ),
    pytest.param(
        "severity = 1" + "0" * 30 + "\n",
        [
            "c/case.toml:1:12: integer 10000000000000000000… (31 digits) is "
            "out of range: TOML integers are 64-bit"
        ],
        id="huge-integer",
    ),
]


@pytest.mark.parametrize(("text", "expected"), INVALID_FILES)
def test_invalid_case_file_problems_are_located(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    """Each broken case.toml is reported with file, line, column, key and a plain message."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "c", text)
    assert problems_of(bench) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            b"\xef\xbb\xbf" + GOOD.encode(), "1:1: the file starts with a byte-order mark", id="bom"
        ),
        pytest.param(b'package = "\xff"\n', "1:12: not valid UTF-8 (byte ff)", id="bad-utf8"),
        pytest.param(b'package = "a\x00"\n', "1:13: TOML syntax error", id="nul"),
    ],
)
def test_bad_bytes_are_problems_with_a_line(tmp_path: Path, data: bytes, expected: str) -> None:
    """A BOM, invalid UTF-8 or a control character is a syntax problem at its place, never a traceback."""
    bench = pins_bench(tmp_path)
    case = write_case(cases_dir(bench), "c", None)
    (case / "case.toml").write_bytes(data)
    (problem,) = problems_of(bench)
    assert problem.startswith(f"c/case.toml:{expected}")


def test_a_fifo_case_file_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    """A case.toml that is a FIFO is refused without waiting for a writer."""
    bench = pins_bench(tmp_path)
    case = write_case(cases_dir(bench), "c", None)
    os.mkfifo(case / "case.toml")
    assert problems_of(bench) == [
        "c/case.toml:1:1: the file is a FIFO (named pipe), not a regular file"
    ]


def test_a_case_file_over_1_mib_is_refused_before_reading(tmp_path: Path) -> None:
    """A case.toml larger than 1 MiB is a problem; it is not parsed."""
    bench = pins_bench(tmp_path)
    case = write_case(cases_dir(bench), "c", None)
    (case / "case.toml").write_bytes(b"# " + b"x" * (1024 * 1024) + b"\n")
    (problem,) = problems_of(bench)
    assert problem.startswith("c/case.toml:1:1: the file is 1048579 bytes; files over 1 MiB")


def test_a_case_file_that_is_a_directory_is_a_problem(tmp_path: Path) -> None:
    """case.toml must be a regular file."""
    bench = pins_bench(tmp_path)
    case = write_case(cases_dir(bench), "c", None)
    (case / "case.toml").mkdir()
    assert problems_of(bench) == ["c/case.toml:1:1: the file is a directory, not a regular file"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Upper", "it has uppercase letters; case ids are lowercase"),
        ("-lead", "it must start with a lowercase letter or a digit"),
        ("_lead", "it must start with a lowercase letter or a digit"),
        (
            "a b",
            "it has the character ' '; case ids use lowercase ASCII letters, digits, '-', '_' and '.'",
        ),
        (
            "caf\u00e9",
            "it has the character '\u00e9'; case ids use lowercase ASCII letters, digits, '-', '_' and '.'",
        ),
        ("a" * 101, "it is 101 characters long; at most 100 are allowed"),
    ],
)
def test_invalid_case_ids_are_layout_problems(tmp_path: Path, name: str, reason: str) -> None:
    """A case directory whose name breaks the case-id rule is a layout problem naming the rule."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), name, GOOD)
    registry = TaskClassRegistry()
    scan = scan_cases(load_task_class("pins", bench.root, registry=registry))
    (problem,) = scan.problems
    assert (problem.kind, problem.code, problem.case) == ("layout", "case-layout", name)
    assert problem.message == f"invalid case id {name!r}: {reason}"
    assert (problem.line, problem.column, problem.key) == (None, None, "")
    assert scan.cases == ()


def test_missing_parts_of_a_case_are_layout_problems(tmp_path: Path) -> None:
    """A case without case.toml, input/ or expected/, and a stray file in cases/, are each reported."""
    bench = pins_bench(tmp_path)
    cases = cases_dir(bench)
    write_case(cases, "no-toml", None)
    write_case(cases, "no-input", GOOD, input_dir=False)
    write_case(cases, "no-expected", GOOD, expected_dir=False)
    write_case(cases, "ok", GOOD)
    (cases / "README.md").write_text("notes\n")
    assert problems_of(bench) == [
        "README.md: is not a directory; every entry of cases/ is a case directory "
        "(names starting with '.' are ignored)",
        "no-expected: has no expected/ directory (a known-good solution)",
        "no-input: has no input/ directory (what the solver starts from)",
        "no-toml: has no case.toml",
    ]


def test_every_problem_of_every_case_is_reported_at_once(tmp_path: Path) -> None:
    """One BenchCasesInvalid carries the layout and schema problems of all cases, by case then line."""
    bench = pins_bench(tmp_path)
    cases = cases_dir(bench)
    write_case(cases, "b", "package = 1\nfixed-version = 2\n", input_dir=False)
    write_case(cases, "a", "timeout = -1\n" + GOOD + "extra = 1\n")
    write_case(cases, "c", GOOD)
    problems = problems_of(bench)
    assert problems == [
        "a/case.toml:1:11: timeout: must be greater than 0",
        "a/case.toml:4:1: extra: unknown key 'extra'",
        "b: has no input/ directory (what the solver starts from)",
        "b/case.toml:1:11: package: expected a string, got an integer",
        "b/case.toml:2:17: fixed-version: expected a string, got an integer",
    ]


def test_a_case_model_that_crashes_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    """A validator raising something pydantic does not wrap (TypeError) is reported on the case."""
    bench = Bench(tmp_path)
    bench.add(
        "crashy",
        source=textwrap.dedent(
            """
            from pydantic import BaseModel, field_validator
            from codegenie.eval.registry import register_task_class

            class CrashyCase(BaseModel):
                value: int

                @field_validator("value")
                @classmethod
                def _boom(cls, value: int) -> int:
                    raise TypeError("validator bug")

            @register_task_class("crashy", case_model=CrashyCase)
            class Crashy:
                \"\"\"Crashes.\"\"\"
            """
        ),
    )
    write_case(cases_dir(bench, "crashy"), "c", "value = 1\n")
    assert problems_of(bench, "crashy") == [
        "c/case.toml:1:1: bench.crashy.registration:CrashyCase raised TypeError while "
        "validating: validator bug"
    ]


def test_a_file_with_very_many_problems_lists_the_first_hundred(tmp_path: Path) -> None:
    """Problems of one file are capped at 100, with a count of the rest."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "c", GOOD + "".join(f"extra{i} = 1\n" for i in range(150)))
    problems = problems_of(bench)
    assert len(problems) == 101
    assert problems[-2] == "c/case.toml:102:1: extra99: unknown key 'extra99'"
    assert problems[-1] == "c/case.toml:103:1: and 50 more problems, not listed"


def test_scan_cases_returns_the_valid_cases_beside_the_problems(tmp_path: Path) -> None:
    """scan_cases never raises for the bench's content: check grades the valid cases and reports the rest."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "good", GOOD)
    write_case(cases_dir(bench), "bad", "package = 1\n")
    task_class = load_task_class("pins", bench.root, registry=TaskClassRegistry())
    scan = scan_cases(task_class)
    assert scan.found
    assert scan.case_ids == ("good",)
    assert {problem.case for problem in scan.problems} == {"bad"}
    assert not scan.ok
    with pytest.raises(BenchCasesInvalid):
        read_cases(task_class)


def test_a_cases_path_that_is_a_file_is_a_layout_problem(tmp_path: Path) -> None:
    """cases/ must be a directory when it exists."""
    bench = pins_bench(tmp_path)
    cases_dir(bench).write_text("not a directory\n")
    with pytest.raises(BenchCasesInvalid) as info:
        load_cases("pins", bench.root, registry=TaskClassRegistry())
    (problem,) = info.value.problems
    assert problem.kind == "layout"
    assert problem.file == cases_dir(bench).resolve()


def test_load_cases_raises_what_load_task_class_raises(tmp_path: Path) -> None:
    """load_cases resolves the slug first: an unknown slug is TaskClassNotFound with suggestions."""
    bench = pins_bench(tmp_path)
    with pytest.raises(TaskClassNotFound) as info:
        load_cases("pin", bench.root, registry=TaskClassRegistry())
    assert info.value.suggestions == ("pins",)


def test_load_cases_never_imports_or_runs_the_rubric(tmp_path: Path) -> None:
    """Loading cases leaves a rubric that would write a marker and crash untouched (ADR-0001)."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "c", GOOD)
    marker = tmp_path / "rubric-ran"
    rubric = bench.root / "pins" / "rubric.py"
    rubric.write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    assert len(load_cases("pins", bench.root, registry=TaskClassRegistry())) == 1
    assert not marker.exists()
    assert not [name for name in sys.modules if name.split(".")[-1] == "rubric"]


def test_loading_logs_what_it_found(tmp_path: Path) -> None:
    """cases.loaded (debug) and cases.invalid (error) carry the task class and the count."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "c", GOOD)
    registry = TaskClassRegistry()
    with capture_logs() as logs:
        load_cases("pins", bench.root, registry=registry)
        write_case(cases_dir(bench), "d", "package = 1\n")
        with pytest.raises(BenchCasesInvalid):
            load_cases("pins", bench.root, registry=registry)
    events = [(e["event"], e["log_level"], e.get("count", e.get("problems"))) for e in logs]
    assert ("cases.loaded", "debug", 1) in events
    assert ("cases.invalid", "error", 2) in events


def test_error_message_lists_the_first_50_problems(tmp_path: Path) -> None:
    """The message of BenchCasesInvalid stays readable; the attribute keeps every problem."""
    problems = tuple(
        CaseProblem(tmp_path / f"c{i}" / "case.toml", 1, 1, "k", "bad", "schema", f"c{i}")
        for i in range(60)
    )
    error = BenchCasesInvalid("pins", problems)
    assert len(error.problems) == 60
    assert str(error).splitlines()[0] == "60 problems in the cases of task class 'pins'"
    assert str(error).splitlines()[-1] == "  … and 10 more"
    assert error.exit_code == 4
    assert error.code == "case-invalid"


def test_bench_cases_invalid_survives_pickling(tmp_path: Path) -> None:
    """The error crosses process boundaries (check's workers) with its problems intact."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "c", "package = 1\n", input_dir=False)
    with pytest.raises(BenchCasesInvalid) as info:
        load_cases("pins", bench.root, registry=TaskClassRegistry())
    copy = pickle.loads(pickle.dumps(info.value))
    assert copy.attributes() == info.value.attributes()
    assert str(copy) == str(info.value)
    assert [p.code for p in copy.problems] == ["case-layout", "case-invalid", "case-invalid"]


def test_case_problem_renders_the_compiler_convention(tmp_path: Path) -> None:
    """FILE:LINE:COL: KEY: MESSAGE, or FILE: MESSAGE when the problem has no place in a file."""
    located = CaseProblem(Path("cases/c/case.toml"), 3, 1, "tags[0]", "bad", "schema", "c")
    layout = CaseProblem(Path("cases/c"), None, None, "", "has no input/", "layout", "c")
    assert located.render() == "cases/c/case.toml:3:1: tags[0]: bad"
    assert layout.render() == "cases/c: has no input/"
    assert (located.code, layout.code) == ("case-invalid", "case-layout")


def test_docs_example_is_what_the_loader_says(tmp_path: Path) -> None:
    """The broken case.toml of docs/rubrics.md produces exactly the problems the page shows."""
    doc = (REPO / "docs" / "rubrics.md").read_text(encoding="utf-8")
    section = doc.split("is reported at once", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    shown = re.search(r"gives `BenchCasesInvalid`.*?```\n(.*?)```", section, re.S)
    assert toml is not None
    assert shown is not None
    base = tmp_path / "repo"
    shutil.copytree(REPO / "bench", base / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "bench.toml", base)
    case = base / "bench" / "vuln_remediation" / "cases" / "jinja2-cve-2024-22195"
    (case / "case.toml").write_text(toml.group(1), encoding="utf-8")
    with pytest.raises(BenchCasesInvalid) as info:
        load_cases("vuln-remediation", base / "bench", registry=TaskClassRegistry())
    rendered = [p.render().replace(str(base.resolve()) + "/", "") for p in info.value.problems]
    assert rendered == shown.group(1).splitlines()


# -- the case model ---------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    value: int


def test_task_class_records_the_case_model_and_serialises_it() -> None:
    """TaskClass.case_model is the model; in JSON it is module:qualname (cls too)."""
    registry = TaskClassRegistry()

    @register_task_class("with-model", case_model=_Model, registry=registry)
    class WithModel:
        """A task class with a case model."""

    @register_task_class("without-model", registry=registry)
    class WithoutModel:
        """A task class without one."""

    task_class = registry.get("with-model")
    assert task_class.case_model is _Model
    document = json.loads(task_class.model_dump_json())
    assert document["case_model"] == f"{__name__}:_Model"
    assert document["cls"].endswith("WithModel")
    assert task_class.model_dump(mode="json")["case_model"] == f"{__name__}:_Model"
    assert json.loads(registry.get("without-model").model_dump_json())["case_model"] is None


@pytest.mark.parametrize("model", [dict, _Model(value=1), "PinCase", int])
def test_a_case_model_must_be_a_pydantic_model_class(model: object) -> None:
    """register_task_class refuses a case_model that is not a BaseModel subclass (TypeError)."""
    with pytest.raises(TypeError, match="case_model must be a pydantic BaseModel subclass"):
        register_task_class("bad-model", case_model=model, registry=TaskClassRegistry())  # type: ignore[arg-type]


@pytest.mark.parametrize("key", RESERVED_KEYS)
def test_a_case_model_may_not_declare_a_common_key(key: str) -> None:
    """A field named or aliased like a common key (or id) would never receive its value: ValueError."""
    by_name = create_model("ByName", **{key: (str, ...)})  # type: ignore[call-overload]
    by_alias = create_model("ByAlias", field=(str, Field(alias=key)))
    for model in (by_name, by_alias):
        with pytest.raises(ValueError, match=f"declares {key!r}"):
            register_task_class("reserved", case_model=model, registry=TaskClassRegistry())


# -- properties ------------------------------------------------------------------------


@given(st.text(alphabet=st.characters(codec="ascii") | st.sampled_from("éß-._"), max_size=110))
def test_case_id_rule_is_the_documented_pattern(name: str) -> None:
    """case_id_problem accepts exactly the names that match CASE_ID_PATTERN within 100 characters."""
    valid = re.fullmatch(CASE_ID_PATTERN.rstrip("$"), name) is not None and len(name) <= 100
    assert (case_id_problem(name) is None) == valid


_SCALARS = (
    st.text(max_size=20)
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
)
_KEYS = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True).filter(
    lambda key: key not in RESERVED_KEYS
)


def _plain_task_class(cases: Path) -> TaskClass:
    """A task class without case model whose cases live in ``cases`` (no loader involved)."""
    return TaskClass(
        name="plain",
        module="bench.plain.registration",
        source=cases.parent / "registration.py",
        description=None,
        rubric=cases.parent / "rubric.py",
        cases=cases,
        cls=object,
    )


@given(st.dictionaries(_KEYS, _SCALARS | st.lists(_SCALARS, max_size=3), max_size=6))
def test_case_data_round_trips_through_case_toml(data: dict[str, object]) -> None:
    """Without a case model, what tomli_w writes into case.toml comes back as Case.data."""
    with tempfile.TemporaryDirectory() as directory:
        cases = Path(directory) / "cases"
        write_case(cases, "c", tomli_w.dumps(data))
        (case,) = read_cases(_plain_task_class(cases))
        assert case.data == data


def test_case_model_is_frozen_and_closed() -> None:
    """Case refuses unknown fields and assignment."""
    case = Case(task_class="t", id="c", directory=Path("/c"))
    with pytest.raises(ValueError, match="frozen"):
        case.id = "d"  # type: ignore[misc]
    with pytest.raises(ValueError, match="Extra inputs"):
        Case.model_validate({**case.model_dump(), "other": 1})
    assert repr(case) == "Case(task_class='t', id='c')"


def test_case_round_trips_through_its_dump(tmp_path: Path) -> None:
    """model_dump (input and expected included) validates back to an equal Case."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "one", 'tags = ["t"]\ntimeout = 2\n' + GOOD)
    (case,) = load_cases("pins", bench.root, registry=TaskClassRegistry())
    dumped = case.model_dump()
    assert dumped["input"] == case.directory / "input"
    assert Case.model_validate(dumped).model_dump() == dumped
    assert pickle.loads(pickle.dumps(case)) == case


def test_input_and_expected_follow_the_directory() -> None:
    """input/ and expected/ are the case directory's; a Case given others is refused."""
    case = Case(task_class="t", id="c", directory=Path("/b/c"))
    assert (case.input, case.expected) == (Path("/b/c/input"), Path("/b/c/expected"))
    with pytest.raises(ValueError, match="input must be the case directory's input/"):
        Case(task_class="t", id="c", directory=Path("/b/c"), input=Path("/elsewhere"))  # type: ignore[call-arg]


def test_task_class_without_a_source_has_no_cases() -> None:
    """A task class defined where no file exists scans as not found, without touching the disk."""
    task_class = TaskClass(
        name="nowhere",
        module="__main__",
        source=None,
        description=None,
        rubric=None,
        cases=None,
        cls=object,
    )
    assert scan_cases(task_class).found is False
    assert read_cases(task_class) == ()


def test_limits_default_and_are_read_from_case_toml(tmp_path: Path) -> None:
    """memory, processes, file-size and cpu-time have documented defaults and are read as written."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "plain", GOOD)
    write_case(
        cases_dir(bench),
        "tight",
        GOOD + "memory = 256\nprocesses = 16\nfile-size = 8\ncpu-time = 2.5\n",
    )
    plain, tight = load_cases("pins", bench.root, registry=TaskClassRegistry())
    assert (plain.memory, plain.processes, plain.file_size, plain.cpu_time) == (
        2048,
        512,
        1024,
        None,
    )
    assert (tight.memory, tight.processes, tight.file_size, tight.cpu_time) == (256, 16, 8, 2.5)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("memory = 0", "memory: must be greater than 0"),
        ("processes = -1", "processes: must be greater than 0"),
        ("file-size = 0", "file-size: must be greater than 0"),
        ("cpu-time = 0.0", "cpu-time: must be greater than 0"),
        ('memory = "2G"', "memory: expected an integer, got a string"),
        ("memory = 1.5", "memory: expected an integer, got a float"),
        ("processes = true", "processes: expected an integer, got a boolean"),
        ("cpu-time = nan", "cpu-time: "),
        ("file_size = 8", "file_size: unknown key 'file_size'; did you mean 'file-size'?"),
    ],
)
def test_limits_are_validated_like_timeout(tmp_path: Path, line: str, message: str) -> None:
    """A limit that is not a positive number of the right type is a located case-invalid problem."""
    bench = pins_bench(tmp_path)
    write_case(cases_dir(bench), "bad", GOOD + line + "\n")
    problems = problems_of(bench)
    assert len(problems) == 1, problems
    assert problems[0].startswith("bad/case.toml:3:")
    assert message in problems[0]
