"""``sloppy index`` and ``sloppy search`` as real subprocesses on a small project: real
chromadb, the real embedder, the app's path policy and redactor."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from manual_slop.commands.project import open_project
from manual_slop.memory.index import ProjectIndex
from manual_slop.memory.notes import Notes
from manual_slop.memory.service import index_dir_for
from manual_slop.memory.store import EventStore, memory_file_for
from tests.helpers import app_env

ROOT = Path(__file__).resolve().parents[2]
SLOPPY = ROOT / "sloppy.py"

CREDENTIAL = "sk-ant-cli-memory-0123456789abcdefXYZ"  # in credentials.toml and pasted into a source file
ENV_SECRET = "sk-proj-dotenv-9876543210zyxwvuTSRQ"  # only in .env, which is never read
PEM_MARKER = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"  # only in a refused key file
SECRETS = (CREDENTIAL, ENV_SECRET, PEM_MARKER)
FILES_TO_CANCEL = 600
SUMMARY = re.compile(
    r"(\d+) files: (\d+) changed \((\d+) chunks\), (\d+) unchanged, (\d+) skipped, (\d+) removed in"
)


def sloppy(args: list[str], cwd: Path, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SLOPPY), *args],
        cwd=cwd,
        env=app_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def summary(stderr: str) -> dict[str, int]:
    match = SUMMARY.search(stderr)
    assert match, stderr
    keys = ("files", "changed", "chunks", "unchanged", "skipped", "removed")
    return dict(zip(keys, map(int, match.groups()), strict=True))


def make_project(root: Path) -> Path:
    """A project with four indexable files, a tracked .env and a tracked private key."""
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "keys").mkdir()
    (root / "config.toml").write_text('[projects]\nactive = "app.toml"\n')
    (root / "credentials.toml").write_text(f'[anthropic]\napi_key = "{CREDENTIAL}"\n')
    (root / "app.toml").write_text(
        '[project]\nname = "app"\n\n[files]\npaths = ["src/**/*.py", "docs/*.md", ".env", "keys/*"]\n'
    )
    (root / "src" / "auth.py").write_text(
        '"""Logging users in."""\n\n\n'
        "def check_password(user, password):\n"
        '    """Compare the hash of the typed password with the stored password hash."""\n'
        "    return hash_password(password, user.salt) == user.password_hash\n"
    )
    (root / "src" / "billing.py").write_text(
        '"""Invoices."""\n\n\n'
        "def invoice_total(lines, tax_rate):\n"
        '    """Sum the invoice lines and add value-added tax."""\n'
        "    net = sum(line.price * line.quantity for line in lines)\n"
        "    return net * (1 + tax_rate)\n"
    )
    (root / "src" / "settings.py").write_text(
        '"""Settings of the anthropic client."""\n\n'
        f'ANTHROPIC_KEY = "{CREDENTIAL}"  # pasted by mistake\n'
        'MODEL = "claude"\n'
    )
    (root / "docs" / "deploy.md").write_text(
        "# Deploying\n\nBuild the docker image, push it to the registry and restart the service.\n"
    )
    (root / ".env").write_text(f"OPENAI_API_KEY={ENV_SECRET}\n")
    (root / "keys" / "deploy.pem").write_text(
        f"-----BEGIN PRIVATE KEY-----\n{PEM_MARKER}\n-----END PRIVATE KEY-----\n"
    )
    return root


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text and secret[:16] not in text


def assert_no_secret_on_disk(cache: Path) -> None:
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file outside .slop_cache with its bytes (the commands write nothing else)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".slop_cache" not in p.parts
    }


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The project indexed once (searches only read it)."""
    root = make_project(tmp_path_factory.mktemp("indexed"))
    before = snapshot(root)
    result = sloppy(["index"], root)
    assert snapshot(root) == before  # no config, project, history or log file written
    return root, result


