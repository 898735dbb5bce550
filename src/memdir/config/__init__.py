"""Configuration (docs/design.md#config): layered defaults → user file → workspace file →
arguments.

- :mod:`~memdir.config.settings`: the settings as frozen dataclasses, one per TOML table, and
  how a config loads (``load_config``, ``MEMDIR_HOME``, the default workspace).
- :mod:`~memdir.config.agents`: the settings of the ways in outside the library (Claude Code's
  hooks, the per-user service, team sync).
- :mod:`~memdir.config.choices`: the allowed values of every enumerated setting.
- :mod:`~memdir.config.trust`: what a workspace's own config file may set.

The public names are exported by the package (``from memdir import Config, load_config``).
"""
