"""The skill loader: valid skills, every reason a folder is refused, project over user, extra
files, and the Available skills block."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from manual_slop.skills import (
    ProblemKind,
    SkillError,
    extra_file_path,
    load_catalog,
    parse_skill,
    skills_block,
)
from manual_slop.skills.loader import MAX_DESCRIPTION_CHARS, MAX_SKILL_BYTES


def skill_file(root: Path, folder: str, text: str | bytes) -> Path:
    path = root / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def valid(name: str, description: str = "Does a thing; use it for things.", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


def test_a_valid_skill_has_its_metadata_body_and_extra_files(tmp_path: Path) -> None:
    skill_file(tmp_path, "deploy", valid("deploy", "Deploying\n  the   app", "# Deploy\n\nRun it.\n"))
    (tmp_path / "skills" / "deploy" / "ref").mkdir()
    (tmp_path / "skills" / "deploy" / "ref" / "hosts.md").write_text("h1", encoding="utf-8")
    (tmp_path / "skills" / "deploy" / "template.txt").write_text("t", encoding="utf-8")
    (tmp_path / "skills" / "deploy" / ".hidden").write_text("x", encoding="utf-8")
    (tmp_path / "skills" / "loose.md").write_text("not a skill", encoding="utf-8")
    (tmp_path / "skills" / ".cache").mkdir()
    catalog = load_catalog(tmp_path, None)
    assert catalog.problems == ()
    skill = catalog.get("deploy")
    assert skill is not None
    assert (skill.name, skill.description, skill.scope) == ("deploy", "Deploying the app", "project")
    assert skill.body == "# Deploy\n\nRun it."
    assert skill.files == ("ref/hosts.md", "template.txt")
    assert extra_file_path(skill, "ref/hosts.md").read_text() == "h1"
    with pytest.raises(LookupError, match=r"no file '\.\./x'.*ref/hosts\.md, template\.txt"):
        extra_file_path(skill, "../x")


def test_a_link_out_of_the_skill_is_not_one_of_its_files(tmp_path: Path) -> None:
    skill_file(tmp_path, "linky", valid("linky"))
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", tmp_path / "skills" / "linky" / "out.txt")
    assert load_catalog(tmp_path, None).get("linky").files == ()


CASES = [
    ("no_file", None, ProblemKind.NO_SKILL_FILE, "SKILL.md is missing"),
    ("big", "---\nname: big\ndescription: d\n---\n" + "x" * MAX_SKILL_BYTES, ProblemKind.TOO_LARGE, "bytes"),
    ("latin", b"---\nname: latin\ndescription: caf\xe9\n---\n", ProblemKind.NOT_UTF8, "not UTF-8"),
    ("plain", "# Just markdown\n", ProblemKind.NO_FRONT_MATTER, "must start with a '---' line"),
    ("open", "---\nname: open\ndescription: d\n", ProblemKind.UNCLOSED_FRONT_MATTER, "no closing '---'"),
    ("yaml", "---\nname: yaml\ndescription: a: b\n---\n", ProblemKind.BAD_YAML, "YAML at line 3: mapping"),
    ("listy", "---\n- name\n- description\n---\n", ProblemKind.NOT_A_MAPPING, "got list"),
    ("empty", "---\n---\nbody\n", ProblemKind.NOT_A_MAPPING, "got nothing"),
    ("noname", "---\ndescription: d\n---\n", ProblemKind.MISSING_NAME, "no 'name'"),
    ("blank", "---\nname: '  '\ndescription: d\n---\n", ProblemKind.MISSING_NAME, "no 'name'"),
    ("Upper", valid("Upper"), ProblemKind.BAD_NAME, "lowercase letters"),
    ("number", "---\nname: 42\ndescription: d\n---\n", ProblemKind.BAD_NAME, "'42'"),
    ("other", valid("something-else"), ProblemKind.NAME_MISMATCH, "differs from its folder's name 'other'"),
    ("nodesc", "---\nname: nodesc\n---\n", ProblemKind.MISSING_DESCRIPTION, "no 'description'"),
    ("nodesc2", "---\nname: nodesc2\ndescription: ''\n---\n", ProblemKind.MISSING_DESCRIPTION, "no 'desc"),
    ("long", valid("long", "x" * (MAX_DESCRIPTION_CHARS + 1)), ProblemKind.DESCRIPTION_TOO_LONG, "1,025"),
]


def test_every_invalid_skill_is_listed_with_its_kind_and_reason_and_the_rest_load(tmp_path: Path) -> None:
    for folder, text, _, _ in CASES:
        if text is None:
            (tmp_path / "skills" / folder).mkdir(parents=True)
        else:
            skill_file(tmp_path, folder, text)
    skill_file(tmp_path, "good", valid("good"))
    (tmp_path / "skills" / "eio").mkdir()
    (tmp_path / "skills" / "eio" / "SKILL.md").symlink_to("/proc/self/mem")  # a file whose read fails
    catalog = load_catalog(tmp_path, None)
    assert catalog.names() == ["good"]
    problems = {p.name: p for p in catalog.problems}
    expected = {folder: (kind, words) for folder, _, kind, words in CASES}
    expected["eio"] = (ProblemKind.UNREADABLE, "SKILL.md cannot be read: Input/output error")
    assert set(problems) == set(expected)
    for folder, (kind, words) in expected.items():
        assert problems[folder].kind is kind, folder
        assert words in problems[folder].reason, (folder, problems[folder].reason)
        assert problems[folder].path == str(tmp_path / "skills" / folder)
    covered = {kind for kind, _ in expected.values()}
    assert covered == set(ProblemKind), "a refusal kind without a test"


def test_a_folder_that_cannot_be_listed_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "skills").write_text("a file where the folder should be", encoding="utf-8")
    assert load_catalog(tmp_path, None).skills == {}  # not a folder: no skills, nothing refused
    if os.geteuid() == 0:
        return  # root lists any folder
    (tmp_path / "skills").unlink()
    (tmp_path / "skills").mkdir(mode=0)
    try:
        catalog = load_catalog(tmp_path, None)
    finally:
        (tmp_path / "skills").chmod(0o755)
    assert [p.kind for p in catalog.problems] == [ProblemKind.UNREADABLE]


def test_a_project_skill_hides_the_users_and_one_shared_folder_is_read_once(tmp_path: Path) -> None:
    project, user = tmp_path / "project", tmp_path / "user"
    skill_file(project, "review", valid("review", "Project review."))
    skill_file(user, "review", valid("review", "User review."))
    skill_file(user, "style", valid("style", "User style."))
    skill_file(user, "Bad", valid("Bad"))
    catalog = load_catalog(project, user)
    assert catalog.names() == ["review", "style"]
    assert (catalog.get("review").description, catalog.get("review").scope) == ("Project review.", "project")
    assert catalog.get("style").scope == "user"
    assert [(p.name, p.scope) for p in catalog.problems] == [("Bad", "user")]
    assert [p.scope for p in load_catalog(user, user).problems] == ["project"]  # once, as the project's
    assert catalog.enabled({"review"}).names() == ["style"]


def test_front_matter_details() -> None:
    skill = parse_skill("\ufeff---\nname: a-b\ndescription: d\nlicense: MIT\n---\n\nText\n", "a-b")
    assert (skill.body, dict(skill.metadata)) == ("Text", {"license": "MIT"})
    with pytest.raises(SkillError) as refused:
        parse_skill("---\nname: -a\ndescription: d\n---\n", "-a")
    assert refused.value.kind is ProblemKind.BAD_NAME


def test_the_available_skills_block_lists_names_and_descriptions_only() -> None:
    assert skills_block([]) == ""
    skills = [parse_skill(valid(n, f"About {n}.", f"SECRET BODY {n}"), n) for n in ("zeta", "alpha")]
    block = skills_block(skills)
    assert block.startswith("## Available skills\n\nCall get_skill(name)")
    assert block.endswith("- alpha: About alpha.\n- zeta: About zeta.")
    assert "SECRET BODY" not in block
