"""The path policy in aggregation (refused files are never read) and the refresh that follows
each file's view (mode, masks, slices, relative name; images and binaries never as text)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from manual_slop.context.aggregate import ContextRequest, build_tier3_context, compile_context
from manual_slop.context.file_cache import FileCache
from manual_slop.context.items import FileKind, ViewMode
from manual_slop.tools.security import PathPolicy

KEY_LINE = 'API_KEY = "sk-live-very-secret-0001"'
MASKS = (r"(?i)api[_-]?key\s*=",)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    (base / "src").mkdir(parents=True)
    (base / "src" / "app.py").write_text("def main() -> None:\n    print('hi')\n")
    (base / "src" / "settings.py").write_text(f"HOST = 'example.org'\n{KEY_LINE}\nPORT = 1\n")
    (base / "credentials.toml").write_text('[anthropic]\napi_key = "sk-ant-in-credentials-000"\n')
    (base / ".env").write_text("TOKEN=from-dotenv-file-0000\n")
    (base / "notes.txt").symlink_to(base / "credentials.toml")
    (base / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    return base


def request(base: Path, **overrides) -> ContextRequest:
    options = {
        "base_dir": str(base),
        "paths": ("**/*", "*", ".env"),
        "strategy": "full",
        "mask_patterns": MASKS,
        "views": {"src/settings.py": {"mode": "masked"}},
        "policy": PathPolicy.for_project(base),
    }
    options.update(overrides)
    return ContextRequest(**options)


def test_refused_files_are_listed_with_the_rule_and_never_read(project: Path) -> None:
    compiled = compile_context(request(project), FileCache())
    kinds = {item.name: item.kind for item in compiled.files.items}
    assert kinds["credentials.toml"] is FileKind.REFUSED
    assert kinds[".env"] is FileKind.REFUSED
    assert kinds["notes.txt"] is FileKind.REFUSED  # a symlink's innocent name does not help
    for item in compiled.files.items:
        if item.kind is FileKind.REFUSED:
            assert item.content is None and item.refused and item.size == 0  # not even stat'ed for content
    assert "sk-ant-in-credentials" not in compiled.markdown and "from-dotenv" not in compiled.markdown
    assert "### `.env` (refused: .env: environment files hold secrets (rule: env file)" in compiled.markdown
    assert any(p.startswith("credentials.toml is not sent:") for p in compiled.problems)
    summary = {f["path"]: f for f in compiled.summary()["files"]}
    assert (
        summary["credentials.toml"]["kind"] == "refused"
        and "rule: credentials" in summary["credentials.toml"]["error"]
    )


def test_without_a_policy_nothing_is_refused(project: Path) -> None:
    compiled = compile_context(request(project, policy=None), FileCache())
    assert "sk-ant-in-credentials" in compiled.markdown  # the policy is what keeps it out


def test_screenshots_and_mma_context_go_through_the_policy_too(project: Path) -> None:
    shots = request(project, paths=("src/*.py",), screenshots=("credentials.toml",))
    compiled = compile_context(shots, FileCache())
    assert [s.kind for s in compiled.screenshots] == [FileKind.REFUSED]
    assert "(refused:" in compiled.markdown
    tier3 = build_tier3_context(
        ["credentials.toml", "src/app.py"], project, ["*"], policy=PathPolicy.for_project(project)
    )
    assert "sk-ant-in-credentials" not in tier3 and "def main" in tier3


def touch_later(path: Path, text: str | bytes) -> None:
    """Write and make sure the stamp changes even on a coarse clock."""
    before = path.stat().st_mtime_ns
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if path.stat().st_mtime_ns == before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def refresher_for(project: Path, **overrides):
    compiled = compile_context(request(project, **overrides), FileCache())
    return compiled, compiled.refresher(FileCache())


def test_nothing_changed_nothing_reported_and_names_are_relative(project: Path) -> None:
    _, refresher = refresher_for(project)
    assert refresher.check() == ""
    assert "src/app.py" in refresher.paths() and not any(os.path.isabs(p) for p in refresher.paths())


def test_a_masked_file_is_refreshed_masked(project: Path) -> None:
    _, refresher = refresher_for(project)
    settings = project / "src" / "settings.py"
    touch_later(settings, f"HOST = 'example.com'\n{KEY_LINE}\nPORT = 1\n")
    block = refresher.check()
    assert "### `src/settings.py` (masked, updated)" in block and "example.com" in block
    assert "sk-live-very-secret" not in block and "[masked]" in block
    assert str(project) not in block  # the relative name, never the absolute path


def test_a_change_in_a_masked_line_only_is_not_reported(project: Path) -> None:
    _, refresher = refresher_for(project)
    touch_later(project / "src" / "settings.py", f"HOST = 'example.org'\n{KEY_LINE}2\nPORT = 1\n")
    assert refresher.check() == ""


def test_files_in_reduced_views_are_refreshed_in_that_view(project: Path) -> None:
    body = "".join(f"def f{i}(x: int) -> int:\n    return x + {i}\n\n" for i in range(5))
    (project / "src" / "app.py").write_text(body)
    _, refresher = refresher_for(project, views={"src/app.py": {"mode": "skeleton"}})
    touch_later(project / "src" / "app.py", body + "def added(y: str) -> str:\n    return y * 2\n")
    block = refresher.check()
    assert "### `src/app.py` (skeleton, updated)" in block and "def added(y: str) -> str:" in block
    assert "return y * 2" not in block  # bodies are not part of a skeleton


def test_name_only_files_and_images_never_send_content(project: Path) -> None:
    (project / "src" / "hidden.txt").write_text("first\n")
    views = {"src/hidden.txt": {"mode": "none"}}
    _, refresher = refresher_for(project, views=views, screenshots=("shot.png",))
    touch_later(project / "src" / "hidden.txt", "second secret text\n")
    touch_later(project / "shot.png", b"\x89PNG\r\n\x1a\n" + b"\x01" * 64)
    block = refresher.check()
    assert "### `src/hidden.txt` (changed on disk; listed by name only" in block
    assert "### `shot.png` (changed on disk; listed by name only" in block
    assert "second secret text" not in block and "PNG" not in block.replace("`shot.png`", "")


def test_a_long_full_file_gets_a_diff_of_its_view(project: Path) -> None:
    lines = [f"line {i}" for i in range(400)]
    long_file = project / "src" / "long.txt"
    long_file.write_text("\n".join(lines) + "\n")
    _, refresher = refresher_for(project)
    lines[200] = "line 200 changed"
    touch_later(long_file, "\n".join(lines) + "\n")
    block = refresher.check()
    assert "(full, unified diff of the view)" in block
    assert "+line 200 changed" in block and "-line 200" in block and "line 10\n" not in block


def test_omitted_files_and_refused_files_are_not_reported(project: Path) -> None:
    compiled, refresher = refresher_for(project)
    touch_later(project / "credentials.toml", '[anthropic]\napi_key = "sk-ant-rotated-key-0000"\n')
    touch_later(project / ".env", "TOKEN=rotated-value-000000\n")
    time.sleep(0.01)
    assert refresher.check() == ""
    refused = [i for i in compiled.files.items if i.kind is FileKind.REFUSED]
    assert refused and all(i.content is None for i in refused)
    assert all(i.effective_mode is ViewMode.NONE for i in refused)
