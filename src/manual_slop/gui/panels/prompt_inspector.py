"""Prompt Inspector: pick any request of this session and see exactly what was sent — the system
text, the context, each message, the tool declarations — with each part's estimated tokens, and
what came back.

Every send is an agent run with its own run log (``governance.run_log``: a chat message, an MMA
ticket attempt, a plan subtask), so the panel lists the session's runs, then the chosen run's
requests, then the chosen request's sections; the section picked is shown whole below. Nothing is
read on the frame: the run list is read again in the background whenever the comms log grew (a
request was made or answered), a run's records when it is picked or its file grew, and the last
read stays on screen meanwhile. The Hook API serves the same view (``/api/runs…``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.governance.run_files import list_runs, read_run, request_view, run_path
from manual_slop.governance.run_log import RUNS_DIR
from manual_slop.gui.text_view import LongText, render_long_text
from manual_slop.gui.widgets import COLORS, clipped_rows, local_time, spinner_text, text_elided

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["InspectorState", "render_prompt_inspector"]

_OUTCOME_COLOR = {"answered": "ok", "error": "error", "cancelled": "warn", "round_limit": "warn"}
RESPONSE = "response"  # the name of the last, pseudo section: what came back
RUN_ROWS = 6  # rows of the run list shown before it scrolls
REQUEST_ROWS = 5
REREAD_S = 1.0  # the run list is read again at most this often while requests are made


@dataclass(slots=True)
class InspectorState:
    """What the panel read and what the user picked (``gui.inspector``)."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    runs_read_for: Any = None  # the last comms seq the list was read after
    runs_loading: bool = False
    runs_read_at: float = 0.0  # monotonic time of the last read (the list is read at most once a second)
    summaries: dict[str, Any] = field(default_factory=dict)  # list_runs' cache (the reading thread's)
    run_id: str = ""  # the run picked
    records: list[dict[str, Any]] = field(default_factory=list)
    records_read_for: tuple[str, int] = ("", -1)  # (run id, file size) the records were read at
    records_loading: bool = False
    error: str = ""
    request: int = 0  # the request shown (its number in the run), 0: none
    section: str = ""  # the name of the section shown
    view: dict[str, Any] | None = None
    view_for: tuple[Any, ...] = ()
    text: LongText = field(default_factory=LongText)


def render_prompt_inspector(ui: Ui) -> None:
    state = ui.gui.inspector
    if not isinstance(state, InspectorState):
        state = ui.gui.inspector = InspectorState()
    _read(ui, state)
    if imgui.button("Refresh##inspector"):
        state.runs_read_for, state.runs_read_at = None, 0.0
    imgui.same_line()
    busy = f"{spinner_text()} " if state.runs_loading or state.records_loading else ""
    imgui.text_disabled(f"{busy}{len(state.runs)} run(s) in this session")
    if state.error:
        imgui.text_colored(COLORS["error"], state.error)
    if not state.runs:
        imgui.text_wrapped(
            "No runs yet. Every message sent, MMA ticket attempt and plan subtask is an agent run: its "
            "requests show up here exactly as they were sent."
        )
        return
    _runs(ui, state)
    if state.run_id and state.records_read_for[0] == state.run_id:
        _requests(state)
        if state.request:
            _request(state)


# -- reading (off the frame) ------------------------------------------------------------------------
def _folder(ui: Ui) -> Path:
    return ui.ctrl.session_log.root / RUNS_DIR


def _read(ui: Ui, state: InspectorState) -> None:
    comms = ui.state.comms_log
    seen = comms[-1].get("seq") if comms else 0
    now = time.monotonic()
    if seen != state.runs_read_for and not state.runs_loading and now - state.runs_read_at >= REREAD_S:
        state.runs_loading, state.runs_read_at = True, now
        folder, summaries = _folder(ui), state.summaries

        def listed(runs: list[dict[str, Any]]) -> None:
            state.runs, state.runs_read_for, state.runs_loading = runs, seen, False

        def failed(exc: BaseException) -> None:
            state.error, state.runs_read_for, state.runs_loading = f"the runs: {exc}", seen, False

        if ui.ctrl.run_in_background(lambda: list_runs(folder, summaries), listed, failed) is None:
            state.runs_loading = False  # the app is shutting down
    picked = next((r for r in state.runs if r["id"] == state.run_id), None)
    if picked is None or state.records_loading or (picked["id"], picked["bytes"]) == state.records_read_for:
        return
    state.records_loading = True
    key = (str(picked["id"]), int(picked["bytes"]))
    path = run_path(_folder(ui), key[0])

    def loaded(records: list[dict[str, Any]]) -> None:
        state.records, state.records_read_for, state.records_loading, state.error = records, key, False, ""

    def unreadable(exc: BaseException) -> None:
        state.error, state.records_read_for, state.records_loading = f"run {key[0]}: {exc}", key, False

    if ui.ctrl.run_in_background(lambda: read_run(path, strict=False), loaded, unreadable) is None:
        state.records_loading = False


