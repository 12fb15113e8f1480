"""The gemini_cli provider on the real ``@google/gemini-cli`` (pinned, from ``.tools/``) against
the wire-level Gemini fake and the real Hook API, with no network.

Each CLI run costs about 2 s of Node start-up, so every test makes as few runs as it can
(10 runs in all)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from manual_slop.ai import ErrorKind, ProviderError
from tests.fakes import Call, Fail, GeminiFake, Reply
from tests.integration.gemini_cli.conftest import CLI_DIR, KEY, MODEL, PINNED, HookAppFactory, Rig
from tests.integration.hooks.conftest import wait_until

TOKEN = "hook-token-real-cli-41d2"


def contents(fake: GeminiFake, call: int) -> str:
    """What model call ``call`` carried (its ``contents``), as text."""
    return json.dumps(fake.model_calls()[call].body["contents"])


def test_the_installed_cli_is_the_pinned_version(real_cli: Path) -> None:
    package = CLI_DIR / "node_modules" / "@google" / "gemini-cli" / "package.json"
    assert json.loads(package.read_text())["version"] == PINNED


def test_a_plain_turn_then_a_resumed_one(
    real_cli: Path, gemini_fake: GeminiFake, rigs, tmp_path: Path
) -> None:
    usage = {"promptTokenCount": 321, "candidatesTokenCount": 7, "totalTokenCount": 328}
    gemini_fake.push(
        Reply("First answer from the fake.", usage=usage),
        Reply(
            "Second answer.",
            usage={"promptTokenCount": 400, "candidatesTokenCount": 3, "totalTokenCount": 403},
        ),
    )
    rig: Rig = rigs(real_cli, gemini_fake)
    chunks: list[str] = []
    first = rig.client.send(
        "## Context\nproject notes", "first question", base_dir=str(tmp_path), stream_callback=chunks.append
    )
    assert first == "First answer from the fake."
    assert "".join(chunks) == first and len(chunks) > 1  # streamed as the fake sent it
    assert rig.client.get_token_usage() == {
        "input_tokens": 321,
        "output_tokens": 7,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert rig.kinds() == ["request", "response"]
    response = rig.comms[1]["payload"]
    assert response["text"] == first and response["usage"]["input_tokens"] == 321
    assert {e["provider"] for e in rig.comms} == {"gemini_cli"} and {e["model"] for e in rig.comms} == {MODEL}
    assert "project notes" in contents(gemini_fake, 0) and "first question" in contents(gemini_fake, 0)

    assert (
        rig.client.send("## Context\nproject notes", "second question", base_dir=str(tmp_path))
        == "Second answer."
    )
    second = contents(gemini_fake, 1)  # the CLI re-sent its session's history
    assert second.index("first question") < second.index(first) < second.index("second question")
    assert rig.client.get_token_usage()["input_tokens"] == 400
    session = json.loads(rig.cli_calls[0]["stdout"].splitlines()[0])["session_id"]
    argv = [c["command"] for c in rig.cli_calls]
    assert "--resume" not in argv[0] and argv[1][argv[1].index("--resume") + 1] == session
    assert rig.cli_calls[1]["stdin"] == ""  # only the new turn was sent
    assert [c["exit_code"] for c in rig.cli_calls] == [0, 0]
    assert all(r.path == f"/v1beta/models/{MODEL}:streamGenerateContent" for r in gemini_fake.model_calls())
    assert KEY not in json.dumps(rig.cli_calls)  # the key went through the environment only


def test_a_read_file_round_is_logged_with_the_cli_as_its_source(
    real_cli: Path, gemini_fake: GeminiFake, rigs, hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    (app_dir / "notes.txt").write_text("hello from the notes\n")
    app = hook_app_factory()  # policy manual: like our own read-only tools, a read inside never asks
    gemini_fake.push(
        Reply("Let me look.", [Call("read_file", {"file_path": "notes.txt"})]),
        Reply("The notes say hello."),
    )
    rig: Rig = rigs(real_cli, gemini_fake, hook_api=lambda: app.ctrl.hook_api)
    assert (
        rig.client.send("", "what do the notes say?", base_dir=str(app_dir))
        == "Let me look.The notes say hello."
    )
    assert "hello from the notes" in contents(gemini_fake, 1)  # the CLI read the file itself
    (entry,) = rig.tools
    assert (entry["tool"], entry["status"], entry["executed_by"]) == ("read_file", "success", "gemini_cli")
    assert entry["args"] == {"file_path": "notes.txt"} and entry["provider"] == "gemini_cli"
    used = [e for e in rig.comms if e["kind"] in ("tool_call", "tool_result")]
    assert [e["kind"] for e in used] == ["tool_call", "tool_result"]
    assert {e["payload"]["executed_by"] for e in used} == {"gemini_cli"}
    audit = (app.ctrl.session_log.root / "audit.log").read_text()
    assert "read-only tool read_file inside the project" in audit  # decided by policy, audited


def test_a_shell_command_waits_in_the_clutch_rejected_then_edited(
    real_cli: Path, gemini_fake: GeminiFake, hook_app_factory: HookAppFactory, app_dir: Path
) -> None:
    (app_dir / "config.toml").write_text(
        "[ai]\nprovider = 'gemini_cli'\n\n[providers.gemini_cli]\n"
        f"model = '{MODEL}'\nbase_url = '{gemini_fake.base_url}'\nbinary = '{real_cli}'\n"
    )
    from manual_slop.ai import AIClient

    app = hook_app_factory(
        token=TOKEN, backend=AIClient(), environ={"GEMINI_API_KEY": KEY, "SLOP_HOOK_TOKEN": TOKEN}
    )
    gemini_fake.push(
        Reply("", [Call("run_shell_command", {"command": "echo first > first.txt"})]),
        Reply("", [Call("run_shell_command", {"command": "echo second > second.txt"})]),
        Reply("Done."),
    )
    api = app.client()
    request_id = api.send("write the files")

    first = _next_ask(api)
    assert first["payload"]["tool"] == "run_shell_command"
    assert first["payload"]["args"]["command"] == "echo first > first.txt"
    api.reject(first["id"], "not that one")
    second = _next_ask(api, after=first["id"])
    assert second["payload"]["args"]["command"] == "echo second > second.txt"
    api.approve(second["id"], {"args": {**second["payload"]["args"], "command": "echo edited > edited.txt"}})
    status = api.wait_for_request(request_id, timeout=60)

    assert status["state"] == "done" and status["response"] == "Done.", status
    assert not (app_dir / "first.txt").exists() and not (app_dir / "second.txt").exists()
    assert (app_dir / "edited.txt").read_text() == "edited\n"  # the edited command ran, not the asked one
    assert "REJECTED by user: not that one" in contents(gemini_fake, 1)  # the model heard why
    tools = [e for e in api.tool_calls()["entries"] if e["tool"] == "run_shell_command"]
    assert [(e["status"], e["executed_by"]) for e in tools] == [
        ("rejected", "gemini_cli"),
        ("success", "gemini_cli"),
    ]
    clicalls = (app.ctrl.session_log.root / "clicalls.log").read_text()
    assert "--approval-mode" in clicalls and "yolo" in clicalls
    for secret in (KEY, TOKEN, "***"):  # nothing to redact: secrets never reached the log
        assert secret not in clicalls


def test_without_the_hook_api_the_bridge_denies(
    real_cli: Path, gemini_fake: GeminiFake, rigs, tmp_path: Path
) -> None:
    gemini_fake.push(
        Reply("", [Call("run_shell_command", {"command": "echo x > x.txt"})]), Reply("Understood.")
    )
    rig: Rig = rigs(real_cli, gemini_fake, hook_api=lambda: ("http://127.0.0.1:9", ""))  # nothing listens
    assert rig.client.send("", "write x", base_dir=str(tmp_path)) == "Understood."
    assert not (tmp_path / "x.txt").exists()
    assert "unreachable" in contents(gemini_fake, 1) and "nobody could approve it" in contents(gemini_fake, 1)
    assert [e["status"] for e in rig.tools] == ["rejected"]


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [(429, ErrorKind.RATE_LIMIT, True), (400, ErrorKind.UNKNOWN, False), (500, ErrorKind.UNKNOWN, True)],
)
def test_http_errors_become_classified_provider_errors(
    real_cli: Path,
    gemini_fake: GeminiFake,
    rigs,
    tmp_path: Path,
    status: int,
    kind: ErrorKind,
    retryable: bool,
) -> None:
    gemini_fake.push(Fail(status))
    rig: Rig = rigs(real_cli, gemini_fake)
    with pytest.raises(ProviderError) as caught:
        rig.client.send("", "hi", base_dir=str(tmp_path))
    error = caught.value
    assert (error.kind, error.status, error.retryable) == (kind, status, retryable)
    assert error.ui_message().startswith("[GEMINI_CLI ")
    assert rig.cli_calls[0]["exit_code"] == status % 256
    assert len(gemini_fake.model_calls()) == 1  # the CLI did not retry behind our back


def test_a_cli_killed_mid_stream_is_a_clean_error(
    real_cli: Path, gemini_fake: GeminiFake, rigs, tmp_path: Path
) -> None:
    gemini_fake.push(Reply("one two three four five six seven eight", chunk_delay=0.5))
    rig: Rig = rigs(real_cli, gemini_fake)
    killed: list[int] = []

    def kill_the_cli(chunk: str) -> None:
        if not killed:
            (cli,) = [p for p in psutil.Process().children() if "node" in p.name() or "gemini" in p.name()]
            killed.append(cli.pid)
            os.kill(cli.pid, signal.SIGKILL)

    with pytest.raises(ProviderError) as caught:
        rig.client.send("", "count slowly", base_dir=str(tmp_path), stream_callback=kill_the_cli)
    assert killed and "killed by SIGKILL" in caught.value.detail and not caught.value.retryable
    assert rig.cli_calls[0]["exit_code"] == -signal.SIGKILL
    assert not psutil.pid_exists(killed[0])  # reaped: no zombie (the fixture checks every child)


def _next_ask(api: Any, after: str | None = None) -> dict[str, Any]:
    def found() -> bool:
        return any(d["kind"] == "ask" and d["id"] != after for d in api.pending())

    wait_until(found, timeout=60)
    return next(d for d in api.pending() if d["kind"] == "ask" and d["id"] != after)


def test_commands_the_cli_runs_see_no_credential(
    real_cli: Path, gemini_fake: GeminiFake, hook_app_factory: HookAppFactory, app_dir: Path, monkeypatch
) -> None:
    """Not the app's other keys, not the CLI's own key, not the hook token: an approved ``env``
    shows the model none of them."""
    other_key = "sk-ant-in-the-apps-environment-0042"
    monkeypatch.setenv("ANTHROPIC_API_KEY", other_key)
    monkeypatch.setenv("MY_SERVICE_TOKEN", "svc-token-value-0043")
    (app_dir / "config.toml").write_text(
        "[ai]\nprovider = 'gemini_cli'\n\n[providers.gemini_cli]\n"
        f"model = '{MODEL}'\nbase_url = '{gemini_fake.base_url}'\nbinary = '{real_cli}'\n"
    )
    from manual_slop.ai import AIClient

    app = hook_app_factory(backend=AIClient(), environ={"GEMINI_API_KEY": KEY})
    gemini_fake.push(Reply("", [Call("run_shell_command", {"command": "env"})]), Reply("Seen."))
    api = app.client()
    request_id = api.send("show me the environment")
    api.approve(_next_ask(api)["id"])
    assert api.wait_for_request(request_id, timeout=60)["state"] == "done"
    seen = contents(gemini_fake, 1)  # the request that carries the command's output
    assert "PATH=" in seen  # the output did reach the model...
    for secret in (other_key, "svc-token-value-0043", KEY, app.token):
        assert secret not in seen  # ...without a single credential


def test_a_cancel_kills_the_cli_within_a_second(
    real_cli: Path, gemini_fake: GeminiFake, rigs, tmp_path: Path
) -> None:
    """The fake answers nothing for 30 s: the CLI waits on it until the request is stopped."""
    import psutil

    from manual_slop.cancel import CancelToken, RequestCancelled
    from tests.fakes import Hang
    from tests.helpers import cancel_when

    gemini_fake.push(Hang(30))
    rig: Rig = rigs(real_cli, gemini_fake)
    token = CancelToken()
    outcome, seconds = cancel_when(
        lambda: rig.client.send("", "a question", base_dir=str(tmp_path), cancel=token),
        lambda: bool(gemini_fake.model_calls()),  # the CLI started and its request reached the fake
        token,
        ready_timeout=30,
    )
    assert gemini_fake.model_calls()
    assert seconds < 1.0
    assert isinstance(outcome, RequestCancelled)
    node = [p for p in psutil.Process().children(recursive=True) if "node" in p.name()]
    assert node == []  # its whole process tree is gone
