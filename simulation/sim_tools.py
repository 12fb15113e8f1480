"""sim_tools: the model reads the project, is denied a path outside it, and edits a file
that the user approves with a change of their own.

One Gen + Send; the scripted model (``turns/tools.toml``) answers with three read tools
in one round, a read of ``../outside/secret.txt``, an ``edit_file`` and a final text.
The user approves the edit but rewrites its ``new_string``. Afterwards the file on disk
holds the user's version, the secret never reached the model, and the session logs
(``toolcalls.log``, ``audit.log``) tell the story.
"""

from __future__ import annotations

from simulation.sim_base import BaseSimulation

__all__ = ["ToolsSimulation"]

GREETER = '''"""Greets people."""


def greet(name: str) -> str:
    return f"Hello, {name}!"


def farewell(name: str) -> str:
    return f"Goodbye, {name}."
'''
SECRET = "the-launch-code-is-0000"
USER_VERSION = "Good day"


class ToolsSimulation(BaseSimulation):
    name = "tools"
    title = "read tools, a denied path, an edit approved with the user's changes"
    turn_file = "tools.toml"

    def setup(self) -> None:
        with self.step("write the project: src/greeter.py, docs/notes.md; a secret outside it"):
            self.greeter = self.write_file("src/greeter.py", GREETER)
            self.write_file("docs/notes.md", "# Notes\n\nThe greeter says hello.\n")
            self.secret = self.workdir / "outside" / "secret.txt"
            self.secret.parent.mkdir()
            self.secret.write_text(SECRET + "\n", encoding="utf-8")
            self.set_field("project_files", ["src/*.py", "docs/*.md"])
            self.tool_cursor = self._log_end(self.client.tool_calls)
            self.comms_cursor = self._log_end(self.client.comms)

    def run(self) -> None:
        self.fake.push_group("explore")
        with self.step("ask the model to tidy up the greeting"):
            self.start_send("Tidy up the greeting in src/greeter.py.")
        with self.step("the edit waits for approval, after the reads ran"):
            dialog = self.wait_dialog("tool_approval")
            payload = dialog["payload"]
            self.expect_equal(payload["tool"], "edit_file", "the dialog names the tool")
            self.expect_equal(payload["args"]["new_string"], "Hi", "the dialog shows the model's arguments")
            self.check('-    return f"Hello' in payload["diff"], "the dialog shows a diff of the change")
            self.check(
                "Hello" in self.greeter.read_text(encoding="utf-8"), "the file is untouched while undecided"
            )
            calls = self.client.tool_calls(self.tool_cursor)["entries"]
            by_tool = {(c["tool"], c["status"]) for c in calls}
            for tool in ("list_directory", "read_file", "grep"):
                self.check((tool, "success") in by_tool, f"{tool} ran and succeeded before the edit")
            denied = [c for c in calls if c["status"] == "denied"]
            self.check(
                len(denied) == 1 and "ACCESS DENIED" in denied[0].get("message", ""),
                "the read outside the project was denied without asking anyone",
                f"tool calls: {sorted(by_tool)}",
            )
            self.expect_equal(
                len(self.client.pending()), 1, "one dialog is pending (the denial asked no one)"
            )
        with self.step("approve the edit with the user's own wording"):
            edited = {**payload["args"], "new_string": USER_VERSION}
            self.user.approve(dialog, {"args": edited})
            response = self.wait_response()
            self.expect_equal(response["status"], "done", "the request finished")
            self.check("greeting is updated" in response["text"], "the model's final answer is shown")
            self.wait_for(
                "ai_response shows the final answer",
                lambda: self.client.get_value("ai_response"),
                lambda text: "greeting is updated" in text,
            )

    def verify(self) -> None:
        with self.step("the file on disk holds the user's edit, not the model's"):
            text = self.greeter.read_text(encoding="utf-8")
            self.check(f'return f"{USER_VERSION}, {{name}}!"' in text, "the edited payload was applied")
            self.check("Hi," not in text and "Hello" not in text, "the model's version was not applied")
            self.check(text.endswith('return f"Goodbye, {name}."\n'), "the rest of the file is intact")
            self.expect_equal(
                self.secret.read_text(encoding="utf-8"), SECRET + "\n", "the secret is untouched"
            )
        with self.step("the model saw the denial and never the secret"):
            sent = self.fake.request_texts()
            self.check(all(SECRET not in body for body in sent), "the secret never reached the provider")
            self.check(any("ACCESS DENIED" in body for body in sent), "the model was told access was denied")
            self.check(
                any(USER_VERSION in body for body in sent[-1:]),
                "the model's next request carried the edited result",
            )
        with self.step("the session logs record every call and the decision"):
            logged = [e for e in self.log_entries("toolcalls") if e.get("tool") == "edit_file"]
            self.check(
                len(logged) == 1 and logged[0]["status"] == "success" and logged[0]["edited"] is True,
                "toolcalls.log: edit_file succeeded, marked edited",
                f"{logged}",
            )
            audit = [e for e in self.log_entries("audit") if e.get("kind") == "tool_approval"]
            self.check(audit, "audit.log has the approval", f"{self.log_entries('audit')}")
            self.check(
                audit[-1].get("approved") is True and USER_VERSION in str(audit[-1].get("payload")),
                "audit.log: approved, with the final (edited) payload",
                f"{audit[-1]}",
            )
