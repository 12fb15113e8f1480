"""R3 schema-driven fuzzing (issue #22): schemathesis against the served ``/openapi.json``.

The real headless app (the ``app`` fixture of the hook attack suite: a tmp project and config,
a fresh token, stopped over POST /api/shutdown, which must end it cleanly) is fuzzed by
``st run`` with every check on and the token sent: zero 5xx, zero replies over 10 s, zero
replies outside their documented status, content type, headers or schema, and the app healthy
after (GET /status 200 and a ``set_value`` that round-trips).

The fast variant (``make test``) sends a few hundred requests; the long one
(``SLOP_RELIABILITY=long``) at least 10,000. ``st run`` runs as a subprocess: its output is the
assertion message, with a curl line that reproduces each failure.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers import app_env
from tests.reliability.conftest import LONG, scale
from tests.security.test_hook_attacks import RunningApp, app, wait_for_task  # noqa: F401 (app: fixture)

HOOKS = Path(__file__).with_name("r3_schema_hooks.py")
MAX_RESPONSE_S = 10
REQUEST_TIMEOUT_S = 15  # a reply slower than this is a network error (also a failure)
RUN_TIMEOUT_S = 3600 if LONG else 120
FAST_SEED = 22  # the fast variant is the same run every time; the long one draws a new seed
MIN_REQUESTS = scale(150, 10_000)  # fast: ~200 sent (two workers: it varies a little)
WARM_UP_TIMEOUT_S = 120
# st's own errors that say nothing about the app: CPython 3.11's ast is not thread-safe, and
# st's worker threads compile regexes to ASTs (seen once in 11,485 cases, coverage phase)
KNOWN_ST_ERRORS = ("SystemError: AST constructor recursion depth mismatch",)
STATEFUL = "Stateful tests"  # the label of the stateful phase's requests (long variant)

# Operations not fuzzed, and why: they end the run or leave the sandbox (the tmp project).
# restart/enable would 404 here (the tmp config has no MCP servers), but an unknown name must
# never be the only thing between a fuzzer and a process start.
EXCLUDED: dict[str, str] = {
    "shutdown": "ends the app (the fixture stops it with it, once, at the end)",
    "send": "runs the active provider: loads the local model, calls a paid API or starts the gemini CLI",
    "startPlan": "runs the planner on the active provider (as send)",
    "startMcpServe": "opens a listening MCP server on an address the fuzzer picks",
    "restartMcpServer": "starts an external MCP server process",
    "enableMcpServer": "starts an external MCP server process",
    "getOpenApi": "the document st loads to begin with (it takes no input; st never fuzzes it)",
}
# ... and, in the fast variant only, the operations whose first call loads the embedding model
# or opens the vector store: seconds of CPU (6-12 s on the loaded 2-core machine, which the
# 10 s limit would flag in a run this short); the long variant fuzzes them.
FIRST_USE_HEAVY: dict[str, str] = {
    "ragIndex": "embeds the project's files",
    "ragQuery": "embeds the query",
    "ragStatus": "opens the vector store to count its chunks",
    "memoryRecall": "embeds the query",
}
SKIPPED = EXCLUDED if LONG else {**EXCLUDED, **FIRST_USE_HEAVY}

# Operations whose schema-valid bodies or path parameters can still be refused (400) for what
# no JSON Schema says: names that must exist at run time, a file that must exist, an id's form
# in the path (path parameters are plain strings in the document). positive_data_acceptance
# takes a 400 from these; every other check stays as strict as for the rest.
SEMANTIC_400: dict[str, str] = {
    "postGuiAction": "the item, listbox or tab bar must be one the GUI registered",
    "putAgent": "tools must name registered tools; provider and model must exist",
    "putApprovalRules": "a rule needs a tool, path_glob or pattern; patterns must compile",
    "ragIndex": "paths must be files of the project",
    "getRun": "the run id has a form (like 142501-chat-1a2b3c4d)",
    "getRunRequest": "the run id has a form; the request number is a whole number",
    "setTicketDependencies": "ticket ids must exist in the track",
    "ask": "tool and args must name a registered tool and fit it",
    "getGuiValue": "the field must be one the GUI registered",
}


@dataclass
class Tally:
    """What the run's NDJSON report says: every request sent and every check's verdict."""

    requests: int = 0
    operations: set[str] = field(default_factory=set)
    server_errors: list[str] = field(default_factory=list)  # "POST /api/x -> 500"
    slow: list[str] = field(default_factory=list)  # "GET /api/y took 11.2 s"
    failed_checks: Counter[str] = field(default_factory=Counter)
    checks_run: int = 0
    slowest_s: float = 0.0
    errors: list[str] = field(default_factory=list)  # st's own errors ("NonFatalError" events)


def tally(report: Path) -> Tally:
    """Counts from the ``ScenarioFinished`` events of ``st run --report ndjson``."""
    result = Tally()
    for line in report.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if "NonFatalError" in event:
            error = event["NonFatalError"]
            result.errors.append(
                f"{error.get('label')}: {error['value']['type']}: {error['value']['message']}"
            )
        event = event.get("ScenarioFinished")
        if event is None:
            continue
        recorder = event["recorder"]  # a scenario that sent nothing has only its label
        interactions = recorder.get("interactions", {})
        if interactions:
            result.operations.add(recorder["label"])
        for interaction in interactions.values():
            request, response = interaction["request"], interaction.get("response")
            result.requests += 1
            if response is None:
                continue  # no reply: st reports it as an error, which fails the run
            where = f"{request['method']} {request['uri']}"
            if response["status_code"] >= 500:
                result.server_errors.append(f"{where} -> {response['status_code']}")
            result.slowest_s = max(result.slowest_s, response["elapsed"])
            if response["elapsed"] >= MAX_RESPONSE_S:
                result.slow.append(f"{where} took {response['elapsed']:.1f} s")
        for checks in recorder.get("checks", {}).values():
            result.checks_run += len(checks)
            result.failed_checks.update(c["name"] for c in checks if c["status"] != "success")
    return result


def st_config(path: Path) -> Path:
    """The schemathesis.toml of the run: the token header and the per-operation statuses."""
    lines = [
        "[headers]",
        'Authorization = "Bearer ${R3_HOOK_TOKEN}"',  # from the environment: never on a command line
    ]
    for operation_id in SEMANTIC_400:
        # 408: an ask nobody decides within its (cut) timeout_s is rejected, as documented
        statuses = ["2xx", "400", "401", "403", "404", "409", *(["408"] if operation_id == "ask" else [])]
        lines += [
            "",
            "[[operations]]",
            f'include-operation-id = "{operation_id}"',
            f"checks.positive_data_acceptance.expected-statuses = {json.dumps(statuses)}",
        ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def st_command(target: RunningApp, config: Path, report: Path) -> list[str]:
    command = [
        str(Path(sys.executable).with_name("st")), "--config-file", str(config), "run",
        f"http://{target.host}/openapi.json",
        "--checks", "all",
        "--max-response-time", str(MAX_RESPONSE_S),
        "--request-timeout", str(REQUEST_TIMEOUT_S),
        "--generation-database", "none",
        "--no-color",
        "--report", "ndjson", "--report-ndjson-path", str(report),
        "--workers", str(scale(2, 4)),
        "--max-examples", str(scale(5, 300)),
    ]  # fmt: skip
    if not LONG:  # the coverage phase alone sends ~1,000 requests: it is the long variant's
        command += ["--seed", str(FAST_SEED), "--phases", "fuzzing", "--no-shrink"]
    for operation_id in SKIPPED:
        command += ["--exclude-operation-id", operation_id]
    return command


@pytest.mark.timeout(RUN_TIMEOUT_S + 120)  # the long run is past pytest.ini's 120 s
def test_fuzzed_api_keeps_its_contract(app: RunningApp, tmp_path: Path, summary) -> None:  # noqa: F811 (fixture)
    labels = {  # operationId -> "METHOD /path", st's name for it
        op["operationId"]: f"{method.upper()} {path}"
        for path, ops in app.contract.doc["paths"].items()
        for method, op in ops.items()
    }
    documented = set(labels)
    assert set(SKIPPED) <= documented, set(SKIPPED) - documented  # an exclusion naming nothing
    assert set(SEMANTIC_400) <= documented, set(SEMANTIC_400) - documented

    if LONG:  # the embedder and the vector store load on first use (seconds): once, before
        warm_up(app)
    env = {**app_env(), "R3_HOOK_TOKEN": app.token, "SCHEMATHESIS_HOOKS": str(HOOKS)}
    report = tmp_path / "events.ndjson"
    run = subprocess.run(
        st_command(app, st_config(tmp_path / "schemathesis.toml"), report),
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert report.exists(), output[-3000:]
    seen = tally(report)
    assert not seen.server_errors, f"5xx replies: {seen.server_errors[:20]}\n{_failures(output)}"
    assert not seen.slow, f"replies over {MAX_RESPONSE_S} s: {seen.slow[:20]}\n{_failures(output)}"
    assert not seen.failed_checks, f"failed checks: {dict(seen.failed_checks)}\n{_failures(output)}"
    unknown = [error for error in seen.errors if not any(known in error for known in KNOWN_ST_ERRORS)]
    assert not unknown, f"st errors: {unknown}\n{_failures(output)}"  # no reply, a crash in st
    assert run.returncode == 0 or seen.errors, _failures(output)
    expected = {label for operation_id, label in labels.items() if operation_id not in SKIPPED}
    assert seen.operations - {STATEFUL} == expected, f"not fuzzed: {expected - seen.operations}"
    assert seen.requests >= MIN_REQUESTS, f"only {seen.requests} requests (at least {MIN_REQUESTS})"

    # the app is healthy after: its status, and a write that lands
    status, body = app.call("GET", "/status")
    assert status == 200, body
    write = {"action": "set_value", "item": "ai_input", "value": "r3 after"}
    status, queued = app.call("POST", "/api/gui", write)
    assert status == 202, queued
    assert wait_for_task(app, queued["task_id"])["state"] == "done"
    assert app.call("GET", "/api/gui/value/ai_input") == (200, {"field": "ai_input", "value": "r3 after"})
    summary(
        f"R3 schema fuzz: {seen.requests} requests on {len(seen.operations - {STATEFUL})} operations "
        f"({len(SKIPPED)} excluded), {seen.checks_run} checks, 0 5xx, 0 over {MAX_RESPONSE_S} s "
        f"(slowest {seen.slowest_s:.2f} s), 0 contract violations, healthy after"
    )


def warm_up(target: RunningApp) -> None:
    """One RAG query and status, with time to load the embedder and open the store."""
    for method, path, body in (
        ("POST", "/api/rag/query", {"query": "warm up"}),
        ("GET", "/api/rag/status", None),
    ):
        connection = http.client.HTTPConnection("127.0.0.1", target.port, timeout=WARM_UP_TIMEOUT_S)
        try:
            headers = {"Authorization": f"Bearer {target.token}", "Content-Type": "application/json"}
            connection.request(method, path, None if body is None else json.dumps(body), headers)
            reply = connection.getresponse()
            assert reply.status == 200, (path, reply.status, reply.read()[:300])
        finally:
            connection.close()


def _failures(output: str) -> str:
    """The part of st's output that says what failed (its FAILURES and SUMMARY sections)."""
    start = output.find("FAILURES")
    text = output[start - 40 :] if start >= 0 else output
    return text if len(text) < 12_000 else text[:6_000] + "\n…\n" + text[-6_000:]


