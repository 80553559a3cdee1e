"""uv's environment for a build: the user's uv configuration, else what pip is configured with.

uv reads its own configuration (``uv.toml``, ``UV_*`` variables) and not
pip's. A user who set an index, a wheel directory or ``no-index`` for pip
(``pip.conf``, ``PIP_*`` variables) expects a build to use it: when no uv
setting says where packages come from, :func:`uv_environment` passes pip's
``index-url``, ``extra-index-url``, ``find-links`` and ``no-index`` on to uv,
with pip's rule for several indexes (the best version from any of them,
``UV_INDEX_STRATEGY=unsafe-best-match``). When uv is configured, it is left
alone.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from typing import Final

__all__ = ("uv_environment",)

# uv settings that say where packages come from: any of them set means uv is configured.
_UV_SOURCES: Final = (
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_CONFIG_FILE",
)
_KEYS: Final = ("index-url", "extra-index-url", "find-links", "no-index")


def _uv_config_files(environ: Mapping[str, str]) -> list[str]:
    home = os.path.expanduser("~")
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    dirs = (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    return [
        os.path.join(config_home, "uv", "uv.toml"),
        *(os.path.join(d, "uv", "uv.toml") for d in dirs if d),
        "/etc/uv/uv.toml",
    ]


def _pip_config_files(environ: Mapping[str, str]) -> list[str]:
    """Pip's configuration files, in the order pip reads them (a later one wins)."""
    home = os.path.expanduser("~")
    config_home = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    dirs = (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    files = [os.path.join(d, "pip", "pip.conf") for d in reversed(dirs) if d]
    files += ["/etc/pip.conf", os.path.join(home, ".pip", "pip.conf")]
    files.append(os.path.join(config_home, "pip", "pip.conf"))
    if environ.get("VIRTUAL_ENV"):
        files.append(os.path.join(environ["VIRTUAL_ENV"], "pip.conf"))
    if environ.get("PIP_CONFIG_FILE"):
        files.append(environ["PIP_CONFIG_FILE"])
    return files


def _pip_settings(environ: Mapping[str, str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for path in _pip_config_files(environ):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            if parser.has_section(section):
                for key in _KEYS:
                    if parser.has_option(section, key):
                        settings[key] = parser.get(section, key)
    for key in _KEYS:
        variable = "PIP_" + key.upper().replace("-", "_")
        if variable in environ:
            settings[key] = environ[variable]
    return settings


def _absolute_links(value: str) -> str:
    """Return ``UV_FIND_LINKS``'s ``value`` with each relative path made absolute.

    uv runs in the requirements file's directory; a wheel directory the user
    named relative to where they typed the command must still be found.
    """
    links = []
    for link in value.split(","):
        stripped = link.strip()
        if stripped and "://" not in stripped and not os.path.isabs(stripped):
            stripped = os.path.abspath(os.path.expanduser(stripped))
        links.append(stripped)
    return ",".join(links)


def uv_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment to run uv with: ``environ`` (``os.environ``), plus pip's sources.

    pip's settings are added only when no uv setting names a source (see the
    module). Nothing is removed; a relative wheel directory in
    ``UV_FIND_LINKS`` (the user's, or pip's ``find-links``) is made absolute
    against the current directory.
    """
    source = dict(os.environ if environ is None else environ)
    if "UV_FIND_LINKS" in source:
        source["UV_FIND_LINKS"] = _absolute_links(source["UV_FIND_LINKS"])
    if any(name in source for name in _UV_SOURCES):
        return source
    if any(os.path.isfile(path) for path in _uv_config_files(source)):
        return source
    pip = _pip_settings(source)
    added: dict[str, str] = {}
    if pip.get("index-url", "").strip():
        added["UV_INDEX_URL"] = pip["index-url"].split()[0]
    if pip.get("extra-index-url", "").split():
        added["UV_EXTRA_INDEX_URL"] = " ".join(pip["extra-index-url"].split())
    if pip.get("find-links", "").split():
        added["UV_FIND_LINKS"] = _absolute_links(",".join(pip["find-links"].split()))
    if pip.get("no-index", "").strip().lower() in {"1", "true", "yes", "on"}:
        added["UV_NO_INDEX"] = "1"
    if "UV_EXTRA_INDEX_URL" in added or "UV_INDEX_URL" in added:
        source.setdefault("UV_INDEX_STRATEGY", "unsafe-best-match")
    return {**source, **added}
