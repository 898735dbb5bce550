"""What a workspace's own config file may set (docs/design.md#config).

A workspace may be a cloned repository, so ``<workspace>/.memdir/config.toml`` is untrusted: it
may not set endpoints, keys, the index URL or workspace id, may choose only providers that keep
data on this machine, may add extra paths only inside the workspace, and may make the secrets
check stricter, never weaker. :func:`check_workspace_config` refuses anything else before the
file is merged, naming the file, the key and where to put it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memdir.errors import ConfigError

#: Keys a workspace-local config may never set: they steer where data and keys go.
_WORKSPACE_FORBIDDEN = {
    ("embedding", "base_url"),
    ("embedding", "api_key"),
    ("llm", "base_url"),
    ("llm", "api_key"),
    ("index", "url"),
    ("index", "workspace_id"),
    ("rerank", "base_url"),
    ("rerank", "api_key"),
    ("team", "remote"),
    ("team", "branch"),
}
#: Providers a workspace-local config may choose (none of them sends data away), by section,
#: and what a remote one would send.
_WORKSPACE_PROVIDERS = {
    "embedding": (frozenset({"local", "none", "fake"}), "your notes"),
    "llm": (frozenset({"none", "fake"}), "your conversations"),
    "rerank": (frozenset({"learned", "none"}), "your notes"),
}


def check_workspace_config(data: Mapping[str, Any], ws_file: Path, user_file: Path) -> None:
    """Refuse what the workspace file ``ws_file`` (parsed as ``data``) may not set.

    Raises:
        ConfigError: a forbidden key, a remote provider, an extra path outside the workspace,
            or a weaker secrets check; the message names ``user_file`` as the place for it.
    """
    for section, key in _WORKSPACE_FORBIDDEN:
        table = data.get(section, {})
        if isinstance(table, Mapping) and key in table:
            raise ConfigError(
                f"{ws_file}: a workspace config may not set {section}.{key} "
                f"(a cloned workspace must not redirect your keys); "
                f"put it in {user_file} instead"
            )
    _check_workspace_providers(data, ws_file, user_file)
    _check_workspace_extra_paths(data, ws_file)
    _check_workspace_privacy(data, ws_file, user_file)


def _check_workspace_providers(data: Mapping[str, Any], ws_file: Path, user_file: Path) -> None:
    """A workspace config may only choose providers that keep data on this machine."""
    for section, (allowed, what) in _WORKSPACE_PROVIDERS.items():
        table = data.get(section, {})
        provider = table.get("provider") if isinstance(table, Mapping) else None
        if provider is not None and provider not in allowed:
            raise ConfigError(
                f"{ws_file}: a workspace config may only choose {section}.provider "
                f"{', '.join(sorted(allowed))}, not {provider!r}: a cloned workspace must not "
                f"send {what} to a remote service; set it in {user_file}"
            )


def _check_workspace_extra_paths(data: Mapping[str, Any], ws_file: Path) -> None:
    """A workspace config may add extra paths only inside the workspace: a cloned repository
    must not expose other Markdown files of this machine to an agent."""
    index = data.get("index", {})
    extra = index.get("extra_paths", []) if isinstance(index, Mapping) else []
    for entry in extra if isinstance(extra, list) else []:
        path = Path(str(entry))
        if path.is_absolute() or str(entry).startswith("~") or ".." in path.parts:
            raise ConfigError(
                f"{ws_file}: index.extra_paths may only name folders inside the workspace "
                f"here, not {entry!r}; put paths elsewhere on this machine in the user config"
            )


def _check_workspace_privacy(data: Mapping[str, Any], ws_file: Path, user_file: Path) -> None:
    """A workspace config may make the secrets check stricter, not weaker (a cloned repository
    must not switch it off, nor slow every write with its own regexes)."""
    privacy = data.get("privacy", {})
    if not isinstance(privacy, Mapping):
        return
    if privacy.get("secrets") == "off":
        raise ConfigError(
            f"{ws_file}: a workspace config may not set privacy.secrets = 'off'; "
            f"put it in {user_file} instead"
        )
    if "secret_patterns" in privacy:
        raise ConfigError(
            f"{ws_file}: a workspace config may not set privacy.secret_patterns; "
            f"put them in {user_file} instead"
        )


__all__ = ["check_workspace_config"]