def test_tally_catches_a_planted_500_a_slow_reply_and_a_failed_check(tmp_path: Path) -> None:
    """The checker against a stand-in report: what a broken handler would leave in it."""

    def reply(status: int, elapsed: float) -> dict:
        return {
            "request": {"method": "GET", "uri": "http://127.0.0.1:1/api/x"},
            "response": {"status_code": status, "elapsed": elapsed},
        }

    recorder = {
        "label": "GET /api/x",
        "interactions": {"a": reply(200, 0.01), "b": reply(500, 0.02), "c": reply(200, 10.5)},
        "checks": {
            "a": [{"name": "not_a_server_error", "status": "success"}],
            "b": [{"name": "response_schema_conformance", "status": "failure"}],
        },
    }
    report = tmp_path / "events.ndjson"
    nothing_sent = {"label": "GET /api/nothing-sent"}  # a scenario whose cases were all skipped
    events = [{"Initialize": {}}, {"ScenarioFinished": {"recorder": recorder}}]
    events.append({"ScenarioFinished": {"recorder": nothing_sent}})
    events.append({"NonFatalError": {"label": "GET /api/x", "value": {"type": "ValueError", "message": "m"}}})
    report.write_text("".join(json.dumps(event) + "\n" for event in events))
    seen = tally(report)
    assert (seen.requests, seen.operations, seen.checks_run) == (3, {"GET /api/x"}, 2)
    assert seen.server_errors == ["GET http://127.0.0.1:1/api/x -> 500"]
    assert seen.slow == ["GET http://127.0.0.1:1/api/x took 10.5 s"] and seen.slowest_s == 10.5
    assert seen.failed_checks == Counter({"response_schema_conformance": 1})
    assert seen.errors == ["GET /api/x: ValueError: m"]
