"""``bench.toml``: the manifest model, and reading it with precise errors.

This is the public home of the manifest's names; the mechanisms live beneath
it: the model and its validation in :mod:`codegenie.eval._manifest.model`,
the bounded reader in :mod:`codegenie.eval._manifest.read`, the cache of
validated manifests in :mod:`codegenie.eval._cache`.
"""

from __future__ import annotations

from codegenie.eval._cache.memo import clear_manifest_cache, load_manifest_cached
from codegenie.eval._manifest.model import SUPPORTED_SCHEMA_VERSIONS, BenchManifest, ManifestEntry
from codegenie.eval._manifest.read import find_manifest, read_manifest_bytes
from codegenie.eval._manifest.schema import json_schema
from codegenie.eval._paths import MANIFEST_NAME, MANIFEST_SIZE_LIMIT

__all__ = (
    "MANIFEST_NAME",
    "MANIFEST_SIZE_LIMIT",
    "SUPPORTED_SCHEMA_VERSIONS",
    "BenchManifest",
    "ManifestEntry",
    "clear_manifest_cache",
    "find_manifest",
    "json_schema",
    "load_manifest_cached",
    "read_manifest_bytes",
)
