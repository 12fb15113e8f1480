"""Screenshots of every main panel and every modal, in a window with realistic state:
a conversation through the real AI client and a wire-level fake provider (comms, tool calls,
discussion, response), compiled context, and an MMA track. Each capture is checked to be a
real picture (not an empty window); a curated set is committed under docs/images/."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.dialogs import AskDialog, MMAApprovalDialog, MMASpawnApprovalDialog, ToolApprovalDialog
from tests.fakes import Call, OpenAIFake, Reply
from tests.gui.conftest import APP_SIZE, dialog_in_thread, frames_until
from tests.gui.test_app import _diamond
from tests.gui.test_controls import STEP

PANELS = [
    "Response", "Discussion", "MMA Dashboard", "Task DAG", "Projects", "Files & Media", "Context",
    "AI Settings", "Usage", "Diagnostics", "Comms Log", "Tool Calls", "Tier Streams", "Logs",
]  # fmt: skip
ANSWER = (
    "## What `app.py` does\n\n`main()` returns **0**; the module docstring says *The app*.\n\n"
    "- one function\n- no side effects\n\n```python\ndef main() -> int:\n    return 0\n```\n"
)


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake() as server:
        yield server


def _distinct_colours(path: Path) -> int:
    """How many distinct pixel colours a PNG has (a blank window has a handful)."""
    import zlib

    data = path.read_bytes()
    chunks, pos = [], 8
    width = height = 0
    while pos < len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            channels = {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels + 1
    colours = set()
    for row in range(0, height, 4):  # unfiltered or not, distinct bytes per sampled pixel suffice
        line = raw[row * stride + 1 : (row + 1) * stride]
        colours.update(line[i : i + 3] for i in range(0, len(line), channels * 8))
    return len(colours)


def _store_tracks(ctrl) -> None:
    """Three stored tracks, two with the same title (told apart by id and creation time)."""
    from manual_slop.mma.models import Ticket, Track

    store = ctrl.mma.store()
    day = 1_795_000_000.0
    for track_id, title, age_h in (
        ("parser_3fa2c1", "Parser", 30),
        ("parser_9b07de", "Parser", 2),
        ("config_loader_for_every_supported_format_51c3aa", "Config loader for every supported format", 1),
    ):
        tickets = [Ticket("t1", "Tokenize"), Ticket("t2", "Build the tree", depends_on=["t1"])]
        store.save(Track(track_id, title, tickets=tickets, created_at=day - age_h * 3600))
    ctrl.mma.load_tracks()


@pytest.mark.heavy(20)  # seconds here, alone on two cores
def test_every_panel_and_modal(make_controller, run_gui, app_dir: Path, artifacts: Path, fake) -> None:
    (app_dir / "src").mkdir()
    (app_dir / "src" / "app.py").write_text('"""The app."""\n\n\ndef main() -> int:\n    return 0\n')
    client = AIClient(retry=RetryPolicy(base_delay_s=0.01))
    ctrl = make_controller(backend=client, environ={"DEEPSEEK_API_KEY": "sk-shots"})
    for field, value in (
        ("current_provider", "deepseek"),
        ("provider_base_url", fake.base_url),
        ("project_files", ["src/**/*.py"]),
        ("system_prompt", "You help with a tiny Python project."),
    ):
        ctrl.fields.set(field, value)
    fake.push(Reply("", [Call("read_file", {"path": "src/app.py"})]), Reply(ANSWER))
    _store_tracks(ctrl)
    ctrl.state.mma_tickets = _diamond()
    ctrl.state.active_track = {"id": "track-demo", "title": "Parser track"}
    ctrl.state.mma_status = "running"
    ctrl.state.tier_usage = {"Tier 3": {"input": 5200, "output": 900, "model": "deepseek-chat"}}
    shots: dict[str, Path] = {}
    workers: list[threading.Thread] = []

    def shot(name: str, ctx, window: str | None = None) -> None:
        ctx.yield_(4)
        path = artifacts / f"{name}.png"
        testing.capture(ctx, str(path), window=window)
        shots[name] = path

    def test(ctx, app) -> None:
        ctx.yield_(5)
        ctx.item_click("**/##message")
        ctx.key_chars("What does src/app.py do?")
        ctx.item_click("**/Gen + Send")
        frames_until(ctx, lambda: ctrl.state.ai_status == "done", max_frames=2000)
        ctrl.post_gui_task({"action": "click", "item": "btn_refresh_context"})  # main thread, see below
        frames_until(ctx, lambda: ctrl.fields.get("context_status") == "done")
        app.focus("Response")
        shot("window", ctx)
        for title in PANELS:
            app.focus(title)
            shot("panel_" + title.lower().replace(" & ", "_").replace(" ", "_"), ctx, window=title)
        app.focus("Response")
        for name, dialog in (
            (
                "modal_tool_approval",
                ToolApprovalDialog(
                    "edit_file",
                    {"path": "src/app.py", "old_string": "return 0", "new_string": "return 1"},
                    "--- a/src/app.py\n+++ b/src/app.py\n@@ -4,2 +4,2 @@\n"
                    " def main() -> int:\n-    return 0\n+    return 1\n",
                ),
            ),
            (
                "modal_mma_spawn",
                MMASpawnApprovalDialog(
                    "T11",
                    "Tier 3",
                    "Implement T11: parse the header of the config file. Read the first block of "
                    "key = value lines up to the first blank line, keep the keys in the order they "
                    "appear, and report a line that is not key = value with its line number.",
                    "## Files\n\n- src/app.py",
                ),
            ),
            ("modal_mma_step", MMAApprovalDialog("T11", json.dumps(STEP, indent=2))),
            (
                "modal_ask",
                AskDialog(
                    "The Gemini CLI wants to run a shell command.", "run_shell_command", {"command": "ls -la"}
                ),
            ),
        ):
            dialog_in_thread(ctrl, dialog, workers)
            frames_until(ctx, lambda d=dialog: any(p["id"] == d.uid for p in ctrl.state.pending_dialogs))
            shot(name, ctx)
            ctrl.post_gui_task(
                {"action": "custom_callback", "callback": lambda d=dialog: ctrl.clutch.resolve(d.uid, False)}
            )
            frames_until(ctx, lambda d=dialog: all(p["id"] != d.uid for p in ctrl.state.pending_dialogs))
        ctx.key_press(imgui.Key.mod_ctrl | imgui.Key.mod_shift | imgui.Key.p)
        frames_until(ctx, lambda: app.gui.palette_open)
        ctx.key_chars("mma")
        shot("palette", ctx)
        ctx.key_press(imgui.Key.escape)

    run_gui(ctrl, test, size=APP_SIZE)  # the docs' pictures show the window as it opens
    for worker in workers:
        worker.join(10)
    assert len(shots) == len(PANELS) + 6
    for name, path in shots.items():
        assert _distinct_colours(path) > 12, f"{name} looks empty"
    assert ctrl.state.ai_response == ANSWER
    assert [e["kind"] for e in ctrl.state.comms_log][:4] == [
        "request",
        "response",
        "tool_call",
        "tool_result",
    ]
