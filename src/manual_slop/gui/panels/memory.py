"""Memory: one search over the project index, earlier conversations and notes (sources open
in the File View or switch to the discussion); the project index's status with re-index and
cancel; the notes and the profile, each line editable and deletable, and the profile's
switches.

Every change is an action (``btn_memory_*``, ``btn_rag_*``, ``btn_open_file``) or a field
(``memory_query``, ``memory_profile``, ``memory_learn_profile``), so the Hook API reaches the
same things; the panel keeps only what is being typed, in ``gui.edit_buffers``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.gui.widgets import (
    COLORS,
    button,
    local_time,
    small_button,
    spinner_text,
    text_elided,
    text_entry,
    text_wrapped_colored,
)

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui

__all__ = ["render_memory"]

KIND_LABELS = {"file": "file", "conversation": "said", "note": "note"}
SNIPPET_CHARS = 400


def render_memory(ui: Ui) -> None:
    _search(ui)
    _index(ui)
    _notes(ui)
    _profile(ui)


# -- search -------------------------------------------------------------------------------------
def _search(ui: Ui) -> None:
    state = ui.state
    imgui.separator_text("Search")
    imgui.set_next_item_width(-70)
    changed, text = imgui.input_text_with_hint(
        "##memory_query", "a question, a name, words from a note", state.memory_query,
        imgui.InputTextFlags_.enter_returns_true,
    )  # fmt: skip
    if text != state.memory_query:
        ui.act.set("memory_query", text)
    imgui.same_line()
    if imgui.button("Search##memory") or changed:
        ui.act.click("btn_memory_search")
    status = state.memory_search_status
    if status != "idle":
        color = COLORS["error"] if status.startswith("error") else COLORS["muted"]
        busy = status.endswith("...")
        imgui.text_colored(color, f"{spinner_text() + ' ' if busy else ''}{status}")
    for index, result in enumerate(state.memory_results):
        imgui.push_id(f"result{index}")
        _result(ui, result)
        imgui.pop_id()


def _result(ui: Ui, result: dict[str, Any]) -> None:
    kind = str(result.get("kind", "?"))
    imgui.text_colored(COLORS["info"], KIND_LABELS.get(kind, kind))
    imgui.same_line()
    source = str(result.get("source", ""))
    if kind == "file":
        start, end = int(result.get("start_line", 1)), int(result.get("end_line", 1))
        if imgui.text_link(f"{source}:{start}-{end}###link"):
            ui.act.click("btn_open_file", {"path": source, "line": max(1, start), "end_line": max(1, end)})
    elif kind == "conversation":
        when = local_time(result.get("ts"))
        name = source.removeprefix("discussion:")
        if source.startswith("discussion:") and name in ui.state.discussions:
            if imgui.text_link(f"{name}###said"):  # the discussion it was said in becomes the active one
                ui.act.select("discussions", name)
        else:
            imgui.text_unformatted(source)
        imgui.same_line()
        imgui.text_disabled(f"{result.get('role', '')}, {when}")
    else:
        imgui.text_disabled(f"[{source}]")
    imgui.same_line()
    imgui.text_disabled(f"{float(result.get('score', 0.0)):.2f}")
    text = str(result.get("text", ""))
    text_wrapped_colored(COLORS["muted"], text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + " …")


# -- the project index ----------------------------------------------------------------------------
def _index(ui: Ui) -> None:
    status = ui.state.rag_status
    imgui.separator_text("Project index")
    if not status:  # first look at this project's index: read its size in the background
        ui.act.click("btn_rag_status")
        status = ui.state.rag_status
    state = str(status.get("state", "idle"))
    indexing = state == "indexing"
    if indexing:
        done, total = int(status.get("done", 0)), int(status.get("total", 0))
        fraction = done / total if total else 0.0
        imgui.progress_bar(fraction, ImVec2(-1, 0), f"{done:,} / {total:,} files")
    elif state == "error":
        imgui.text_colored(COLORS["error"], f"indexing failed: {status.get('error')}")
    elif status.get("reading"):
        imgui.text_disabled(f"{spinner_text()} reading the index...")
    elif status.get("chunks"):
        cancelled = " (cancelled; the files done are kept)" if status.get("cancelled") else ""
        files, chunks = int(status.get("files", 0)), int(status.get("chunks", 0))
        imgui.text_unformatted(f"{files:,} files, {chunks:,} chunks{cancelled}")
    else:
        imgui.text_disabled("empty: Re-index builds it from the tracked files")
    if button("Re-index", not indexing, "an index job is running"):
        ui.act.click("btn_rag_index")
    imgui.same_line()
    if button("Cancel##rag", indexing, "no index job is running"):
        ui.act.click("btn_rag_cancel")
    imgui.same_line()
    enabled = bool(ui.ctrl.fields.get("rag_enabled"))
    changed, value = imgui.checkbox("passages in every send", enabled)
    if changed:
        ui.act.set("rag_enabled", value)
    if imgui.is_item_hovered():
        imgui.set_tooltip("each request carries the index passages closest to the message (rag.top_k)")


# -- notes ----------------------------------------------------------------------------------------
def _notes(ui: Ui) -> None:
    notes = ui.state.memory_notes
    buffers = ui.gui.edit_buffers
    imgui.separator_text(f"Notes ({len(notes)})")
    imgui.set_next_item_width(110)
    _, buffers["note_category"] = imgui.input_text_with_hint(
        "##note_category", "category", buffers.get("note_category", "")
    )
    imgui.same_line()
    category = buffers["note_category"].strip() or "general"
    text_entry(
        buffers, "note_new", "a note to keep", "Add##note",
        lambda text: ui.act.click("btn_memory_note_add", {"content": text, "category": category}),
    )  # fmt: skip
    for note in notes:
        imgui.push_id(f"note{note.get('id')}")
        _note(ui, note)
        imgui.pop_id()


def _note(ui: Ui, note: dict[str, Any]) -> None:
    buffers, note_id = ui.gui.edit_buffers, int(note.get("id", 0))
    key = f"note_edit:{note_id}"
    imgui.text_colored(COLORS["info"], f"[{note.get('category', '')}]")
    imgui.same_line()
    imgui.text_disabled(local_time(note.get("ts")))
    imgui.same_line()
    editing = key in buffers
    if imgui.small_button("Cancel" if editing else "Edit"):
        if editing:
            buffers.pop(key, None)
            buffers.pop(key + ":category", None)
        else:
            buffers[key] = str(note.get("content", ""))
            buffers[key + ":category"] = str(note.get("category", ""))
    imgui.same_line()
    if imgui.small_button("Delete"):
        ui.act.click("btn_memory_note_delete", {"id": note_id})
    if not editing:
        imgui.text_wrapped(str(note.get("content", "")))
        return
    imgui.set_next_item_width(110)
    _, buffers[key + ":category"] = imgui.input_text("##category", buffers[key + ":category"])
    height = imgui.get_text_line_height_with_spacing() * min(8, 2 + buffers[key].count("\n"))
    _, buffers[key] = imgui.input_text_multiline("##content", buffers[key], ImVec2(-1, height))
    if imgui.button("Save") and ui.act.click(
        "btn_memory_note_edit",
        {"id": note_id, "content": buffers[key], "category": buffers[key + ":category"].strip() or "general"},
    ):
        buffers.pop(key, None)
        buffers.pop(key + ":category", None)


# -- the profile ----------------------------------------------------------------------------------
def _profile(ui: Ui) -> None:
    lines, buffers, fields = ui.state.memory_profile_lines, ui.gui.edit_buffers, ui.ctrl.fields
    imgui.separator_text(f"Profile ({len(lines)})")
    changed, value = imgui.checkbox("use the profile in every prompt", bool(fields.get("memory_profile")))
    if changed:
        ui.act.set("memory_profile", value)
    imgui.same_line()
    changed, learn = imgui.checkbox("learn from conversations", bool(fields.get("memory_learn_profile")))
    if changed:
        ui.act.set("memory_learn_profile", learn)
    if imgui.is_item_hovered():
        imgui.set_tooltip("after each answer, a short model call proposes new lines (costs tokens)")
    for line in lines:
        line_id = int(line.get("id", 0))
        key = f"profile_edit:{line_id}"
        imgui.push_id(f"line{line_id}")
        if key in buffers:
            imgui.set_next_item_width(-120)
            _, buffers[key] = imgui.input_text("##line", buffers[key])
            imgui.same_line()
            if imgui.small_button("Save") and ui.act.click(
                "btn_memory_profile_edit", {"id": line_id, "content": buffers[key]}
            ):
                buffers.pop(key, None)
            imgui.same_line()
            if imgui.small_button("Cancel"):
                buffers.pop(key, None)
        else:
            if small_button("Edit"):
                buffers[key] = str(line.get("content", ""))
            imgui.same_line()
            if imgui.small_button("Delete"):
                ui.act.click("btn_memory_profile_delete", {"id": line_id})
            imgui.same_line()
            learned = line.get("source") == "learned"
            text_elided(str(line.get("content", "")) + ("  (learned)" if learned else ""))
        imgui.pop_id()
    text_entry(
        buffers, "profile_new", "e.g. prefers type hints", "Add##profile",
        lambda text: ui.act.click("btn_memory_profile_add", {"content": text}),
    )  # fmt: skip
