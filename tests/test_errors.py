"""codegenie.eval.errors: attributes, codes, exit codes, messages and pickling."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from codegenie.eval import errors
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchCasesInvalid,
    BenchManifestInvalid,
    BenchManifestNotFound,
    BenchRootNotFound,
    BenchRootOutsideManifest,
    CandidatesDirInvalid,
    CaseNotFound,
    CaseProblem,
    CheckUnavailable,
    EnvironmentBuildFailed,
    EnvironmentNotBuilt,
    EvalError,
    InitConflict,
    InvalidTaskClassName,
    ManifestProblem,
    PythonUnavailable,
    RubricMissing,
    RunPlanError,
    SampleProblem,
    SamplesInvalid,
    SandboxUnavailable,
    ScaffoldArgumentInvalid,
    ScaffoldConflict,
    ScaffoldFailed,
    TaskClassAlreadyRegistered,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)

EXAMPLES: list[tuple[EvalError, int, dict[str, object]]] = [
    (
        SamplesInvalid(
            Path("samples.jsonl"), (SampleProblem(Path("samples.jsonl"), 3, "unknown case", "x"),)
        ),
        2,
        {
            "path": Path("samples.jsonl"),
            "problems": (SampleProblem(Path("samples.jsonl"), 3, "unknown case", "x"),),
        },
    ),
    (
        errors.SettingsInvalid(
            Path("/b/pyproject.toml"), (ManifestProblem(5, 1, "jbos", "unknown key"),)
        ),
        2,
        {
            "path": Path("/b/pyproject.toml"),
            "problems": (ManifestProblem(5, 1, "jbos", "unknown key"),),
        },
    ),
    (InvalidTaskClassName("Foo", "wrong case"), 1, {"name": "Foo", "reason": "wrong case"}),
    (
        TaskClassRegistrationFailed(
            "foo", "RuntimeError", "boom", Path("/b/foo/registration.py"), 3
        ),
        1,
        {
            "name": "foo",
            "cause_type": "RuntimeError",
            "cause_message": "boom",
            "source": Path("/b/foo/registration.py"),
            "line": 3,
        },
    ),
    (
        TaskClassRootConflict("foo", Path("/a/bench"), Path("/b/bench")),
        1,
        {
            "name": "foo",
            "first_root": Path("/a/bench"),
            "second_root": Path("/b/bench"),
            "declared_in": None,
        },
    ),
    (
        TaskClassAlreadyRegistered("foo", "bench.foo.registration", "bench.bar.registration"),
        1,
        {
            "name": "foo",
            "first_module": "bench.foo.registration",
            "second_module": "bench.bar.registration",
        },
    ),
    (
        TaskClassModuleMismatch(
            "foo", "bench.foo.registration", Path("/r/bench/foo/registration.py"), None
        ),
        1,
        {
            "name": "foo",
            "module": "bench.foo.registration",
            "expected_file": Path("/r/bench/foo/registration.py"),
            "actual_file": None,
        },
    ),
    (
        TaskClassNotFound(
            "vuln-remediaton", "/r/bench.toml", ("vuln-remediation",), ("vuln-remediation",)
        ),
        3,
        {
            "name": "vuln-remediaton",
            "looked_up_in": "/r/bench.toml",
            "available_names": ("vuln-remediation",),
            "suggestions": ("vuln-remediation",),
        },
    ),
    (BenchRootNotFound(Path("/r/bench")), 4, {"bench_root": Path("/r/bench")}),
    (
        ScaffoldConflict("foo", "module", Path("/r/bench.toml"), "already declared", "fooo"),
        1,
        {
            "name": "foo",
            "what": "module",
            "path": Path("/r/bench.toml"),
            "detail": "already declared",
            "entry": "fooo",
        },
    ),
    (
        BenchCaseLoadError(Path("/r/bench/foo"), "registration.py", "file not found"),
        4,
        {"case_dir": Path("/r/bench/foo"), "field": "registration.py", "reason": "file not found"},
    ),
    (
        BenchManifestNotFound(Path("/r/bench.toml"), searched_parents=False),
        4,
        {"path": Path("/r/bench.toml"), "searched_parents": False},
    ),
    (
        BenchManifestInvalid(
            Path("/r/bench.toml"), (ManifestProblem(7, 1, "task-classes.foo.module", "bad"),)
        ),
        4,
        {
            "path": Path("/r/bench.toml"),
            "problems": (ManifestProblem(7, 1, "task-classes.foo.module", "bad"),),
        },
    ),
    (
        BenchCasesInvalid(
            "foo",
            (
                CaseProblem(
                    Path("/r/bench/foo/cases/a"), None, None, "", "no input/", "layout", "a"
                ),
                CaseProblem(
                    Path("/r/bench/foo/cases/b/case.toml"), 2, 1, "tags", "bad", "schema", "b"
                ),
            ),
        ),
        4,
        {
            "task_class": "foo",
            "problems": (
                CaseProblem(
                    Path("/r/bench/foo/cases/a"), None, None, "", "no input/", "layout", "a"
                ),
                CaseProblem(
                    Path("/r/bench/foo/cases/b/case.toml"), 2, 1, "tags", "bad", "schema", "b"
                ),
            ),
        },
    ),
    (
        CaseNotFound("foo", "exampel", ("example", "other"), ("example",)),
        3,
        {
            "task_class": "foo",
            "case": "exampel",
            "available_ids": ("example", "other"),
            "suggestions": ("example",),
        },
    ),
    (
        CandidatesDirInvalid(Path("runs/x"), "does not exist"),
        2,
        {"path": Path("runs/x"), "reason": "does not exist"},
    ),
    (
        CheckUnavailable("Too many open files"),
        4,
        {"cause": "Too many open files"},
    ),
    (
        PythonUnavailable("np-task", "3.99", Path("/b/bench.toml")),
        4,
        {"task_class": "np-task", "version": "3.99", "manifest": Path("/b/bench.toml")},
    ),
    (
        EnvironmentBuildFailed("np-task", Path("/b/envs/np.txt"), "blake2b:ab", "install", "no"),
        4,
        {
            "task_class": "np-task",
            "requirements": Path("/b/envs/np.txt"),
            "digest": "blake2b:ab",
            "step": "install",
            "output": "no",
        },
    ),
    (
        EnvironmentNotBuilt("np-task", "blake2b:ab"),
        4,
        {"task_class": "np-task", "digest": "blake2b:ab", "damage": None},
    ),
    (
        EnvironmentNotBuilt("np-task", "blake2b:ab", "its record names another digest"),
        4,
        {
            "task_class": "np-task",
            "digest": "blake2b:ab",
            "damage": "its record names another digest",
        },
    ),
    (
        errors.ExecutorUnavailable("ray", "10.0.0.5:6379", "ConnectionError: no cluster"),
        4,
        {"executor": "ray", "address": "10.0.0.5:6379", "cause": "ConnectionError: no cluster"},
    ),
    (
        RubricMissing("foo", Path("/b/foo/rubric.py")),
        4,
        {"task_class": "foo", "path": Path("/b/foo/rubric.py")},
    ),
    (
        SandboxUnavailable("auto", "no user namespaces", ("install bubblewrap",)),
        4,
        {"mode": "auto", "cause": "no user namespaces", "fixes": ("install bubblewrap",)},
    ),
    (
        ScaffoldArgumentInvalid("--root", "./bench", "must be a normalized path"),
        2,
        {"argument": "--root", "value": "./bench", "reason": "must be a normalized path"},
    ),
    (
        ScaffoldFailed(Path("/r/bench/foo"), "Read-only file system"),
        4,
        {"path": Path("/r/bench/foo"), "reason": "Read-only file system"},
    ),
    (
        InitConflict(Path("/r/bench.toml"), "a manifest is already there"),
        1,
        {"path": Path("/r/bench.toml"), "reason": "a manifest is already there"},
    ),
    (
        BenchRootOutsideManifest(Path("/opt/bench"), Path("/r")),
        4,
        {"bench_root": Path("/opt/bench"), "manifest_dir": Path("/r")},
    ),
    (
        errors.ReportsInvalid(("cannot read base.json: No such file or directory",)),
        2,
        {"problems": ("cannot read base.json: No such file or directory",), "located": ()},
    ),
    (
        errors.CompareRefused(
            "base.json", "new.json", ("the reports grade different task classes",)
        ),
        1,
        {
            "base": "base.json",
            "new": "new.json",
            "problems": ("the reports grade different task classes",),
        },
    ),
]


@pytest.mark.parametrize(
    ("error", "exit_code", "attributes"), EXAMPLES, ids=lambda v: type(v).__name__
)
def test_error_exposes_named_attributes_and_exit_code(
    error: EvalError, exit_code: int, attributes: dict[str, object]
) -> None:
    """Each error carries its fields as attributes and its exit code on the class."""
    assert isinstance(error, EvalError)
    assert type(error).exit_code == exit_code
    assert error.attributes() == attributes
    for name, value in attributes.items():
        assert getattr(error, name) == value


@pytest.mark.parametrize(
    ("error", "exit_code", "attributes"), EXAMPLES, ids=lambda v: type(v).__name__
)
def test_error_survives_pickling(
    error: EvalError, exit_code: int, attributes: dict[str, object]
) -> None:
    """A pickled error comes back with the same type, attributes and message."""
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert copy.attributes() == attributes
    assert str(copy) == str(error)


def test_every_error_class_has_a_distinct_kebab_case_code() -> None:
    """Codes are stable kebab-case identifiers, one per class."""
    classes = [getattr(errors, name) for name in errors.__all__]
    classes = [c for c in classes if isinstance(c, type) and issubclass(c, EvalError)]
    codes = [c.code for c in classes]
    assert len(set(codes)) == len(codes)
    for code in codes:
        assert code == code.lower()
        assert " " not in code
        assert "_" not in code


def test_not_found_message_suggests_the_close_name() -> None:
    """The message of a typo names the suggestion the way a curator reads it."""
    error = TaskClassNotFound(
        "vuln-remediaton", "bench.toml", ("vuln-remediation",), ("vuln-remediation",)
    )
    assert "did you mean 'vuln-remediation'?" in str(error)
    assert error.hint == "`codegenie-bench list` shows every declared task class"


def test_manifest_invalid_message_lists_every_problem_with_file_line_column() -> None:
    """The message carries FILE:LINE:COL: KEY: MESSAGE for each problem."""
    error = BenchManifestInvalid(
        Path("bench.toml"),
        (
            ManifestProblem(2, 1, "schema-version", "unsupported"),
            ManifestProblem(7, 1, "task-classes.foo.module", "bad module"),
        ),
    )
    assert "bench.toml:2:1: schema-version: unsupported" in str(error)
    assert "bench.toml:7:1: task-classes.foo.module: bad module" in str(error)
    assert "2 problems" in str(error)


def test_cases_invalid_message_lists_every_problem_with_its_place() -> None:
    """The message carries FILE:LINE:COL: KEY: MESSAGE, or FILE: MESSAGE for a layout problem."""
    error = BenchCasesInvalid(
        "foo",
        (
            CaseProblem(Path("cases/a"), None, None, "", "has no input/", "layout", "a"),
            CaseProblem(Path("cases/b/case.toml"), 2, 1, "tags", "bad", "schema", "b"),
        ),
    )
    assert str(error).splitlines() == [
        "2 problems in the cases of task class 'foo'",
        "  cases/a: has no input/",
        "  cases/b/case.toml:2:1: tags: bad",
    ]


def test_cause_message_is_cut_at_200_characters() -> None:
    """TaskClassRegistrationFailed keeps at most 200 characters of the cause."""
    error = TaskClassRegistrationFailed("foo", "ValueError", "y" * 500)
    assert error.cause_message == "y" * 200


def test_run_plan_error_exit_code_is_the_common_one_else_1() -> None:
    """A plan failing only on unknown slugs exits 3; a mix exits 1."""
    same = RunPlanError(
        {"a-b": TaskClassNotFound("a-b", "x"), "c-d": TaskClassNotFound("c-d", "x")}
    )
    mixed = RunPlanError(
        {"a-b": TaskClassNotFound("a-b", "x"), "c-d": BenchRootNotFound(Path("/x"))}
    )
    assert same.exit_code == 3
    assert mixed.exit_code == 1
    assert pickle.loads(pickle.dumps(same)).exit_code == 3


def test_every_error_has_a_hint() -> None:
    """Every concrete error tells the curator what to do next; every class has an example here."""
    classes = {
        getattr(errors, name)
        for name in errors.__all__
        if isinstance(getattr(errors, name), type) and issubclass(getattr(errors, name), EvalError)
    }
    # RunPlanError carries other errors: its hint is pinned on its own, below.
    assert classes - {EvalError, RunPlanError} == {type(error) for error, _, _ in EXAMPLES}
    for error, _, _ in EXAMPLES:
        assert isinstance(error.hint, str)
        assert error.hint


def test_run_plan_error_hint_is_the_failures_own_when_they_share_one() -> None:
    """RunPlanError's hint is its failures' common hint, else it points at check."""
    same = RunPlanError(
        {"a-b": BenchRootNotFound(Path("/x")), "c-d": BenchRootNotFound(Path("/y"))}
    )
    assert same.hint == BenchRootNotFound(Path("/x")).hint
    mixed = RunPlanError(
        {"a-b": TaskClassNotFound("a-b", "/r/bench.toml"), "c-d": BenchRootNotFound(Path("/x"))}
    )
    assert "`codegenie-bench check` reports every problem" in mixed.hint


def test_errors_module_imports_nothing_from_the_package() -> None:
    """errors.py stands alone, so every module may import it without a cycle."""
    source = Path(errors.__file__).read_text()
    assert "from codegenie" not in source
    assert "import codegenie" not in source
