"""The JSON Schema of ``bench.toml``, generated from the model, for editors and ``init``."""

from __future__ import annotations

from typing import Any

from codegenie.eval._manifest.model import BenchManifest

__all__ = ("json_schema",)


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of ``bench.toml``, generated from the model."""
    schema = BenchManifest.model_json_schema(by_alias=True, mode="validation")
    # pydantic states the key pattern as patternProperties, which lets any key
    # that does not match through; editors should flag such keys as errors.
    task_classes = schema["properties"]["task-classes"]
    pattern, entry = task_classes.pop("patternProperties").popitem()
    task_classes["propertyNames"] = {"pattern": pattern, **task_classes["propertyNames"]}
    task_classes["additionalProperties"] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://codegenie.dev/schemas/bench.schema.json",
        **schema,
    }
