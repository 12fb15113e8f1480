"""Fitting a send's context into the answering model's window (context/fit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.ai.windows import SAFETY_MARGIN, RequestBudget
from manual_slop.context.aggregate import ContextRequest, compile_context
from manual_slop.context.errors import ContextTooLarge
from manual_slop.context.file_cache import MAX_PARSE_CHARS, FileCache
from manual_slop.context.fit import BYTES_PER_TOKEN, READ_FLOOR_BYTES, fit_context, read_limit
from manual_slop.context.items import FileItem, estimate_tokens
from tests.unit.context.fixture_project import ALL_FILES, build_project


def dense(text: str) -> int:
    """A tokenizer denser than the app's estimate (3 characters a token), like real code often is."""
    return (len(text) + 2) // 3


def budget(window: int, reserved: int = 0, count=dense) -> RequestBudget:
    return RequestBudget("local", "tiny-model", window, reserved, count, exact=True)


def room(window: int, reserved: int = 0) -> int:
    return window - reserved - int(window * SAFETY_MARGIN)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = build_project(tmp_path / "proj")
    for n in range(6):  # enough text that a small window cannot take it whole
        (root / f"mod_{n}.py").write_text(
            f'"""Module {n}."""\n\n'
            + "".join(f"def f_{n}_{i}(x):\n    return x + {i}\n\n" for i in range(120))
        )
    return root


def request(project: Path, **changes) -> ContextRequest:
    base = {
        "base_dir": str(project),
        "paths": (*ALL_FILES, "mod_*.py", "extra_*.py"),
        "exclude": ("__pycache__",),
    }
    return ContextRequest(**{**base, **changes})


def compiler(cache: FileCache, calls: list[ContextRequest]):
    def compile_(attempt: ContextRequest):
        calls.append(attempt)
        return compile_context(attempt, cache)

    return compile_


def test_a_context_bigger_than_the_room_is_reduced_until_the_models_own_count_fits(project: Path) -> None:
    cache, calls = FileCache(), []
    whole = compile_context(request(project, strategy="full"), cache)
    window = 3_000
    assert dense(whole.markdown) > room(window, 500)  # it would not fit as it is

    compiled, report = fit_context(request(project), budget(window, 500), compiler(cache, calls))

    assert dense(compiled.markdown) == report.tokens <= report.available == room(window, 500)
    assert calls[0].token_budget == room(window, 500)  # the project's 100k budget gave way to the room
    assert report.rounds == len(calls) >= 2  # the estimate (4 chars a token) was too optimistic
    assert estimate_tokens(compiled.markdown) < report.tokens
    shortened = {d["path"]: d["effective_mode"] for d in report.gave_way}
    assert shortened and all(mode != "full" for mode in shortened.values())
    assert all(d["why"] == "to fit the window" for d in report.gave_way)
    assert {d["path"] for d in report.degraded} | {d["path"] for d in report.dropped} <= {
        i.name for i in compiled.files.items
    }
    assert report.model == "tiny-model" and report.exact and report.window == window


def test_a_roomy_window_shortens_nothing_to_fit(project: Path) -> None:
    compiled, report = fit_context(request(project), budget(1_000_000), compiler(FileCache(), []))
    assert report.gave_way == [] and report.dropped == [] and report.rounds == 1
    # auto's own threshold still applies, and says so
    assert {d["why"] for d in report.degraded} == {"over full_threshold (auto)"}
    assert "(full)" in compiled.markdown and report.tokens == dense(compiled.markdown)


def test_files_that_cannot_fit_even_as_names_are_omitted_and_reported(project: Path) -> None:
    for n in range(80):
        (project / f"extra_module_number_{n:02d}.py").write_text(f"VALUE = {n}\n")
    compiled, report = fit_context(request(project), budget(800, 0), compiler(FileCache(), []))
    assert report.tokens <= report.available
    omitted = [d for d in report.dropped if d["reason"] == "omitted to fit the window"]
    assert omitted and "omitted to fit the token budget" in compiled.markdown
    assert "left out" in report.headline() and "tiny-model" in report.headline()


def test_an_explicit_full_strategy_is_never_shortened_but_refused_with_what_to_do(project: Path) -> None:
    calls: list[ContextRequest] = []
    with pytest.raises(ContextTooLarge) as refused:
        fit_context(request(project, strategy="full"), budget(3_000, 500), compiler(FileCache(), calls))
    message = str(refused.value)
    assert "'full' strategy never shortens files" in message and "'auto'" in message
    assert "tiny-model (3,000 tokens)" in message and len(calls) == 1


def test_no_room_left_is_refused_before_anything_is_read(project: Path) -> None:
    calls: list[ContextRequest] = []
    with pytest.raises(ContextTooLarge) as refused:
        fit_context(request(project), budget(8_192, 8_000), compiler(FileCache(), calls))
    assert calls == []  # refused before any compile
    message = str(refused.value)
    assert "take 8,000 tokens" in message and "discussion" in message and "max_tokens" in message


def test_a_context_that_cannot_fit_at_the_smallest_budget_is_refused(project: Path) -> None:
    huge_prompt = "Follow the rules. " * 400  # the system prompt is outside every files budget
    with pytest.raises(ContextTooLarge) as refused:
        fit_context(request(project, system_prompt=huge_prompt), budget(2_000), compiler(FileCache(), []))
    assert "every file reduced to its name" in str(refused.value)


def test_a_file_far_bigger_than_the_room_is_never_read_and_is_reported_dropped(
    project: Path, monkeypatch
) -> None:
    big = project / "big_dump.txt"
    with big.open("w") as handle:
        handle.write("x" * (READ_FLOOR_BYTES + 10))
    reads: list[str] = []
    original = Path.read_bytes

    def spying_read(self: Path) -> bytes:
        reads.append(self.name)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", spying_read)
    window = 8_192
    compiled, report = fit_context(
        request(project, paths=("*.py", "*.txt")), budget(window, 1_000), compiler(FileCache(), [])
    )
    assert "big_dump.txt" not in reads and "mod_0.py" in reads
    (dropped,) = [d for d in report.dropped if d["path"] == "big_dump.txt"]
    assert "too large to read" in dropped["reason"] and f"{READ_FLOOR_BYTES:,}" in dropped["reason"]
    assert "### `big_dump.txt` (unreadable: too large to read" in compiled.markdown


def test_the_read_limit_scales_with_the_room() -> None:
    assert read_limit(100) == READ_FLOOR_BYTES  # small rooms still read ordinary files
    assert read_limit(200_000) == 200_000 * BYTES_PER_TOKEN
    assert read_limit(10_000_000) == 16 * 1024 * 1024  # never above the app's hard limit


def test_an_item_over_its_byte_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("y" * 2_000)
    item = FileItem.load(path, "a.txt", max_bytes=1_000)
    assert item.content is None and item.too_large and "2,000 bytes; limit 1,000" in item.error
    path.write_text("y" * 10)
    assert item.refresh() and item.content == "y" * 10 and not item.too_large


def test_a_source_too_large_to_parse_gets_a_text_view_and_its_tree_is_not_built(tmp_path: Path) -> None:
    source = "x = 1\n" * (MAX_PARSE_CHARS // 6 + 10)
    cache = FileCache()
    with pytest.raises(SyntaxError, match="too large to parse"):
        cache.tree("big.py", (1, len(source)), source)
    assert cache.stats().trees == 1  # the refusal is remembered, the tree never existed
    small = "def f():\n    return 1\n"
    cache.tree("small.py", (1, len(small)), small)
    assert cache.stats().trees == 2
