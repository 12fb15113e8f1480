"""get_skill through the real registry: the body and files of an enabled skill, one extra file
(also of a user skill outside the project), and errors that name what is available."""

from __future__ import annotations

from pathlib import Path

from manual_slop.skills import load_catalog
from manual_slop.tools import ExecutionContext, ToolStatus


def write(root: Path, name: str, body: str, files: dict[str, str]) -> None:
    folder = root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: About {name}.\n---\n{body}\n")
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)


def test_get_skill_hands_out_bodies_and_extra_files(run, ctx: ExecutionContext, project: Path) -> None:
    user = project.parent / "user"
    write(project, "local", "LOCAL BODY", {"docs/a.md": "local file"})
    write(user, "shared", "SHARED BODY", {"notes.md": "user file", ".env": "KEY=1", "deep/.env.local": "K=2"})
    write(user, "off", "OFF BODY", {})
    ctx.skills = load_catalog(project, user).enabled({"off"})

    local = run("get_skill", name="local")
    assert local.status is ToolStatus.SUCCESS
    assert local.content.startswith("# Skill: local (project)\n\nLOCAL BODY")
    assert "- docs/a.md (read_file: skills/local/docs/a.md)" in local.content  # inside the project
    shared = run("get_skill", name="shared").content
    assert "SHARED BODY" in shared and "- notes.md\n" in shared + "\n"  # outside: get_skill reads it
    assert ".env" not in shared  # hidden files are no skill files
    assert run("get_skill", name="shared", file="notes.md").content == "# Skill shared: notes.md\n\nuser file"

    missing = run("get_skill", name="off")
    assert missing.status is ToolStatus.ERROR
    assert "no enabled skill named 'off'; available skills: local, shared" in missing.content
    outside = run("get_skill", name="shared", file="../../project/skills/local/SKILL.md")
    assert outside.status is ToolStatus.ERROR and "its files: notes.md" in outside.content
    assert run("get_skill", name="Bad Name").status is ToolStatus.ERROR  # the schema's pattern


def test_a_secret_file_of_a_skill_is_refused_and_without_skills_the_tool_says_so(
    run, ctx: ExecutionContext, project: Path
) -> None:
    write(project, "keys", "body", {"deploy.pem": "-----BEGIN PRIVATE KEY-----"})
    ctx.skills = load_catalog(project, None)
    denied = run("get_skill", name="keys", file="deploy.pem")
    assert denied.status is ToolStatus.DENIED and "private key" in denied.content
    ctx.skills = None
    unavailable = run("get_skill", name="keys")
    assert unavailable.status is ToolStatus.ERROR and "skills are not available here" in unavailable.content
