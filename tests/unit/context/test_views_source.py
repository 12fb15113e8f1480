"""C, C++, JS/TS, Rust and Go files in the context use the code tools' tree-sitter views."""

from __future__ import annotations

from pathlib import Path

import pytest

from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileItem, ViewMode
from manual_slop.context.views import render_block

RUST = (
    "use std::fmt;\n\npub struct Point { x: i32 }\n\n"
    "impl Point {\n    pub fn norm(&self) -> i32 {\n        self.x.abs()\n    }\n}\n"
)


@pytest.fixture
def item(tmp_path: Path) -> FileItem:
    path = tmp_path / "point.rs"
    path.write_text(RUST)
    return FileItem.load(path, "point.rs")


@pytest.mark.parametrize(
    ("mode", "body"),
    [
        (
            ViewMode.SUMMARY,
            "```text\nrust source; top-level definitions:\n"
            "struct Point (lines 3-3)\nimpl Point (lines 5-9)\n```",
        ),
        (
            ViewMode.OUTLINE,
            "```text\nstruct Point (lines 3-3)\nimpl Point (lines 5-9)\n  fn norm (lines 6-8)\n```",
        ),
        (
            ViewMode.SKELETON,
            "```rust\nuse std::fmt;\n\npub struct Point { x: i32 }\n\nimpl Point {\n"
            "    pub fn norm(&self) -> i32 { ... }\n}\n```",
        ),
    ],
)
def test_the_summary_outline_and_skeleton_views_are_the_tree_sitter_ones(
    item: FileItem, mode: ViewMode, body: str
) -> None:
    block = render_block(item, mode, cache=FileCache())
    assert block == f"### `point.rs` ({mode.value})\n\n{body}\n\n"
