"""Skills: the skills of the project and of the user with their on/off switch, and the folders
under ``skills/`` refused as skills, with the reason.

A skill is a folder ``skills/<name>/SKILL.md`` (see :mod:`manual_slop.skills`). The checkbox
clicks ``btn_skill_enable`` (saved with the project), **Reload** clicks ``btn_skills_reload``;
the Hook API reaches the same actions. The panel keeps no state of its own: it draws
:func:`skills_view` of the app state each frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.gui.widgets import COLORS, text_elided, text_wrapped_colored
from manual_slop.skills.bindings import skill_rows

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui
    from manual_slop.state import AppState

__all__ = ["SkillRow", "SkillsView", "render_skills", "skills_view"]


@dataclass(frozen=True, slots=True)
class SkillRow:
    """One valid skill as the table shows it."""

    name: str
    scope: str
    description: str
    enabled: bool
    files: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SkillsView:
    """What the panel draws: the skills (by name), the refused folders as (where, reason) lines."""

    skills: tuple[SkillRow, ...]
    refused: tuple[tuple[str, str], ...]

    @property
    def heading(self) -> str:
        on = sum(1 for row in self.skills if row.enabled)
        return f"Skills ({on} of {len(self.skills)} on)"


def skills_view(state: AppState) -> SkillsView:
    """The panel's data, from the state alone."""
    rows = tuple(
        SkillRow(
            str(row["name"]),
            str(row.get("scope", "")),
            str(row.get("description", "")),
            bool(row["enabled"]),
            tuple(row.get("files") or ()),
        )
        for row in skill_rows(state)
    )
    refused = tuple(
        (f"{p.get('scope', '')}: skills/{p.get('name') or '?'}",
         f"{p.get('kind', '')}: {p.get('reason', '')}")
        for p in state.skill_problems
    )  # fmt: skip
    return SkillsView(rows, refused)


def render_skills(ui: Ui) -> None:
    view = skills_view(ui.state)
    if imgui.button("Reload##skills"):
        ui.act.click("btn_skills_reload")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("read the skills/ folders of the project and the user again")
    imgui.same_line()
    imgui.text_disabled("on: the name and description go into every chat request's system prompt")
    imgui.separator_text(view.heading)
    if not view.skills:
        text_wrapped_colored(
            COLORS["muted"],
            "No skills. A skill is a folder skills/<name>/ with a SKILL.md (front matter: name, description) "
            "beside the project file, or beside config.toml for every project.",
        )
    else:
        _table(ui, view.skills)
    _refused(view.refused)


def _table(ui: Ui, rows: tuple[SkillRow, ...]) -> None:
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v | imgui.TableFlags_.resizable
    if not imgui.begin_table("##skills", 5, flags):
        return
    fixed, stretch = imgui.TableColumnFlags_.width_fixed, imgui.TableColumnFlags_.width_stretch
    em = imgui.get_font_size()
    for header, column_flags, size in (
        ("on", fixed, imgui.get_frame_height()),
        ("name", stretch, 0.8),
        ("scope", fixed, imgui.calc_text_size("project").x + em * 0.5),
        ("description", stretch, 2.0),
        ("files", fixed, imgui.calc_text_size("files").x + em),
    ):
        imgui.table_setup_column(header, column_flags, size)
    imgui.table_headers_row()
    for row in rows:
        _row(ui, row)
    imgui.end_table()


def _row(ui: Ui, row: SkillRow) -> None:
    imgui.table_next_row()
    imgui.push_id(f"skill:{row.name}")
    imgui.table_set_column_index(0)
    changed, ticked = imgui.checkbox("##on", row.enabled)
    if changed:
        ui.act.click("btn_skill_enable", {"name": row.name, "enabled": ticked})
    imgui.table_set_column_index(1)
    text_elided(row.name, color=None if row.enabled else COLORS["muted"])
    imgui.table_set_column_index(2)
    imgui.text_disabled(row.scope)
    imgui.table_set_column_index(3)
    text_elided(row.description)
    imgui.table_set_column_index(4)
    imgui.text(str(len(row.files)))
    if row.files and imgui.is_item_hovered():
        imgui.set_item_tooltip("\n".join(row.files))
    imgui.pop_id()


def _refused(refused: tuple[tuple[str, str], ...]) -> None:
    if not refused:
        return
    imgui.separator_text(f"Refused folders ({len(refused)})")
    for index, (where, reason) in enumerate(refused):
        imgui.push_id(f"refused{index}")
        text_wrapped_colored(COLORS["error"], where)
        imgui.indent()
        text_wrapped_colored(COLORS["muted"], reason)
        imgui.unindent()
        imgui.pop_id()
