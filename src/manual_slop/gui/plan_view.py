"""The ``/plan`` part of the MMA Dashboard: a goal box that starts a plan, the project's plans,
and — when the track on the dashboard is a plan — its goal, status, groups, judge and subtasks
(agent, engine, status, tokens), with the merged answer.

Plan summaries are state (``state.plans``). The subtasks' agents, engines and usage and the
judge's verdict live in the plan file; :func:`plan_details` reads it with ``ctrl.plans.get`` as a
background job whenever what the dashboard shows of the plan changes (its summary, its tickets'
states), never on the frame, and keeps the last answer in ``gui.plan_cache`` meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import (
    COLORS,
    clip_tooltip,
    local_time,
    small_button,
    spinner_text,
    text_elided,
    text_entry,
    text_wrapped_colored,
)
from manual_slop.usage.bindings import ledger_of
from manual_slop.usage.ledger import format_usd

if TYPE_CHECKING:
    from imgui_bundle import ImVec4

    from manual_slop.gui.ui import Ui

__all__ = ["PlanCache", "plan_color", "plan_details", "render_active_plan", "render_plan_start"]

_COLOR_OF = {
    "planning": "in_progress",
    "proposed": "warn",
    "running": "in_progress",
    "merging": "in_progress",
    "judging": "in_progress",
    "paused": "warn",
    "done": "ok",
    "completed": "ok",
    "pending": "todo",
    "failed": "error",
    "killed": "error",
    "aborted": "error",
    "rejected": "muted",
    "invalid": "error",
}
MERGED_CHARS = 4000  # of the merged answer shown under the plan (the Response tab has it whole)


def plan_color(status: str) -> ImVec4:
    """Colour of a plan's or a subtask's status word."""
    return COLORS[_COLOR_OF.get(status, "info")]


@dataclass(slots=True)
class PlanCache:
    """The plan file last read for the dashboard, and what it was read for."""

    plan_id: str = ""
    key: str = ""  # the dashboard's view of the plan when ``data`` was read
    data: dict[str, Any] | None = None
    error: str = ""
    loading: str = ""  # the key being read now ('' = none)


def plan_details(ui: Ui, plan_id: str, key: str) -> PlanCache:
    """The plan file of ``plan_id`` as last read; a new read starts (in the background) when
    ``key`` — what the dashboard knows of the plan — changed since."""
    cache = ui.gui.plan_cache
    if not isinstance(cache, PlanCache) or cache.plan_id != plan_id:
        cache = ui.gui.plan_cache = PlanCache(plan_id)
    if cache.key == key or cache.loading:
        return cache
    plans = getattr(ui.ctrl, "plans", None)
    if plans is None:
        cache.key, cache.error = key, "the /plan feature is not loaded in this app"
        return cache
    cache.loading = key

    def done(data: dict[str, Any]) -> None:
        cache.data, cache.error, cache.key, cache.loading = data, "", key, ""

    def failed(exc: BaseException) -> None:
        cache.error, cache.key, cache.loading = str(exc) or type(exc).__name__, key, ""

    if ui.ctrl.run_in_background(lambda: plans.get(plan_id), done, failed) is None:
        cache.loading = ""  # the app is shutting down
    return cache


# -- starting a plan, and the list -------------------------------------------------------------------
def render_plan_start(ui: Ui) -> None:
    """The goal box with its Plan button, and the project's plans, newest first."""
    plans = ui.state.plans
    imgui.separator_text(f"Plans ({len(plans)})" if plans else "Plan")
    text_entry(
        ui.gui.edit_buffers, "plan_goal", "a goal for the agents (/plan): planned, approved, run, merged",
        "Plan…##plan_start", lambda goal: ui.act.click("btn_plan_start", goal), width=-70.0,
    )  # fmt: skip
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("the planner splits the goal into subtasks for the agents; you approve it")
    if not plans:
        return
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.scroll_y
    row = imgui.get_frame_height_with_spacing()
    if not imgui.begin_table("##plans", 5, flags, ImVec2(0, row * (min(len(plans), 5) + 1.2))):
        return
    imgui.table_setup_scroll_freeze(0, 1)
    em = imgui.get_font_size()
    fixed = imgui.TableColumnFlags_.width_fixed
    imgui.table_setup_column("goal", imgui.TableColumnFlags_.width_stretch)
    imgui.table_setup_column("status", fixed, 5.5 * em)
    imgui.table_setup_column("done", fixed, imgui.calc_text_size("00 / 00").x)
    imgui.table_setup_column("score", fixed, imgui.calc_text_size("10/10").x)
    imgui.table_setup_column("created", fixed, imgui.calc_text_size("0000-00-00 00:00").x)
    imgui.table_headers_row()
    for plan in reversed(plans):
        _plan_row(ui, plan)
    imgui.end_table()


