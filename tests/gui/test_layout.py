"""The default layout: AI Settings fits its dock without cutting labels or widgets, and
``select_tab`` reaches every dock tab (the MMA Dashboard included) and the panels' tab bars,
over the Hook API into the real window."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from imgui_bundle import imgui
from imgui_bundle.immapp import testing

from manual_slop.automation import InvalidValue
from manual_slop.gui.panels import PANELS
from manual_slop.gui.panels.ai_settings import LABELS, REFRESH
from manual_slop.hooks import ApiHookClient, HookServer
from tests.gui.conftest import APP_SIZE, frames_until

# the form (table) each AI Settings row is in: its widgets' paths go through it
FORMS = {
    "Provider": "##provider_form",
    "Models": "##provider_form",
    "Model": "##provider_form",
    "Base URL": "##provider_form",
    "Agent": "##agent_form",
    "Token profile": "##agent_form",
    "Temperature": "##sampling_form",
    "Top P": "##sampling_form",
    "Max tokens": "##sampling_form",
    "History limit": "##sampling_form",
    "Approval": "##clutch_form",
    **{f"Tier {n}": "##tier_form" for n in range(1, 5)},
}
STEPPED = {"Max tokens", "History limit"}  # input_int: the +/- buttons end the row


def test_ai_settings_shows_every_label_and_widget_whole_at_the_default_layout(
    make_controller, run_gui, artifacts: Path
) -> None:
    ctrl = make_controller(environ={})
    ctrl.fields.set("current_provider", "anthropic")  # no key: the long warning line shows
    ctrl.state.available_models = ["claude-sonnet-4-5", "claude-haiku-4-5-with-a-long-model-name"]
    rows: dict[str, tuple[float, float, float]] = {}  # label -> (widget left, widget right, label width)
    bounds: dict[str, float] = {}

    def test(ctx, app) -> None:
        ctx.yield_(10)  # the docking layout is applied during the first frames
        window = imgui.internal.find_window_by_name("AI Settings")
        bounds.update(
            left=window.work_rect.min.x, right=window.inner_clip_rect.max.x, font=imgui.get_font_size()
        )
        for label, widget in LABELS.items():
            path = f"//AI Settings/{FORMS[label]}/{widget}"
            info = ctx.item_info(path)
            right = ctx.item_info(path + "/+").rect_full.max.x if label in STEPPED else info.rect_full.max.x
            rows[label] = (info.rect_full.min.x, right, imgui.calc_text_size(label).x)
        refresh = ctx.item_info(f"//AI Settings/##provider_form/{REFRESH}")
        rows["Refresh"] = (refresh.rect_full.min.x, refresh.rect_full.max.x, 0.0)
        testing.capture(ctx, str(artifacts / "layout_ai_settings.png"), window="AI Settings")

    run_gui(ctrl, test, size=APP_SIZE)  # the layout a new user sees
    assert set(rows) == {*LABELS, "Refresh"}
    for label, (left, right, label_width) in rows.items():
        assert right <= bounds["right"], (
            f"{label}: its widget is cut at the right ({right} > {bounds['right']})"
        )
        assert left >= bounds["left"] + label_width, f"{label}: the label does not fit before its widget"
        assert right - left >= 1.5 * bounds["font"], f"{label}: the widget is too narrow to use"


def _select_over_the_hook_api(ctrl, tab_bar: str, tab: str, done: list) -> None:
    """POST select_tab from a client thread. Server and thread are made on the main thread:
    the test function runs on the test engine's native thread, and a thread created there
    would register a never-ending threading._DummyThread for it."""

    def start() -> None:
        server = HookServer(ctrl, "127.0.0.1", 0, "", runtime_token_file=False).start()

        def post() -> None:
            with ApiHookClient(server.url, "", timeout=10) as client:
                done.append(client.wait_for_task(client.select_tab(tab_bar, tab)))

        thread = threading.Thread(target=post, name="test-select-tab")
        done.append((server, thread))
        thread.start()

    ctrl.post_gui_task({"action": "custom_callback", "callback": start})


def _tab_in_front(title: str) -> bool:
    window = imgui.internal.find_window_by_name(title)
    node = window.dock_node if window is not None else None
    return (
        node is not None
        and node.tab_bar is not None
        and node.tab_bar.selected_tab_id == window.tab_id
        and not window.hidden
    )


def _focused() -> str:
    nav = imgui.get_current_context().nav_window
    return nav.root_window.name if nav is not None else ""


def test_select_tab_over_the_hook_api_brings_the_mma_dashboard_to_the_front(make_controller, run_gui) -> None:
    ctrl = make_controller()
    seen: dict[str, object] = {}
    calls: list = []

    def test(ctx, app) -> None:
        ctx.yield_(10)
        app.toggle("MMA Dashboard")  # hidden, and another tab of its dock space in front
        app.focus("Discussion")
        frames_until(ctx, lambda: ctrl.state.show_windows.get("MMA Dashboard") is False)
        ctx.yield_(3)
        seen["before"] = (_tab_in_front("MMA Dashboard"), _focused())
        _select_over_the_hook_api(ctrl, "panels", "MMA Dashboard", calls)
        frames_until(ctx, lambda: len(calls) == 2, max_frames=1000)  # the task ran (or failed)
        frames_until(ctx, lambda: _tab_in_front("MMA Dashboard") and _focused() == "MMA Dashboard")
        seen["after"] = (_tab_in_front("MMA Dashboard"), _focused(), _tab_in_front("Discussion"))

    try:
        run_gui(ctrl, test)
    finally:
        if calls:
            server, thread = calls[0]
            thread.join(10)
            server.stop()
            assert not thread.is_alive()
    assert seen["before"] == (False, "Discussion")
    assert calls[1] == {"state": "done", "error": None}
    assert seen["after"] == (True, "MMA Dashboard", False)
    assert ctrl.state.show_windows["MMA Dashboard"] is True
    assert ctrl.state.tab_requests == {}  # the window applied the request


def _child_shown(parent: str, child: str) -> bool:
    """A child window of ``parent`` whose name contains ``child`` was drawn this frame."""
    frame = imgui.get_frame_count()
    return any(
        w.name.startswith(parent + "/") and child in w.name and w.last_frame_active == frame
        for w in imgui.get_current_context().windows
    )


def test_select_tab_selects_a_tier_stream_tab_and_shows_its_panel(make_controller, run_gui) -> None:
    ctrl = make_controller()
    shown: list[bool] = []

    def test(ctx, app) -> None:
        ctx.yield_(10)
        assert not ctrl.state.show_windows.get("Tier Streams")  # hidden by default
        ctrl.post_gui_task({"action": "select_tab", "tab_bar": "tier_streams", "tab": "Tier 3"})
        frames_until(ctx, lambda: _child_shown("Tier Streams", "##stream_Tier 3"))
        ctx.yield_(5)  # and it stays selected
        shown.extend(
            [_child_shown("Tier Streams", "##stream_Tier 3"), _child_shown("Tier Streams", "##stream_main")]
        )

    run_gui(ctrl, test)
    assert shown == [True, False]  # Tier 3 is the tab shown, not the first one
    assert ctrl.state.show_windows["Tier Streams"] is True


def test_select_tab_without_a_window_records_the_choice(make_controller) -> None:
    ctrl = make_controller()
    panels = ctrl.tab_bars.spec("panels")
    assert set(panels.items()) == {p.title for p in PANELS}
    assert {"discussion_takes", "panels", "tier_streams", "log_streams"} <= set(ctrl.tab_bars.names())
    ctrl.state.show_windows["Task DAG"] = False
    ctrl.post_gui_task({"action": "select_tab", "tab_bar": "panels", "tab": "Task DAG"})
    ctrl.post_gui_task({"action": "select_tab", "tab_bar": "log_streams", "tab": "audit"})
    ctrl.bind_main_thread()
    ctrl.process_pending()
    assert ctrl.state.tab_requests == {"panels": "Task DAG", "log_streams": "audit"}
    assert ctrl.state.show_windows["Task DAG"] is True
    with pytest.raises(InvalidValue, match="has no item 'Nowhere'"):
        ctrl.tab_bars.select("panels", "Nowhere")


def test_on_the_offline_model_ai_settings_says_what_it_is_for_and_switches_in_one_click(
    make_controller, run_gui, artifacts: Path
) -> None:
    from manual_slop.ai.bindings import OLLAMA_URL

    ctrl = make_controller(environ={})
    assert ctrl.state.current_provider == "local"
    seen: dict[str, object] = {}

    def test(ctx, app) -> None:
        ctx.yield_(10)
        seen["note"] = ctx.item_exists("//AI Settings/Use Ollama")
        testing.capture(ctx, str(artifacts / "layout_ai_settings_offline.png"), window="AI Settings")
        ctx.item_click("//AI Settings/Use Ollama")
        frames_until(ctx, lambda: ctrl.state.current_provider == "openai_compatible")
        ctx.yield_(2)
        seen["after"] = ctx.item_exists("//AI Settings/Use Ollama")

    run_gui(ctrl, test)
    assert seen == {"note": True, "after": False}  # the offer is made on the offline model only
    assert ctrl.fields.get("provider_base_url") == OLLAMA_URL
