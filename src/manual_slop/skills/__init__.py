"""Skills: ``skills/<name>/SKILL.md`` documents whose name and description go into the system
prompt and whose full text the model loads on demand with ``get_skill`` (progressive
disclosure). See docs/guide_skills.md."""

from __future__ import annotations

from manual_slop.skills.loader import (
    ProblemKind,
    Skill,
    SkillCatalog,
    SkillError,
    SkillProblem,
    extra_file_path,
    load_catalog,
    load_skill,
    parse_skill,
)
from manual_slop.skills.prompt import skills_block

__all__ = [
    "ProblemKind",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillProblem",
    "extra_file_path",
    "load_catalog",
    "load_skill",
    "parse_skill",
    "skills_block",
]
