"""MMA workers get the project index's passages for their ticket (with ``rag.enabled``),
through the real Tier 3 context builder, the real index and embedder."""

from __future__ import annotations

from pathlib import Path

from manual_slop.mma.bindings import default_services, mma_runtime
from manual_slop.mma.client import MMAServices
from manual_slop.mma.models import Ticket, Track
from manual_slop.mma.persistence import TrackStore
from tests.helpers import pump_until
from tests.unit.mma.fake_client import FakeTierClient


def _project(base: Path) -> None:
    src = base / "src"
    src.mkdir()
    (src / "tax.py").write_text(
        '"""Taxes."""\n\n\ndef vat_for(net: float, rate: float = 0.2) -> float:\n'
        '    """Value added tax owed on a net price at the given rate."""\n    return net * rate\n'
    )
    (src / "greeting.py").write_text(
        '"""Greetings."""\n\n\ndef hello(name: str) -> str:\n    """Say hello to someone by name."""\n'
        '    return f"hello {name}"\n'
    )
    (src / "shapes.py").write_text(
        '"""Shapes."""\n\n\ndef circle_area(r: float) -> float:\n    """Area of a circle of radius r."""\n'
        "    return 3.14159 * r * r\n"
    )


def _run(make_controller, app_dir: Path, *, rag: bool) -> FakeTierClient:
    _project(app_dir)
    track = Track(
        "tax_fix", "Tax fix", "goal",
        tickets=[Ticket("t1", "Fix the value added tax computation for reduced rates",
                        target_files=["src/shapes.py"])],
    )  # fmt: skip
    TrackStore(app_dir).save(track)
    client = FakeTierClient()
    ctrl = make_controller()
    ctrl.bind_main_thread()
    ctrl.fields.set("project_files", ["src/**/*.py"])
    ctrl.fields.set("rag_enabled", rag)
    ctrl.memory.start_index()
    pump_until(ctrl, lambda: ctrl.state.rag_status.get("state") == "idle", timeout=120)
    assert ctrl.state.rag_status["chunks"] > 0
    builder = default_services(ctrl).context_builder
    mma_runtime(ctrl).set_services(MMAServices(client=client, context_builder=builder))
    ctrl.clutch.set_policy("auto")
    ctrl.actions.invoke("btn_mma_start_track", "tax_fix")
    pump_until(ctrl, lambda: any(c.tier == "Tier 3" for c in client.calls), timeout=60)
    return client


def test_a_worker_gets_the_passages_its_ticket_asks_for(make_controller, app_dir: Path) -> None:
    client = _run(make_controller, app_dir, rag=True)
    call = next(c for c in client.calls if c.tier == "Tier 3")
    retrieved = call.md.split("## Retrieved context", 1)
    assert len(retrieved) == 2, call.md[-2000:]
    first = retrieved[1].strip().splitlines()[0]
    assert first.startswith("### [1] src/tax.py:"), retrieved[1][:500]
    assert "def vat_for" in retrieved[1]
    assert "src/shapes.py:" not in retrieved[1]  # its focus file is in the context whole already


def test_without_rag_a_worker_gets_no_passages(make_controller, app_dir: Path) -> None:
    client = _run(make_controller, app_dir, rag=False)
    call = next(c for c in client.calls if c.tier == "Tier 3")
    assert "## Retrieved context" not in call.md
