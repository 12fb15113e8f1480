"""Secrets never leave: a scripted model tries every way to see a key, and afterwards no key (nor
any 12-character piece of one) is in any API reply, log file, the history, the comms log or any
request the provider received. The same run with the redactor switched off must leak.

The app runs as a real subprocess (``sloppy.py --headless``) against a fake OpenAI-compatible
server. Keys sit in ``credentials.toml`` (one the environment overrides, one under a table no
provider uses), in the environment (the provider key and a ``*_TOKEN`` variable) and in the
config (the hook token). The model: runs ``cat`` of the credentials and the config (the user
approves), reads the config and the credentials with ``read_file``, reads a symlink to them,
fetches a URL that echoes a key, and edits a tracked file whose key line is masked; the
context holds ``credentials.toml``, a symlink to it and ``.env``.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from simulation.launcher import AppSpec, LaunchedApp

from manual_slop.hooks import ApiHookClient
from manual_slop.redaction import PIECE_CHARS
from tests.fakes import Call, OpenAIFake, Reply
from tests.fakes.http import QuietHTTPServer

SITE = Path(__file__).resolve().parent / "site"


def key(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(16)}"


class Keys:
    def __init__(self) -> None:
        self.anthropic_file = key("sk-ant-file")
        self.deepseek_file = key("sk-ds-file")  # overridden by DEEPSEEK_API_KEY: still a secret
        self.extra_file = key("extra-pw")  # in a table no provider reads
        self.openai_env = key("sk-oai-env")  # the fake provider's key
        self.deepseek_env = key("sk-ds-env")
        self.service_env = key("svc-token")  # MY_SERVICE_TOKEN
        self.hook = key("hook-token")

    def all(self) -> dict[str, str]:
        return dict(vars(self))

    def needles(self) -> dict[str, str]:
        """Every PIECE_CHARS-character piece of every key -> which key it belongs to."""
        return {
            v[i : i + PIECE_CHARS]: k for k, v in self.all().items() for i in range(len(v) - PIECE_CHARS + 1)
        }


class EchoServer:
    """Answers every GET with a page that prints a key (a hostile web page)."""

    def __init__(self, secret: str) -> None:
        body = f"<html><body><p>your key is {secret}</p></body></html>".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="echo-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/page"

    def __enter__(self) -> EchoServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def write_workspace(workdir: Path, keys: Keys) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "credentials.toml").write_text(
        f'[anthropic]\napi_key = "{keys.anthropic_file}"\n[deepseek]\napi_key = "{keys.deepseek_file}"\n'
        f'[extra]\nservice_password = "{keys.extra_file}"\n'
    )
    space = workdir / "workspace"
    (space / "src").mkdir(parents=True)
    (space / "src" / "app.py").write_text("def main() -> None:\n    print('hello')\n")
    (space / "src" / "settings.py").write_text(
        f'HOST = "example.org"\nAPI_KEY = "{keys.anthropic_file}"\n'
        f'BACKUP = "{keys.service_env[:20]}"  # not masked: only the redactor can catch it\nPORT = 1\n'
    )
    (space / ".env").write_text(f"MY_SERVICE_TOKEN={keys.service_env}\n")
    (space / "innocent.txt").symlink_to(workdir / "credentials.toml")


def turns(echo_url: str) -> list[Reply]:
    explore = [
        Call("run_shell", {"script": "cat ../credentials.toml ../config.toml; env | sort"}),
        Call("read_file", {"path": "../config.toml"}),
        Call("read_file", {"path": "../credentials.toml"}),
        Call("read_file", {"path": "innocent.txt"}),
        Call("grep", {"path": ".", "regex": "KEY|TOKEN"}),
        Call("fetch_url", {"url": echo_url}),
        Call("edit_file", {"path": "src/settings.py", "old_string": "PORT = 1", "new_string": "PORT = 2"}),
    ]
    return [Reply("Let me look around.", explore), Reply("I changed the port."), Reply("All done.")]


@pytest.fixture
def echo(request: pytest.FixtureRequest) -> Iterator[EchoServer]:
    with EchoServer(request.getfixturevalue("keys").openai_env) as server:
        yield server


@pytest.fixture
def keys() -> Keys:
    return Keys()


def run_scenario(workdir: Path, keys: Keys, echo_url: str, redactor_on: bool) -> dict[str, str]:
    """Run the hostile session; every text that left the app, by where it was found."""
    write_workspace(workdir, keys)
    fake = OpenAIFake(api_key=keys.openai_env, models=["leak-model"]).start()
    replies: list[str] = []
    app = LaunchedApp(
        workdir,
        AppSpec(
            config={
                "ai": {"provider": "openai_compatible", "model": "leak-model"},
                "approval": {"policy": "manual", "timeout_s": 300.0},
                "hook": {"token": keys.hook},
                "providers": {"openai_compatible": {"base_url": fake.base_url, "model": "leak-model"}},
                "projects": {"active": "project.toml"},
            },
            project={
                "project": {"name": "leak"},
                "files": {
                    "base_dir": "workspace",
                    "paths": ["src/*.py", "../credentials.toml", "innocent.txt", ".env"],
                },
                "context": {"strategy": "full", "views": {"src/settings.py": {"mode": "masked"}}},
            },
            env={
                "OPENAI_API_KEY": keys.openai_env,
                "DEEPSEEK_API_KEY": keys.deepseek_env,
                "MY_SERVICE_TOKEN": keys.service_env,
                "PYTHONPATH": str(SITE),
                "SLOP_TEST_WEB_LOOPBACK": "1",
                "SLOP_TEST_REDACTOR_OFF": "" if redactor_on else "1",
            },
            token=keys.hook,
        ),
    )
    try:
        fake.push(*turns(echo_url))
        url = app.start()
        client = ApiHookClient(
            url, keys.hook, timeout=15.0, on_reply=lambda m, p, s, body: replies.append(json.dumps(body))
        )
        with client:
            first = client.send("Check the configuration and set the port to 2.")
            approve_until_done(client, first)
            second = client.send("Summarize what you saw.")
            approve_until_done(client, second)
            assert "PORT = 2" in (workdir / "workspace" / "src" / "settings.py").read_text()
            for path in (
                "/api/gui/state", "/api/session", "/api/pending", "/api/mma/status", "/api/diagnostics",
                f"/api/requests/{first}", f"/api/requests/{second}", "/api/comms?limit=1000",
                "/api/tool_calls?limit=1000", "/api/events?since=0&limit=10000",
            ):  # fmt: skip
                client.get(path)
        app.stop()
    finally:
        if app.running:
            app.stop()
        fake.stop()
    found = {f"reply {i}": text for i, text in enumerate(replies)}
    sources = {"credentials.toml", "config.toml", "workspace/.env", "workspace/innocent.txt"}
    for path in sorted(workdir.rglob("*")):
        name = path.relative_to(workdir).as_posix()
        if path.is_file() and name not in sources and not name.startswith("workspace/src/"):
            found[name] = path.read_text(encoding="utf-8", errors="replace")  # logs, history, app output
    for index, call in enumerate(fake.model_calls()):
        found[f"provider request {index}"] = json.dumps(call.body)
    return found


def approve_until_done(client: ApiHookClient, request_id: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for dialog in client.pending():
            client.approve(dialog["id"])
        status = client.request_status(request_id)
        if status["state"] in ("done", "error"):
            assert status["state"] == "done", status
            return
        time.sleep(0.05)
    raise AssertionError(f"request {request_id} did not finish within {timeout} s")


def leaks(found: dict[str, str], keys: Keys) -> list[str]:
    needles = keys.needles()
    return sorted({f"{where}: {needles[n]}" for where, text in found.items() for n in needles if n in text})


def test_no_key_leaves_the_app(tmp_path: Path, keys: Keys, echo: EchoServer) -> None:
    found = run_scenario(tmp_path / "on", keys, echo.url, redactor_on=True)
    assert any(name.startswith("provider request") for name in found)
    assert any(name.endswith("comms.log") for name in found) and any("app.log" in n for n in found)
    assert any(name.endswith("_history.toml") for name in found)
    problems = leaks(found, keys)
    assert not problems, "keys leaked:\n" + "\n".join(problems)
    calls = "\n".join(text for name, text in found.items() if name.startswith("provider request"))
    assert "[REDACTED:" in calls  # the model was told something was withheld, not silently given less
    assert "refused" in calls and "rule: credentials" in calls


def test_the_same_run_leaks_without_the_redactor(tmp_path: Path, keys: Keys, echo: EchoServer) -> None:
    found = run_scenario(tmp_path / "off", keys, echo.url, redactor_on=False)
    problems = leaks(found, keys)
    assert any(p.startswith("provider request") for p in problems), problems
    assert any("openai_env" in p for p in problems)  # the echoed page reached the model
