"""codegenie.eval.registry: the registry object and @register_task_class."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegenie.eval import TaskClass, TaskClassRegistry, register_task_class
from codegenie.eval.errors import (
    InvalidTaskClassName,
    TaskClassAlreadyRegistered,
    TaskClassNotFound,
)
from codegenie.eval.registry import registering_into


@pytest.fixture
def registry() -> TaskClassRegistry:
    return TaskClassRegistry()


def test_decorator_returns_the_class_unchanged(registry: TaskClassRegistry) -> None:
    """The decorated class is the class itself, not a wrapper."""

    class Original:
        pass

    decorated = register_task_class("foo", registry=registry)(Original)
    assert decorated is Original


def test_registered_task_class_records_module_source_and_paths(registry: TaskClassRegistry) -> None:
    """TaskClass holds name, module, source file, description, rubric, cases and the class."""

    @register_task_class(
        "foo", description="Does foo.", rubric="grade.py", cases="data/cases", registry=registry
    )
    class Foo:
        pass

    task_class = registry.get("foo")
    here = Path(__file__).resolve()
    assert task_class.name == "foo"
    assert task_class.module == __name__
    assert task_class.source == here
    assert task_class.description == "Does foo."
    assert task_class.rubric == here.parent / "grade.py"
    assert task_class.cases == here.parent / "data" / "cases"
    assert task_class.cls is Foo


def test_description_defaults_to_first_docstring_line(registry: TaskClassRegistry) -> None:
    """Without description=, the first line of the class docstring is used."""

    @register_task_class("foo", registry=registry)
    class Foo:
        """Remediate things.

        More text.
        """

    assert registry.get("foo").description == "Remediate things."


def test_task_class_is_frozen(registry: TaskClassRegistry) -> None:
    """A TaskClass cannot be changed after registration."""

    @register_task_class("foo", registry=registry)
    class Foo:
        pass

    task_class = registry.get("foo")
    with pytest.raises(Exception, match="frozen"):
        task_class.name = "bar"  # type: ignore[misc]


def test_second_registration_of_a_name_raises_naming_both_modules(
    registry: TaskClassRegistry,
) -> None:
    """A different class under a taken name raises TaskClassAlreadyRegistered."""

    @register_task_class("foo", registry=registry)
    class First:
        pass

    other = TaskClass(
        name="foo",
        module="bench.other.registration",
        source=None,
        description=None,
        rubric=None,
        cases=None,
        cls=object,
    )
    with pytest.raises(TaskClassAlreadyRegistered) as exc:
        registry.register(other)
    assert exc.value.name == "foo"
    assert exc.value.first_module == __name__
    assert exc.value.second_module == "bench.other.registration"
    assert registry.get("foo").cls is First


def test_registering_the_same_object_again_is_a_no_op(registry: TaskClassRegistry) -> None:
    """The very same TaskClass can be registered twice (a cached load into a registry)."""

    @register_task_class("foo", registry=registry)
    class Foo:
        pass

    task_class = registry.get("foo")
    registry.register(task_class)
    assert registry.all_task_classes() == (task_class,)


@pytest.mark.parametrize("name", ["Foo", "", "registration", "foo_bar"])
def test_decorator_refuses_invalid_names(name: str, registry: TaskClassRegistry) -> None:
    """register_task_class validates the slug with the loader's rules."""
    with pytest.raises(InvalidTaskClassName):
        register_task_class(name, registry=registry)


@pytest.mark.parametrize("rubric", ["/etc/passwd", "../other/rubric.py", "", "a\\b.py"])
def test_decorator_refuses_rubric_outside_the_task_class(
    rubric: str, registry: TaskClassRegistry
) -> None:
    """rubric= and cases= must stay inside the task-class directory."""
    with pytest.raises(ValueError, match="relative path"):
        register_task_class("foo", rubric=rubric, registry=registry)
    with pytest.raises(ValueError, match="relative path"):
        register_task_class("foo", cases=rubric, registry=registry)


def test_registry_accessors(registry: TaskClassRegistry) -> None:
    """names, all_task_classes, __contains__, __iter__, __len__ and __repr__ agree."""
    for name in ("bbb", "aaa"):
        register_task_class(name, registry=registry)(type(name, (), {}))
    assert registry.names() == ("bbb", "aaa")
    assert [tc.name for tc in registry.all_task_classes()] == ["bbb", "aaa"]
    assert [tc.name for tc in registry] == ["bbb", "aaa"]
    assert "aaa" in registry
    assert "zzz" not in registry
    assert len(registry) == 2
    assert repr(registry) == "<TaskClassRegistry(2 task classes)>"


def test_get_of_unknown_name_suggests(registry: TaskClassRegistry) -> None:
    """get() of a missing name raises TaskClassNotFound with suggestions."""
    register_task_class("vuln-remediation", registry=registry)(type("V", (), {}))
    with pytest.raises(TaskClassNotFound) as exc:
        registry.get("vuln-remediaton")
    assert exc.value.suggestions == ("vuln-remediation",)
    assert exc.value.available_names == ("vuln-remediation",)


def test_unregister_returns_the_removed_task_class(registry: TaskClassRegistry) -> None:
    """unregister removes and returns; a missing name returns None."""
    register_task_class("foo", registry=registry)(type("F", (), {}))
    removed = registry.unregister("foo")
    assert removed is not None
    assert removed.name == "foo"
    assert registry.unregister("foo") is None
    assert "foo" not in registry


def test_registering_into_directs_undirected_registrations(
    registry: TaskClassRegistry, default_registry: TaskClassRegistry
) -> None:
    """Inside registering_into, decorators without registry= use that registry and are recorded."""
    with registering_into(registry) as session:
        register_task_class("foo")(type("F", (), {}))
    register_task_class("bar")(type("B", (), {}))
    assert registry.names() == ("foo",)
    assert default_registry.names() == ("bar",)
    assert session.names() == ("foo",)
    session.rollback()
    assert registry.names() == ()


def test_fresh_registries_are_independent() -> None:
    """Two registries share no state."""
    first, second = TaskClassRegistry(), TaskClassRegistry()
    register_task_class("foo", registry=first)(type("F", (), {}))
    assert "foo" not in second