# -- the runs ---------------------------------------------------------------------------------------
def _list_flags() -> int:
    return (
        imgui.TableFlags_.row_bg
        | imgui.TableFlags_.borders_inner_v
        | imgui.TableFlags_.resizable
        | imgui.TableFlags_.scroll_y
    )


def _list_height(rows: int, shown: int) -> ImVec2:
    """Room for the header and up to ``shown`` rows (a longer list scrolls)."""
    return ImVec2(0, imgui.get_frame_height_with_spacing() * (min(rows, shown) + 1.3))


def _runs(ui: Ui, state: InspectorState) -> None:
    imgui.separator_text("Runs")
    if not imgui.begin_table("##runs", 5, _list_flags(), _list_height(len(state.runs), RUN_ROWS)):
        return
    imgui.table_setup_scroll_freeze(0, 1)
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    em = imgui.get_font_size()
    for header, column_flags, size in (
        ("run", stretch, 1.4),
        ("started", fixed, 8.5 * em),
        ("provider / model", stretch, 1.0),
        ("outcome", fixed, 6.5 * em),
        ("requests · calls", fixed, 7.5 * em),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_headers_row()
    runs = state.runs[::-1]  # newest first
    clipped_rows(len(runs), lambda index: _run_row(state, runs[index]))
    imgui.end_table()


def _run_row(state: InspectorState, run: dict[str, Any]) -> None:
    run_id = str(run["id"])
    imgui.table_next_row()
    imgui.push_id(run_id)
    imgui.table_set_column_index(0)
    picked = run_id == state.run_id
    flags = imgui.SelectableFlags_.span_all_columns | imgui.SelectableFlags_.allow_overlap
    if imgui.selectable("##pick", picked, flags)[0] and not picked:
        state.run_id, state.request, state.section, state.view = run_id, 0, "", None
    imgui.same_line()
    where = f" {run['ticket']}" if run.get("ticket") else ""
    text_elided(f"{run['kind']}{where}  {run_id}")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip(f"conversation {run.get('conversation', '')}\n{run.get('tier') or ''}")
    imgui.table_set_column_index(1)
    imgui.text_disabled(local_time(run.get("started")))
    imgui.table_set_column_index(2)
    text_elided(f"{run.get('provider', '')} / {run.get('model', '')}")
    imgui.table_set_column_index(3)
    outcome = run.get("outcome") or "running"
    imgui.text_colored(COLORS[_OUTCOME_COLOR.get(outcome, "in_progress")], outcome)
    if run.get("error_kind") and imgui.is_item_hovered():
        imgui.set_item_tooltip(str(run["error_kind"]))
    imgui.table_set_column_index(4)
    imgui.text_unformatted(f"{run.get('requests', 0)} · {run.get('tool_calls', 0)}")
    imgui.pop_id()


# -- the requests of the run picked -----------------------------------------------------------------
def _requests(state: InspectorState) -> None:
    requests = [r for r in state.records if r.get("type") == "request"]
    imgui.separator_text(f"Requests of {state.run_id} ({len(requests)})")
    if not requests:
        imgui.text_disabled("this run made no request yet")
        return
    if not imgui.begin_table("##requests", 3, _list_flags(), _list_height(len(requests), REQUEST_ROWS)):
        return
    imgui.table_setup_scroll_freeze(0, 1)
    imgui.table_setup_column("request", imgui.TableColumnFlags_.width_stretch)
    imgui.table_setup_column("messages", imgui.TableColumnFlags_.width_fixed, 5.5 * imgui.get_font_size())
    imgui.table_setup_column("tools", imgui.TableColumnFlags_.width_fixed, 6.5 * imgui.get_font_size())
    imgui.table_headers_row()
    for record in requests:
        n = int(record.get("n", 0))
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        label = f"request {n}  (round {record.get('round', 0)}, tool_choice {record.get('tool_choice', '')})"
        flags = imgui.SelectableFlags_.span_all_columns
        if imgui.selectable(f"{label}###request{n}", n == state.request, flags)[0]:
            state.request = n
        imgui.table_set_column_index(1)
        imgui.text_unformatted(str(len(record.get("messages") or [])))
        imgui.table_set_column_index(2)
        declarations = record.get("declarations")
        imgui.text_unformatted("off" if declarations is None else str(len(declarations)))
    imgui.end_table()


def _request(state: InspectorState) -> None:
    key = (state.run_id, state.request, id(state.records))
    if state.view_for != key:
        try:
            state.view = request_view(state.records, state.request)
        except KeyError:
            state.view = None
        state.view_for = key
    view = state.view
    if view is None:
        return
    sections = [*view["sections"], {"name": RESPONSE, "text": _response_text(view), "tokens": None}]
    if state.section not in {s["name"] for s in sections}:
        state.section = sections[0]["name"]
    imgui.separator_text(f"Request {view['n']}: ~{view['tokens']:,} tokens sent")
    if imgui.small_button("Copy request as JSON"):
        imgui.set_clipboard_text(_request_json(state))
    # sections on the left, the one picked whole on the right, down to the bottom of the panel
    height = max(imgui.get_content_region_avail().y, imgui.get_text_line_height_with_spacing() * 14)
    split = imgui.TableFlags_.resizable | imgui.TableFlags_.borders_inner_v
    if not imgui.begin_table("##request_view", 2, split):
        return
    imgui.table_setup_column("sections", imgui.TableColumnFlags_.width_stretch, 0.35)
    imgui.table_setup_column("text", imgui.TableColumnFlags_.width_stretch, 0.65)
    imgui.table_next_row()
    imgui.table_set_column_index(0)
    _sections(state, sections)
    imgui.table_set_column_index(1)
    shown = next(s for s in sections if s["name"] == state.section)
    render_long_text("##section_text", str(shown["text"]) or "(empty)", state.text, ImVec2(0, height))
    imgui.end_table()


def _sections(state: InspectorState, sections: list[dict[str, Any]]) -> None:
    if not imgui.begin_table("##sections", 2, imgui.TableFlags_.row_bg):
        return
    imgui.table_setup_column("section", imgui.TableColumnFlags_.width_stretch)
    imgui.table_setup_column("tokens", imgui.TableColumnFlags_.width_fixed, 4.5 * imgui.get_font_size())
    imgui.table_headers_row()
    for index, section in enumerate(sections):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        name = str(section["name"])
        span = imgui.SelectableFlags_.span_all_columns
        if imgui.selectable(f"{name}###section{index}", name == state.section, span)[0]:
            state.section = name
        if imgui.is_item_hovered():
            imgui.set_item_tooltip(name)
        imgui.table_set_column_index(1)
        tokens = section["tokens"]
        imgui.text_disabled("—" if tokens is None else f"{tokens:,}")
    imgui.end_table()


def _response_text(view: dict[str, Any]) -> str:
    """What came back for the request: the answer, its calls, its stop reason, usage and latency —
    or the failed attempts."""
    lines: list[str] = []
    for failure in view.get("failures") or []:
        lines.append(f"[{failure.get('type')}] {failure.get('kind', '')}: {failure.get('error', '')}")
    response = view.get("response")
    if response is None:
        lines.append("(no response recorded)" if not lines else "")
        return "\n".join(lines).strip()
    if response.get("text"):
        lines.append(str(response["text"]))
    for call in response.get("tool_calls") or []:
        lines.append(f"-> {call.get('name')}({json.dumps(call.get('args', {}), ensure_ascii=False)})")
    usage = response.get("usage") or {}
    lines.append(
        f"-- stop: {response.get('stop_reason') or '?'} · {usage.get('input_tokens', 0):,} in / "
        f"{usage.get('output_tokens', 0):,} out tokens · {response.get('latency_ms', 0)} ms"
    )
    return "\n".join(lines)


def _request_json(state: InspectorState) -> str:
    record = next(
        (r for r in state.records if r.get("type") == "request" and r.get("n") == state.request), {}
    )
    return json.dumps(record, ensure_ascii=False, indent=2)
