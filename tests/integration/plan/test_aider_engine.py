"""The ``aider`` engine against the real Aider CLI (``make aider`` installs it into ``.tools/aider``),
driven by the wire-level OpenAI fake answering in Aider's whole-file edit format.

Every diff waits in a real Execution Clutch, and a "human" on another thread decides it the way
``/api/pending`` does; the tests check the scratch tree, the diff, the project before and after,
what Aider sent on the wire and what it was given as its environment.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from manual_slop.clutch import ExecutionClutch
from manual_slop.dialogs import Decision, PendingDialog
from manual_slop.mma.errors import Aborted
from manual_slop.plan.aider import AIDER_VERSION, AiderEngine, Endpoint, aider_environment
from manual_slop.plan.engines import EngineError, EngineRejected, EngineResult, SubtaskRun
from tests.fakes import Fail, Hang, OpenAIFake, Reply

ROOT = Path(__file__).resolve().parents[3]
PINNED = re.search(r"^AIDER_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
KEY = "sk-aider-test-5e1f0c9a77"
MODEL = "fake-coder"
HELLO = 'def greet():\n    return "hello"\n'
WORLD = 'def greet():\n    return "hello, world"\n'
NOTES = "one\ntwo\n"
SYSTEM = "You are the careful implementer agent."
WAIT_S = 90.0  # a whole Aider run takes ~6 s here; generous for a loaded machine


def whole(path: str, content: str) -> str:
    """An answer in Aider's whole-file edit format."""
    return f"{path}\n```\n{content}```\n"


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def aider_installed() -> None:
    reason = AiderEngine(lambda: Endpoint("http://127.0.0.1:9/v1", MODEL)).availability()
    if reason is not None:
        pytest.fail(
            f"{reason}: these tests run the real Aider from .tools/aider; run `make aider` (`make test` does)"
        )


@pytest.fixture
def scratch_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Scratch trees and Aider's private folders are made here; none may be left afterwards."""
    folder = tmp_path / "scratch-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert list(folder.iterdir()) == [], "a scratch tree or a private Aider folder was left behind"


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + 5.0
    left: list[psutil.Process] = []
    while time.monotonic() < deadline:
        left = [p for p in me.children(recursive=True) if p.pid not in before]
        if not left:
            return
        time.sleep(0.05)
    for proc in left:
        proc.kill()
    pytest.fail(f"processes left running: {[p.pid for p in left]}")