def test_index_reports_counts_and_skips_refused_files(indexed) -> None:
    root, result = indexed
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    counts = summary(result.stderr)
    assert counts["files"] == 6 and counts["changed"] == 4 and counts["skipped"] == 2
    assert counts["unchanged"] == 0 and counts["removed"] == 0 and counts["chunks"] >= 4
    assert "skipped .env: environment files hold secrets" in result.stderr
    assert "skipped keys/deploy.pem: it is a private key file" in result.stderr
    assert f"the index holds 4 files, {counts['chunks']} chunks" in result.stderr
    assert_no_secret(result.stdout, result.stderr)
    assert_no_secret_on_disk(root / ".slop_cache")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how is the password checked when a user logs in", "src/auth.py"),
        ("add tax to the invoice total", "src/billing.py"),
        ("ship the docker image to the registry", "docs/deploy.md"),
    ],
)
def test_search_finds_the_right_file_first(indexed, query: str, expected: str) -> None:
    root, _ = indexed
    result = sloppy(["search", query], root)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"{re.escape(expected)}:\d+-\d+  -?\d\.\d\d", lines[0]), lines[0]
    assert lines[1].startswith("    ")  # the snippet
    assert ".env" not in result.stdout and "deploy.pem" not in result.stdout
    assert_no_secret(result.stdout, result.stderr)


def test_search_json_and_the_redacted_credential(indexed) -> None:
    root, _ = indexed
    chunks = summary(indexed[1].stderr)["chunks"]
    result = sloppy(["search", "--json", "--top-k", "50", "the anthropic client key setting"], root)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    results = document["results"]  # every chunk: no more than the index holds
    assert len(results) == chunks and {r["kind"] for r in results} == {"file"}
    assert results[0]["source"] == "src/settings.py"
    assert {r["source"] for r in results} == {
        "src/auth.py",
        "src/billing.py",
        "src/settings.py",
        "docs/deploy.md",
    }
    settings = next(r for r in results if r["source"] == "src/settings.py")
    # the chunk was redacted before it was embedded or stored, as the app does it
    assert "[REDACTED:credentials.anthropic.api_key]" in settings["text"]
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert_no_secret(result.stdout, result.stderr)


