"""What each provider takes of a request's images (ai.images.admit), the per-image token
estimates, and the room they take in a request's budget (ai.windows.budget_for)."""

from __future__ import annotations

import base64

import pytest

from manual_slop.ai.images import (
    ANTHROPIC_IMAGES,
    GEMINI_IMAGES,
    MB,
    OPENAI_IMAGES,
    ImageAttachment,
    ImageRefusal,
    ImageSet,
    admit,
    anthropic_tokens,
    estimate_tokens,
    gemini_tokens,
    openai_tokens,
)
from manual_slop.ai.providers import provider_class
from manual_slop.ai.windows import budget_for


def shot(
    name: str, media_type: str = "image/png", size: int = 100, w: int = 800, h: int = 600
) -> ImageAttachment:
    return ImageAttachment(name, media_type, b"x" * size, w, h)


def test_the_providers_that_take_images_and_those_that_do_not() -> None:
    takes = {
        name: provider_class(name).image_support
        for name in ("anthropic", "gemini", "openai_compatible", "deepseek", "minimax", "local", "gemini_cli")
    }
    assert takes["anthropic"] is ANTHROPIC_IMAGES and takes["gemini"] is GEMINI_IMAGES
    assert takes["openai_compatible"] is OPENAI_IMAGES
    assert [n for n, s in takes.items() if s is None] == ["deepseek", "minimax", "local", "gemini_cli"]


def test_a_provider_without_images_refuses_each_one_by_name() -> None:
    images = ImageSet(
        (shot("a.png"), shot("b.jpg", "image/jpeg")), (ImageRefusal("c.bmp", "its format is BMP"),)
    )
    admitted = admit(images, None, "local")
    assert admitted.sent == ()
    assert [r.message() for r in admitted.refused] == [
        "image c.bmp is not sent: its format is BMP",
        "image a.png is not sent: local takes no images",
        "image b.jpg is not sent: local takes no images",
    ]
    # the user reads one line for the provider, and one per image that could not be read
    assert admitted.notices == (
        "image c.bmp is not sent: its format is BMP",
        "local takes no images: a.png, b.jpg not sent; the text request goes on",
    )
    assert admitted.payload is not None and admitted.payload["paths"] == []
    assert admit(ImageSet(), None, "local").payload is None  # no images: no comms entry


def test_limits_refuse_with_the_reason() -> None:
    big = shot("big.png", size=5 * MB + 1)
    gif = shot("anim.gif", "image/gif")
    huge_edge = shot("edge.png", w=9000, h=100)
    admitted = admit(ImageSet((shot("ok.png"), big, gif, huge_edge)), ANTHROPIC_IMAGES, "anthropic")
    sent, refused = admitted.sent, admitted.refused
    assert [i.name for i in sent] == ["ok.png", "anim.gif"]
    assert admitted.notices == tuple(r.message() for r in refused) and len(refused) == 2
    reasons = {r.name: r.reason for r in refused}
    assert (
        reasons["big.png"] == f"{5 * MB + 1:,} bytes is over anthropic's limit of {5 * MB:,} bytes per image"
    )
    assert "anim.gif" not in reasons  # Anthropic reads GIF
    assert reasons["edge.png"] == "9000x100 px is over anthropic's limit of 8000 px a side"
    admitted = admit(ImageSet((gif,)), GEMINI_IMAGES, "gemini")
    sent, refused = admitted.sent, admitted.refused
    assert (
        sent == ()
        and refused[0].reason == "gemini takes JPEG, PNG, WEBP images, not image/gif; convert it to PNG"
    )
    # Gemini: 20 MB of inline data per request in all
    three = ImageSet(tuple(shot(f"{n}.png", size=8 * MB) for n in range(3)))
    admitted = admit(three, GEMINI_IMAGES, "gemini")
    sent, refused = admitted.sent, admitted.refused
    assert [i.name for i in sent] == ["0.png", "1.png"] and refused[0].name == "2.png"
    assert "bytes in all" in refused[0].reason


@pytest.mark.parametrize(
    ("formula", "size", "tokens"),
    [
        (anthropic_tokens, (1000, 1000), 1334),  # ceil(1,000,000 / 750)
        (anthropic_tokens, (1092, 1092), 1590),
        (gemini_tokens, (384, 384), 258),
        (gemini_tokens, (1000, 800), 258 * 4),  # 2 x 2 tiles of 768
        (openai_tokens, (512, 512), 85 + 170),
        (openai_tokens, (2048, 4096), 85 + 170 * 6),  # 1024x2048 -> 768x1536: 2 x 3 tiles
    ],
)
def test_per_image_token_estimates(formula, size: tuple[int, int], tokens: int) -> None:
    assert formula(*size) == tokens


def test_images_take_room_in_the_request_budget() -> None:
    provider = provider_class("anthropic")(_config("anthropic"))
    images = (shot("a.png", w=1000, h=1000), shot("b.png", w=750, h=100))
    cost = estimate_tokens(images, provider.image_support)
    assert cost == 1334 + 100
    assert estimate_tokens(images, None) == 0
    common = {"instructions": "be brief", "tools": "", "message": "hi", "history": ""}
    plain = budget_for(provider, **common)
    with_images = budget_for(provider, **common, image_tokens=cost)
    assert with_images.reserved - plain.reserved == cost


def test_wire_forms() -> None:
    image = ImageAttachment("a.png", "image/png", b"\x89PNG-bytes", 2, 2)
    assert image.base64() == base64.b64encode(b"\x89PNG-bytes").decode()
    assert image.data_url() == "data:image/png;base64," + image.base64()


def _config(name: str):
    from manual_slop.ai.providers import ProviderConfig

    return ProviderConfig(name, "claude-sonnet-4-6")
