"""A second OS user against a running app with a shell approval pending.

Requirement: with the app running and a shell approval pending, a second OS user cannot
read the token file nor use the API.

The scene (:func:`pending_shell_approval`): the real app runs headless as a subprocess
(as root), its provider is a scripted OpenAI-compatible fake that answers with a
``run_shell`` call touching a marker file, and the approval policy is ``manual``, so the
script waits in a ``confirm_script`` dialog. A system user made for the test
(:func:`intruder`) then runs :data:`ATTACK` with the system interpreter under ``setpriv``
and reports what it could read and what the Hook API answered it. The first test checks the
requirement (token file, token folder, API, and that the token is in nothing readable); the
second checks that the session logs, which hold the conversation and the pending script,
are private too (folder 0700, files 0600).

Root (the app's user) then checks that the dialog is still undecided, the marker absent and
the app alive; it rejects the dialog, shuts the app down over the API and expects exit 0.

The tests are honest by construction: everything the intruder aims at lives in folders
anyone may traverse, so only each target's own mode stands between the intruder and it::

    /tmp/                                  1777  the system's (TMPDIR=/tmp, XDG_RUNTIME_DIR unset)
    ├── manual_slop-0/                     0700  the runtime token folder
    │   └── hook-<port>.token              0600
    └── slop-other-user-XXXX/              0755  made here, removed afterwards
        ├── config.toml, project.toml
        ├── hook.token                     0600  the --token-file copy
        ├── logs/sessions/<stamp>/         0700  the session logs (files 0600)
        └── workspace/                           the shell's base dir (the marker would go here)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from manual_slop.dialogs import PendingKind
from manual_slop.hooks import ApiHookClient
from manual_slop.hooks.token import runtime_token_path
from tests.fakes import Call, OpenAIFake, Reply
from tests.helpers import app_env

ROOT = Path(__file__).resolve().parents[2]
SLOPPY = ROOT / "sloppy.py"
SYSTEM_PYTHON = "/usr/bin/python3"  # the venv's interpreter lives under /root, which the intruder cannot read
ANNOUNCE = "hook server listening on "
SHARED_TMP = "/tmp"  # world-traversable (1777): the app's tempdir, so its token folder lands here

START_TIMEOUT_S = 30.0
PENDING_TIMEOUT_S = 30.0
ATTACK_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0

SKIP_REASON = "needs root to create a second OS user (useradd)"

# Run as the intruder by the system interpreter (standard library only). argv[1] is the plan
# (JSON); stdout is the report (JSON). It is never told the token.
ATTACK = r"""
import http.client, json, os, secrets, sys

plan = json.loads(sys.argv[1])
report = {
    "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
    "open": {}, "list": {}, "http": {}, "read": {}, "denied": {}, "walk_errors": [],
}

def outcome(action):
    try:
        action()
    except OSError as exc:
        return type(exc).__name__
    return "ok"

