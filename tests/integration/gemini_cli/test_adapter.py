"""The gemini_cli adapter's own logic, run against the mock CLI (fast): the private home, the
command line and environment, sessions, the timeout (paused while a human decides), the
process-tree kill, malformed output, exit codes, and projects it refuses."""

from __future__ import annotations

import gc
import json
import stat
import sys
import time
from pathlib import Path

import psutil
import pytest

from manual_slop.ai import ErrorKind, Message, ModelRequest, ProviderError
from manual_slop.ai.errors import ConfigurationError
from manual_slop.ai.providers.base import ProviderConfig
from manual_slop.ai.providers.gemini_cli import GeminiCliProvider
from manual_slop.ai.providers.gemini_cli_home import HOOK_TIMEOUT_MS, CliHome, bridge_script
from manual_slop.config import Secret
from tests.fakes import FakeGeminiCli, cli_turn
from tests.integration.gemini_cli.conftest import KEY, MODEL


@pytest.fixture
def mock_cli(tmp_path: Path) -> FakeGeminiCli:
    return FakeGeminiCli(tmp_path / "cli")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_the_private_home_holds_the_settings_and_the_bridge_hook() -> None:
    home = CliHome()
    root = home.ensure()
    try:
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
        settings = json.loads((root / ".gemini" / "settings.json").read_text())
        assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
        assert settings["telemetry"]["enabled"] is False
        assert settings["privacy"]["usageStatisticsEnabled"] is False
        assert settings["general"]["enableAutoUpdate"] is False
        assert settings["general"]["enableAutoUpdateNotification"] is False
        assert settings["general"]["maxAttempts"] == 1  # the client does the retrying
        assert settings["hooksConfig"]["enabled"] is True
        (group,) = settings["hooks"]["BeforeTool"]
        (hook,) = group["hooks"]
        assert group["matcher"] == ".*"  # every tool, read-only ones too
        assert hook["type"] == "command" and hook["timeout"] == HOOK_TIMEOUT_MS
        assert sys.executable in hook["command"] and str(bridge_script()) in hook["command"]
        assert "name" not in hook  # hooksConfig.disabled could name it
        env = home.environment()
        assert env["GEMINI_CLI_HOME"] == str(root) and env["TMPDIR"] == str(root / "tmp")
        assert home.ensure() == root  # one home per session
    finally:
        home.remove()
    assert not root.exists()
    forgotten = CliHome()
    root = forgotten.ensure()
    del forgotten  # never removed: it goes with the object
    gc.collect()
    assert not root.exists()


def test_argv_and_environment_carry_no_secret(
    rigs, mock_cli: FakeGeminiCli, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "inherited-google-key")  # would win over ours in the CLI
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://inherited.invalid")
    mock_cli.push(cli_turn("hi"))
    rig = rigs(
        mock_cli.binary,
        base_url="http://127.0.0.1:1/",
        hook_api=lambda: ("http://127.0.0.1:2", "hook-token-value"),
    )
    assert rig.client.send("", "hello", base_dir=str(project)) == "hi"
    (call,) = mock_cli.calls()
    argv = call["argv"]
    assert argv[argv.index("-m") + 1] == MODEL and argv[argv.index("-o") + 1] == "stream-json"
    assert argv[argv.index("--approval-mode") + 1] == "yolo" and argv[argv.index("-p") + 1] == "hello"
    assert "--resume" not in argv
    assert call["cwd"] == str(project.resolve())
    assert call["has_key"]
    env = call["env"]
    assert env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:1"
    assert env["SLOP_HOOK_URL"] == "http://127.0.0.1:2" and env["SLOP_BRIDGE_DENY"] == ""
    home = Path(env["GEMINI_CLI_HOME"])
    assert (home / ".gemini" / "settings.json").is_file() and env["TMPDIR"] == str(home / "tmp")
    logged = json.dumps(rig.cli_calls)
    for secret in (KEY, "hook-token-value", "inherited-google-key"):
        assert secret not in logged and secret not in json.dumps(argv)
    assert rig.cli_calls[0]["cwd"] == str(project.resolve()) and rig.cli_calls[0]["exit_code"] == 0
    rig.client.cleanup()
    assert not home.exists()  # the private home goes with the session


def test_inherited_key_and_hook_address_are_replaced_not_kept(
    mock_cli: FakeGeminiCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "inherited")
    monkeypatch.setenv("SLOP_HOOK_URL", "http://elsewhere.invalid")
    config = ProviderConfig(
        "gemini_cli", MODEL, api_key=Secret(KEY), options={"binary": str(mock_cli.binary)}
    )
    provider = GeminiCliProvider(config)
    try:
        env = provider.environment(tools_enabled=False)
        assert "GOOGLE_API_KEY" not in env and env["GEMINI_API_KEY"] == KEY
        assert env["SLOP_HOOK_URL"] == "" and "off" in env["SLOP_BRIDGE_DENY"]
        assert env["GEMINI_CLI_TRUST_WORKSPACE"] == "true" and env["GEMINI_CLI_NO_RELAUNCH"] == "1"
    finally:
        provider.close()


def test_text_only_requests_tell_the_bridge_to_deny(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("a summary"))
    rig = rigs(mock_cli.binary)
    assert rig.client.run_discussion_compression("a long discussion") == "a summary"
    assert mock_cli.calls()[0]["env"]["SLOP_BRIDGE_DENY"]


