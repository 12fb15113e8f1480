"""What a dialog is to the rules: the :class:`~manual_slop.governance.rules.RuleEvent` it raises.

The trigger comes from the dialog's kind (a tool result's from its status); the tool name, the
text a ``pattern`` searches and the path a ``path_glob`` matches come from
:meth:`~manual_slop.dialogs.PendingDialog.rule_subject`.
"""

from __future__ import annotations

from manual_slop.dialogs import PendingDialog, PendingKind
from manual_slop.governance.rules import RuleEvent, Trigger

__all__ = ["ERROR_STATUSES", "KIND_TRIGGERS", "event_of"]

KIND_TRIGGERS: dict[str, Trigger] = {
    PendingKind.CONFIRM_SCRIPT: Trigger.BEFORE_TOOL,
    PendingKind.TOOL_APPROVAL: Trigger.BEFORE_TOOL,
    PendingKind.ASK: Trigger.BEFORE_TOOL,
    PendingKind.MMA_SPAWN: Trigger.ON_SPAWN,
    PendingKind.MMA_STEP: Trigger.ON_STEP,
    PendingKind.TOOL_RESULT: Trigger.AFTER_TOOL,  # on_error when its status is one of ERROR_STATUSES
    PendingKind.COST_CHECK: Trigger.COST_OVER,
}
ERROR_STATUSES = frozenset({"error", "timeout"})


def event_of(dialog: PendingDialog) -> RuleEvent:
    """The event ``dialog`` raises; a kind no trigger names gives ``trigger=None``."""
    tool, text, path = dialog.rule_subject()
    trigger = KIND_TRIGGERS.get(str(dialog.kind))
    spent = since = 0.0
    budget = False
    if trigger is Trigger.AFTER_TOOL and dialog.payload.get("status") in ERROR_STATUSES:
        trigger = Trigger.ON_ERROR
    elif trigger is Trigger.COST_OVER:
        payload = dialog.payload
        spent, since = float(payload.get("spent_usd") or 0.0), float(payload.get("since_usd") or 0.0)
        budget = bool(payload.get("budget"))
    return RuleEvent(trigger, tool, text, path, spent, since, budget)
