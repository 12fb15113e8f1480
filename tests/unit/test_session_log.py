from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

from manual_slop.redaction import Redactor
from manual_slop.session_log import LOG_STREAMS, SessionLog


def test_folder_layout(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    assert log.root.parent == tmp_path / "sessions"
    for stream in LOG_STREAMS:
        assert (log.root / f"{stream}.log").exists()
    assert (log.root / "scripts").is_dir()
    meta = json.loads((log.root / "session.json").read_text())
    assert meta["ended"] is None
    log.close()
    assert json.loads((log.root / "session.json").read_text())["ended"] is not None


def test_two_sessions_in_one_second_get_two_folders(tmp_path: Path) -> None:
    first, second = SessionLog(tmp_path), SessionLog(tmp_path)
    assert first.root != second.root


def test_concurrent_appends_are_whole_lines(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    payload = "x" * 5000

    def writer(n: int) -> None:
        for i in range(300):
            log.append_comms({"writer": n, "i": i, "blob": payload})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    lines = (log.root / "comms.log").read_text().splitlines()
    assert len(lines) == 1800
    entries = [json.loads(line) for line in lines]
    for n in range(6):
        assert [e["i"] for e in entries if e["writer"] == n] == list(range(300))
    assert all("local_ts" in e for e in entries)


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    log = SessionLog(tmp_path, Redactor(["sk-ant-SECRET-123", 'quo"te-secret']))
    log.append_audit({"payload": "curl -H 'x-api-key: sk-ant-SECRET-123'"})
    log.append_cli_call({"env": {"K": 'quo"te-secret'}})
    script = log.save_script("export KEY=sk-ant-SECRET-123\necho hi\n")
    text = (log.root / "audit.log").read_text() + (log.root / "clicalls.log").read_text() + script.read_text()
    assert "SECRET-123" not in text and "te-secret" not in text
    assert text.count("[REDACTED:secret]") == 3
    assert json.loads((log.root / "clicalls.log").read_text())["env"]["K"] == "[REDACTED:secret]"


def test_scripts_are_numbered_in_order(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    first = log.save_script("echo 1")
    second = log.save_script("echo 2", suffix=".ps1")
    assert first.name.endswith("_0001.sh") and second.name.endswith("_0002.ps1")
    assert first.read_text() == "echo 1"


def test_read_skips_a_torn_last_line(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    log.append_tool_call({"tool": "read_file"})
    with (log.root / "toolcalls.log").open("a") as handle:
        handle.write('{"tool": "wri')
    assert [e["tool"] for e in log.read("toolcalls")] == ["read_file"]


def test_short_strings_are_not_treated_as_secrets() -> None:
    redactor = Redactor(["", "ab", "1234567"])
    assert redactor.redact("abc 12345678") == "abc 12345678"
    assert not redactor


def test_the_session_folder_is_private(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    log.append_comms({"x": 1})
    log.save_script("echo hi")
    assert stat.S_IMODE(log.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.scripts_dir.stat().st_mode) == 0o700
    for path in log.root.rglob("*"):
        if path.is_file():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
