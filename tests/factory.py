"""Build real benches (``bench.toml`` plus task-class packages) in a directory."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

_UNSET = object()


def registration_source(
    register: str | None,
    *,
    before: str = "",
    after: str = "",
    description: str | None = None,
) -> str:
    """Return a registration module that registers ``register`` (``None``: nothing)."""
    decorator = ""
    if register is not None:
        args = repr(register)
        if description is not None:
            args += f", description={description!r}"
        decorator = f"@register_task_class({args})"
    return "\n".join(
        [
            "from codegenie.eval.registry import register_task_class",
            textwrap.dedent(before).strip(),
            "",
            decorator,
            "class TaskClassImpl:",
            '    """A task class built by the test factory."""',
            "",
            textwrap.dedent(after).strip(),
            "",
        ]
    )


# Passes a candidate that holds answer.txt: the factory's expected/ has it, its input/ not.
RUBRIC = """\
import json
import sys
from pathlib import Path

solved = (Path(sys.argv[2]) / "answer.txt").is_file()
print(json.dumps({"passed": solved, "reason": "answer.txt" if solved else "no answer.txt"}))
sys.exit(0 if solved else 1)
"""


@dataclass
class Bench:
    """A bench under ``base``: ``base/bench.toml`` and ``base/<root>/``."""

    base: Path
    root_name: str = "bench"
    #: Default of :meth:`add`'s ``parts``: write a rubric and a case beside each registration.
    parts: bool = False
    entries: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.base / self.root_name

    @property
    def manifest(self) -> Path:
        return self.base / "bench.toml"

    def add(
        self,
        slug: str,
        *,
        register: object = _UNSET,
        before: str = "",
        after: str = "",
        source: str | None = None,
        module: str | None = None,
        root: str | None = None,
        declare: bool = True,
        write: bool = True,
        parts: bool | None = None,
        log: Path | None = None,
    ) -> Path:
        """Add a task class; return its registration file.

        ``register`` is the name the file registers (default: ``slug``; ``None``:
        no decorator). ``log`` is an external file the module body appends a
        line to each time it runs.
        """
        ident = slug.replace("-", "_")
        root = root or self.root_name
        package = root.rsplit("/", 1)[-1]
        module = module or f"{package}.{ident}.registration"
        if declare:
            self.entries[slug] = (module, root)
        package_dir = self.base / root / Path(*module.split(".")[1:-1])
        file = package_dir / "registration.py"
        if write:
            package_dir.mkdir(parents=True, exist_ok=True)
            if log is not None:
                counter = f"with open({str(log)!r}, 'a') as _log:\n    _log.write('x\\n')\n"
                before = counter + textwrap.dedent(before)
            name = slug if register is _UNSET else register
            assert name is None or isinstance(name, str)
            text = (
                source
                if source is not None
                else registration_source(name, before=before, after=after)
            )
            file.write_text(text, encoding="utf-8")
            if self.parts if parts is None else parts:
                (package_dir / "rubric.py").write_text(RUBRIC, encoding="utf-8")
                write_case(
                    package_dir / "cases",
                    "example",
                    'description = "An example case."\n',
                    input_files={"README.txt": "nothing yet\n"},
                    expected_files={"answer.txt": "solved\n"},
                )
        else:
            (self.base / root).mkdir(parents=True, exist_ok=True)
        self.write_manifest()
        return file

    def manifest_text(self) -> str:
        lines = ["#:schema ./docs/bench.schema.json", "schema-version = 1", ""]
        for slug, (module, root) in self.entries.items():
            lines += [f"[task-classes.{slug}]", f'module = "{module}"', f'root = "{root}"', ""]
        return "\n".join(lines)

    def write_manifest(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self.root.mkdir(parents=True, exist_ok=True)
        self.manifest.write_text(self.manifest_text(), encoding="utf-8")


def make_bench(base: Path, *slugs: str, parts: bool = False, **options: object) -> Bench:
    """Return a bench under ``base`` with one well-formed task class per slug.

    ``parts``: each task class also gets a working rubric and a case.
    """
    bench = Bench(base, parts=parts)
    bench.write_manifest()
    for slug in slugs:
        bench.add(slug, **options)  # type: ignore[arg-type]
    return bench


def write_case(
    cases: Path,
    case_id: str,
    toml: str | None = "",
    *,
    input_files: dict[str, str] | None = None,
    expected_files: dict[str, str] | None = None,
    input_dir: bool = True,
    expected_dir: bool = True,
) -> Path:
    """Write the case ``cases/<case_id>/``: ``case.toml`` (``None``: none), ``input/``, ``expected/``.

    ``input_files`` and ``expected_files`` map relative paths to text; a
    directory is created even when it is empty, unless ``input_dir`` or
    ``expected_dir`` is false.
    """
    directory = cases / case_id
    directory.mkdir(parents=True, exist_ok=True)
    if toml is not None:
        (directory / "case.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    for name, wanted, files in (
        ("input", input_dir, input_files),
        ("expected", expected_dir, expected_files),
    ):
        if not wanted:
            continue
        (directory / name).mkdir(exist_ok=True)
        for relative, text in (files or {}).items():
            target = directory / name / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return directory
