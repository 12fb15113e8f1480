"""Aggregation: every view mode and strategy on the fixture project, determinism, budgets, MD Only."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from manual_slop.context.aggregate import (
    ContextRequest,
    Strategy,
    aggregate,
    build_markdown,
    build_tier3_context,
    compile_context,
    write_md_only,
)
from manual_slop.context.errors import ViewError
from manual_slop.context.file_cache import FileCache
from manual_slop.context.fileset import resolve_files
from manual_slop.context.items import FileItem, FileKind, ViewMode, ViewSpec, estimate_tokens
from manual_slop.context.views import fenced
from tests.unit.context.fixture_project import ALL_FILES, build_project

SECRET_PATTERNS = [r"(?i)(api[_-]?key|password)\s*="]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "proj")


def load(project: Path, patterns=ALL_FILES, views: dict[str, ViewSpec] | None = None) -> list[FileItem]:
    views = views or {}
    return [
        FileItem.load(r.path, r.name, views.get(r.name))
        for r in resolve_files(project, patterns, ["__pycache__"])
    ]


def block_of(markdown: str, name: str) -> str:
    start = markdown.index(f"### `{name}`")
    end = markdown.find("\n### ", start + 1)
    return markdown[start : end if end != -1 else len(markdown)]


# ======================================================================================
# view modes
# ======================================================================================
def test_full_mode_shows_the_text_in_a_fence_longer_than_any_inside(project: Path) -> None:
    md = build_markdown(load(project), "full")
    app = block_of(md, "src/app.py")
    assert app.startswith("### `src/app.py` (full)\n\n```python\n") and "text.upper()" in app
    guide = block_of(md, "docs/guide.md")
    assert guide.startswith("### `docs/guide.md` (full)\n\n````markdown\n")  # the guide contains ```


def test_a_fence_is_three_backticks_unless_the_text_holds_a_run_of_three_or_more() -> None:
    assert fenced("a `` b", "py") == "```py\na `` b\n```\n"
    assert fenced("x ``` y ````` z\n").startswith("``````\n")  # one longer than the longest run
    assert fenced("ends with ```").startswith("````\n")


@pytest.mark.parametrize(
    ("mode", "present", "absent"),
    [
        (ViewMode.SUMMARY, ["Python module, 22 lines.", "Greeter (__init__, greet)"], ["def greet"]),
        (ViewMode.SKELETON, ["def greet(self, loud: bool = False) -> str:", "..."], ["text.upper()"]),
        (ViewMode.OUTLINE, ["class Greeter  [L9-", "  def greet("], ["Return the greeting"]),
        (ViewMode.NONE, [], ["class Greeter", "```"]),
    ],
)
def test_reduced_modes_of_a_python_file(project: Path, mode: ViewMode, present, absent) -> None:
    md = build_markdown(load(project, ["src/app.py"], {"src/app.py": ViewSpec(mode)}), "full")
    block = block_of(md, "src/app.py")
    assert block.startswith(f"### `src/app.py` ({mode.value})")
    for text in present:
        assert text in block
    for text in absent:
        assert text not in block


def test_masked_mode_hides_matching_lines_only(project: Path) -> None:
    items = load(project, ["src/secrets.py"], {"src/secrets.py": ViewSpec(ViewMode.MASKED)})
    block = block_of(build_markdown(items, "full", mask_patterns=SECRET_PATTERNS), "src/secrets.py")
    assert "sk-live-123456" not in block and "hunter2" not in block
    assert block.count("[masked]") == 2 and 'HOST = "example.org"' in block


def test_custom_mode_shows_slices_with_the_annotation(project: Path) -> None:
    view = ViewSpec.from_dict(
        {"mode": "custom", "slices": [[9, 10], [22, 99], [500, 600]], "annotation": "Look here."}
    )
    block = block_of(
        build_markdown(load(project, ["src/app.py"], {"src/app.py": view}), "full"), "src/app.py"
    )
    assert "\nLook here.\n" in block
    assert "lines 9-10:\n```python\nclass Greeter:\n" in block
    assert "lines 22-22 (the file ends at line 22):" in block
    assert "lines 500-600: past the end of the file (22 lines)" in block
    assert "LIMIT = 10" not in block


def test_skeleton_of_a_non_python_file_is_its_summary(project: Path) -> None:
    md = build_markdown(
        load(project, ["docs/guide.md"], {"docs/guide.md": ViewSpec(ViewMode.SKELETON)}), "full"
    )
    assert "Markdown, 16 lines, 4 headings." in block_of(md, "docs/guide.md")


def test_unreadable_files_are_listed_with_the_reason(project: Path) -> None:
    md = build_markdown(load(project, ["blob.dat", "shot.png", "missing.py"]), "full")
    assert "### `blob.dat` (binary: binary file (9 bytes))" in md
    assert "### `shot.png` (image, PNG, " in md
    assert "### `missing.py` (missing: file not found)" in md


# ======================================================================================
# strategies
# ======================================================================================
def test_full_strategy_keeps_every_files_own_mode(project: Path) -> None:
    views = {"src/big.py": ViewSpec(ViewMode.OUTLINE)}
    result = aggregate(load(project, views=views), Strategy.FULL)
    modes = {i.name: i.effective_mode for i in result.items}
    assert modes["src/big.py"] is ViewMode.OUTLINE and modes["src/app.py"] is ViewMode.FULL
    assert modes["blob.dat"] is ViewMode.NONE


def test_summarize_strategy_summarizes_full_files_and_keeps_explicit_modes(project: Path) -> None:
    views = {"src/app.py": ViewSpec(ViewMode.SKELETON)}
    result = aggregate(load(project, views=views), Strategy.SUMMARIZE)
    modes = {i.name: i.effective_mode for i in result.items}
    assert modes["src/app.py"] is ViewMode.SKELETON and modes["src/big.py"] is ViewMode.SUMMARY
    assert "### `src/big.py` (summary, summarize)" in result.markdown


def test_auto_picks_by_size_and_shows_the_choice(project: Path) -> None:
    result = aggregate(load(project), Strategy.AUTO, full_threshold=1_000, token_budget=1_000_000)
    modes = {i.name: i.effective_mode for i in result.items}
    assert modes["src/app.py"] is ViewMode.FULL
    assert modes["src/big.py"] is ViewMode.SKELETON and modes["docs/big.md"] is ViewMode.SUMMARY
    assert "### `src/big.py` (skeleton, auto)" in result.markdown
    big = next(i for i in result.items if i.name == "src/big.py")
    assert big.summary() == {
        "path": "src/big.py",
        "mode": "full",
        "effective_mode": "skeleton",
        "tokens": big.tokens,
        "kind": "text",
        "error": "",
    }


@pytest.mark.parametrize("budget", [256, 300, 500, 800, 1_200, 2_000, 4_000, 8_000, 16_000])
def test_auto_never_exceeds_the_token_budget(project: Path, budget: int) -> None:
    views = {"src/secrets.py": ViewSpec(ViewMode.MASKED)}
    result = aggregate(
        load(project, views=views),
        "auto",
        token_budget=budget,
        full_threshold=10_000,
        mask_patterns=SECRET_PATTERNS,
    )
    assert estimate_tokens(result.markdown) <= budget
    assert result.tokens <= budget
    assert "sk-live" not in result.markdown  # a masked file is never shown unmasked, whatever the budget
    secret_mode = next(i.effective_mode for i in result.items if i.name == "src/secrets.py")
    assert secret_mode in (ViewMode.MASKED, ViewMode.NONE, None)
    if result.omitted:
        assert "omitted to fit the token budget" in result.markdown


def test_a_bigger_budget_never_shows_less(project: Path) -> None:
    sizes = [aggregate(load(project), "auto", token_budget=b).tokens for b in (300, 1_000, 3_000, 100_000)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_auto_rejects_a_budget_below_the_minimum(project: Path) -> None:
    with pytest.raises(ViewError, match="below the minimum"):
        aggregate(load(project), "auto", token_budget=10)


# ======================================================================================
# determinism
# ======================================================================================
def test_identical_input_gives_byte_identical_output(project: Path) -> None:
    first = build_markdown(load(project), "auto", token_budget=2_000, cache=FileCache())
    second = build_markdown(list(reversed(load(project))), "auto", token_budget=2_000, cache=FileCache())
    warm = FileCache()
    build_markdown(load(project), "auto", token_budget=2_000, cache=warm)
    third = build_markdown(load(project), "auto", token_budget=2_000, cache=warm)
    assert first.encode() == second.encode() == third.encode()


def test_compile_context_is_deterministic_and_assembles_all_sections(project: Path) -> None:
    request = ContextRequest(
        base_dir=str(project),
        paths=tuple(ALL_FILES),
        exclude=("__pycache__",),
        screenshots=("shot.png", "notes.txt", "gone.png"),
        views={"src/app.py": {"mode": "skeleton"}, "bad.py": {"mode": "nope"}},
        system_prompt="Be brief.",
        mask_patterns=("(",),
    )
    one = compile_context(request, FileCache())
    two = compile_context(request, FileCache())
    assert one.markdown == two.markdown
    md = one.markdown
    assert md.startswith("## System Prompt\n\nBe brief.\n\n## Files\n\n")
    assert md.index("## Files") < md.index("## Screenshots")
    assert "- `shot.png` (image/png, " in md and "- `gone.png` (missing: file not found)" in md
    assert "### `src/app.py` (skeleton)" in md
    assert any("bad.py" in p and "unknown view mode" in p for p in one.problems)
    assert any("does not compile" in p for p in one.problems)
    assert any("notes.txt is not a PNG" in p for p in one.problems)
    kinds = [i.kind for i in one.file_items]
    assert kinds.count(FileKind.IMAGE) == 1 and kinds[-3:] == [
        FileKind.MISSING,
        FileKind.TEXT,
        FileKind.IMAGE,
    ]


def test_provider_summaries_are_used_for_big_files_once_per_version(project: Path) -> None:
    calls: list[tuple[str, bool, bool]] = []

    def summarizer(path: str, content: str, is_code: bool, outline: str) -> str:
        calls.append((path, is_code, "def func_0" in outline))
        return f"model summary of {path}"

    cache = FileCache()
    for _ in range(2):
        result = aggregate(
            load(project), "summarize", cache=cache, summarizer=summarizer, subagent_min_chars=5_000
        )
    assert calls == [("docs/big.md", False, False), ("src/big.py", True, True)]
    assert (
        "### `src/big.py` (summary, summarize, provider)\n\n```text\nmodel summary of src/big.py"
        in result.markdown
    )


# ======================================================================================
# tier 3 and MD Only
# ======================================================================================
def test_tier3_context_has_focus_files_in_full_and_the_rest_as_skeletons(project: Path) -> None:
    md = build_tier3_context(
        ["src/app.py", "src/secrets.py"],
        project,
        ["src/*.py", "docs/guide.md"],
        views={"src/secrets.py": {"mode": "masked"}, "src/big.py": {"mode": "masked"}},
        mask_patterns=SECRET_PATTERNS,
    )
    assert "### `src/app.py` (full)" in md and "text.upper()" in md
    assert "### `src/secrets.py` (masked)" in md and "hunter2" not in md
    assert "### `src/big.py` (none)" in md  # masked and not in focus: name only
    assert "### `docs/guide.md` (skeleton)" in md


def test_md_only_numbers_files_and_never_overwrites(tmp_path: Path) -> None:
    out = tmp_path / "md_gen"
    first = write_md_only(out, "my project", "one")
    second = write_md_only(out, "my project", "two")
    assert [first.name, second.name] == ["my_project_001.md", "my_project_002.md"]
    (out / "my_project_041.md").write_text("kept")
    assert write_md_only(out, "my project", "three").name == "my_project_042.md"
    assert (out / "my_project_041.md").read_text() == "kept" and first.read_text() == "one"
    assert not list(out.glob(".*.tmp"))


def test_concurrent_md_only_writers_get_distinct_numbers(tmp_path: Path) -> None:
    paths: list[Path] = []
    lock = threading.Lock()

    def writer(i: int) -> None:
        path = write_md_only(tmp_path / "out", "ns", f"text {i}")
        with lock:
            paths.append(path)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len({p.name for p in paths}) == 8
    assert sorted(p.read_text() for p in paths) == sorted(f"text {i}" for i in range(8))
