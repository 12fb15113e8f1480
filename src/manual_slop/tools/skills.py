"""The skills tool: ``get_skill`` returns a skill's full text, or one of the files beside it.

It reads the send's snapshot of the enabled skills (``ExecutionContext.skills``, a
:class:`~manual_slop.skills.SkillCatalog`; None when the app has no project: the tool says so).
A skill's extra files are read here, not only with ``read_file``: a user-level skill lives beside
``config.toml``, usually outside the project the path policy confines the file tools to. Only
the files the loader listed can be named (no path leads out of the skill's folder), and the
policy's refusals (secret files, the app's own files) still apply; output is redacted by the
registry like every tool's.
"""

from __future__ import annotations

from typing import Any

from manual_slop.skills.loader import MAX_SKILL_BYTES, NAME_PATTERN, Skill, SkillCatalog, extra_file_path
from manual_slop.skills.prompt import GET_SKILL
from manual_slop.tools.errors import AccessDenied, ToolInputError, ToolUnavailable
from manual_slop.tools.tool import Tool, ToolRun

__all__ = ["skill_tools"]


def _catalog(run: ToolRun) -> SkillCatalog:
    catalog = run.ctx.skills
    if catalog is None:
        raise ToolUnavailable("skills are not available here (no project with skills is open)")
    return catalog


def get_skill(args: dict[str, Any], run: ToolRun) -> str:
    catalog = _catalog(run)
    name = str(args["name"]).strip()
    skill = catalog.get(name)
    if skill is None:
        available = ", ".join(catalog.names()) or "none"
        raise ToolInputError(f"no enabled skill named {name[:70]!r}; available skills: {available}")
    relative = args.get("file")
    if relative:
        return _read_extra(skill, str(relative), run)
    return _full_text(skill, run)


def _full_text(skill: Skill, run: ToolRun) -> str:
    parts = [f"# Skill: {skill.name} ({skill.scope})", "", skill.body or "(the skill has no body)"]
    if skill.files:
        parts += [
            "",
            f"## Files of skill {skill.name}",
            f'Read one with {GET_SKILL}(name="{skill.name}", file="<file>"); '
            "where read_file can reach it too, its path for read_file follows.",
        ]
        for relative in skill.files:
            allowed, resolved = run.ctx.policy.is_allowed(f"{skill.path}/{relative}")
            parts.append(f"- {relative}" + (f" (read_file: {run.display(resolved)})" if allowed else ""))
    return "\n".join(parts)


def _read_extra(skill: Skill, relative: str, run: ToolRun) -> str:
    try:
        path = extra_file_path(skill, relative)
    except LookupError as exc:
        raise ToolInputError(str(exc)) from None
    refusal = run.ctx.policy.refusal(path)
    if refusal is not None:
        raise AccessDenied(relative, refusal)
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            limit = f"{GET_SKILL} reads at most {MAX_SKILL_BYTES:,}"
            raise ToolInputError(f"{relative} has {size:,} bytes; {limit}")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ToolInputError(f"{relative} is not UTF-8 text; get_skill reads text files only") from None
    except OSError as exc:
        raise ToolInputError(f"{relative} cannot be read: {exc.strerror or exc}") from None
    return f"# Skill {skill.name}: {relative}\n\n{text}"


def skill_tools() -> list[Tool]:
    return [
        Tool(
            GET_SKILL,
            "Load a skill's full instructions (the system prompt lists the available skills by name "
            "and description); with file, one of the files the skill lists beside its instructions.",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": f"^{NAME_PATTERN}$", "maxLength": 64},
                    "file": {"type": "string", "minLength": 1, "maxLength": 1000},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
            get_skill,
        ),
    ]
