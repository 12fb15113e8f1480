"""AI Settings: provider, model, endpoint, the agent chat runs as, the token profile, the model
of each MMA tier, sampling parameters and the approval policy.

The tier dropdowns (Tier 1-4: the project's ``[mma]`` ``tier1_model`` … ``tier4_model``, Tier 3
the first model of ``tier3_models``) offer the active provider's model list as last fetched
(Refresh asks the provider, on a background thread) and "(active model)"; MMA tiers run on the
active provider.

The panel docks in the narrow right column, so its fields are a label-left form
(:mod:`manual_slop.gui.form`): labels keep their full width and the widgets take the
rest; status lines wrap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from imgui_bundle import imgui

from manual_slop.ai.bindings import OLLAMA_URL
from manual_slop.config import PROVIDER_NAMES
from manual_slop.gui.form import form, form_row
from manual_slop.gui.inputs import combo_field, text_field
from manual_slop.gui.widgets import COLORS, text_wrapped_colored
from manual_slop.token_profiles import PROFILES

if TYPE_CHECKING:
    from manual_slop.gui.ui import Ui
    from manual_slop.state import AppState

__all__ = ["ACTIVE_MODEL", "LABELS", "TIER_FIELDS", "render_ai_settings", "tier_model_options"]

POLICIES = ["manual", "allow_list", "auto"]
# row label -> id of its widget (the widget's own label is hidden: the row shows it)
LABELS: dict[str, str] = {
    "Provider": "##current_provider",
    "Models": "##model_list",
    "Model": "##current_model",
    "Base URL": "##provider_base_url",
    "Agent": "##active_agent",
    "Token profile": "##token_profile",
    "Temperature": "##temperature",
    "Top P": "##top_p",
    "Max tokens": "##max_tokens",
    "History limit": "##history_trunc_limit",
    "Approval": "##approval_policy",
    "Tier 1": "##mma_tier1_model",
    "Tier 2": "##mma_tier2_model",
    "Tier 3": "##mma_tier3_models",
    "Tier 4": "##mma_tier4_model",
}
# tier row -> (field, what the tier does)
TIER_FIELDS: dict[str, tuple[str, str]] = {
    "Tier 1": ("mma_tier1_model", "epic -> tracks"),
    "Tier 2": ("mma_tier2_model", "track -> tickets, replans"),
    "Tier 3": ("mma_tier3_models", "workers: the first attempt's model (retries escalate along the list)"),
    "Tier 4": ("mma_tier4_model", "QA summaries and patches"),
}
ACTIVE_MODEL = "(active model)"
REFRESH = "Refresh##fetch_models"
NO_AGENT = "(none)"


def render_ai_settings(ui: Ui) -> None:
    state = ui.state
    with form("##provider_form", list(LABELS)) as shown:
        if shown:
            _provider(ui, state)
    _key_source(ui, state)
    imgui.separator_text("Agent and tokens")
    with form("##agent_form", list(LABELS)) as shown:
        if shown:
            _agent(ui, state)
    _agent_notes(ui, state)
    imgui.separator_text("MMA tier models")
    with form("##tier_form", list(LABELS)) as shown:
        if shown:
            _tier_models(ui, state)
    imgui.separator_text("Sampling")
    with form("##sampling_form", list(LABELS)) as shown:
        if shown:
            _sampling(ui, state)
    imgui.separator_text("Execution Clutch")
    with form("##clutch_form", list(LABELS)) as shown:
        if shown:
            form_row("Approval", "who decides scripts, file edits and MMA steps")
            auto = state.approval_policy == "auto"
            if auto:
                imgui.push_style_color(imgui.Col_.text, COLORS["warn"])
            combo_field(ui, LABELS["Approval"], "approval_policy", POLICIES)
            if auto:
                imgui.pop_style_color()
    if state.approval_policy == "auto":
        text_wrapped_colored(COLORS["warn"], "AUTO: scripts, edits and MMA steps run without asking")
    elif state.approval_policy == "allow_list":
        imgui.text_disabled(f"{len(ui.ctrl.clutch.rules)} allow-list rule(s)")


def _provider(ui: Ui, state: AppState) -> None:
    form_row("Provider")
    combo_field(ui, LABELS["Provider"], "current_provider", list(PROVIDER_NAMES))
    models = state.available_models
    if models:
        form_row("Models", "the provider's model list (Refresh fetches it)")
        combo_field(ui, LABELS["Models"], "current_model", models)
    form_row("Model", "the model name sent to the provider")
    style = imgui.get_style()
    refresh_width = imgui.calc_text_size("Refresh").x + 2 * style.frame_padding.x
    model_width = imgui.get_content_region_avail().x - refresh_width - style.item_spacing.x
    imgui.set_next_item_width(max(1.0, model_width))
    text_field(ui, LABELS["Model"], "current_model", commit_on_change=False)
    imgui.same_line()
    if imgui.button(REFRESH):
        ui.act.click("btn_fetch_models")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("fetch the provider's model list")
    form_row("Base URL", "the provider's endpoint; empty = its default")
    text_field(ui, LABELS["Base URL"], "provider_base_url", commit_on_change=False, hint="provider default")


def tier_model_options(current: str, models: list[str]) -> list[str]:
    """The choices of a tier dropdown: '' (the active model), the fetched models, and the current
    value when the list does not have it (a model typed in the project file stays visible)."""
    options = ["", *(m for m in models if m)]
    if current and current not in options:
        options.append(current)
    return options


def _tier_models(ui: Ui, state: AppState) -> None:
    models = state.model_lists.get(state.current_provider) or state.available_models
    for row, (field, tip) in TIER_FIELDS.items():
        form_row(row, tip)
        value = ui.ctrl.fields.get(field)
        rest: list[str] = []
        if isinstance(value, list):  # Tier 3: escalation ladder; the dropdown picks its first step
            current, rest = (str(value[0]), [str(v) for v in value[1:]]) if value else ("", [])
        else:
            current = str(value)
        if imgui.begin_combo(LABELS[row], current or ACTIVE_MODEL):
            for option in tier_model_options(current, models):
                clicked, _ = imgui.selectable(f"{option or ACTIVE_MODEL}##{field}", option == current)
                if clicked and option != current:
                    chosen: object = option
                    if isinstance(value, list):
                        chosen = [option, *rest] if option else rest
                    ui.act.set(field, chosen)
                if option == current:
                    imgui.set_item_default_focus()
            imgui.end_combo()
        if rest:
            imgui.text_disabled(f"then: {', '.join(rest)}")
    if not models:
        imgui.text_disabled("no model list yet: Refresh (beside Model) fetches it")


def _agent(ui: Ui, state: AppState) -> None:
    form_row("Agent", "the agent profile chat runs as: its prompt leads, its settings apply (Agents panel)")
    current = state.active_agent
    if imgui.begin_combo(LABELS["Agent"], current or NO_AGENT):
        for key in ["", *(str(a.get("key", "")) for a in state.agents)]:
            clicked, _ = imgui.selectable(key or NO_AGENT, key == current)
            if clicked and key != current:
                ui.act.set("active_agent", key)
            if key == current:
                imgui.set_item_default_focus()
        imgui.end_combo()
    form_row("Token profile", "max_tokens of each kind of request (never more than Max tokens)")
    combo_field(ui, LABELS["Token profile"], "token_profile", list(PROFILES))


def _agent_notes(ui: Ui, state: AppState) -> None:
    """What the active agent changes, and the answer length of each kind of request now."""
    agent = next((a for a in state.agents if a.get("key") == state.active_agent), None)
    if agent is not None and (agent.get("provider") or agent.get("model") or agent.get("token_profile")):
        parts = [str(agent[k]) for k in ("provider", "model") if agent.get(k)]
        if agent.get("token_profile"):
            parts.append(f"token profile {agent['token_profile']}")
        text_wrapped_colored(COLORS["info"], f"{state.active_agent} runs on: {', '.join(parts)}")
    limits = ui.ctrl.fields.get("token_limits")
    if not isinstance(limits, dict) or not limits:
        return
    if imgui.begin_table("##token_limits", 2, imgui.TableFlags_.none):  # phase and limit pairs
        for phase, limit in limits.items():
            imgui.table_next_column()
            imgui.text_disabled(f"{phase} {limit:,}")
        imgui.end_table()
    if imgui.is_item_hovered():
        imgui.set_item_tooltip("max_tokens each kind of request is sent with now")


OFFLINE_NOTE = (
    "The offline model (SmolLM2-135M, 8,192 tokens) is for trying the app and small tasks without "
    'a network: it answers short questions, calls a tool you name ("use read_file on README.md") and '
    "drafts plans. For real work use a model server or a hosted provider:"
)
HOSTED_NOTE = "or choose a hosted provider above and put its key in credentials.toml"


def _offline(ui: Ui) -> None:
    """What the offline default is for, and the one step to something stronger."""
    text_wrapped_colored(COLORS["muted"], OFFLINE_NOTE)
    if imgui.button("Use Ollama"):
        ui.act.click("btn_use_server")
    if imgui.is_item_hovered():
        imgui.set_item_tooltip(
            f"the openai_compatible provider on {OLLAMA_URL} (any other "
            "server: choose openai_compatible and set its Base URL)"
        )
    text_wrapped_colored(COLORS["muted"], HOSTED_NOTE)  # wrapped: the column is narrow


def _key_source(ui: Ui, state: AppState) -> None:
    if state.current_provider == "local":
        _offline(ui)
    source = ui.ctrl.credentials.source(state.current_provider)
    if state.current_provider in ("local", "gemini_cli", "openai_compatible"):
        text_wrapped_colored(
            COLORS["muted"], "no API key needed" if source is None else f"API key from {source}"
        )
    elif source is None:
        text_wrapped_colored(
            COLORS["warn"], f"no API key for {state.current_provider} (credentials.toml or environment)"
        )
    else:
        text_wrapped_colored(COLORS["muted"], f"API key from {source}")


def _sampling(ui: Ui, state: AppState) -> None:
    form_row("Temperature")
    changed, value = imgui.slider_float(LABELS["Temperature"], state.temperature, 0.0, 2.0, "%.2f")
    if changed:
        ui.act.set("temperature", value)
    form_row("Top P")
    changed, value = imgui.slider_float(LABELS["Top P"], state.top_p, 0.0, 1.0, "%.2f")
    if changed:
        ui.act.set("top_p", value)
    form_row("Max tokens", "the most tokens one answer may have")
    changed, value = imgui.input_int(LABELS["Max tokens"], state.max_tokens, 256, 4096)
    if changed:
        ui.act.set("max_tokens", max(1, value))
    form_row("History limit", "history truncation: characters kept of old tool outputs")
    changed, value = imgui.input_int(LABELS["History limit"], state.history_trunc_limit, 1000, 10000)
    if changed:
        ui.act.set("history_trunc_limit", max(0, value))