def test_a_second_index_is_incremental_and_an_edit_is_picked_up(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    assert sloppy(["index"], root).returncode == 0
    again = sloppy(["index"], root)
    assert again.returncode == 0, again.stderr
    counts = summary(again.stderr)
    assert (counts["changed"], counts["chunks"], counts["unchanged"], counts["skipped"]) == (0, 0, 4, 2)
    (root / "src" / "billing.py").write_text(
        '"""Refunds."""\n\n\ndef refund(order):\n    return -order.total\n'
    )
    edited = summary(sloppy(["index"], root).stderr)
    assert (edited["changed"], edited["unchanged"]) == (1, 3)
    hit = sloppy(["search", "--json", "--top-k", "1", "refund an order"], root)
    assert json.loads(hit.stdout)["results"][0]["source"] == "src/billing.py"


def test_a_folder_means_every_allowed_file_under_it_and_the_set_replaces_the_last(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / "notes.txt").write_text("The release train leaves every second Tuesday.\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    result = sloppy(["index", "."], root)
    assert result.returncode == 0, result.stderr
    skipped = set(re.findall(r"^sloppy: skipped (\S+): ", result.stderr, re.M))
    assert skipped == {".env", "keys/deploy.pem", "config.toml", "credentials.toml"}
    counts = summary(result.stderr)
    # src/*.py (3), docs/deploy.md, notes.txt, app.toml (readable, like any project file); not .git
    assert (counts["changed"], counts["skipped"]) == (6, 4), result.stderr
    assert_no_secret(result.stdout, result.stderr)
    assert_no_secret_on_disk(root / ".slop_cache")
    hit = sloppy(["search", "--json", "--top-k", "1", "when does the release train leave"], root)
    assert json.loads(hit.stdout)["results"][0]["source"] == "notes.txt"
    tracked = summary(sloppy(["index"], root).stderr)  # back to the tracked files
    assert (tracked["changed"], tracked["unchanged"], tracked["removed"]) == (0, 4, 2)


def test_memory_searches_conversations_and_notes_labelled_by_kind(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    store = EventStore(memory_file_for(root / "app.toml"))
    try:
        store.ensure_conversation("discussion:main", "discussion")
        store.append("discussion:main", "user", "Where should we archive the invoices? As PDF in the bucket.")
        Notes(store).add("Invoices are archived as PDF files for seven years.", "decisions")
    finally:
        store.close()
    text = sloppy(["search", "--memory", "where are the invoices archived"], root)
    assert text.returncode == 0, text.stderr
    assert "is empty; run `sloppy index` first" in text.stderr  # no index yet: memory alone
    assert "-- earlier conversations and notes --" in text.stdout
    assert re.search(r"^conversation discussion:main \(user, [\d-]+ [\d:]+\)  \d\.\d\d$", text.stdout, re.M)
    assert re.search(r"^note #1 \[decisions\] \([\d-]+ [\d:]+\)  \d\.\d\d$", text.stdout, re.M)
    assert "    Invoices are archived as PDF files for seven years." in text.stdout
    as_json = sloppy(["search", "--memory", "--json", "where are the invoices archived"], root)
    kinds = [r["kind"] for r in json.loads(as_json.stdout)["results"]]
    assert kinds == ["conversation", "note"]
    assert not index_dir_for(root / "app.toml").exists()  # a search creates no index


def test_search_without_an_index_says_what_to_do_and_creates_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = sloppy(["search", "password"], root)
    assert result.returncode == 1
    assert result.stderr.strip() == "sloppy: the project index of app.toml is empty; run `sloppy index` first"
    assert result.stdout == "" and not (root / ".slop_cache").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["index", "--project", "missing.toml"], "--project missing.toml: does not exist"),
        (["search", "x", "--project", "missing.toml"], "--project missing.toml: does not exist"),
        (["index", "--config", "other/config.toml"], "no project: {tmp}/other/app2.toml does not exist"),
        (["search", ""], "QUERY: the query is empty"),
        (["search", "   "], "QUERY: the query is empty"),
        (["search", "caf\udce9"], "QUERY: not valid UTF-8 text"),  # argv bytes b"caf\xe9"
        (["search"], "the following arguments are required: QUERY"),
        (["search", "x", "--top-k", "0"], "argument --top-k: expected a whole number from 1 to 100, got 0"),
        (["search", "x", "--top-k", "101"], "expected a whole number from 1 to 100, got 101"),
        (["index", "{outside}"], "outside the project"),
        (["index", "../outside.py"], "outside the project"),
        (["index", ".env"], ".env: environment files hold secrets"),
        (["index", "src/nothing.py"], "src/nothing.py: no such file or folder"),
        (["index", ""], "PATH: an empty path"),
        (["index", "--headless"], "unrecognized arguments: --headless"),
        (["index", "--config", "src"], "--config src: is a directory"),
        (["--project", "app.toml", "index"], "a command comes first: sloppy index"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    root = make_project(tmp_path / "project")
    (tmp_path / "outside.py").write_text("print('not in the project')\n")
    (root / "other").mkdir()
    (root / "other" / "config.toml").write_text('[projects]\nactive = "app2.toml"\n')
    before = snapshot(root)
    result = sloppy([a.replace("{outside}", str(tmp_path / "outside.py")) for a in args], root, timeout=30)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sloppy: error: ") and fragment.replace("{tmp}", str(root)) in lines[0]
    assert result.stdout == ""
    assert snapshot(root) == before and not (root / ".slop_cache").exists()


def test_ctrl_c_stops_between_batches_and_leaves_a_consistent_index(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    # about three full-window chunks each: far more than one progress interval of embedding
    # even on a fast machine; the run is stopped at its first progress line, so size costs nothing
    for n in range(FILES_TO_CANCEL):
        body = "\n".join(
            f"    total_{i} = measure_{i}(sample, {n}) * weight_{i}  # step {i} of {n}" for i in range(60)
        )
        (tmp_path / "src" / f"mod_{n:03d}.py").write_text(
            f'"""Module {n}."""\n\n\ndef run_{n}(sample):\n{body}\n'
        )
    (tmp_path / "big.toml").write_text('[files]\npaths = ["src/*.py"]\n')
    proc = subprocess.Popen(
        [sys.executable, str(SLOPPY), "index", "--project", "big.toml"],
        cwd=tmp_path,
        env=app_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        seen: list[str] = []
        while not any(line.startswith("sloppy: indexing: ") for line in seen):  # the first progress line
            line = proc.stderr.readline()
            assert line, seen
            seen.append(line)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        stderr = "".join(seen) + proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert code == 130, stderr
    assert "cancelled after" in stderr and "run sloppy index again to finish" in stderr
    counts = summary(stderr)
    assert 0 < counts["changed"] < FILES_TO_CANCEL
    # what the run reported is what is on disk, each file whole
    with ProjectIndex(index_dir_for(tmp_path / "big.toml")) as index:
        status = index.status()
    assert (status["files"], status["chunks"]) == (counts["changed"], counts["chunks"])


def test_the_commands_use_the_apps_policy_and_redactor(make_controller, app_dir: Path) -> None:
    (app_dir / "src").mkdir()
    (app_dir / "src" / "a.py").write_text("x = 1\n")
    (app_dir / "credentials.toml").write_text(f'[anthropic]\napi_key = "{CREDENTIAL}"\n')
    (app_dir / "config.toml").write_text('[projects]\nactive = "manual_slop.toml"\n')
    (app_dir / "manual_slop.toml").write_text('[files]\npaths = ["src/*.py"]\nexclude = ["src/b.py"]\n')
    environ = {"DEEPSEEK_API_KEY": "sk-deepseek-env-secret-123456", "SLOP_HOOK_TOKEN": "tok-0123456789abcdef"}
    ctrl = make_controller(environ=environ)
    project = open_project(app_dir / "config.toml", None, environ)
    assert project.project_file == ctrl.paths.project_file and project.base_dir == ctrl.base_dir()
    app_policy = ctrl.path_policy(ctrl.base_dir(), ctrl.state.project_files, ctrl.state.files_exclude)
    candidates = [
        "src/a.py", "src/b.py", "manual_slop.toml", "config.toml", "credentials.toml",
        "manual_slop_history.toml", "logs/sessions/x/comms.log", ".env", "../elsewhere.py", "/etc/hostname",
    ]  # fmt: skip
    for path in candidates:
        for write in (False, True):
            assert project.policy.is_allowed(path, write) == app_policy.is_allowed(path, write), (path, write)
    text = f"key {CREDENTIAL}, env {environ['DEEPSEEK_API_KEY']}, hook {environ['SLOP_HOOK_TOKEN']}"
    assert project.redactor.redact(text) == ctrl.redactor.redact(text)
    assert CREDENTIAL not in project.redactor.redact(text)


def test_one_process_builds_an_index_at_a_time(tmp_path: Path) -> None:
    """While another process holds the index (the app's index job), `sloppy index` says so and
    changes nothing; once it is free, the run goes ahead."""
    import fcntl

    root = make_project(tmp_path)
    assert sloppy(["index"], root).returncode == 0
    lock_file = next((root / ".slop_cache").glob("*_index/index/index.lock"))
    with lock_file.open("a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = sloppy(["index"], root)
    assert busy.returncode == 1, busy.stderr
    assert "another process is building the index" in busy.stderr
    assert summary(sloppy(["index"], root).stderr)["unchanged"] == 4


def test_a_settings_file_that_is_a_pipe_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.toml")
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    for name in ("pipe.toml", "zero.toml"):
        for args in (["index", "--project", name], ["search", "x", "--config", name]):
            result = sloppy(args, tmp_path, timeout=30)
            assert result.returncode == 2, result.stderr
            assert f"{name}: not a regular file" in result.stderr
