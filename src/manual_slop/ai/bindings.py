"""The AI client's part of the automation surface, and its wiring to a controller.

``register(ctrl)`` (listed in ``bindings.FEATURE_REGISTRARS``) adds:

- ``available_models`` — read-only field: the models the active provider offers;
- ``model_lists`` — read-only field: each provider's last fetched model list (the tier model
  dropdowns of AI Settings offer the active provider's);
- ``cache_state`` — read-only field: live Gemini cached contents with their TTL left, and the
  cache reads and writes of recent requests (:class:`~manual_slop.cache_ledger.CacheLedger`);
- ``btn_fetch_models`` — asks the provider for its model list on a background thread
  (the frame loop never waits for the network) and fills ``available_models``;
- ``btn_use_server`` — one step from the offline model to a model server: the
  ``openai_compatible`` provider on a base URL (Ollama's by default), its model list fetched
  and its first model chosen when none is set.

When the controller's backend is an :class:`~manual_slop.ai.client.AIClient`, its
callbacks are connected: comms entries → ``ctrl.add_comms_entry``, executed tool calls →
``ctrl.add_tool_call``, CLI calls → ``clicalls.log``, notices → the notification list,
approvals of calls made without an explicit context → the Execution Clutch, and the
running Hook API's address → the Gemini CLI's approval bridge, and each send's run log → the
session folder's ``runs/``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from manual_slop.ai.client import AIClient
from manual_slop.ai.errors import AIError
from manual_slop.ai.providers.openai_compat import OpenAICompatibleProvider
from manual_slop.automation import ActionCall, FeatureUnavailable, InvalidValue
from manual_slop.governance.run_log import RunLogs
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["OLLAMA_URL", "connect", "register"]

OLLAMA_URL = OpenAICompatibleProvider.default_base_url  # Ollama's OpenAI-compatible endpoint


def register(ctrl: AppController) -> None:
    state = ctrl.state
    ctrl.fields.register(
        "available_models",
        Field(
            list,
            [],
            "Models the active provider offers (read-only; btn_fetch_models refreshes it)",
            items=str,
        ),
        lambda: list(state.available_models),
    )

    ctrl.fields.register(
        "model_lists",
        Field(dict, {}, "Each provider's last fetched model list (read-only; btn_fetch_models)", values=list),
        lambda: {name: list(models) for name, models in state.model_lists.items()},
    )
    ctrl.fields.register(
        "cache_state",
        Field(
            dict,
            {},
            "Provider caches: live Gemini cached contents (name, tokens, TTL left), recent requests' "
            "cache reads/writes, totals per provider (read-only)",
        ),
        lambda: state.cache_ledger.view(time.time()),
    )

    def fetch_models(call: ActionCall, choose: bool = False) -> None:
        backend = ctrl.backend
        if backend is None or not hasattr(backend, "list_models"):
            raise FeatureUnavailable("btn_fetch_models: the AI backend cannot list models")
        settings = ctrl.ai_settings()
        provider = settings["provider"]

        def job() -> None:
            try:
                backend.apply_settings(settings)
                models = backend.list_models(provider)
            except Exception as exc:
                message = exc.ui_message() if isinstance(exc, AIError) else f"{type(exc).__name__}: {exc}"
                ctrl.post_gui_task(
                    {"action": "notify", "level": "error", "message": f"model list: {message}"}
                )
                return
            ctrl.post_gui_task(
                {
                    "action": "custom_callback",
                    "callback": _apply_models,
                    "args": (ctrl, provider, models, choose),
                }
            )

        ctrl.run_in_background(job)

    def use_server(call: ActionCall) -> None:
        url = str(call.user_data or OLLAMA_URL).strip().rstrip("/")
        try:  # the base URL field's own check, before anything changes
            url = ctrl.fields.validate_set("provider_base_url", url)
        except InvalidValue:
            message = f"btn_use_server: expected an http(s) base URL like {OLLAMA_URL}, got {url[:80]!r}"
            raise InvalidValue(message) from None
        ctrl.fields.set("current_provider", "openai_compatible")
        ctrl.fields.set("provider_base_url", url)
        fetch_models(call, choose=True)

    ctrl.actions.register(
        "btn_fetch_models", fetch_models, "Refresh the model list of the active provider (in the background)"
    )
    ctrl.actions.register(
        "btn_use_server",
        use_server,
        "Use a model server: the openai_compatible provider on this base URL (default Ollama's "
        f"{OLLAMA_URL}); its model list is fetched and the first model chosen when none is set",
        user_data=Field(str, ""),
    )
    if isinstance(ctrl.backend, AIClient):
        connect(ctrl.backend, ctrl)


def _apply_models(ctrl: AppController, provider: str, models: list[str], choose: bool = False) -> None:
    ctrl.state.model_lists[provider] = list(models)
    if ctrl.state.current_provider != provider:
        return  # the user switched provider while the list was loading
    ctrl.state.available_models = list(models)
    if choose and models and not ctrl.state.current_model:
        ctrl.state.current_model = models[0]
    ctrl.publish("models", {"provider": provider, "models": list(models)})


def connect(client: AIClient, ctrl: AppController) -> None:
    """Route the client's logs, notices and default approvals to ``ctrl``."""
    from manual_slop.tools.approval import make_pre_tool_callback

    client.comms_log_callback = ctrl.add_comms_entry
    client.tool_log_callback = ctrl.add_tool_call
    client.cli_log_callback = ctrl.session_log.append_cli_call

    def notify(level: str, message: str) -> Any:
        return ctrl.post_gui_task({"action": "notify", "level": level, "message": message})

    client.notify_callback = notify
    client.confirm_and_run_callback = make_pre_tool_callback(ctrl, ctrl.base_dir())
    client.hook_api_callback = lambda: ctrl.hook_api  # the Gemini CLI's tool calls ask the clutch there
    client.redact_callback = ctrl.redactor.redact  # nothing the app knows as secret is ever sent
    client.runs = RunLogs.for_session(ctrl.session_log)  # one JSONL run log per send
