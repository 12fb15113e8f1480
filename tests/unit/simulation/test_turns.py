"""Turn files: every key maps to the fake servers' turns; mistakes are named precisely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simulation import ScriptedProvider, TurnScript, TurnScriptError, parse_turn
from simulation.provider import TURNS_DIR

from tests.fakes import Call, Fail, Hang, Raw, Reply, Truncated


def test_each_key_becomes_the_matching_turn() -> None:
    assert parse_turn({"text": "hi"}) == [Reply("hi")]
    assert parse_turn({"calls": [{"name": "read_file", "args": {"path": "a"}}]}) == [
        Reply("", [Call("read_file", {"path": "a"})])
    ]
    plan = parse_turn({"text": "Plan:", "json": {"tracks": []}})[0]
    assert isinstance(plan, Reply) and plan.text.startswith("Plan:\n```json\n")
    assert json.loads(plan.text.split("```json\n")[1].split("\n```")[0]) == {"tracks": []}
    assert parse_turn({"json": {"a": 1}})[0].text == '{\n  "a": 1\n}'
    fail = parse_turn({"fail": 429, "retry_after": 0})[0]
    assert fail == Fail(429, None, {"Retry-After": "0"})
    assert parse_turn({"fail": 500, "body": "<html>"})[0] == Fail(500, "<html>", {})
    assert parse_turn({"raw": "<h1>", "status": 502})[0] == Raw("<h1>", 502)
    assert parse_turn({"hang": 2})[0] == Hang(2.0)
    cut = parse_turn({"text": "cut me", "truncated": True, "delay": 0.5})[0]
    assert isinstance(cut, Truncated) and cut.reply.text == "cut me" and cut.delay == 0.5
    assert parse_turn({"text": "x", "repeat": 3}) == [Reply("x")] * 3


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"txt": "hi"}, "t: unknown key 'txt'; known: body, calls, chunk_delay"),
        ({"text": 3}, "t: text: expected str, got int"),
        ({"fail": True}, "t: fail: expected int, got bool"),
        ({"fail": 500, "raw": "x"}, "t: fail and raw cannot be combined"),
        ({}, "t: a reply needs text, calls or json"),
        ({"text": "x", "repeat": 0}, "t: repeat must be at least 1, got 0"),
        ({"raw": "x", "retry_after": 1}, "t: retry_after cannot be combined with raw"),
        ({"hang": 1, "calls": []}, "t: calls cannot be combined with hang"),
        ({"calls": [{"args": {}}]}, "t: calls[0]: expected a table with a string 'name'"),
        ({"calls": [{"name": "x", "arg": {}}]}, "t: calls[0]: unknown key 'arg'"),
        ({"calls": [{"name": "x", "args": []}]}, "t: calls[0]: args: expected a table, got list"),
    ],
)
def test_mistakes_are_named(spec: dict, message: str) -> None:
    with pytest.raises(TurnScriptError) as caught:
        parse_turn(spec, "t")
    assert str(caught.value).startswith(message)


def test_files_name_the_group_and_turn(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[greet]]\ntext = "hi"\n\n[[greet]]\ntext = "yo"\nfail = 500\n', encoding="utf-8")
    with pytest.raises(TurnScriptError, match=r"^bad.toml: greet\[1\]: text cannot be combined with fail$"):
        TurnScript.load(bad)
    bad.write_text("greet = 1\n", encoding="utf-8")
    with pytest.raises(TurnScriptError, match=r"greet: expected an array of tables \(\[\[greet\]\]\)"):
        TurnScript.load(bad)
    bad.write_text("[[greet]\n", encoding="utf-8")
    with pytest.raises(TurnScriptError, match="not valid TOML"):
        TurnScript.load(bad)
    good = tmp_path / "good.toml"
    good.write_text('[[greet]]\ntext = "hi"\n', encoding="utf-8")
    with pytest.raises(TurnScriptError, match="no group 'bye'; groups: greet"):
        TurnScript.load(good).group("bye")


def test_every_shipped_turn_file_loads() -> None:
    files = sorted(TURNS_DIR.glob("*.toml"))
    assert len(files) >= 6
    for path in files:
        assert TurnScript.load(path).groups, path.name


def test_a_scripted_provider_serves_its_groups_and_demands_its_key(tmp_path: Path) -> None:
    import requests

    script = TurnScript.load(TURNS_DIR / "faults.toml")
    fake = ScriptedProvider("openai_compatible", tmp_path, script=script).start()
    try:
        assert fake.environment() == {"OPENAI_API_KEY": fake.api_key}
        assert fake.provider_config() == {"model": "sim-model", "base_url": fake.base_url}
        assert fake.push_group("healthy") == 1
        url = f"{fake.base_url}/v1/chat/completions"
        body = {"model": "sim-model", "messages": [{"role": "user", "content": "hi"}]}
        assert requests.post(url, json=body, timeout=5).status_code == 401  # no key, no answer
        answer = requests.post(url, json=body, headers={"Authorization": f"Bearer {fake.api_key}"}, timeout=5)
        assert answer.json()["choices"][0]["message"]["content"] == "All good again."
        assert fake.call_count() == 2 and fake.remaining() == 0
    finally:
        fake.stop()
    with pytest.raises(TurnScriptError, match="no scripted fake for provider 'minimax'"):
        ScriptedProvider("minimax", tmp_path)


def test_the_cli_fake_plays_text_and_errors(tmp_path: Path) -> None:
    import subprocess

    fake = ScriptedProvider("gemini_cli", tmp_path, model="gemini-sim").start()
    assert fake.environment() == {"GEMINI_API_KEY": fake.api_key}
    assert fake.provider_config()["binary"] == fake.binary
    fake.push(Reply("hello"), Fail(429))

    def gemini(prompt: str) -> subprocess.CompletedProcess[str]:
        argv = [fake.binary, "-m", "gemini-sim", "-o", "stream-json", "-p", prompt]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    first = gemini("hi")
    events = [json.loads(line) for line in first.stdout.splitlines()]
    said = "".join(
        e.get("content", "") for e in events if e.get("type") == "message" and e.get("role") != "user"
    )
    assert first.returncode == 0 and said == "hello"
    assert gemini("again").returncode == 429 % 256
    assert [c["argv"][c["argv"].index("-p") + 1] for c in fake.cli_calls()] == ["hi", "again"]
    with pytest.raises(TurnScriptError, match="runs no tools"):
        fake.push(Reply("", [Call("read_file", {})]))
