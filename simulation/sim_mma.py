"""sim_mma: the full puppeteer flow — epic → Plan Epic → accept → start → approve every
worker spawn and step → tickets completed → track files on disk.

The scripted model (``turns/mma.toml``) plays Tier 1 (one track), Tier 2 (two tickets,
the second depending on the first) and Tier 3 (each ticket proposes one file tool
call, then reports). The user approves each ``mma_spawn`` and each ``mma_step``; the
second step is approved with an edit of their own. Checks: the order of the dialogs
(dependencies respected), the ``ticket_status`` events, the file the workers wrote,
and the track's files under ``conductor/tracks/<id>/``.
"""

from __future__ import annotations

import json
import time
import tomllib
from typing import Any

from simulation.sim_base import BaseSimulation

__all__ = ["MMASimulation"]

EPIC = "Build a login page for the admin area"
USER_EDIT = '<input name="user" required autofocus>'
MMA_TIMEOUT_S = 60.0


class MMASimulation(BaseSimulation):
    name = "mma"
    title = "epic → Plan Epic → accept → start → approve spawns and steps → tickets completed"
    turn_file = "mma.toml"

    def setup(self) -> None:
        with self.step("write the project: a README describing the admin area"):
            self.write_file("README.md", "# Admin\n\nThe admin area needs a login page.\n")
            self.set_field("project_files", ["README.md"])

    def run(self) -> None:
        self.fake.push_group("plan")
        with self.step("type the epic and press Plan Epic"):
            self.set_field("mma_epic_input", EPIC, typed=True)
            self.user.click("btn_mma_plan_epic")
            proposal = self.client.wait_for_event("track_proposal", timeout=MMA_TIMEOUT_S)["payload"]
            self.expect_equal(
                [t["title"] for t in proposal["tracks"]], ["Login form"], "Tier 1 proposed one track"
            )
            proposed = self.client.get_value("proposed_tracks")
            self.expect_equal(proposed[0]["priority"], "high", "proposed_tracks shows its priority")
            self.check(EPIC in self.fake.request_texts()[-1], "Tier 1 was given the epic")
        self.fake.push_group("tickets")
        with self.step("accept the track: Tier 2 plans its tickets"):
            self.user.click("btn_mma_accept_tracks", [0])
            tracks = self.wait_for(
                "the accepted track is stored with 2 tickets",
                lambda: self.client.get_value("mma_tracks"),
                lambda v: len(v) == 1 and v[0].get("ticket_count") == 2,
                MMA_TIMEOUT_S,
            )
            self.track_id = tracks[0]["id"]
            self.track_dir = self.workspace / "conductor" / "tracks" / self.track_id
            plan = self.wait_for(
                "plan.md lists both tickets as todo",
                lambda: (
                    (self.track_dir / "plan.md").read_text(encoding="utf-8")
                    if (self.track_dir / "plan.md").exists()
                    else ""
                ),
                lambda text: text.count("[ ]") == 2,
            )
            self.user.read(plan)
            self.wait_for(
                "the MMA engine is idle again",
                lambda: self.client.get_value("mma_status"),
                lambda s: s == "idle",
            )
        self.fake.push_group("work")
        with self.step("start the track and approve every spawn and step"):
            self.client.discard_events()
            self.user.click("btn_mma_start_track", self.track_id)
            self.decisions = self.approve_until_done()
            self.expect_equal(
                self.decisions,
                [
                    ("mma_spawn", "form"),
                    ("mma_step", "form"),
                    ("tool_approval", "form"),
                    ("mma_spawn", "validate"),
                    ("mma_step", "validate"),
                    ("tool_approval", "validate"),
                ],
                "each worker asked to start, to act in its scratch tree, then to land its patch; "
                "'validate' only after 'form' was done",
            )

    def approve_until_done(self) -> list[tuple[str, str]]:
        """Approve dialogs as they come until the track is done; their kinds and tickets, in order."""
        decisions: list[tuple[str, str]] = []
        deadline = time.monotonic() + MMA_TIMEOUT_S
        while self.client.get_value("mma_status") != "done":
            if time.monotonic() >= deadline:
                self.check(
                    False,
                    "the track reached done",
                    f"not within {MMA_TIMEOUT_S:g} s: {self.client.mma_status()}",
                )
            for dialog in self.client.pending():
                payload = dialog["payload"]
                ticket = payload["ticket_id"]
                decisions.append((dialog["kind"], ticket))
                if dialog["kind"] == "mma_step" and ticket == "validate":
                    step = json.loads(payload["payload"])
                    step["args"]["new_string"] = USER_EDIT
                    self.user.approve(dialog, {"payload": json.dumps(step)})
                else:
                    self.user.approve(dialog)
            time.sleep(0.02)
        self._record_check(True, "the track reached done")
        return decisions

    def ticket_states(self) -> list[str]:
        path = self.track_dir / "state.toml"
        if not path.exists():
            return []
        state = tomllib.loads(path.read_text(encoding="utf-8"))
        return sorted(t["status"] for t in state.get("tickets", []))

    def verify(self) -> None:
        with self.step("the tickets reached completed, in order"):
            status = self.client.mma_status()
            self.expect_equal(
                [(t["id"], t["status"]) for t in status["tickets"]],
                [("form", "completed"), ("validate", "completed")],
                "both tickets are completed",
            )
            self.expect_equal(status["active_track"]["status"], "done", "the track is done")
            events = [e["payload"] for e in self.client.events() if e["type"] == "ticket_status"]
            seen = [(e["ticket_id"], e["status"]) for e in events]
            self.check(
                seen.index(("form", "completed")) < seen.index(("validate", "in_progress")),
                "ticket_status events: 'validate' started after 'form' completed",
                str(seen),
            )
            usage: dict[str, Any] = self.client.get_value("mma_tier_usage")
            for tier in ("Tier 1", "Tier 2", "Tier 3"):
                self.check(
                    usage.get(tier, {}).get("input", 0) > 0, f"{tier} token usage is counted", str(usage)
                )
        with self.step("the workers' approved changes are on disk"):
            form = (self.workspace / "login" / "form.html").read_text(encoding="utf-8")
            self.check(USER_EDIT in form, "the user's edit of the second step is what ran", form)
            self.check('type="password"' in form, "the first step's file is there", form)
        with self.step("the track's files under conductor/tracks/"):
            # The files are saved before the status is published: "done" means they are written.
            self.expect_equal(
                self.ticket_states(), ["completed", "completed"], "state.toml: every ticket completed"
            )
            names = {p.name for p in self.track_dir.iterdir()}
            self.check(
                {"spec.md", "plan.md", "metadata.json", "state.toml"} <= names,
                "all four track files",
                str(names),
            )
            self.check(
                "Login form" in (self.track_dir / "spec.md").read_text(encoding="utf-8"), "spec.md: the goal"
            )
            plan = (self.track_dir / "plan.md").read_text(encoding="utf-8")
            self.check(plan.count("[x]") == 2 and "[ ]" not in plan, "plan.md: both tickets checked", plan)
            meta = json.loads((self.track_dir / "metadata.json").read_text(encoding="utf-8"))
            self.expect_equal(meta.get("status"), "done", "metadata.json: done")
        with self.step("the logs tag every tier"):
            tiers = {e.get("source_tier") for e in self.log_entries("comms")}
            self.check({"Tier 1", "Tier 2", "Tier 3"} <= tiers, "comms.log tags Tier 1, 2 and 3", str(tiers))
            writes = [
                e for e in self.log_entries("toolcalls") if e.get("tool") in ("write_file", "edit_file")
            ]
            self.expect_equal(
                [(e["tool"], e["status"], e.get("source_tier")) for e in writes],
                [("write_file", "success", "Tier 3"), ("edit_file", "success", "Tier 3")],
                "toolcalls.log: both worker calls succeeded as Tier 3",
            )
