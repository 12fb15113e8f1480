"""The skills' part of the system prompt: each enabled skill's name and description, never its body.

This is the first level of progressive disclosure: the model learns which skills exist and what
each is for; the ``get_skill`` tool hands out a body when the model decides it needs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from manual_slop.skills.loader import Skill

__all__ = ["GET_SKILL", "SKILLS_HEADING", "skills_block"]

GET_SKILL = "get_skill"  # the tool that returns a skill's full text (manual_slop.tools.skills)
SKILLS_HEADING = "## Available skills"


def skills_block(skills: Iterable[Skill]) -> str:
    """The "Available skills" section for ``skills`` (sorted by name); '' when there are none."""
    ordered = sorted(skills, key=lambda skill: skill.name)
    if not ordered:
        return ""
    lines = [
        SKILLS_HEADING,
        "",
        f"Call {GET_SKILL}(name) for a skill's full instructions before you follow it; "
        "only its name and description are shown here.",
        "",
    ]
    lines.extend(f"- {skill.name}: {skill.description}" for skill in ordered)
    return "\n".join(lines)