def test_the_approval_mode_comes_from_the_settings(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("planned"))
    rig = rigs(mock_cli.binary, approval_mode="plan")
    assert rig.client.send("", "plan it") == "planned"
    argv = mock_cli.calls()[0]["argv"]
    assert argv[argv.index("--approval-mode") + 1] == "plan"
    rig.client.configure(approval_mode="everything")
    with pytest.raises(
        ConfigurationError, match=r"approval_mode.*yolo, auto_edit, plan, default.*'everything'"
    ):
        rig.client.send("", "again")
    assert len(mock_cli.calls()) == 1


def test_reset_session_and_a_new_base_dir_start_new_sessions(
    rigs, mock_cli: FakeGeminiCli, project: Path, tmp_path: Path
) -> None:
    mock_cli.push(cli_turn("one"), cli_turn("two"), cli_turn("three"), cli_turn("four"))
    rig = rigs(mock_cli.binary)
    rig.client.send("", "q1", base_dir=str(project))
    rig.client.send("", "q2", base_dir=str(project))
    rig.client.reset_session()
    rig.client.send("", "q3", base_dir=str(project))
    rig.client.send("", "q4", base_dir=str(tmp_path))  # another folder: another CLI project
    resumed = [FakeGeminiCli.flag(c["argv"], "--resume") for c in mock_cli.calls()]
    assert resumed[0] is None and resumed[1] and resumed[2] is None and resumed[3] is None
    assert "q3" in mock_cli.calls()[3]["stdin"]  # the new session got the conversation


def test_a_hang_past_the_timeout_kills_the_whole_process_tree(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("never", delay=30, child=True))
    rig = rigs(mock_cli.binary, timeout_s=1.0)
    with pytest.raises(ProviderError) as caught:
        rig.client.send("", "hang")
    assert caught.value.kind is ErrorKind.NETWORK and caught.value.retryable
    assert "within 1 s" in caught.value.detail
    child = mock_cli.calls()[0]["child"]
    deadline = time.monotonic() + 2.0  # killed: gone at once, but a loaded machine may take a moment
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(child), "the CLI's child survived"
    assert rig.cli_calls[0]["exit_code"] is None


def test_time_spent_waiting_for_a_human_does_not_count(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("approved eventually", ask_wait=2.0))
    rig = rigs(mock_cli.binary, timeout_s=1.0)
    assert rig.client.send("", "needs approval") == "approved eventually"


def test_a_line_that_is_not_a_json_event_is_an_error(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("fine", garbage="Loaded cached credentials."))
    rig = rigs(mock_cli.binary)
    with pytest.raises(ProviderError) as caught:
        rig.client.send("", "hi")
    error = caught.value
    assert error.kind is ErrorKind.UNKNOWN and not error.retryable
    assert "not a stream-json event" in error.detail and "Loaded cached credentials." in error.detail
    assert "Loaded cached credentials." in rig.cli_calls[0]["stdout"]


def test_a_run_without_a_result_event_is_an_error(rigs, mock_cli: FakeGeminiCli) -> None:
    mock_cli.push(cli_turn("half an answer", no_result=True))
    rig = rigs(mock_cli.binary)
    with pytest.raises(ProviderError, match="without a result event"):
        rig.client.send("", "hi")


@pytest.mark.parametrize(
    ("exit_code", "kind", "status", "retryable"),
    [
        (173, ErrorKind.RATE_LIMIT, 429, True),  # 429 % 256
        (144, ErrorKind.UNKNOWN, 400, False),
        (244, ErrorKind.UNKNOWN, 500, True),
        (145, ErrorKind.AUTH, 401, False),
        (41, ErrorKind.AUTH, None, False),  # the CLI's FatalAuthenticationError
        (52, ErrorKind.UNKNOWN, None, False),
    ],
)
def test_exit_codes_are_classified(
    rigs, mock_cli: FakeGeminiCli, exit_code: int, kind: ErrorKind, status: int | None, retryable: bool
) -> None:
    mock_cli.push(cli_turn(error={"message": "[API Error: something]"}, exit=exit_code))
    rig = rigs(mock_cli.binary)
    with pytest.raises(ProviderError) as caught:
        rig.client.send("", "hi")
    error = caught.value
    assert (error.kind, error.status, error.retryable) == (kind, status, retryable)
    assert f"exit code {exit_code}" in error.detail and rig.cli_calls[0]["exit_code"] == exit_code


def test_a_project_whose_cli_settings_configure_hooks_is_refused(
    rigs, mock_cli: FakeGeminiCli, project: Path
) -> None:
    settings = project / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // switch the approval hook off\n  "hooksConfig": {"enabled": false}\n}\n')
    rig = rigs(mock_cli.binary)
    with pytest.raises(ConfigurationError) as caught:
        rig.client.send("", "hi", base_dir=str(project))
    assert str(settings) in str(caught.value) and "hooksConfig" in str(caught.value)
    assert mock_cli.calls() == []  # the CLI never ran there
    settings.write_text('{"general": {"vimMode": false}}')
    mock_cli.push(cli_turn("ok"))
    assert rig.client.send("", "hi", base_dir=str(project)) == "ok"


def test_without_a_key_the_provider_says_where_to_put_one(mock_cli: FakeGeminiCli) -> None:
    provider = GeminiCliProvider(
        ProviderConfig("gemini_cli", MODEL, options={"binary": str(mock_cli.binary)})
    )
    request = ModelRequest("system", "", [Message.user("hi")])
    with pytest.raises(ProviderError) as caught:
        provider.generate(request)
    assert caught.value.kind is ErrorKind.AUTH and "GEMINI_API_KEY" in caught.value.detail
    assert mock_cli.calls() == []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
