"""Context presets: named sets of tracked files, excludes and per-file views, per project.

Stored in the project file::

    [context.presets.review]
    files = ["src/**/*.py", "docs/*.md"]
    exclude = ["**/__pycache__/**"]
    views = { "src/big.py" = { mode = "skeleton" } }

Saving captures the current file set; loading replaces it (an undoable edit in the app).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from manual_slop.context.errors import PresetError, ViewError
from manual_slop.context.items import ViewSpec

__all__ = ["Preset", "delete_preset", "get_preset", "save_preset", "validate_preset_name"]

_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,100}")


@dataclass(frozen=True, slots=True)
class Preset:
    """A saved file set."""

    files: tuple[str, ...]
    exclude: tuple[str, ...]
    views: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "exclude": list(self.exclude), "views": copy.deepcopy(self.views)}


def validate_preset_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip() or "\x00"):
        raise PresetError(f"a preset name is 1-100 printable characters, got {name!r}")
    return name.strip()


def save_preset(
    presets: dict[str, Any],
    name: str,
    files: Sequence[str],
    exclude: Sequence[str],
    views: Mapping[str, Mapping[str, Any]],
) -> str:
    """Store (or overwrite) preset ``name``; returns the cleaned name."""
    clean = validate_preset_name(name)
    presets[clean] = Preset(tuple(files), tuple(exclude), copy.deepcopy(dict(views))).to_dict()
    return clean


def get_preset(presets: Mapping[str, Any], name: str) -> Preset:
    """The preset ``name``, validated (raises PresetError naming what is wrong)."""
    raw = presets.get(name)
    if raw is None:
        known = ", ".join(sorted(presets)) or "none saved"
        raise PresetError(f"no context preset named {name!r}; presets: {known}")
    if not isinstance(raw, Mapping):
        raise PresetError(f"preset {name!r} is not a table")
    files, exclude, views = raw.get("files", []), raw.get("exclude", []), raw.get("views", {})
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise PresetError(f"preset {name!r}: files must be a list of strings")
    if not isinstance(exclude, list) or not all(isinstance(f, str) for f in exclude):
        raise PresetError(f"preset {name!r}: exclude must be a list of strings")
    if not isinstance(views, Mapping):
        raise PresetError(f"preset {name!r}: views must be a table")
    for path, spec in views.items():
        try:
            ViewSpec.from_dict(spec)
        except ViewError as exc:
            raise PresetError(f"preset {name!r}: view of {path}: {exc}") from exc
    return Preset(tuple(files), tuple(exclude), copy.deepcopy(dict(views)))


def delete_preset(presets: dict[str, Any], name: str) -> None:
    if name not in presets:
        known = ", ".join(sorted(presets)) or "none saved"
        raise PresetError(f"no context preset named {name!r}; presets: {known}")
    del presets[name]
