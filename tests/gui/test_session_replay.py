"""A prior session replayed in the real window: the Logs panel lists it, Replay opens the tinted
read-only view with its banner, Gen + Send is refused with a message naming the replay, and
Exit replay leaves it (registry, pruning and the replay's data are pinned by tests/unit/sessions)."""

from __future__ import annotations

import time
from pathlib import Path

from imgui_bundle.immapp import testing

from manual_slop.gui.panels.session_replay import REPLAY_TINT, banner_text
from tests.gui.conftest import frames_until
from tests.unit.sessions.fabricate import chat, make_session


def test_a_replayed_session_is_tinted_read_only_and_refuses_sends(
    make_controller, run_gui, app_dir: Path, artifacts: Path
) -> None:
    prior = make_session(app_dir / "logs", 30, now=time.time(), comms=chat(6))
    ctrl = make_controller(backend=None)
    sessions = ctrl.sessions
    toasts: list[str] = []
    shown: list[tuple[str, str] | None] = []

    def test(ctx, app) -> None:
        frames_until(ctx, lambda: sessions.ready)
        app.focus("Logs")
        ctx.yield_(3)
        ctx.item_click(f"//Logs/**/session:{prior}/Replay")
        frames_until(ctx, lambda: app.gui.replay_shown is not None)
        ctx.yield_(2)
        shown.append(app.gui.replay_shown)
        testing.capture(ctx, str(artifacts / "session_replay.png"))
        ctx.item_click("**/##message")
        ctx.key_chars("send this")
        ctx.item_click("**/Gen + Send")
        ctx.yield_(2)
        toasts.extend(t.message for t in app.gui.toasts)
        ctx.item_click("//Session Replay/**/Exit replay")
        frames_until(ctx, lambda: sessions.replay is None)

    run_gui(ctrl, test)
    assert sessions.replay is None and sessions.send_refusal() == ""
    assert [row["session_id"] for row in sessions.rows] == [ctrl.session_log.session_id, prior]
    assert any(f"replay of session {prior}" in t for t in toasts), toasts
    assert ctrl.state.ai_input == "send this" and ctrl.state.active_request_id is None  # nothing was sent
    assert shown == [(prior, banner_text(prior))]
    assert tinted_pixels(artifacts / "session_replay.png") > 5_000  # the replay's own background


def tinted_pixels(png: Path) -> int:
    """Pixels of the picture in the replay's background colour (within rounding)."""
    from PIL import Image

    tint = tuple(round(c * 255) for c in (REPLAY_TINT.x, REPLAY_TINT.y, REPLAY_TINT.z))
    with Image.open(png) as picture:
        data = picture.convert("RGB").tobytes()
    pixels = zip(data[0::3], data[1::3], data[2::3], strict=True)
    return sum(1 for p in pixels if all(abs(a - b) <= 2 for a, b in zip(p, tint, strict=True)))
