"""sim_execution: the Execution Clutch on shell scripts — one rejected, one approved.

The scripted model (``turns/execution.toml``) first proposes a destructive script; the
user rejects it with a reason: nothing runs, no script is saved, and the model's next
request carries the rejection and the reason. Then it proposes a build script; the
user approves it: its output is on disk, the model is told the exit code, and the
script is saved under the session's ``scripts/`` before it ran.
"""

from __future__ import annotations

from pathlib import Path

from simulation.sim_base import BaseSimulation

__all__ = ["ExecutionSimulation"]

DATA = "precious data\n"
REASON = "not on my machine: that deletes data.txt"


class ExecutionSimulation(BaseSimulation):
    name = "execution"
    title = "a script rejected (nothing runs, the model is told), then one approved"
    turn_file = "execution.toml"

    def setup(self) -> None:
        with self.step("write the project: data.txt"):
            self.data = self.write_file("data.txt", DATA)
            self.set_field("project_files", ["data.txt"])
            self.tool_cursor = self._log_end(self.client.tool_calls)
            # an attached app's session may hold earlier runs' scripts: count only this run's
            self.scripts_before = set(self._script_files())

    def _script_files(self) -> list[Path]:
        folder = self.session_dir() / "scripts"
        return list(folder.iterdir()) if folder.is_dir() else []

    def scripts(self) -> list[str]:
        """The scripts saved under the session's ``scripts/`` since this scenario began."""
        fresh = (p for p in self._script_files() if p not in self.scripts_before)
        return sorted(p.read_text(encoding="utf-8") for p in fresh)

    def run(self) -> None:
        self.fake.push_group("rejected")
        with self.step("the model proposes a destructive script"):
            self.start_send("Clean up the workspace.")
            dialog = self.wait_dialog("confirm_script")
            script = dialog["payload"]["script"]
            self.check(script.startswith("rm -f data.txt"), "the dialog shows the script", script)
            self.expect_equal(
                dialog["payload"]["base_dir"], str(self.workspace.resolve()), "the dialog shows where it runs"
            )
            self.wait_for(
                "the app shows it (pending_dialogs, the modal's source)",
                lambda: [d["id"] for d in self.client.get_value("pending_dialogs")],
                lambda ids: dialog["id"] in ids,
            )
        with self.step("reject it with a reason"):
            calls_before = self.fake.call_count()
            self.user.reject(dialog, REASON)
            response = self.wait_response()
            self.expect_equal(response["status"], "done", "the request went on after the rejection")
            self.check("did not touch" in response["text"], "the model's answer is shown", response["text"])
            self.expect_equal(self.fake.call_count(), calls_before + 1, "the model was asked once more")
            told = self.fake.request_texts()[-1]
            self.check("REJECTED" in told and REASON in told, "the model was told: rejected, and why")
        with self.step("nothing ran"):
            self.expect_equal(self.data.read_text(encoding="utf-8"), DATA, "data.txt is intact")
            self.check(not (self.workspace / "wiped.txt").exists(), "the script's output file does not exist")
            self.expect_equal(self.scripts(), [], "no script was saved under scripts/")
            entries = self.client.tool_calls(self.tool_cursor)["entries"]
            self.check(
                [(e["tool"], e["status"]) for e in entries] == [("run_shell", "rejected")],
                "the Tool Calls view shows run_shell rejected",
                f"{entries}",
            )

        self.fake.push_group("approved")
        with self.step("the model proposes a build script; approve it as it stands"):
            self.start_send("Then build it, please.")
            dialog = self.wait_dialog("confirm_script")
            self.approved_script = dialog["payload"]["script"]
            self.check("build/out.txt" in self.approved_script, "the dialog shows the build script")
            self.user.approve(dialog)
            response = self.wait_response()
            self.expect_equal(response["status"], "done", "the request finished")
            self.check("Built" in response["text"], "the model's answer is shown", response["text"])

    def verify(self) -> None:
        with self.step("the approved script's effect is on disk and in scripts/"):
            out = self.workspace / "build" / "out.txt"
            self.check(out.is_file(), "build/out.txt exists")
            self.expect_equal(out.read_text(encoding="utf-8"), DATA, "build/out.txt holds the copied data")
            self.expect_equal(self.data.read_text(encoding="utf-8"), DATA, "data.txt is still intact")
            self.expect_equal(
                self.scripts(), [self.approved_script], "scripts/ holds exactly the approved script"
            )
            told = self.fake.request_texts()[-1]
            self.check(
                "exit code: 0" in told and "built" in told, "the model was told the exit code and output"
            )
        with self.step("the session logs record both decisions"):
            shells = [e for e in self.log_entries("toolcalls") if e.get("tool") == "run_shell"]
            self.expect_equal(
                [e["status"] for e in shells],
                ["rejected", "success"],
                "toolcalls.log: rejected, then success",
            )
            decisions = [e for e in self.log_entries("audit") if e.get("kind") == "confirm_script"]
            self.expect_equal(
                [(e.get("approved"), e.get("decider")) for e in decisions],
                [(False, "hook"), (True, "hook")],
                "audit.log: rejected then approved, both by a person over the Hook API",
            )
            self.check(REASON in str(decisions[0]), "audit.log keeps the rejection reason")
