"""sim_discussion: a multi-turn conversation, a take branched and promoted, undo and redo,
and compression.

The user talks to the scripted model (``turns/discussion.toml``) for three turns on
the scenario's discussion, branches a take after the first exchange, resets the
provider session and continues differently there, promotes the take to the main
line, undoes and redoes the promotion, and finally compresses the main line into a
summary — then undoes that too. The checks read ``discussion_entries``,
``discussion_takes``, ``undo_history``, what the model received, and ``comms.log``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simulation.sim_base import BaseSimulation

__all__ = ["DiscussionSimulation"]

QUESTIONS = (
    "How should I cache user lookups?",
    "What about stale entries?",
    "And memory use?",
)
TAKE_QUESTION = "Is there a way without a cache?"


def exchange(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["role"], e["content"]) for e in entries]


class DiscussionSimulation(BaseSimulation):
    name = "discussion"
    title = "a multi-turn discussion, a take branched and promoted, undo/redo, compression"
    turn_file = "discussion.toml"

    def entries(self) -> list[tuple[str, str]]:
        return exchange(self.client.get_value("discussion_entries"))

    def setup(self) -> None:
        with self.step("write the project: a slow lookup to talk about"):
            self.write_file(
                "users.py", "def find(users, uid):\n    return [u for u in users if u.id == uid][0]\n"
            )
            self.set_field("project_files", ["users.py"])

    def run(self) -> None:
        main = self.discussion
        self.fake.push_group("main_line")
        with self.step("talk for three turns"):
            for number, question in enumerate(QUESTIONS, 1):
                response = self.send(question)
                self.expect_equal(response["status"], "done", f"turn {number} answered")
            entries = self.entries()
            self.expect_equal(
                [role for role, _ in entries], ["User", "AI"] * 3, "six entries: question and answer, in turn"
            )
            self.expect_equal(entries[0], ("User", QUESTIONS[0]), "the first question is first")
            self.main_before = entries
            sent = self.fake.request_texts()
            self.check(
                "O(1) lookups" in sent[1] and "O(1) lookups" in sent[2],
                "each later request carried the earlier answers",
            )
        with self.step("branch a take after the first exchange"):
            self.user.click("btn_branch_take", {"index": 1})
            take = f"{main}_take_1"
            self.expect_equal(self.client.get_value("active_discussion"), take, "the take is active")
            self.expect_equal(self.entries(), self.main_before[:2], "the take holds entries 0-1")
            self.expect_equal(
                self.client.get_value("discussion_takes"), [take], "discussion_takes lists the take"
            )
        with self.step("reset the session and continue differently in the take"):
            self.user.click("btn_reset_session")
            self.fake.push_group("take")
            response = self.send(TAKE_QUESTION)
            self.expect_equal(response["status"], "done", "the take's question was answered")
            told = self.fake.request_texts()[-1]
            self.check(
                "O(1) lookups" in told and "TTL" not in told,
                "the model saw the take's history, not the main line's later turns",
            )
            self.take_entries = self.entries()
            self.expect_equal(len(self.take_entries), 4, "the take has its own 4 entries")
        with self.step("promote the take to the main line"):
            self.user.click("btn_promote_take", take)
            self.user.select_tab("discussion_takes", main)
            self.expect_equal(
                self.entries(), self.take_entries, "the main line now holds the take's conversation"
            )
            self.user.select_tab("discussion_takes", take)
            self.expect_equal(self.entries(), self.main_before, "the take keeps the former main line")
            self.user.select_tab("discussion_takes", main)
        with self.step("undo the promotion, then redo it"):
            history = self.client.get_value("undo_history")
            self.check(
                history["undo"] and "promote" in history["undo"][0],
                "undo_history names the promotion",
                str(history["undo"][:3]),
            )
            self.user.click("btn_undo")
            self.expect_equal(
                self.client.get_value("active_discussion"), take, "undo: the take is active again, as before"
            )
            self.expect_equal(self.entries(), self.take_entries, "undo: the take holds its own conversation")
            self.user.select_tab("discussion_takes", main)
            self.expect_equal(self.entries(), self.main_before, "undo: the main line is back")
            self.check(self.client.get_value("undo_history")["redo"], "the promotion can be redone")
            self.user.click("btn_redo")
            self.expect_equal(
                self.client.get_value("active_discussion"), main, "redo: the main line is active"
            )
            self.expect_equal(self.entries(), self.take_entries, "redo: promoted again")
        self.fake.push_group("summary")
        with self.step("compress the main line into a summary"):
            calls_before = self.fake.call_count()
            self.user.click("btn_compress_discussion", main)
            event = self.client.wait_for_event("discussion_compressed", timeout=30)
            self.expect_equal(event["payload"]["discussion"], main, "the main line was compressed")
            entries = self.entries()
            self.expect_equal(len(entries), 1, "one entry replaces the four")
            role, text = entries[0]
            self.check(
                role == "System"
                and text.startswith("[Summary of 4 earlier entries]")
                and "index the users" in text,
                "it is a System entry with the provider's summary",
                f"{entries[0]!r:.200}",
            )
            self.expect_equal(self.fake.call_count(), calls_before + 1, "one provider call")
            request = self.fake.model_calls()[-1].body
            self.check(not request.get("tools"), "the summary request offered no tools")
            self.check(TAKE_QUESTION in str(request), "the summary request carried the discussion")
            self.wait_for(
                "discussion_status is back to idle",
                lambda: self.client.get_value("discussion_status"),
                lambda s: s == "idle",
            )
        with self.step("undo brings the compressed entries back"):
            self.user.click("btn_undo")
            self.expect_equal(self.entries(), self.take_entries, "the four entries are back")
            self.user.click("btn_redo")
            self.expect_equal(len(self.entries()), 1, "redo compresses again")

    def verify(self) -> None:
        with self.step("comms.log archives the summarized entries"):
            archives = [e for e in self.log_entries("comms") if e.get("kind") == "discussion_archive"]
            self.check(archives, "a discussion_archive entry was written")
            archived = str(archives[-1])
            self.check(
                TAKE_QUESTION in archived and "index the users" in archived,
                "it holds the original entries and the summary",
            )
        if self.app is None:
            self.note("attached: the history file is not saved (it belongs to the attached app)")
            return
        with self.step("Save writes the discussions and the take to the history file"):
            self.user.click("btn_save")
            project = Path(self.client.get_value("project_file"))
            history = tomllib.loads(
                project.with_name(f"{project.stem}_history.toml").read_text(encoding="utf-8")
            )
            discussions = history["discussions"]
            take = discussions.get(f"{self.discussion}_take_1", {})
            self.expect_equal(take.get("take_of"), self.discussion, "the take records its main line")
            self.expect_equal(
                exchange(take.get("history", [])),
                self.main_before,
                "the take holds the former main line on disk",
            )
            self.expect_equal(len(discussions[self.discussion]["history"]), 1, "the main line is the summary")
