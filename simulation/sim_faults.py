"""sim_faults: the provider rate-limits, fails, answers garbage and refuses the key; the app
classifies each error, retries exactly the transient ones, and keeps working.

Each case is one Gen + Send against a group of ``turns/faults.toml``. The checks read
what the user sees — the response text with its error label, ``ai_status``, the
Comms Log's ``retry`` and ``error`` entries — and count the calls the fake provider
received, which is how many times the app tried.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulation.sim_base import BaseSimulation

__all__ = ["FaultsSimulation"]


@dataclass(frozen=True, slots=True)
class Case:
    group: str
    label: str  # the step's title
    outcome: str  # "done" or "error"
    shown: str  # text the response view must show
    calls: int  # model calls the fake must have received
    retries: int  # `retry` entries in the Comms Log


CASES = (
    Case("rate_limit", "a rate limit is retried and the answer shown", "done",
         "Recovered after a rate limit.", 2, 1),
    Case("long_rate_limit", "a rate limit asking for minutes is shown at once, not waited out", "error",
         "RATE LIMITED (HTTP 429)", 1, 0),
    Case("flaky", "a 503 and a broken stream are retried until an answer comes", "done",
         "Third time lucky.", 3, 2),
    Case("html_instead_of_stream", "an HTML page instead of the event stream is an API error, not retried",
         "error", "expected an event stream, got text/html", 1, 0),
    Case("server_down", "server errors: 3 retries, then a classified error", "error",
         "API ERROR (HTTP 500)", 4, 3),
    Case("garbage", "an HTML error page (HTTP 400) is an API error, not retried", "error",
         "API ERROR (HTTP 400)", 1, 0),
    Case("bad_key", "a refused key is an auth error, not retried", "error",
         "AUTH / API KEY ERROR (HTTP 401)", 1, 0),
)  # fmt: skip


class FaultsSimulation(BaseSimulation):
    name = "faults"
    title = "rate limits, server errors and garbage: classified, retried where they should be"
    turn_file = "faults.toml"

    def setup(self) -> None:
        with self.step("write the project: a one-line README"):
            self.write_file("README.md", "# Demo\n")
            self.set_field("project_files", ["README.md"])

    def run(self) -> None:
        for number, case in enumerate(CASES, 1):
            self.fake.push_group(case.group)
            with self.step(case.label):
                calls_before = self.fake.call_count()
                comms_cursor = self._log_end(self.client.comms)
                response = self.send(f"Question {number}: what does the README say?")
                self.expect_equal(response["status"], case.outcome, f"the request ended {case.outcome}")
                self.check(
                    case.shown in response["text"],
                    f"the response view shows {case.shown!r}",
                    f"got {response['text']!r:.200}",
                )
                self.expect_equal(
                    self.fake.call_count() - calls_before,
                    case.calls,
                    f"the provider was called {case.calls}x",
                )
                entries = self.client.comms(comms_cursor, 1000)["entries"]
                retries = [e for e in entries if e.get("kind") == "retry"]
                self.expect_equal(len(retries), case.retries, f"the Comms Log shows {case.retries} retries")
                status = self.client.get_value("ai_status")
                self.expect_equal(status, case.outcome, f"the status line says {case.outcome}")
                if case.outcome == "error":
                    self.check(
                        any(e.get("kind") == "error" for e in entries), "the Comms Log has the error entry"
                    )
        self.fake.push_group("healthy")
        with self.step("after all that, the app keeps working"):
            response = self.send("Are you still there?")
            self.expect_equal(response["status"], "done", "a normal request succeeds")
            self.expect_equal(response["text"], "All good again.", "its answer is shown")
            health = self.client.health()
            self.check(health["healthy"], "the frame loop is healthy", str(health))
            self.expect_equal(self.fake.remaining(), 0, "every scripted turn was used")

    def verify(self) -> None:
        with self.step("the discussion holds only the exchanges that succeeded"):
            entries = self.client.get_value("discussion_entries")
            replies = [e["content"] for e in entries if e["role"] == "AI"]
            self.expect_equal(
                replies,
                ["Recovered after a rate limit.", "Third time lucky.", "All good again."],
                "failed requests added no reply",
            )
            questions = [e for e in entries if e["role"] == "User"]
            self.expect_equal(len(questions), len(CASES) + 1, "every question the user sent is kept")
        with self.step("comms.log in the session folder records the errors with their kind"):
            errors = [e for e in self.log_entries("comms") if e.get("kind") == "error"]
            text = " ".join(str(e.get("payload")) for e in errors)
            for kind in ("rate_limit", "unknown", "auth"):
                self.check(kind in text, f"comms.log has a {kind} error", text[:300])
