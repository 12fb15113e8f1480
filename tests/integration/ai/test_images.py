"""Images on the wire: every provider, through its real SDK or transport, against its fake.

Anthropic gets ``image`` blocks (base64 source), Gemini inline data, the OpenAI-compatible
server ``image_url`` parts with a ``data:`` URL, each with the user message of the turn and
again in the turn's later tool rounds. DeepSeek, MiniMax, the local model and the Gemini
CLI take no images: the user is told in one line, and the text request still goes.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from manual_slop.ai.images import ImageAttachment, ImageSet
from tests.fakes import Call, Reply
from tests.integration.ai.harness import Harness, HttpHarness, approve_all

PNG = b"\x89PNG\r\n\x1a\n-the-screenshot-bytes"
JPEG = b"\xff\xd8\xff\xe0-a-photo"
IMAGES = ImageSet(
    (
        ImageAttachment("shots/ui.png", "image/png", PNG, 640, 480),
        ImageAttachment("photo.jpg", "image/jpeg", JPEG, 300, 200),
    )
)
B64 = {"image/png": base64.b64encode(PNG).decode(), "image/jpeg": base64.b64encode(JPEG).decode()}


def images_in(body: Any, provider: str) -> list[tuple[str, bytes]]:
    """(media type, bytes) of every image part of the request body, in order."""
    found: list[tuple[str, bytes]] = []
    if provider == "anthropic":
        for message in body["messages"]:
            for block in message["content"]:
                if block.get("type") == "image":
                    assert message["role"] == "user" and block["source"]["type"] == "base64"
                    found.append((block["source"]["media_type"], base64.b64decode(block["source"]["data"])))
    elif provider == "gemini":
        for content in body["contents"]:
            for part in content["parts"]:
                inline = part.get("inlineData") or part.get("inline_data")
                if inline:
                    assert content["role"] == "user"
                    # the SDK sends bytes as URL-safe base64 (the API takes either alphabet)
                    data = base64.urlsafe_b64decode(inline["data"])
                    found.append((inline.get("mimeType") or inline.get("mime_type"), data))
    else:
        for message in body["messages"]:
            if isinstance(message.get("content"), list):
                for part in message["content"]:
                    if part["type"] == "image_url":
                        head, data = part["image_url"]["url"].split(",", 1)
                        assert head.startswith("data:") and head.endswith(";base64")
                        media_type = head.removeprefix("data:").removesuffix(";base64")
                        found.append((media_type, base64.b64decode(data)))
    return found


def test_images_reach_the_providers_that_take_them(harness: Harness) -> None:
    harness.push(Reply("", [Call("echo", {"text": "looked"})]), Reply("A red button."))
    client = harness.client()
    answer = client.send("", "What is on the screenshot?", pre_tool_callback=approve_all, images=IMAGES)
    assert answer == "A red button."
    sent = harness.sent()
    assert len(sent) == 2 and "What is on the screenshot?" in sent[0]  # the text request went
    images_logged = [e["payload"] for e in harness.entries if e["kind"] == "images"]
    assert len(images_logged) == 1
    if harness.name in ("anthropic", "gemini", "openai_compatible"):
        assert isinstance(harness, HttpHarness)
        expected = [("image/png", PNG), ("image/jpeg", JPEG)]
        for body in harness.bodies():  # the first call and the tool round after it
            assert images_in(body, harness.name) == expected
        assert images_logged[0]["refused"] == []
        assert images_logged[0]["sent"] == [
            f"shots/ui.png (image/png, 640x480, {len(PNG)} bytes)",
            f"photo.jpg (image/jpeg, 300x200, {len(JPEG)} bytes)",
        ]
        assert not harness.notices
        request = next(e for e in harness.entries if e["kind"] == "request")
        assert request["payload"]["images"] == ["shots/ui.png", "photo.jpg"]
    else:
        assert not any(B64["image/png"] in text or B64["image/jpeg"] in text for text in sent)
        assert harness.notices == [
            (
                "warning",
                f"{harness.name} takes no images: shots/ui.png, photo.jpg not sent; the text request goes on",
            )
        ]
        assert [r["path"] for r in images_logged[0]["refused"]] == ["shots/ui.png", "photo.jpg"]
        assert images_logged[0]["sent"] == []
        assert json.dumps(images_logged[0]).count("takes no images") == 2