def _plan_row(ui: Ui, plan: Mapping[str, Any]) -> None:
    plan_id, status = str(plan.get("id", "")), str(plan.get("status", ""))
    imgui.table_next_row()
    imgui.push_id(plan_id)
    imgui.table_set_column_index(0)
    text_elided(str(plan.get("goal", "")))
    if imgui.is_item_hovered():
        imgui.set_item_tooltip(clip_tooltip(f"{plan_id}\n\n{plan.get('goal', '')}", 2000))
    imgui.table_set_column_index(1)
    if status == "proposed":  # its approval dialog may have been closed: ask again
        if small_button("proposed"):
            ui.act.click("btn_plan_propose", plan_id)
        if imgui.is_item_hovered():
            imgui.set_item_tooltip("show the proposal for approval again")
    else:
        busy = status in ("planning", "running", "merging", "judging")
        imgui.text_colored(plan_color(status), f"{spinner_text()} {status}" if busy else status)
    imgui.table_set_column_index(2)
    counts = plan.get("counts") or {}
    imgui.text_unformatted(f"{counts.get('completed', 0)} / {plan.get('subtask_count', 0)}")
    imgui.table_set_column_index(3)
    score = plan.get("score")
    imgui.text_unformatted(f"{score:g}/10" if isinstance(score, int | float) else "—")
    imgui.table_set_column_index(4)
    imgui.text_disabled(str(plan.get("created_at", ""))[:16].replace("T", " "))
    imgui.pop_id()


# -- the plan on the dashboard --------------------------------------------------------------------------
def render_active_plan(ui: Ui, plan_id: str) -> None:
    """Goal, status, groups, judge, subtasks and the merged answer of the plan ``plan_id``."""
    summary = next((p for p in ui.state.plans if p.get("id") == plan_id), None)
    tickets = ui.state.mma_tickets
    key = repr((summary, [(t.get("id"), t.get("status"), t.get("depends_on")) for t in tickets]))
    cache = plan_details(ui, plan_id, key)
    data = cache.data
    goal = str((summary or {}).get("goal") or ((data or {}).get("metadata") or {}).get("goal") or plan_id)
    imgui.separator_text("Plan")
    text_wrapped_colored(COLORS["info"], goal)
    status = str((summary or {}).get("status") or (data or {}).get("status") or "?")
    imgui.text("Status:")
    imgui.same_line()
    imgui.text_colored(plan_color(status), status)
    if cache.loading:
        imgui.same_line()
        imgui.text_disabled(spinner_text())
    groups = (summary or {}).get("groups") or []
    if groups:
        imgui.same_line()
        imgui.text_disabled("| groups: " + " then ".join(", ".join(map(str, g)) for g in groups))
    if cache.error:
        text_wrapped_colored(COLORS["error"], f"the plan file cannot be read: {cache.error}")
    if data is None:
        return
    metadata = data.get("metadata") or {}
    _judge(metadata)
    ledger = ledger_of(ui.ctrl)

    def cost(subtask_id: str) -> str:  # the subtask's dollars (all its attempts); '' before its first call
        tally = ledger.tally("subtask", f"{plan_id}/{subtask_id}")
        return format_usd(tally.known_usd, tally.unknown_calls) if tally.calls else ""

    _subtasks(data.get("subtasks") or [], cost)
    strategy = str((data.get("merge") or {}).get("strategy") or "")
    if strategy:
        text_wrapped_colored(COLORS["muted"], f"merge: {strategy}")
    merged = str(data.get("merge_result") or "")
    if merged and imgui.collapsing_header("Merged answer##plan_merged"):
        imgui.text_wrapped(merged if len(merged) <= MERGED_CHARS else merged[:MERGED_CHARS] + " …")


