"""Which fields may be read without the main thread: one declared attribute holding a scalar."""

from __future__ import annotations

from types import SimpleNamespace

from manual_slop.automation import FieldRegistry, attr_getter
from manual_slop.schema import Field


def test_only_declared_attribute_reads_of_scalars_are_lock_free() -> None:
    state = SimpleNamespace(status="idle", budget=5, names=["a"], ratio=0.5, flag=True)
    fields = FieldRegistry()
    fields.register("status", Field(str, ""), attr_getter(state, "status"))
    fields.register("budget", Field(int, 0), attr_getter(state, "budget"))
    fields.register("ratio", Field(float, 0.0), attr_getter(state, "ratio"))
    fields.register("flag", Field(bool, False), attr_getter(state, "flag"))
    fields.register("names", Field(list, [], items=str), attr_getter(state, "names"))
    fields.register("computed", Field(str, ""), lambda: state.status.upper())
    lock_free = {name for name in fields.names() if fields.spec(name).lock_free}
    assert lock_free == {"status", "budget", "ratio", "flag"}
    state.status = "busy"
    assert fields.get("status") == "busy" and fields.get("computed") == "BUSY"
