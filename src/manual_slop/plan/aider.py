"""The ``aider`` engine: the real Aider CLI edits a scratch copy of the project; the user approves its diff.

One attempt of a subtask::

    ScratchTree(project)                  a detached git worktree (or a copy) of the project
      aider --message-file … FILES        non-interactive, offline, pointed at the configured
                                          OpenAI-compatible endpoint, in the scratch tree
    tree.diff()                           what Aider changed ("" → a result saying so)
    run.ask(ToolApprovalDialog("apply_patch", {"patch": diff}, diff))
    tier4.apply_patch(approved patch)     all-or-nothing, through the path check

Aider is the pinned ``aider-chat`` that ``make aider`` (and ``make test``) installs into its own
venv under ``.tools/aider``, never into the app's. It gets a minimal environment: ``PATH``, a
private ``HOME`` (so no user config, cache or ``.env`` of the user is read), the endpoint as
``OPENAI_API_BASE``/``OPENAI_API_KEY`` and switches that keep it off the network; nothing else of
the app's environment (no other provider's key) reaches it. Its history files, model metadata and
analytics log live in that private folder, never in the tree, so they cannot show up in the diff.
A ``.aider.conf.yml`` or ``.env`` that the project itself tracks is still read by Aider; every
switch given here on the command line wins over both.

Aider runs in its own session (``start_new_session``): a timeout or ``run.abort`` kills its whole
process tree (:func:`manual_slop.process_tree.kill_tree`) within a poll interval. The API key
never appears in the result, in errors or in logs written here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from manual_slop.dialogs import ToolApprovalDialog
from manual_slop.mma.errors import Aborted, PatchError
from manual_slop.mma.tier4 import PathCheck, apply_patch, confine_to
from manual_slop.mma.worktree import ScratchTree, ScratchTreeError
from manual_slop.plan.aider_install import AIDER_VERSION, default_tools_dir
from manual_slop.plan.engines import EngineError, EngineRejected, EngineResult, SubtaskRun
from manual_slop.process_tree import kill_tree

__all__ = [
    "AIDER_FLAGS",
    "AIDER_VERSION",
    "AiderEngine",
    "Endpoint",
    "aider_environment",
    "default_tools_dir",
    "unsupported_sections",
]

POLL_S = 0.1  # how often a running Aider is checked for abort and timeout
OUTPUT_TAIL = 2_000  # characters of Aider's output kept in the result and in errors
MAX_PROMPT_FILES = 20  # files named in the prompt that are added to the chat
DEFAULT_CONTEXT_WINDOW = 32_768
# Non-interactive, no git commits (the diff is ours to show), no network but the endpoint, no
# shell commands, no lint/test rounds (each would be another model call), no repo map.
AIDER_FLAGS: tuple[str, ...] = (
    "--yes-always",
    "--no-auto-commits",
    "--no-dirty-commits",
    "--no-gitignore",
    "--subtree-only",
    "--no-auto-lint",
    "--no-auto-test",
    "--no-suggest-shell-commands",
    "--no-detect-urls",
    "--disable-playwright",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-analytics",
    "--no-show-model-warnings",
    "--no-check-model-accepts-settings",
    "--no-restore-chat-history",
    "--no-pretty",
    "--no-fancy-input",
    "--no-stream",
    "--map-tokens",
    "0",
    "--encoding",
    "utf-8",
)
_TOKEN_LINE = re.compile(r"^Tokens: ([\d.]+)(k?) sent(?:, [^,]+ cache \w+)*, ([\d.]+)(k?) received", re.M)
_PATH_WORD = re.compile(r"[^\s`'\"()\[\]<>,;:*]+")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The OpenAI-compatible server Aider talks to (``base_url`` ends where ``/chat/completions`` goes)."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    context_window: int = 0


EndpointSource = Callable[[], Endpoint | None]


def aider_environment(
    endpoint: Endpoint, home: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Aider's whole environment: ``PATH``, the private ``home``, the endpoint and offline switches."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "TMPDIR": str(home),
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "COLUMNS": "100000",  # rich wraps output at 80 columns, even splitting long words
        "OPENAI_API_BASE": endpoint.base_url,
        "OPENAI_API_KEY": endpoint.api_key or "none",  # the client insists on a key; local servers ignore it
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # litellm's bundled price table, not a download
        "HF_HUB_OFFLINE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        # an identity from the environment: without one Aider writes a placeholder into the
        # repository's config, which a worktree shares with the user's project
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "aider (Manual Slop scratch tree)",
        "GIT_CONFIG_KEY_1": "user.email",
        "GIT_CONFIG_VALUE_1": "aider@scratch.invalid",
    }
    env.update(extra or {})
    return env


def unsupported_sections(patch: str) -> list[str]:
    """Paths whose ``diff --git`` section has no text hunk (binary, empty or mode-only changes):
    :func:`~manual_slop.mma.tier4.apply_patch` cannot apply those, and would skip them silently."""
    bad: list[str] = []
    for section in re.split(r"^(?=diff --git )", patch, flags=re.M):
        if section.startswith("diff --git ") and not re.search(r"^@@ ", section, re.M):
            header = section.splitlines()[0]
            bad.append(header.rsplit(" b/", 1)[-1] if " b/" in header else header[len("diff --git ") :])
    return bad


class AiderEngine:
    """Runs a subtask with the real Aider CLI in a scratch tree; applies its diff once approved."""

    name = "aider"

    def __init__(
        self,
        endpoint: EndpointSource,
        *,
        tools_dir: Path | None = None,
        timeout_s: float = 600.0,
        path_check: PathCheck | None = None,
        edit_format: str = "whole",
    ) -> None:
        self._endpoint = endpoint
        self.tools_dir = Path(tools_dir) if tools_dir is not None else default_tools_dir()
        self.timeout_s = float(timeout_s)
        self._path_check = path_check  # None: confined to the subtask's project folder
        self.edit_format = edit_format  # "whole" suits small local models; "diff" saves tokens

    @property
    def binary(self) -> Path:
        return self.tools_dir / "bin" / "aider"

    def availability(self) -> str | None:
        """None when Aider is installed (the pinned version) and an endpoint is configured."""
        stamp = self.tools_dir / ".installed"
        installed = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else ""
        if not self.binary.exists() or not installed:
            return "aider is not installed (run `make aider`, or btn_plan_install_aider in the app)"
        if installed != AIDER_VERSION:
            return (
                f"aider {installed} is installed, this app needs {AIDER_VERSION} "
                "(run `make aider`, or btn_plan_install_aider)"
            )
        endpoint = self._endpoint()
        if endpoint is None or not endpoint.base_url.strip():
            return "no OpenAI-compatible endpoint is configured (set providers.openai_compatible.base_url)"
        if not endpoint.model.strip():
            return "no model is set for the OpenAI-compatible endpoint (providers.openai_compatible.model)"
        return None

    def run(self, run: SubtaskRun) -> EngineResult:
        """One attempt: Aider in a scratch tree, then the user's decision on its diff."""
        reason = self.availability()
        if reason is not None:
            raise EngineError(reason)
        endpoint = self._endpoint()
        if endpoint is None:  # it was there a moment ago: the settings changed under us
            raise EngineError("no OpenAI-compatible endpoint is configured")
        if run.abort.is_set():
            raise Aborted(f"subtask {run.subtask_id}: aborted before aider started")
        try:
            with ScratchTree(run.base_dir) as tree, tempfile.TemporaryDirectory(prefix="slop-aider-") as tmp:
                output, usage = self._aider(run, endpoint, tree, Path(tmp))
                patch = tree.diff()
                if not patch.strip():
                    return EngineResult(_summary("Aider changed nothing.", output), usage)
                unsupported = unsupported_sections(patch)
                if unsupported:
                    raise EngineError(
                        "Aider's changes cannot be applied as a text patch (binary, empty or mode-only "
                        f"changes): {', '.join(unsupported)}"
                    )
                # the tree stays while the user decides, so its result can be inspected there
                decision = run.ask(ToolApprovalDialog("apply_patch", {"patch": patch}, patch))
        except ScratchTreeError as exc:
            raise EngineError(f"Aider's scratch tree failed: {exc}") from exc
        if decision is None or decision.abort or run.abort.is_set():
            raise Aborted(f"subtask {run.subtask_id}: aborted while its diff waited for approval")
        if not decision.approved:
            raise EngineRejected(decision.reason or "the user rejected Aider's diff")
        final = decision.payload.get("args", {}).get("patch")
        if not isinstance(final, str) or not final.strip():
            raise EngineRejected("the approved patch is empty")
        written = self._apply(final, run.base_dir)
        note = " (edited by the user)" if decision.edited else ""
        head = f"Aider changed {len(written)} file(s){note}: {', '.join(written)}."
        return EngineResult(_summary(head, output), usage, files_changed=tuple(written))

    # -- running Aider -------------------------------------------------------------------------
    def _aider(
        self, run: SubtaskRun, endpoint: Endpoint, tree: ScratchTree, tmp: Path
    ) -> tuple[str, dict[str, int]]:
        """Run Aider to the end in ``tree``; (its output without the key, tokens). Kills it on abort
        or timeout."""
        home = tmp / "home"
        home.mkdir()
        files, missing = _chat_files(run, tree.path)
        message = run.prompt
        if missing:
            message += "\n\nCreate these files: " + ", ".join(missing)
        (tmp / "message.md").write_text(message, encoding="utf-8")
        argv = [str(self.binary), *self._arguments(run, endpoint, tmp), "--", *files]
        env = aider_environment(endpoint, home, tree.env())
        with open(tmp / "output.txt", "wb") as out:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=tree.path,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: a kill takes its children too
                )
            except OSError as exc:
                raise EngineError(f"aider could not be started: {exc}") from exc
            try:
                code = self._wait(proc, run)
            except BaseException:
                kill_tree(proc)
                raise
        output = _scrub((tmp / "output.txt").read_text(encoding="utf-8", errors="replace"), endpoint)
        if code != 0:
            raise EngineError(f"aider failed (exit code {code}): {_tail(output)}")
        usage, answered = _usage(tmp / "analytics.jsonl", output)
        if not answered:  # Aider reports API errors (401, refused connection, …) and exits 0
            raise EngineError(f"aider got no answer from {endpoint.base_url}: {_tail(output)}")
        return output, usage

    def _arguments(self, run: SubtaskRun, endpoint: Endpoint, tmp: Path) -> list[str]:
        model = f"openai/{endpoint.model}"
        window = endpoint.context_window or DEFAULT_CONTEXT_WINDOW
        metadata = {  # known locally, so Aider does not download litellm's price table for it
            model: {
                "max_input_tokens": window,
                "max_output_tokens": max(run.max_tokens, 1),
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
        (tmp / "model-metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
        args = [
            *AIDER_FLAGS,
            "--model", model,
            "--weak-model", model,
            "--edit-format", self.edit_format,
            "--openai-api-base", endpoint.base_url,  # argv beats a .env file in the project
            "--model-metadata-file", str(tmp / "model-metadata.json"),
            "--chat-history-file", str(tmp / "chat-history.md"),
            "--input-history-file", str(tmp / "input-history"),
            "--analytics-log", str(tmp / "analytics.jsonl"),
            "--timeout", f"{max(self.timeout_s, 1.0):g}",
            "--message-file", str(tmp / "message.md"),
        ]  # fmt: skip
        if run.system_prompt.strip():
            (tmp / "agent-instructions.md").write_text(run.system_prompt.rstrip() + "\n", encoding="utf-8")
            args += ["--read", str(tmp / "agent-instructions.md")]
        return args

    def _wait(self, proc: subprocess.Popen[bytes], run: SubtaskRun) -> int:
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                return proc.wait(timeout=POLL_S)
            except subprocess.TimeoutExpired:
                pass
            if run.abort.is_set():
                raise Aborted(f"subtask {run.subtask_id}: aborted while aider was running")
            if time.monotonic() > deadline:
                raise EngineError(f"aider did not finish within {self.timeout_s:g} s; it was stopped")

    def _apply(self, patch: str, base_dir: Path) -> list[str]:
        unsupported = unsupported_sections(patch)
        if unsupported:
            raise EngineError(
                f"the approved patch has changes that cannot be applied: {', '.join(unsupported)}"
            )
        root = base_dir.resolve()
        try:
            written = apply_patch(patch, root, self._path_check or confine_to(root))
        except PatchError as exc:
            raise EngineError(f"Aider's approved diff did not apply (nothing was written): {exc}") from exc
        return [path.resolve().relative_to(root).as_posix() for path in written]


def _chat_files(run: SubtaskRun, tree: Path) -> tuple[list[str], list[str]]:
    """(files for Aider's chat, files to create): ``run.files``, else the existing files the prompt names."""
    named = run.files or tuple(_PATH_WORD.findall(run.prompt))
    existing: list[str] = []
    missing: list[str] = []
    for raw in dict.fromkeys(named):
        name = raw.strip().rstrip(".")
        pure = PurePosixPath(name)
        if not name or pure.is_absolute() or ".." in pure.parts or (pure.parts and pure.parts[0] == ".git"):
            if run.files:
                raise EngineError(f"{raw!r}: subtask files must be relative to the project, without '..'")
            continue
        if (tree / pure).is_file():
            existing.append(pure.as_posix())
        elif run.files:
            missing.append(pure.as_posix())
        if not run.files and len(existing) >= MAX_PROMPT_FILES:
            break
    return existing, missing


def _usage(analytics_log: Path, output: str) -> tuple[dict[str, int], bool]:
    """(tokens, whether the model answered at all): from Aider's local analytics log, which has
    one ``message_send`` event per answer with exact counts, else from its ``Tokens: …`` lines."""
    sent = received = answers = 0
    try:
        for line in analytics_log.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("event") == "message_send":
                answers += 1
                sent += int(event["properties"].get("prompt_tokens", 0))
                received += int(event["properties"].get("completion_tokens", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        sent = received = answers = 0
    if not answers:
        for match in _TOKEN_LINE.finditer(output):
            answers += 1
            sent += round(float(match[1]) * (1000 if match[2] else 1))
            received += round(float(match[3]) * (1000 if match[4] else 1))
    return {"input_tokens": sent, "output_tokens": received}, answers > 0


def _scrub(text: str, endpoint: Endpoint) -> str:
    """``text`` without the API key, also where a line break was put into it."""
    if not endpoint.api_key:
        return text
    return re.sub(r"\s*".join(map(re.escape, endpoint.api_key)), "[api key]", text)


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= OUTPUT_TAIL else "…" + text[-OUTPUT_TAIL:]


def _summary(head: str, output: str) -> str:
    return f"{head}\n\nAider's output (the end):\n{_tail(output)}"
