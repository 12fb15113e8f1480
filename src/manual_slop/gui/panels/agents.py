"""Agents: the agent profiles of the project and of the user, the folders refused as profiles
(with why), and an editor to create, change and delete a profile.

A profile is a folder ``agents/<key>/`` (see :mod:`manual_slop.agents.profiles`). Every change
goes through an action — ``btn_agent_save``, ``btn_agent_delete``, ``btn_agents_reload`` — or the
``active_agent`` field, so the Hook API reaches the same things; a refusal (a bad key, an unknown
tool or category) is shown under the editor and as a toast, and the draft stays open to fix it.
The panel keeps only the draft being typed (:class:`AgentDraft`, in ``gui.agent_draft``) and the
profile waiting for its delete confirmation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from imgui_bundle import ImVec2, imgui

from manual_slop.agents.profiles import SCOPES
from manual_slop.config import PROVIDER_NAMES
from manual_slop.gui.confirm import confirm_modal
from manual_slop.gui.form import form, form_row
from manual_slop.gui.widgets import COLORS, text_elided, text_wrapped_colored
from manual_slop.token_profiles import PROFILES

if TYPE_CHECKING:
    from manual_slop.agents.profiles import AgentProfile
    from manual_slop.gui.ui import Ui

__all__ = ["CONFIRM_TITLE", "AgentDraft", "render_agents"]

CONFIRM_TITLE = "Delete agent profile"
DEFAULT = "(default)"  # a profile field left empty: the app's active provider / model / token profile
FORM_LABELS = ("Key", "Scope", "Description", "Provider", "Model", "Token profile", "Workspace", "Tools")


@dataclass(slots=True)
class AgentDraft:
    """A profile as typed in the editor (text as the widgets hold it)."""

    key: str = ""
    scope: str = "project"
    new: bool = True
    system_prompt: str = ""
    description: str = ""
    memory_categories: str = ""  # one per line
    workspace_slug: str = ""
    provider: str = ""  # '' = the active provider
    model: str = ""
    token_profile: str = ""  # '' = the active token profile
    every_tool: bool = True  # tools = None: every tool the app has
    tools: str = ""  # comma-separated tool names
    error: str = ""  # why the last save was refused

    @classmethod
    def of(cls, profile: AgentProfile) -> AgentDraft:
        return cls(
            key=profile.key,
            scope=profile.scope,
            new=False,
            system_prompt=profile.system_prompt,
            description=profile.description,
            memory_categories="\n".join(profile.memory_categories),
            workspace_slug=profile.workspace_slug,
            provider=profile.provider,
            model=profile.model,
            token_profile=profile.token_profile,
            every_tool=profile.tools is None,
            tools=", ".join(profile.tools or ()),
        )

    def tool_list(self) -> list[str]:
        return [name for name in (part.strip() for part in self.tools.split(",")) if name]

    def values(self) -> dict[str, Any]:
        """``btn_agent_save``'s user_data."""
        return {
            "key": self.key.strip(),
            "scope": self.scope,
            "system_prompt": self.system_prompt,
            "description": self.description,
            "memory_categories": [c.strip() for c in self.memory_categories.splitlines() if c.strip()],
            "workspace_slug": self.workspace_slug,
            "provider": self.provider,
            "model": self.model,
            "token_profile": self.token_profile,
            "tools": None if self.every_tool else self.tool_list(),
        }


def render_agents(ui: Ui) -> None:
    state = ui.state
    if imgui.button("New profile"):
        ui.gui.agent_draft = AgentDraft()
    imgui.same_line()
    if imgui.button("Reload##agents"):
        ui.act.click("btn_agents_reload")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("read the agents/ folders of the project and the user again")
    imgui.same_line()
    active = state.active_agent
    imgui.text_disabled(f"chat runs as: {active}" if active else "chat runs as no agent")
    _profiles(ui)
    _problems(ui)
    if ui.gui.agent_draft is not None:
        _editor(ui, ui.gui.agent_draft)
    _confirm_delete(ui)


