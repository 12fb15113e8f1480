"""Context refresh after tool rounds, RAG injection, the comms log and tier tags."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from manual_slop.ai.comms import CommsLog, clip, get_current_tier, set_current_tier
from manual_slop.ai.rag import TOP_K, inject_rag_context
from manual_slop.ai.refresh import FULL_CONTENT_LINES, FileRefresher
from manual_slop.ai.transcript import REFRESH_MARKER


def touch_later(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stat = path.stat()
    os.utime(path, (stat.st_atime + 5, stat.st_mtime + 5))


def test_nothing_changed_means_no_refresh(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    refresher = FileRefresher(["a.py"], tmp_path)
    assert refresher.paths() == ["a.py"] and refresher.check() == ""


def test_a_small_changed_file_is_sent_whole_once(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("print(1)\n")
    refresher = FileRefresher([{"path": "a.py"}], tmp_path)
    touch_later(target, "print(2)\n")
    block = refresher.check()
    assert block.startswith(REFRESH_MARKER) and "### a.py (full content)" in block and "print(2)" in block
    assert refresher.check() == ""  # reported once


def test_a_large_changed_file_is_sent_as_a_diff(tmp_path: Path) -> None:
    target = tmp_path / "big.py"
    lines = [f"line_{n} = {n}\n" for n in range(FULL_CONTENT_LINES + 50)]
    target.write_text("".join(lines))
    refresher = FileRefresher([target], tmp_path)
    lines[10] = "line_10 = 'changed'\n"
    touch_later(target, "".join(lines))
    block = refresher.check()
    assert "(unified diff)" in block and "-line_10 = 10" in block and "+line_10 = 'changed'" in block
    assert "line_100 = 100" not in block


def test_a_deleted_file_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "gone.txt"
    target.write_text("x")
    refresher = FileRefresher(["gone.txt"], tmp_path)
    target.unlink()
    assert "(deleted or unreadable)" in refresher.check()


def test_items_may_carry_what_the_model_saw(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("now\n")

    class Item:
        path = str(target)
        content = "before\n"
        mtime = 1.0

    block = FileRefresher([Item()], tmp_path).check()
    assert "now" in block


class Index:
    def __init__(self, results: list[object]) -> None:
        self.results = results
        self.asked: list[tuple[str, int]] = []

    def query(self, text: str, top_k: int = TOP_K) -> list[object]:
        self.asked.append((text, top_k))
        return self.results


def test_rag_results_are_appended_to_the_context() -> None:
    index = Index(
        ["plain passage", {"text": "from a dict", "source": "docs/a.md"}, {"content": ""}] + ["x"] * 9
    )
    log: list[tuple[str, str, dict]] = []
    out = inject_rag_context("## Files\nA", "how?", index, lambda *entry: log.append(entry))
    assert index.asked == [("how?", TOP_K)]
    assert out.startswith("## Files\nA\n\n## Retrieved context")
    assert "### [1]\nplain passage" in out and "### [2] docs/a.md\nfrom a dict" in out
    assert out.count("### [") == TOP_K - 1  # the empty one is skipped, the rest cut at top 5
    assert log[-1][1] == "rag"


def test_a_failing_index_leaves_the_context_alone() -> None:
    class Broken:
        def query(self, text: str, top_k: int = TOP_K) -> list[object]:
            raise RuntimeError("index is corrupt")

    log: list[tuple] = []
    assert inject_rag_context("ctx", "q", Broken(), lambda *entry: log.append(entry)) == "ctx"
    assert log[0][1] == "rag_error" and "index is corrupt" in log[0][2]["error"]


def test_tier_tags_are_per_thread() -> None:
    comms = CommsLog()
    seen: dict[str, str | None] = {}

    def worker(tier: str) -> None:
        set_current_tier(tier)
        entry = comms.append("OUT", "request", "local", "m", {"n": tier})
        seen[tier] = entry["source_tier"]

    threads = [threading.Thread(target=worker, args=(f"Tier {n}",)) for n in (2, 3, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert seen == {"Tier 2": "Tier 2", "Tier 3": "Tier 3", "Tier 4": "Tier 4"}
    assert get_current_tier() is None  # the test thread was never tagged


def test_comms_entries_have_the_documented_fields_and_reach_the_callback() -> None:
    comms = CommsLog(capacity=3)
    pushed: list[dict] = []
    comms.callback = pushed.append
    for n in range(5):
        comms.append("IN", "response", "gemini", "gemini-2.5-flash", {"text": "t" * 30_000, "n": n})
    assert len(comms.entries()) == 3 and len(pushed) == 5
    entry = pushed[0]
    assert set(entry) == {
        "ts",
        "local_ts",
        "direction",
        "kind",
        "provider",
        "model",
        "source_tier",
        "payload",
    }
    assert len(entry["payload"]["text"]) < 30_000 and "30,000 chars" in entry["payload"]["text"]


def test_a_failing_callback_never_breaks_logging() -> None:
    comms = CommsLog()
    comms.callback = lambda entry: 1 / 0
    comms.append("OUT", "request", "p", "m", {})
    assert len(comms.entries()) == 1


def test_clip_is_recursive() -> None:
    assert clip({"a": ["x" * 10]}, 3) == {"a": ["xxx...[10 chars]"]}
