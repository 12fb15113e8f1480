"""The run metrics in the Diagnostics panel of the real window: a row per provider, per tool and
per guard kind from the events the AI client's tool loop emits (here emitted on the real client's
emitter), the numbers those rows draw, and Reset, which empties the tables until new events
arrive."""

from __future__ import annotations

from pathlib import Path

import pytest
from imgui_bundle.immapp import testing

from manual_slop.ai import AIClient
from manual_slop.gui.metrics_view import guard_rows, provider_rows, tool_rows
from tests.gui.conftest import frames_until

PANEL = "//Diagnostics"


def row(table: str, name: str) -> str:
    """The test-engine path of a row's name (its id is stable however the name is cut)."""
    return f"{PANEL}/##{table}/###{table}:{name}"


def feed(events) -> None:
    for latency in (120.0, 80.0, 100.0, 240.0):
        events.emit("request_start", provider="deepseek", model="deepseek-chat")
        events.emit("response_received", provider="deepseek", model="deepseek-chat", latency_ms=latency)
    events.emit("request_start", provider="deepseek", model="deepseek-chat")
    events.emit("request_failed", provider="deepseek", model="deepseek-chat", kind="rate_limit")
    for ms in (2.0, 3.0, 4.0):
        events.emit("tool_execution", name="read_file", call_id="c", status="success", duration_ms=ms)
    events.emit("tool_execution", name="run_shell", call_id="s", status="timeout", duration_ms=30_000.0)
    events.emit("guard_trip", kind="repeat_refused", tool="read_file")


@pytest.mark.heavy(8)  # seconds here, alone on two cores
def test_the_diagnostics_panel_shows_the_run_metrics_and_resets_them(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller(backend=AIClient())
    events = ctrl.backend.events
    feed(events)
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(3)
        app.focus("Diagnostics")
        ctx.yield_(2)
        seen["rows"] = {
            ref: ctx.item_exists(ref)
            for ref in (
                row("provider_metrics", "deepseek"),
                row("tool_metrics", "read_file"),
                row("tool_metrics", "run_shell"),
                row("guard_trips", "repeat_refused"),
            )
        }
        seen["drawn"] = ctrl.metrics.snapshot()
        ctx.mouse_move(row("tool_metrics", "read_file"))  # its details in a tooltip
        ctx.yield_(2)
        testing.capture(ctx, str(artifacts / "panel_diagnostics_metrics.png"), window="Diagnostics")
        ctx.item_click(f"{PANEL}/Reset##metrics")
        frames_until(ctx, lambda: ctrl.metrics.snapshot()["tools"] == [])
        ctx.yield_()
        seen["after_reset"] = ctx.item_exists(row("tool_metrics", "read_file"))
        events.emit("tool_execution", name="list_directory", call_id="l", status="success", duration_ms=1.5)
        ctx.yield_()
        seen["new_row"] = ctx.item_exists(row("tool_metrics", "list_directory"))
        seen["old_row"] = ctx.item_exists(row("tool_metrics", "read_file"))

    run_gui(ctrl, test, size=(1000, 700))  # the assertions hold at any size; smaller frames are faster
    assert all(seen["rows"].values()), seen["rows"]  # type: ignore[union-attr]
    drawn = seen["drawn"]
    assert provider_rows(drawn) == [["deepseek", "5", "20.0", "110", "222"]]  # type: ignore[arg-type]
    assert tool_rows(drawn) == [  # type: ignore[arg-type]
        ["read_file", "3", "0.0", "3.0", "3.9"],
        ["run_shell", "1", "100.0", "30.0s", "30.0s"],
    ]
    assert guard_rows(drawn) == [["repeat_refused", "1"]]  # type: ignore[arg-type]
    assert seen["after_reset"] is False
    assert seen["new_row"] is True and seen["old_row"] is False
    assert (artifacts / "panel_diagnostics_metrics.png").stat().st_size > 5_000