# -- the list ------------------------------------------------------------------------------------
def _profiles(ui: Ui) -> None:
    agents = ui.state.agents
    imgui.separator_text(f"Profiles ({len(agents)})")
    if not agents:
        text_wrapped_colored(
            COLORS["muted"],
            "No profiles yet. New profile writes agents/<key>/ in the project (or beside config.toml "
            "for every project); /plan gives its subtasks to these agents.",
        )
        return
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.resizable
    if not imgui.begin_table("##agents", 6, flags):
        return
    em = imgui.get_font_size()
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    for header, column_flags, size in (
        ("key", stretch, 0.8),
        ("scope", fixed, imgui.calc_text_size("project").x + em * 0.5),
        ("description", stretch, 1.6),
        ("provider / model", stretch, 1.0),
        ("tools", stretch, 1.0),
        ("", fixed, _buttons_width(("Stop", "Edit", "Delete"))),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_headers_row()
    for agent in agents:
        _profile_row(ui, agent)
    imgui.end_table()


def _buttons_width(labels: tuple[str, ...]) -> float:
    """Pixels a row of small buttons takes."""
    style = imgui.get_style()
    text = sum(imgui.calc_text_size(label).x + 2 * style.frame_padding.x for label in labels)
    return text + style.item_spacing.x * (len(labels) - 1)


def _profile_row(ui: Ui, agent: dict[str, Any]) -> None:
    key, scope = str(agent.get("key", "")), str(agent.get("scope", "project"))
    active = key == ui.state.active_agent
    imgui.table_next_row()
    imgui.push_id(f"agent:{scope}:{key}")
    imgui.table_set_column_index(0)
    text_elided(key, color=COLORS["ok"] if active else None)
    if active and imgui.is_item_hovered():
        imgui.set_item_tooltip("chat runs as this agent")
    imgui.table_set_column_index(1)
    imgui.text_disabled(scope)
    imgui.table_set_column_index(2)
    text_elided(str(agent.get("description") or ""))
    imgui.table_set_column_index(3)
    text_elided(_runs_on(agent), color=COLORS["muted"])
    imgui.table_set_column_index(4)
    tools = agent.get("tools")
    text_elided("every tool" if tools is None else ", ".join(map(str, tools)) or "no tools")
    imgui.table_set_column_index(5)
    if imgui.small_button("Stop" if active else "Use"):
        ui.act.set("active_agent", "" if active else key)
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("chat stops running as this agent" if active else "chat runs as this agent")
    imgui.same_line()
    if imgui.small_button("Edit"):
        profile = ui.ctrl.agents.catalog.get(key)  # type: ignore[attr-defined]
        if profile is not None:
            ui.gui.agent_draft = AgentDraft.of(profile)
    imgui.same_line()
    if imgui.small_button("Delete"):
        ui.gui.agent_delete = (key, scope)
    imgui.pop_id()


def _runs_on(agent: dict[str, Any]) -> str:
    provider, model = agent.get("provider"), agent.get("model")
    if not provider and not model:
        return DEFAULT
    return f"{provider or DEFAULT} / {model or DEFAULT}"


def _problems(ui: Ui) -> None:
    problems = ui.state.agent_problems
    if not problems:
        return
    imgui.separator_text(f"Refused folders ({len(problems)})")
    for index, problem in enumerate(problems):
        imgui.push_id(f"problem{index}")
        where = _shown_path(ui, str(problem.get("scope", "")), str(problem.get("path", "")))
        text_wrapped_colored(COLORS["error"], f"{problem.get('scope', '')}: {where}")
        if imgui.is_item_hovered():
            imgui.set_item_tooltip(str(problem.get("path", "")))
        imgui.indent()
        text_wrapped_colored(COLORS["muted"], str(problem.get("reason", "")))
        imgui.unindent()
        imgui.pop_id()


def _shown_path(ui: Ui, scope: str, path: str) -> str:
    """``path`` relative to its scope's folder (the project's, or config.toml's) when inside it."""
    paths = ui.ctrl.paths
    root = paths.project_file.parent if scope == "project" else paths.config_file.parent
    try:
        return PurePath(path).relative_to(root).as_posix()
    except ValueError:
        return path


# -- the editor ----------------------------------------------------------------------------------
def _editor(ui: Ui, draft: AgentDraft) -> None:
    imgui.separator_text("New profile" if draft.new else f"Edit {draft.key} ({draft.scope})")
    with form("##agent_form", FORM_LABELS) as shown:
        if shown:
            _identity(draft)
            _runtime(draft)
            form_row("Tools", "which tools the agent may call")
            _, draft.every_tool = imgui.checkbox("every tool##agent_every_tool", draft.every_tool)
    if not draft.every_tool:
        _tools(ui, draft)
    line = imgui.get_text_line_height_with_spacing()
    imgui.text("Memory categories (one per line; their notes load by themselves)")
    _, draft.memory_categories = imgui.input_text_multiline(
        "##agent_memory", draft.memory_categories, ImVec2(-1, line * 3)
    )
    imgui.text("System prompt (leads every request the agent makes)")
    _, draft.system_prompt = imgui.input_text_multiline(
        "##agent_prompt", draft.system_prompt, ImVec2(-1, line * 8), imgui.InputTextFlags_.word_wrap
    )
    refused_now = False
    if imgui.button("Save##agent"):
        draft.error = ui.act.refusal("btn_agent_save", draft.values())  # the reason names the agent
        refused_now = bool(draft.error)
        if not draft.error:
            ui.gui.agent_draft = None
    imgui.same_line()
    if imgui.button("Cancel##agent"):
        ui.gui.agent_draft = None
    if draft.error:
        text_wrapped_colored(COLORS["error"], draft.error)
        if refused_now:
            imgui.set_scroll_here_y(1.0)  # the reason is in view, under the button just clicked


def _identity(draft: AgentDraft) -> None:
    form_row("Key", "the folder name: letters, digits, '_' or '-'")
    if draft.new:
        _, draft.key = imgui.input_text_with_hint("##agent_key", "e.g. reviewer", draft.key)
    else:
        imgui.align_text_to_frame_padding()
        imgui.text_unformatted(draft.key)
    form_row("Scope", "project: agents/ beside the project file; user: beside config.toml, for every project")
    if draft.new:
        draft.scope = _combo("##agent_scope", draft.scope, list(SCOPES))
    else:
        imgui.align_text_to_frame_padding()
        imgui.text_unformatted(draft.scope)
    form_row("Description", "one line; the planner reads it to choose agents")
    _, draft.description = imgui.input_text("##agent_description", draft.description)


def _runtime(draft: AgentDraft) -> None:
    form_row("Provider", f"{DEFAULT}: the provider chosen in AI Settings")
    draft.provider = _combo("##agent_provider", draft.provider, ["", *PROVIDER_NAMES])
    form_row("Model", "empty: the provider's model")
    _, draft.model = imgui.input_text_with_hint("##agent_model", DEFAULT, draft.model)
    form_row("Token profile", f"{DEFAULT}: the token profile chosen in AI Settings")
    draft.token_profile = _combo("##agent_token_profile", draft.token_profile, ["", *PROFILES])
    form_row("Workspace", "a workspace slug (one line)")
    _, draft.workspace_slug = imgui.input_text("##agent_workspace", draft.workspace_slug)


def _combo(label: str, current: str, options: list[str]) -> str:
    """A combo over ``options`` ('' shown as DEFAULT); the option chosen."""
    chosen = current
    if imgui.begin_combo(label, current or DEFAULT):
        for option in options:
            clicked, _ = imgui.selectable(option or DEFAULT, option == current)
            if clicked:
                chosen = option
        imgui.end_combo()
    return chosen


def _tools(ui: Ui, draft: AgentDraft) -> None:
    """The tool list as text (comma-separated) and as a checkbox per known tool; both edit it."""
    imgui.set_next_item_width(-1)
    _, draft.tools = imgui.input_text_with_hint("##agent_tools", "read_file, list_directory", draft.tools)
    known = _known_tools(ui)
    if not known:
        return
    listed = draft.tool_list()
    width = max(imgui.calc_text_size(name).x for name in known) + imgui.get_frame_height() * 2
    columns = max(1, min(len(known), int(imgui.get_content_region_avail().x // width)))
    if not imgui.begin_table("##agent_tool_grid", columns):
        return
    for name in known:
        imgui.table_next_column()
        changed, ticked = imgui.checkbox(f"{name}##tool", name in listed)
        if changed:
            listed = [*listed, name] if ticked else [t for t in listed if t != name]
            draft.tools = ", ".join(listed)
    imgui.end_table()


def _known_tools(ui: Ui) -> list[str]:
    """The tools a profile may name, asked once per window (the registry does not change)."""
    if ui.gui.agent_tools is None:
        ui.gui.agent_tools = sorted(ui.ctrl.agents.tool_names())  # type: ignore[attr-defined]
    return ui.gui.agent_tools


# -- delete, after confirmation ----------------------------------------------------------------------
def _confirm_delete(ui: Ui) -> None:
    pending = ui.gui.agent_delete
    key, scope = pending or ("", "")
    note = f"Its folder agents/{key}/ moves to .slop_cache/deleted_agents/ (kept there)."
    answer = confirm_modal(CONFIRM_TITLE, pending is not None, f"Delete the {scope} agent {key}?", note)
    if answer is None:
        return
    if answer:
        ui.act.click("btn_agent_delete", {"key": key, "scope": scope})
        draft = ui.gui.agent_draft
        if draft is not None and not draft.new and (draft.key, draft.scope) == (key, scope):
            ui.gui.agent_draft = None
    ui.gui.agent_delete = None