def read_text(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")

for path in plan["token_files"]:
    report["open"][path] = outcome(lambda: read_text(path))
for path in plan["token_folders"]:
    report["list"][path] = outcome(lambda: os.listdir(path))

def call(method, path, token):
    headers = {"Accept": "application/json"}
    body = None
    if method == "POST":
        body = json.dumps({"approved": True}).encode()
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    conn = http.client.HTTPConnection("127.0.0.1", plan["port"], timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        return [reply.status, reply.read().decode("utf-8", "replace")]
    finally:
        conn.close()

guesses = {"none": None, "empty": "", "guessed": secrets.token_urlsafe(32)}
report["http"]["GET /status"] = call("GET", "/status", None)
for name, token in guesses.items():
    report["http"]["GET /api/pending " + name] = call("GET", "/api/pending", token)
    report["http"]["POST /api/pending/<id> " + name] = call("POST", "/api/pending/" + plan["dialog"], token)

def grab(path):
    try:
        report["read"][path] = read_text(path)
    except OSError as exc:
        report["denied"][path] = type(exc).__name__

for top in plan["walk"]:
    for folder, _, files in os.walk(top, onerror=lambda exc: report["walk_errors"].append(
            [exc.filename, type(exc).__name__])):
        for name in files:
            grab(os.path.join(folder, name))
for path in plan["extra_reads"]:
    grab(path)

json.dump(report, sys.stdout)
"""


# =========================================================================================
# the second user
# =========================================================================================
@dataclass(frozen=True, slots=True)
class Intruder:
    """A system user with no home, no shell and no groups, made for one test."""

    name: str
    uid: int
    gid: int

    def run(self, code: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
        """Run ``code`` as this user with the system interpreter; its JSON report on stdout."""
        argv = [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            SYSTEM_PYTHON,
            "-I",
            "-c",
            code,
            *args,
        ]
        done = subprocess.run(
            argv, cwd="/", env=env, capture_output=True, text=True, timeout=ATTACK_TIMEOUT_S
        )
        assert done.returncode == 0, f"the intruder's script failed ({done.returncode}):\n{done.stderr}"
        return json.loads(done.stdout)


@pytest.fixture
def intruder() -> Iterator[Intruder]:
    """A fresh system user (root only), deleted afterwards whatever happens."""
    tools = ("useradd", "userdel", "setpriv")
    is_root = getattr(os, "geteuid", lambda: -1)() == 0
    if not is_root or not all(shutil.which(t) for t in tools) or not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(SKIP_REASON)
    import pwd  # POSIX only: imported once we know we are root on a system with useradd

    name = f"slopx{secrets.token_hex(4)}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        entry = pwd.getpwnam(name)
        assert entry.pw_uid != 0 and entry.pw_gid != 0
        yield Intruder(name, entry.pw_uid, entry.pw_gid)
    finally:
        subprocess.run(["userdel", name], check=True, capture_output=True, timeout=30)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder under /tmp that anyone may traverse and list (0755), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="slop-other-user-", dir=SHARED_TMP))
    try:
        folder.chmod(0o755)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def searchable_by_others(path: Path) -> bool:
    """Every folder from ``/`` down to ``path`` lets others through (o+x)."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


# =========================================================================================
# the scene: the app with a shell approval pending
# =========================================================================================
@dataclass(slots=True)
class Scene:
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    token_path: Path
    token_copy: Path
    log_dir: Path
    marker: Path
    client: ApiHookClient
    request_id: str
    dialog: dict[str, Any]
    exit_code: int | None = None


def write_app_files(folder: Path, fake: OpenAIFake) -> None:
    (folder / "workspace").mkdir(mode=0o755)
    config = {
        "ai": {"provider": "openai_compatible", "model": "sim-model"},
        "approval": {"policy": "manual", "timeout_s": 300.0},
        "providers": {"openai_compatible": {"model": "sim-model", "base_url": fake.base_url}},
        "projects": {"active": "project.toml"},
    }
    project = {"project": {"name": "other-user"}, "files": {"base_dir": "workspace", "paths": []}}
    (folder / "config.toml").write_bytes(tomli_w.dumps(config).encode("utf-8"))
    (folder / "project.toml").write_bytes(tomli_w.dumps(project).encode("utf-8"))


def wait_for_announcement(proc: subprocess.Popen[bytes], stdout: Path, stderr: Path) -> int:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for line in stdout.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(ANNOUNCE):
                return int(line.rsplit(":", 1)[1])
        if proc.poll() is not None:
            pytest.fail(f"the app exited ({proc.returncode}) before listening:\n{stderr.read_text()}")
        time.sleep(0.02)
    pytest.fail(f"the app did not announce its Hook API within {START_TIMEOUT_S:g} s")


def wait_for_shell_dialog(proc: subprocess.Popen[bytes], client: ApiHookClient) -> dict[str, Any]:
    deadline = time.monotonic() + PENDING_TIMEOUT_S
    while time.monotonic() < deadline:
        shells = [d for d in client.pending() if d["kind"] == PendingKind.CONFIRM_SCRIPT]
        if shells:
            return shells[0]
        assert proc.poll() is None, f"the app exited ({proc.returncode})"
        time.sleep(0.05)
    pytest.fail(f"no shell approval pending within {PENDING_TIMEOUT_S:g} s")


def stop_app(scene: Scene) -> None:
    """Reject what is still pending, let the request finish, shut down; record the exit code."""
    proc, client = scene.proc, scene.client
    try:
        if proc.poll() is None:
            for dialog in client.pending():
                client.post(f"/api/pending/{dialog['id']}", {"approved": False})
            client.wait_for_request(scene.request_id, REQUEST_TIMEOUT_S)
            client.post("/api/shutdown", {})
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the app did not exit within {STOP_TIMEOUT_S:g} s of /api/shutdown")
        scene.exit_code = proc.returncode
    finally:
        client.close()
        if proc.poll() is None:  # whatever went wrong above, never leave it running
            proc.kill()
            proc.wait(5)


@contextlib.contextmanager
def pending_shell_approval(folder: Path, private: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    """The app, headless, with a ``run_shell`` call waiting for approval; stopped on exit."""
    marker = folder / "workspace" / "marker"
    api_key = f"sk-fake-{secrets.token_hex(8)}"
    fake = OpenAIFake(
        [Reply(calls=[Call("run_shell", {"script": f"touch {shlex.quote(str(marker))}"})]), Reply("done")],
        api_key=api_key,
        models=["sim-model"],
    )
    fake.start()
    try:
        write_app_files(folder, fake)
        # The token folder goes to /tmp whatever the developer's session says.
        env = app_env(OPENAI_API_KEY=api_key, TMPDIR=SHARED_TMP)
        env.pop("XDG_RUNTIME_DIR", None)
        monkeypatch.setattr(tempfile, "tempdir", SHARED_TMP)  # runtime_token_path as the app sees it
        token_copy, log_dir = folder / "hook.token", folder / "logs"
        stdout, stderr = private / "app.stdout", private / "app.stderr"
        argv = [
            sys.executable, str(SLOPPY), "--headless",
            "--config", str(folder / "config.toml"),
            "--project", str(folder / "project.toml"),
            "--log-dir", str(log_dir),
            "--token-file", str(token_copy),
            "--hook-port", "0",
        ]  # fmt: skip
        with stdout.open("wb") as out, stderr.open("wb") as err:
            proc = subprocess.Popen(
                argv, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
            )
        client: ApiHookClient | None = None
        scene: Scene | None = None
        try:
            port = wait_for_announcement(proc, stdout, stderr)
            token_path = runtime_token_path(port, env)
            token = token_path.read_text(encoding="utf-8").strip()
            client = ApiHookClient(f"http://127.0.0.1:{port}", token, timeout=10.0)
            request_id = client.post("/api/send", {"message": "run it"})["request_id"]
            dialog = wait_for_shell_dialog(proc, client)
            scene = Scene(
                proc, port, token, token_path, token_copy, log_dir, marker, client, request_id, dialog
            )
            yield scene
        finally:
            if scene is not None:
                stop_app(scene)
            else:
                if client is not None:
                    client.close()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
            if proc.returncode not in (0, None):
                print(stderr.read_text(encoding="utf-8", errors="replace"), file=sys.stderr)
    finally:
        fake.stop()


# =========================================================================================
# the tests
# =========================================================================================
def attack(scene: Scene, intruder: Intruder, shared_dir: Path) -> dict[str, Any]:
    """Run :data:`ATTACK` as ``intruder`` against ``scene``; its report."""
    token_folder = scene.token_path.parent
    plan = {
        "port": scene.port,
        "dialog": scene.dialog["id"],
        "token_files": [str(scene.token_path), str(scene.token_copy)],
        "token_folders": [str(token_folder)],
        "walk": [str(shared_dir), str(token_folder)],
        "extra_reads": [f"/proc/{scene.proc.pid}/environ", f"/proc/{scene.proc.pid}/cmdline"],
    }
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "TMPDIR": SHARED_TMP}  # the app's TMPDIR
    report = intruder.run(ATTACK, json.dumps(plan), env=env)
    # it really ran as the other user, without root's groups
    uid, euid, gid, egid, groups = report["ids"]
    assert (uid, euid, gid, egid) == (intruder.uid, intruder.uid, intruder.gid, intruder.gid)
    assert groups in ([], [intruder.gid])
    return report


def assert_still_pending(scene: Scene) -> None:
    """Root's view: the dialog waits, undecided; nothing ran; the app lives."""
    pending = scene.client.pending()
    assert [d["id"] for d in pending] == [scene.dialog["id"]]
    assert pending[0]["payload"] == scene.dialog["payload"]
    assert scene.client.request_status(scene.request_id)["state"] not in ("done", "error")
    assert not scene.marker.exists()
    assert scene.proc.poll() is None


def test_another_user_can_neither_read_the_token_nor_use_the_api(
    intruder: Intruder, shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pending_shell_approval(shared_dir, tmp_path, monkeypatch) as scene:
        # What protects the token is the mode of its file and folder, nothing above them.
        token_folder = scene.token_path.parent
        assert token_folder.parent == Path(SHARED_TMP) and searchable_by_others(token_folder.parent)
        assert searchable_by_others(shared_dir) and searchable_by_others(scene.log_dir)
        assert token_folder.stat().st_uid == 0 and stat.S_IMODE(token_folder.stat().st_mode) == 0o700
        assert stat.S_IMODE(scene.token_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(scene.token_copy.stat().st_mode) == 0o600
        assert scene.token_copy.read_text(encoding="utf-8").strip() == scene.token
        assert scene.dialog["payload"]["script"] == f"touch {shlex.quote(str(scene.marker))}"

        report = attack(scene, intruder, shared_dir)

        # it cannot read the token (either copy), nor list the token folder
        assert report["open"] == {
            str(scene.token_path): "PermissionError",
            str(scene.token_copy): "PermissionError",
        }
        assert report["list"] == {str(token_folder): "PermissionError"}

        # it reaches the server, and every call without the token is refused
        assert report["http"].pop("GET /status")[0] == 200
        refused = {call: status for call, (status, _) in report["http"].items()}
        assert len(refused) == 6 and refused == dict.fromkeys(refused, 401), report["http"]

        # nothing it could read holds the token (it walked the whole shared folder)
        assert any(path.endswith("config.toml") for path in report["read"]), sorted(report["read"])
        leaks = sorted(path for path, text in report["read"].items() if scene.token in text)
        assert leaks == [], f"the token is readable by another user in {leaks}"

        assert_still_pending(scene)

    assert scene.exit_code == 0
    assert not scene.marker.exists()  # rejected at the end: the script never ran


def test_another_user_cannot_read_the_session_logs(
    intruder: Intruder, shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The logs hold the conversation, including the script waiting for approval: the session
    folder is 0700 and its files 0600, under a logs folder anyone may list."""
    with pending_shell_approval(shared_dir, tmp_path, monkeypatch) as scene:
        report = attack(scene, intruder, shared_dir)
        sessions = f"{scene.log_dir / 'sessions'}/"
        session_dirs = [str(p) for p in (scene.log_dir / "sessions").iterdir()]
        assert session_dirs and all(stat.S_IMODE(os.stat(p).st_mode) == 0o700 for p in session_dirs)
        for folder in session_dirs:  # the intruder's walk reached each session folder and was stopped
            assert [folder, "PermissionError"] in report["walk_errors"], report["walk_errors"]
        files = [p for p in (scene.log_dir / "sessions").rglob("*") if p.is_file()]
        assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
        readable = {path: text for path, text in report["read"].items() if path.startswith(sessions)}
        modes = {path: oct(stat.S_IMODE(os.stat(path).st_mode)) for path in readable}
        script_seen_in = sorted(
            path for path, text in readable.items() if scene.dialog["payload"]["script"] in text
        )
        assert_still_pending(scene)
        assert sorted(readable) == [], (
            f"another user can read {len(readable)} session log file(s) {modes}; "
            f"the pending script is readable in {script_seen_in}"
        )

    assert scene.exit_code == 0
