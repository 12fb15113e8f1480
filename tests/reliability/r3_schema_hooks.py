"""schemathesis hooks of the R3 suite, loaded by ``st run`` through ``SCHEMATHESIS_HOOKS``.

Two operations wait by design: GET /api/events long-polls up to ``timeout`` (30 s) and POST
/api/ask waits up to ``timeout_s`` for the user's decision. Waiting is their contract, not a
hang, so their waits are cut to :data:`WAIT_S` (and an ask without one gets it) before the
request goes out; everything else the fuzzer drew is sent as drawn. (Not collected by pytest:
no ``test_`` prefix.)
"""

from __future__ import annotations

from typing import Any

import schemathesis

WAIT_S = 0.2
_WAITS = {"/api/events": ("query", "timeout"), "/api/ask": ("body", "timeout_s")}


def _cut(value: Any) -> Any:
    """A wait over WAIT_S becomes WAIT_S; anything else (a string, a negative) is left to the
    server's checks."""
    try:
        return WAIT_S if float(value) > WAIT_S else value
    except (TypeError, ValueError):
        return value


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    part_key = _WAITS.get(case.operation.path)
    if part_key is None:
        return
    part, key = part_key
    values = case.query if part == "query" else case.body
    if not isinstance(values, dict):
        return
    if key in values:
        values[key] = _cut(values[key])
    elif part == "body":  # an ask without timeout_s waits approval.timeout_s (an hour by default)
        values[key] = WAIT_S
