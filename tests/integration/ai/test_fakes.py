"""The fakes themselves (the simulation harness reuses them): auth headers, paths, failure turns."""

from __future__ import annotations

import json
import socket

import pytest
import requests

from tests.fakes import AnthropicFake, GeminiFake, Hang, OpenAIFake, Raw, Reply, Truncated, rate_limited


def test_the_anthropic_fake_accepts_both_key_headers_and_refuses_others() -> None:
    with AnthropicFake([Reply("a"), Reply("b")], api_key="sekrit") as fake:
        url = f"{fake.base_url}/v1/messages"
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
        assert requests.post(url, json=body, headers={"x-api-key": "sekrit"}, timeout=5).status_code == 200
        assert (
            requests.post(url, json=body, headers={"Authorization": "Bearer sekrit"}, timeout=5).status_code
            == 200
        )
        refused = requests.post(url, json=body, headers={"x-api-key": "wrong"}, timeout=5)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"


@pytest.mark.parametrize("version", ["v1", "v1beta"])
def test_the_gemini_fake_serves_both_api_versions(version: str) -> None:
    with GeminiFake([Reply("hello")]) as fake:
        answer = requests.post(
            f"{fake.base_url}/{version}/models/gemini-2.5-flash:generateContent",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            timeout=5,
        ).json()
        assert answer["candidates"][0]["content"]["parts"] == [{"text": "hello"}]
        created = requests.post(
            f"{fake.base_url}/{version}/cachedContents", json={"model": "m"}, timeout=5
        ).json()
        assert requests.delete(f"{fake.base_url}/{version}/{created['name']}", timeout=5).status_code == 200
        assert fake.cache_log == [("create", created["name"]), ("delete", created["name"])]


@pytest.mark.parametrize("prefix", ["", "/v1"])
def test_the_openai_fake_streams_sse_with_and_without_v1(prefix: str) -> None:
    with OpenAIFake([Reply("streamed words", chunks=["streamed ", "words"])]) as fake:
        response = requests.post(
            f"{fake.base_url}{prefix}/chat/completions",
            json={"model": "m", "messages": [], "stream": True},
            stream=True,
            timeout=5,
        )
        frames = [line[6:] for line in response.iter_lines(decode_unicode=True) if line.startswith("data: ")]
        assert frames[-1] == "[DONE]"
        pieces = [json.loads(f)["choices"][0]["delta"].get("content") for f in frames[:-1]]
        assert "".join(p for p in pieces if p) == "streamed words"


def test_failure_turns_behave_as_scripted() -> None:
    with OpenAIFake(
        [rate_limited(7), Raw("<html>down</html>", status=502), Truncated(Reply("x" * 4000)), Hang(5)]
    ) as fake:
        url = f"{fake.base_url}/v1/chat/completions"
        limited = requests.post(url, json={}, timeout=5)
        assert limited.status_code == 429 and limited.headers["Retry-After"] == "7"
        html = requests.post(url, json={}, timeout=5)
        assert html.status_code == 502 and html.text == "<html>down</html>"
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            requests.post(url, json={}, timeout=5).json()
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.post(url, json={}, timeout=0.3)
        exhausted = requests.post(url, json={}, timeout=5)
        assert exhausted.status_code == 418 and "no scripted turn left" in exhausted.text
        assert fake.unscripted == 1


def test_stopping_a_fake_closes_idle_keep_alive_connections() -> None:
    fake = OpenAIFake([Reply("hi")]).start()
    port = fake.port
    session = requests.Session()
    session.post(f"{fake.base_url}/v1/chat/completions", json={}, timeout=5)  # the connection stays open
    fake.stop()  # must not wait for the client to hang up (the thread-leak check would catch it)
    session.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=0.5)