def _judge(metadata: Mapping[str, Any]) -> None:
    judge = metadata.get("judge")
    if isinstance(judge, dict):
        score, verdict = judge.get("score"), str(judge.get("verdict", ""))
        shown = f"{score:g}/10" if isinstance(score, int | float) else str(score)
        imgui.text("Judge:")
        imgui.same_line()
        good = isinstance(score, int | float) and score >= 7
        imgui.text_colored(COLORS["ok"] if good else COLORS["warn"], f"{shown}  {verdict}")
        for reason in judge.get("reasons") or []:
            imgui.bullet()
            imgui.text_wrapped(str(reason))
    elif metadata.get("judge_error"):
        text_wrapped_colored(COLORS["warn"], f"judge: {metadata['judge_error']}")
    for error in metadata.get("errors") or []:
        text_wrapped_colored(COLORS["error"], str(error))


def _subtasks(subtasks: list[dict[str, Any]], cost: Callable[[str], str]) -> None:
    if not subtasks:
        return
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.resizable
    if not imgui.begin_table("##plan_subtasks", 8, flags):
        return
    em = imgui.get_font_size()
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    for header, column_flags, size in (
        ("id", fixed, 3.0 * em),
        ("title", stretch, 1.6),
        ("agent", stretch, 0.8),
        ("engine", fixed, imgui.calc_text_size("gemini_cli").x),
        ("group", fixed, imgui.calc_text_size("group").x),
        ("status", fixed, imgui.calc_text_size("completed").x),
        ("tokens in / out", fixed, imgui.calc_text_size("000,000 / 000,000").x),
        ("cost", fixed, imgui.calc_text_size("$0.0000").x),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_headers_row()
    for subtask in subtasks:
        imgui.table_next_row()
        imgui.push_id(str(subtask.get("id")))
        status = str(subtask.get("status", ""))
        usage = subtask.get("usage") or {}
        cells: list[tuple[str, ImVec4 | None]] = [
            (str(subtask.get("id", "")), None),
            (str(subtask.get("title", "")), None),
            (str(subtask.get("agent_key", "")), COLORS["info"]),
            (str(subtask.get("engine", "")), COLORS["muted"]),
            (str(subtask.get("parallel_group", "")), None),
            (status, plan_color(status)),
            (f"{int(usage.get('input_tokens', 0)):,} / {int(usage.get('output_tokens', 0)):,}", None),
            (cost(str(subtask.get("id", ""))), None),  # "unknown" when its model has no price
        ]
        for column, (text, color) in enumerate(cells):
            imgui.table_set_column_index(column)
            text_elided(text, color=color)
            if column == 1 and imgui.is_item_hovered():
                imgui.set_item_tooltip(_subtask_tooltip(subtask))
        imgui.pop_id()
    imgui.end_table()


def _subtask_tooltip(subtask: Mapping[str, Any]) -> str:
    lines = [f"{subtask.get('id')}: {subtask.get('title', '')}", str(subtask.get("objective", ""))]
    if subtask.get("error"):
        lines.append(f"error: {subtask['error']}")
    if subtask.get("started_at"):
        lines.append(f"started {local_time(subtask.get('started_at'))}")
    return clip_tooltip("\n".join(lines), 2000)