@pytest.fixture
def fake() -> Iterator[OpenAIFake]:
    with OpenAIFake(api_key=KEY, models=[MODEL]) as server:
        yield server


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    identity = (
        "-c",
        "user.name=Test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "init.defaultBranch=main",
    )
    proc = subprocess.run(
        ["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "hello.py").write_text(HELLO)
    (folder / "notes.txt").write_text(NOTES)
    git(folder, "init", "--quiet")
    git(folder, "add", "-A")
    git(folder, "commit", "--quiet", "-m", "initial")
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def worktrees(repo: Path) -> list[str]:
    return [
        line
        for line in git(repo, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]


# -- a person deciding at /api/pending ------------------------------------------------------------
Decide = Callable[[ExecutionClutch, PendingDialog], None]


@dataclass
class Session:
    """One engine run with a real clutch and a human on another thread."""

    scratch_tmp: Path
    decide: Decide | None = None
    clutch: ExecutionClutch = field(init=False)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    dialog: PendingDialog | None = None
    scratch_files: dict[str, str] = field(default_factory=dict)  # the scratch tree while the diff waited
    error: Exception | None = None  # what went wrong on the human's thread

    def __post_init__(self) -> None:
        self.clutch = ExecutionClutch(
            audit=lambda record: None, publish=lambda k, d: self.events.append((k, d))
        )

    def ask(self, dialog: PendingDialog) -> Decision | None:
        return self.clutch.submit(dialog, timeout=WAIT_S)

    def run(self, engine: AiderEngine, subtask: SubtaskRun) -> EngineResult:
        done = threading.Event()
        human = threading.Thread(target=self._human, args=(done,), name="test-aider-human")
        human.start()
        try:
            return engine.run(subtask)
        finally:
            done.set()
            human.join(10)
            assert not human.is_alive()
            if self.error is not None:
                raise self.error

    def _human(self, done: threading.Event) -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not done.is_set():
            pending = self.clutch.pending()
            if pending:
                self.dialog = pending[0]
                try:
                    [tree] = self.scratch_tmp.glob("slop-scratch-*/tree")
                    self.scratch_files = {
                        p.relative_to(tree).as_posix(): p.read_text()
                        for p in tree.rglob("*")
                        if p.is_file() and ".git" not in p.parts
                    }
                    if self.decide is not None:
                        self.decide(self.clutch, self.dialog)
                except Exception as exc:  # reported by run(); the engine must not wait for a decision
                    self.error = exc
                    self.clutch.resolve(self.dialog.uid, False)
                return
            time.sleep(0.05)


def subtask(
    project: Path, prompt: str, files: tuple[str, ...], ask: Any, abort: threading.Event | None = None
):
    return SubtaskRun(
        plan_id="plan-1",
        subtask_id="s1",
        title="edit",
        prompt=prompt,
        system_prompt=SYSTEM,
        base_dir=project,
        abort=abort or threading.Event(),
        ask=ask,
        files=files,
        max_tokens=2048,
    )


def engine_for(fake: OpenAIFake, key: str = KEY, timeout_s: float = WAIT_S) -> AiderEngine:
    return AiderEngine(lambda: Endpoint(f"{fake.base_url}/v1", MODEL, key), timeout_s=timeout_s)


def only_section(patch: str, path: str) -> str:
    """The diff after its ``index`` line, after checking it is one section for ``path``."""
    assert patch.count("diff --git ") == 1
    head, index, rest = patch.split("\n", 2)
    assert head == f"diff --git a/{path} b/{path}"
    assert re.fullmatch(r"index [0-9a-f]+\.\.[0-9a-f]+ 100644", index)
    return rest


HELLO_HUNK = (
    "--- a/hello.py\n+++ b/hello.py\n@@ -1,2 +1,2 @@\n"
    ' def greet():\n-    return "hello"\n+    return "hello, world"\n'
)


# -- the acceptance path ------------------------------------------------------------------------
@pytest.mark.usefixtures("aider_installed")
def test_the_diff_waits_for_approval_and_rejecting_leaves_the_project_untouched(
    project: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    fake.push(Reply(whole("hello.py", WORLD)))
    before = snapshot(project)
    session = Session(
        scratch_tmp, lambda clutch, d: clutch.resolve(d.uid, False, {"reason": "not like this"})
    )
    with pytest.raises(EngineRejected, match="not like this"):
        session.run(
            engine_for(fake), subtask(project, "Make greet say hello, world", ("hello.py",), session.ask)
        )

    assert session.scratch_files == {"hello.py": WORLD, "notes.txt": NOTES}  # Aider edited the scratch tree
    assert session.dialog is not None
    payload = session.dialog.payload
    assert payload["tool"] == "apply_patch"
    assert payload["args"]["patch"] == payload["diff"]
    assert only_section(payload["diff"], "hello.py") == HELLO_HUNK
    assert [kind for kind, _ in session.events] == ["pending_added", "pending_resolved"]
    assert snapshot(project) == before
    assert len(worktrees(project)) == 1

    [call] = fake.model_calls()  # one model call: no commit message, lint round or summary
    assert call.body["model"] == MODEL
    assert call.header("authorization") == f"Bearer {KEY}"
    text = "\n".join(str(m["content"]) for m in call.body["messages"])
    assert "Make greet say hello, world" in text
    assert SYSTEM in text and HELLO in text


@pytest.mark.usefixtures("aider_installed")
def test_approving_applies_exactly_that_diff(project: Path, fake: OpenAIFake, scratch_tmp: Path) -> None:
    fake.push(Reply(whole("hello.py", WORLD), usage={"prompt_tokens": 1234, "completion_tokens": 56}))
    before = snapshot(project)
    session = Session(scratch_tmp, lambda clutch, d: clutch.resolve(d.uid, True))
    # no files given: the ones the prompt names are added to Aider's chat
    result = session.run(
        engine_for(fake), subtask(project, "In hello.py make greet say hello, world.", (), session.ask)
    )

    assert snapshot(project) == {**before, "hello.py": WORLD.encode()}  # that file, nothing else
    assert git(project, "status", "--porcelain") == " M hello.py\n"
    assert result.files_changed == ("hello.py",)
    assert result.usage == {"input_tokens": 1234, "output_tokens": 56}  # exact, from Aider's own count
    assert result.text.startswith("Aider changed 1 file(s): hello.py.")
    assert "Applied edit to hello.py" in result.text
    assert KEY not in result.text
    assert len(fake.model_calls()) == 1
    assert len(worktrees(project)) == 1


@pytest.mark.usefixtures("aider_installed")
def test_an_edited_approval_applies_the_edited_patch(
    project: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    fake.push(Reply(whole("hello.py", WORLD)))

    def edit(clutch: ExecutionClutch, dialog: PendingDialog) -> None:
        edited = dialog.payload["args"]["patch"].replace("hello, world", "hello, edited")
        clutch.resolve(dialog.uid, True, {"args": {"patch": edited}})

    session = Session(scratch_tmp, edit)
    result = session.run(
        engine_for(fake), subtask(project, "Make greet say hello, world", ("hello.py",), session.ask)
    )
    assert (project / "hello.py").read_text() == WORLD.replace("hello, world", "hello, edited")
    assert "(edited by the user)" in result.text
    assert result.files_changed == ("hello.py",)


@pytest.mark.usefixtures("aider_installed")
def test_a_folder_that_is_not_a_repository_works_in_a_copy(
    tmp_path: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    (project / "hello.py").write_text(HELLO)
    (project / "notes.txt").write_text(NOTES)
    fake.push(Reply(whole("hello.py", WORLD)))
    session = Session(scratch_tmp, lambda clutch, d: clutch.resolve(d.uid, True))
    result = session.run(
        engine_for(fake), subtask(project, "Make greet say hello, world", ("hello.py",), session.ask)
    )
    assert session.scratch_files["hello.py"] == WORLD
    assert snapshot(project) == {"hello.py": WORLD.encode(), "notes.txt": NOTES.encode()}  # no .git appeared
    assert result.files_changed == ("hello.py",)


@pytest.mark.usefixtures("aider_installed")
def test_new_files_are_created_and_uncommitted_work_is_kept(
    project: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    dirty = HELLO.replace("hello", "work in progress")
    (project / "hello.py").write_text(
        dirty
    )  # the user's uncommitted change: Aider sees it, the diff has none of it
    guide = "# Guide\n\nCall greet().\n"
    fake.push(Reply(whole("docs/guide.md", guide)))
    session = Session(scratch_tmp, lambda clutch, d: clutch.resolve(d.uid, True))
    result = session.run(
        engine_for(fake), subtask(project, "Document greet", ("hello.py", "docs/guide.md"), session.ask)
    )
    assert session.dialog is not None
    patch = session.dialog.payload["diff"]
    assert patch.startswith("diff --git a/docs/guide.md b/docs/guide.md\nnew file mode 100644\n")
    assert "--- /dev/null\n+++ b/docs/guide.md\n@@ -0,0 +1,3 @@\n+# Guide\n+\n+Call greet().\n" in patch
    assert (project / "docs" / "guide.md").read_text() == guide
    assert (project / "hello.py").read_text() == dirty
    assert result.files_changed == ("docs/guide.md",)
    [call] = fake.model_calls()
    text = "\n".join(str(m["content"]) for m in call.body["messages"])
    assert "work in progress" in text and "Create these files: docs/guide.md" in text


@pytest.mark.usefixtures("aider_installed")
def test_an_answer_without_edits_changes_nothing_and_asks_nobody(
    project: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    fake.push(Reply("greet already does what you want; I would not change it."))
    before = snapshot(project)
    session = Session(scratch_tmp)
    result = session.run(engine_for(fake), subtask(project, "Check greet", ("hello.py",), session.ask))
    assert result.text.startswith("Aider changed nothing.")
    assert "would not change it" in result.text
    assert result.files_changed == ()
    assert result.usage["input_tokens"] > 0 and result.usage["output_tokens"] > 0
    assert session.events == [] and session.dialog is None
    assert snapshot(project) == before


# -- stopping it ----------------------------------------------------------------------------------
def aider_process() -> psutil.Process | None:
    for proc in psutil.Process().children(recursive=True):
        try:
            if any(part.endswith(".tools/aider/bin/aider") for part in proc.cmdline()):
                return proc
        except psutil.Error:
            continue
    return None


@pytest.mark.usefixtures("aider_installed")
def test_abort_kills_aider_at_once_and_its_environment_holds_only_what_it_needs(
    project: Path, fake: OpenAIFake, scratch_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    monkeypatch.setenv("SLOP_HOOK_TOKEN", "hook-token-must-not-leak")
    fake.push(Hang(60))
    abort = threading.Event()
    seen: dict[str, Any] = {}

    def stop_when_asked() -> None:
        fake.wait_for_requests(1, timeout=WAIT_S)
        proc = aider_process()
        seen["env"] = proc.environ() if proc is not None else None
        seen["at"] = time.monotonic()
        abort.set()

    stopper = threading.Thread(target=stop_when_asked, name="test-aider-abort")
    stopper.start()
    session = Session(scratch_tmp)
    try:
        with pytest.raises(Aborted):
            engine_for(fake).run(
                subtask(project, "Make greet say hello, world", ("hello.py",), session.ask, abort)
            )
        stopped = time.monotonic()
    finally:
        stopper.join(WAIT_S)
    assert stopped - seen["at"] < 2.5
    assert aider_process() is None
    env = seen["env"]
    assert env is not None
    assert env["OPENAI_API_KEY"] == KEY and env["OPENAI_API_BASE"] == f"{fake.base_url}/v1"
    assert Path(env["HOME"]).is_relative_to(scratch_tmp)  # a private home: no user config is read
    allowed = {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PYTHONIOENCODING",
        "COLUMNS",
        "OPENAI_API_BASE",
        "OPENAI_API_KEY",
    }
    allowed |= {"LITELLM_LOCAL_MODEL_COST_MAP", "HF_HUB_OFFLINE", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"}
    allowed |= {"GIT_TERMINAL_PROMPT", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"}
    allowed |= {
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "GIT_CONFIG_KEY_1",
        "GIT_CONFIG_VALUE_1",
    }
    assert set(env) <= allowed, set(env) - allowed
    assert session.events == []
    assert len(worktrees(project)) == 1


@pytest.mark.usefixtures("aider_installed")
def test_a_run_past_its_timeout_is_killed(project: Path, fake: OpenAIFake, scratch_tmp: Path) -> None:
    fake.push(Hang(60))
    session = Session(scratch_tmp)
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"did not finish within 10 s; it was stopped"):
        engine_for(fake, timeout_s=10).run(
            subtask(project, "Make greet say hello", ("hello.py",), session.ask)
        )
    assert time.monotonic() - started < 13
    assert aider_process() is None
    assert len(worktrees(project)) == 1


@pytest.mark.usefixtures("aider_installed")
def test_a_refused_key_is_an_error_that_never_shows_the_key(
    project: Path, fake: OpenAIFake, scratch_tmp: Path
) -> None:
    wrong = "sk-proj-" + "Zq4wE7rT" * 20  # as long as real project keys: longer than a terminal line
    # the server echoes the key it got, as some do; Aider prints that message
    fake.push(Fail(401, body={"error": {"message": f"Incorrect API key provided: {wrong}", "code": 401}}))
    fake.api_key = None  # let the scripted 401 answer
    session = Session(scratch_tmp)
    with pytest.raises(EngineError, match="aider got no answer") as caught:
        engine_for(fake, key=wrong).run(subtask(project, "Make greet say hello", ("hello.py",), session.ask))
    assert wrong not in str(caught.value)
    assert "Incorrect API key provided: [api key]" in str(caught.value)
    assert fake.model_calls()[0].header("authorization") == f"Bearer {wrong}"


# -- without running Aider ---------------------------------------------------------------------------
def test_availability_names_what_is_missing(tmp_path: Path) -> None:
    def endpoint() -> Endpoint:
        return Endpoint("http://127.0.0.1:9/v1", MODEL)

    missing = AiderEngine(endpoint, tools_dir=tmp_path / "none")
    assert missing.availability() == (
        "aider is not installed (run `make aider`, or btn_plan_install_aider in the app)"
    )
    run = subtask(tmp_path, "x", (), lambda d: None)
    with pytest.raises(EngineError, match=r"aider is not installed \(run `make aider`"):
        missing.run(run)

    stale = tmp_path / "stale"
    (stale / "bin").mkdir(parents=True)
    (stale / "bin" / "aider").write_text("")
    (stale / ".installed").write_text("0.1.0\n")
    assert AiderEngine(endpoint, tools_dir=stale).availability() == (
        f"aider 0.1.0 is installed, this app needs {AIDER_VERSION} "
        "(run `make aider`, or btn_plan_install_aider)"
    )
    (stale / ".installed").write_text(AIDER_VERSION)
    assert AiderEngine(endpoint, tools_dir=stale).availability() is None

    no_endpoint = "no OpenAI-compatible endpoint is configured (set providers.openai_compatible.base_url)"
    assert AiderEngine(lambda: None, tools_dir=stale).availability() == no_endpoint
    assert AiderEngine(lambda: Endpoint(" ", MODEL), tools_dir=stale).availability() == no_endpoint
    assert "providers.openai_compatible.model" in str(
        AiderEngine(lambda: Endpoint("http://127.0.0.1:9/v1", ""), tools_dir=stale).availability()
    )


def test_the_engine_pins_the_version_the_makefile_installs() -> None:
    assert PINNED is not None and PINNED.group(1) == AIDER_VERSION


def test_aiders_environment_is_built_from_nothing_but_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-apps-own-key")
    monkeypatch.setenv("AIDER_AUTO_COMMITS", "true")
    env = aider_environment(Endpoint("http://h/v1", MODEL, KEY), tmp_path, {"GIT_OBJECT_DIRECTORY": "/x"})
    assert env["OPENAI_API_KEY"] == KEY and env["HOME"] == str(tmp_path)
    assert env["PATH"] == os.environ["PATH"] and env["GIT_OBJECT_DIRECTORY"] == "/x"
    assert not any(k.startswith(("ANTHROPIC", "AIDER")) for k in env)
    assert "sk-ant-must-not-leak" not in env.values() and "sk-the-apps-own-key" not in env.values()
    assert KEY not in repr(Endpoint("http://h/v1", MODEL, KEY))
