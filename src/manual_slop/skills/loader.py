"""Skills: ``skills/<name>/SKILL.md`` folders found beside the project file and beside
``config.toml``, read by one loader.

A ``SKILL.md`` opens with YAML front matter between two ``---`` lines holding at least ``name``
(equal to the folder's name: lowercase letters, digits and ``-``) and ``description``; the rest
of the file is the skill's body in Markdown. Other files in the folder are the skill's extra
files, listed by their path relative to it. A project skill hides a user skill of the same
name. A folder that is not a valid skill becomes a :class:`SkillProblem` with its
:class:`ProblemKind` and a reason naming the file and what to fix; it never stops the others.

Only the catalog's metadata goes into the system prompt (:mod:`.prompt`); the body is read
here once and handed out by the ``get_skill`` tool (:mod:`manual_slop.tools.skills`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_EXTRA_FILES",
    "MAX_SKILL_BYTES",
    "NAME_PATTERN",
    "SCOPES",
    "SKILL_FILE",
    "ProblemKind",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillProblem",
    "extra_file_path",
    "load_catalog",
    "load_skill",
    "parse_skill",
]

SKILL_FILE = "SKILL.md"
NAME_PATTERN = r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?"  # 1-64 characters, no '-' at either end
MAX_SKILL_BYTES = 256 * 1024  # a skill longer than this is a manual, not a skill
MAX_DESCRIPTION_CHARS = 1024  # it goes into every system prompt: keep it a sentence or two
MAX_EXTRA_FILES = 200  # listed beside the body; a folder with more is listed up to here
SCOPES: tuple[str, ...] = ("project", "user")
_FENCE = "---"


class ProblemKind(StrEnum):
    """Why a folder under ``skills/`` is not a valid skill (docs/guide_skills.md lists them)."""

    NO_SKILL_FILE = "no_skill_file"
    UNREADABLE = "unreadable"
    TOO_LARGE = "too_large"
    NOT_UTF8 = "not_utf8"
    NO_FRONT_MATTER = "no_front_matter"
    UNCLOSED_FRONT_MATTER = "unclosed_front_matter"
    BAD_YAML = "bad_yaml"
    NOT_A_MAPPING = "not_a_mapping"
    MISSING_NAME = "missing_name"
    BAD_NAME = "bad_name"
    NAME_MISMATCH = "name_mismatch"
    MISSING_DESCRIPTION = "missing_description"
    DESCRIPTION_TOO_LONG = "description_too_long"


class SkillError(ValueError):
    """A skill the loader refuses: ``kind`` says which rule, the message names file and fix."""

    def __init__(self, kind: ProblemKind, message: str) -> None:
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Skill:
    """One valid skill: its metadata, its body and the files beside ``SKILL.md``."""

    name: str
    description: str
    body: str
    scope: str = "project"
    path: str = ""  # the skill's folder
    files: tuple[str, ...] = ()  # extra files, relative to the folder, '/'-separated
    metadata: Mapping[str, Any] = field(default_factory=dict)  # front matter keys beyond the two

    def summary(self, enabled: bool = True) -> dict[str, Any]:
        """The skill without its body (lists, the Hook API)."""
        return {
            "name": self.name,
            "description": self.description,
            "scope": self.scope,
            "path": self.path,
            "files": list(self.files),
            "enabled": enabled,
        }


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """A folder under ``skills/`` that is not a valid skill, and why."""

    name: str  # the folder's name
    scope: str
    path: str
    kind: ProblemKind
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "scope": self.scope,
            "path": self.path,
            "kind": str(self.kind),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    """Every skill found (project over user) and every folder refused."""

    skills: Mapping[str, Skill] = field(default_factory=dict)
    problems: tuple[SkillProblem, ...] = ()

    def names(self) -> list[str]:
        return sorted(self.skills)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def enabled(self, disabled: Collection[str]) -> SkillCatalog:
        """The catalog without the skills named in ``disabled`` (what a send offers)."""
        kept = {name: skill for name, skill in self.skills.items() if name not in disabled}
        return SkillCatalog(kept, self.problems)


# -- reading ------------------------------------------------------------------------------------
def load_catalog(project_dir: Path | None, user_dir: Path | None) -> SkillCatalog:
    """Skills under ``<project_dir>/skills`` and ``<user_dir>/skills`` (the project's win)."""
    skills: dict[str, Skill] = {}
    problems: list[SkillProblem] = []
    if user_dir is not None and project_dir is not None and _same_folder(user_dir, project_dir):
        user_dir = None  # the project lives beside config.toml: one skills/ folder, read once
    for scope, root in (("user", user_dir), ("project", project_dir)):
        if root is None:
            continue
        folder = root / "skills"
        try:
            children = sorted(folder.iterdir()) if folder.is_dir() else []
        except OSError as exc:
            reason = f"the folder cannot be listed: {exc.strerror or exc}"
            problems.append(SkillProblem("", scope, str(folder), ProblemKind.UNREADABLE, reason))
            continue
        for child in children:
            if child.name.startswith(".") or not child.is_dir():
                continue  # hidden folders and loose files are not skills
            try:
                skills[child.name] = load_skill(child, scope)
            except SkillError as exc:
                problems.append(SkillProblem(child.name, scope, str(child), exc.kind, str(exc)))
    return SkillCatalog(skills, tuple(problems))


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def load_skill(folder: Path, scope: str = "project") -> Skill:
    """The skill in ``folder``; SkillError with the kind and reason when it is not one."""
    text = _read_skill_file(folder / SKILL_FILE)
    skill = parse_skill(text, folder.name)
    return Skill(
        name=skill.name,
        description=skill.description,
        body=skill.body,
        scope=scope,
        path=str(folder),
        files=_extra_files(folder),
        metadata=skill.metadata,
    )


def _read_skill_file(path: Path) -> str:
    try:
        if not path.is_file():
            raise SkillError(ProblemKind.NO_SKILL_FILE, f"{SKILL_FILE} is missing (a skill folder needs one)")
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            raise SkillError(
                ProblemKind.TOO_LARGE,
                f"{SKILL_FILE} has {size:,} bytes; at most {MAX_SKILL_BYTES:,} are read "
                "(move details into extra files beside it)",
            )
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(ProblemKind.NOT_UTF8, f"{SKILL_FILE} is not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        reason = f"{SKILL_FILE} cannot be read: {exc.strerror or exc}"
        raise SkillError(ProblemKind.UNREADABLE, reason) from None


def parse_skill(text: str, folder_name: str) -> Skill:
    """A skill from the text of its ``SKILL.md`` (``folder_name``: the name it must carry)."""
    import yaml  # here: only a project with skills pays for it, not every start

    front, body = _split_front_matter(text)
    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 2}" if where is not None else ""  # +1 for 0-based, +1 for the fence
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SkillError(ProblemKind.BAD_YAML, f"the front matter is not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        got = "nothing" if data is None else type(data).__name__
        raise SkillError(ProblemKind.NOT_A_MAPPING, f"the front matter must be 'key: value' lines, got {got}")
    name = data.get("name")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise SkillError(ProblemKind.MISSING_NAME, "the front matter has no 'name' (the folder's name)")
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise SkillError(
            ProblemKind.BAD_NAME,
            f"name {str(name)[:70]!r}: 1-64 lowercase letters, digits and '-' (not at either end)",
        )
    if name != folder_name:
        raise SkillError(
            ProblemKind.NAME_MISMATCH, f"name {name!r} differs from its folder's name {folder_name[:70]!r}"
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError(
            ProblemKind.MISSING_DESCRIPTION,
            "the front matter has no 'description' text (what the skill is for and when to use it)",
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(
            ProblemKind.DESCRIPTION_TOO_LONG,
            f"the description has {len(description):,} characters; at most {MAX_DESCRIPTION_CHARS:,} "
            "(it goes into every system prompt; put details in the body)",
        )
    extra = {str(k): v for k, v in data.items() if k not in ("name", "description")}
    return Skill(name=name, description=description, body=body.strip("\n"), metadata=extra)


def _split_front_matter(text: str) -> tuple[str, str]:
    """(front matter, body) of a ``SKILL.md``: the text between the first two ``---`` lines."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip() != _FENCE:
        raise SkillError(
            ProblemKind.NO_FRONT_MATTER,
            f"{SKILL_FILE} must start with a '---' line, then 'name:' and 'description:', then '---'",
        )
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise SkillError(ProblemKind.UNCLOSED_FRONT_MATTER, "the front matter has no closing '---' line")


def _extra_files(folder: Path) -> tuple[str, ...]:
    """The files beside ``SKILL.md`` (hidden ones and links out of the folder left out)."""
    root = os.path.realpath(folder)
    found: list[str] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(current, name)
            relative = path.relative_to(folder).as_posix()
            if relative == SKILL_FILE:
                continue
            if not _inside(os.path.realpath(path), root):
                continue  # a link out of the skill is not the skill's file
            found.append(relative)
            if len(found) >= MAX_EXTRA_FILES:
                return tuple(sorted(found))
    return tuple(sorted(found))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def extra_file_path(skill: Skill, relative: str) -> Path:
    """The file ``relative`` of ``skill`` when it is one of its listed extra files; SkillError
    naming the files otherwise: no path outside the skill's folder can be named."""
    if relative not in skill.files:
        listed = ", ".join(skill.files) or "none"
        raise LookupError(f"skill {skill.name} has no file {relative[:200]!r} (its files: {listed})")
    path = Path(skill.path, relative)
    if not _inside(os.path.realpath(path), os.path.realpath(skill.path)):  # relinked since it was listed
        raise LookupError(f"{relative!r} now leads out of skill {skill.name}'s folder")
    return path
