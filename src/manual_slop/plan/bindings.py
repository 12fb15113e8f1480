"""The ``/plan`` automation surface: the runtime, its engines, fields, actions and tasks.

``register(ctrl)`` (listed in ``manual_slop.bindings.FEATURE_REGISTRARS`` after MMA) builds the
controller's :class:`~manual_slop.plan.runtime.PlanRuntime` with the three engines, tells the MMA
runtime how to run a ``plan`` track, loads the stored plans and registers the fields and actions
used by the GUI, the Hook API and simulations.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from manual_slop.automation import ActionCall, InvalidValue
from manual_slop.config import PROJECT_SCHEMA
from manual_slop.plan.access import AppModelAccess
from manual_slop.plan.engines import Engine
from manual_slop.plan.llm_engine import LlmEngine
from manual_slop.plan.runtime import PlanRuntime, PlanSettings
from manual_slop.schema import Field

if TYPE_CHECKING:
    from manual_slop.controller import AppController

__all__ = ["default_engines", "register"]

_PLAN_ID = Field(str, "", pattern=r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", pattern_doc="a plan id")
SETTINGS = ("max_subtasks", "judge", "engine_timeout_s")


def default_engines(ctrl: AppController, access: AppModelAccess) -> dict[str, Engine]:
    """``llm``, ``aider`` and ``gemini_cli`` wired to the controller."""
    from manual_slop.mma.tier4 import policy_check
    from manual_slop.plan.aider import AiderEngine, Endpoint

    def endpoint() -> Endpoint | None:
        """The OpenAI-compatible provider's base URL, model and key (any thread)."""
        settings = ctrl.call_on_main(ctrl.ai_settings, timeout=5.0)
        entry = (settings.get("providers") or {}).get("openai_compatible", {})
        return Endpoint(str(entry.get("base_url") or ""), str(entry.get("model") or ""),
                        str(entry.get("api_key") or ""))  # fmt: skip

    def path_check(path: Path) -> str | None:
        def read() -> tuple[Path, list[str], list[str]]:
            return ctrl.base_dir(), list(ctrl.state.project_files), list(ctrl.state.files_exclude)

        return policy_check(ctrl.path_policy(*ctrl.call_on_main(read, timeout=5.0)))(path)

    return {
        "llm": LlmEngine(access),
        "aider": AiderEngine(
            endpoint,
            timeout_s=PlanSettings.of(ctrl.state.plan_settings).engine_timeout_s,
            path_check=path_check,
        ),
        "gemini_cli": LlmEngine(access, name="gemini_cli", provider="gemini_cli"),
    }


def register(ctrl: AppController) -> None:
    access = AppModelAccess(ctrl)
    runtime = PlanRuntime(ctrl, access, default_engines(ctrl, access))
    ctrl.plans = runtime  # type: ignore[attr-defined]
    mma = ctrl.mma  # type: ignore[attr-defined]
    mma.builders["plan"] = runtime.build_conductor
    mma.dependency_rules["plan"] = runtime.check_dependencies
    mma.after_edit["plan"] = runtime.sync_plan_file
    ctrl.on_shutdown(runtime.shutdown)
    ctrl.on_project_opened(runtime.load, runtime.switch_refusal)
    ctrl.register_task_handler("plan_approved", lambda task: runtime.run_approved(str(task["plan_id"])))
    ctrl.register_task_handler("plan_update", lambda task: runtime.update(task["plan"]))
    ctrl.register_task_handler("plan_finished", lambda task: runtime.finished(task["plan"]))
    _register_fields(ctrl, runtime)
    _register_actions(ctrl, runtime)
    runtime.load()


def _register_fields(ctrl: AppController, runtime: PlanRuntime) -> None:
    state = ctrl.state
    reg = ctrl.fields.register
    reg("plans", Field(list, [], "The project's plans: id, goal, status, counts, groups, score (read-only)"),
        runtime.summaries)  # fmt: skip
    reg(
        "plan_engines",
        Field(dict, {}, "Each engine and why it cannot run here (null when it can; read-only)"),
        runtime.engine_availability,
    )
    for key in SETTINGS:
        reg(f"plan_{key}", PROJECT_SCHEMA[f"plan.{key}"], _getter(state, key), _setter(state, key))


def _getter(state: Any, key: str) -> Any:
    return lambda: state.plan_settings.get(key, PROJECT_SCHEMA[f"plan.{key}"].default)


def _setter(state: Any, key: str) -> Any:
    def set_value(value: Any) -> None:
        state.plan_settings[key] = value  # saved with the project at the next flush

    return set_value


def _register_actions(ctrl: AppController, runtime: PlanRuntime) -> None:
    reg = ctrl.actions.register

    def start(call: ActionCall) -> None:
        if not isinstance(call.user_data, str):
            raise InvalidValue("btn_plan_start: user_data is the goal (a string)")
        runtime.start(call.user_data)

    reg(
        "btn_plan_start", start, "Plan a goal (user_data: the goal); like typing /plan <goal>", Field(str, "")
    )
    reg(
        "btn_plan_install_aider",
        lambda call: runtime.install_aider(),
        "Install the pinned Aider into .tools/aider in the background (the aider engine needs it)",
    )
    reg(
        "btn_plan_propose",
        lambda call: runtime.propose_again(call.user_data),
        "Ask again for approval of a proposed plan (user_data: plan id)",
        user_data=_PLAN_ID,
    )
