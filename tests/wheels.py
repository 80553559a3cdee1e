"""Make real wheels in a test's directory, so environments build without a package index."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def make_wheel(directory: Path, name: str, version: str, source: str) -> Path:
    """Write ``<name>-<version>-py3-none-any.whl`` into ``directory``: one module, ``name``.

    ``source`` is the module's ``__init__.py``. The wheel is complete (METADATA,
    WHEEL, RECORD with hashes): pip and uv install it as any other.
    """
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": source.encode(),
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        ).encode(),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: codegenie-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    record += f"{dist_info}/RECORD,,\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{dist_info}/RECORD", record)
    return wheel


def offline_requirements(path: Path, wheels: Path, *lines: str) -> Path:
    """Write a requirements file at ``path`` that installs ``lines`` from ``wheels`` alone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"--no-index\n--find-links {wheels}\n" + "".join(f"{line}\n" for line in lines)
    path.write_text(text, encoding="utf-8")
    return path
