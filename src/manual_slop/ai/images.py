"""Images a request sends to the model (the project's screenshots), and what each provider takes.

The context layer reads and downscales the screenshots (:mod:`manual_slop.context.images`)
into an :class:`ImageSet`: the :class:`ImageAttachment` records ready to send and an
:class:`ImageRefusal` for each one that cannot go (unreadable, wrong format, refused by
the path policy). The AI client then checks each attachment against the answering
provider's :class:`ImageSupport` (``Provider.image_support``; ``None``: the provider takes
no images) with :func:`admit`: what the provider cannot take is refused with the file and
the reason, never dropped silently. Providers render the admitted images into the user
message of the current turn (``ModelRequest.images``); they are not stored in the
conversation, like the context they belong to.

Token estimates per image follow each vendor's documented formula (:func:`anthropic_tokens`,
:func:`gemini_tokens`, :func:`openai_tokens`).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANTHROPIC_IMAGES",
    "GEMINI_IMAGES",
    "OPENAI_IMAGES",
    "SUPPORTED_MEDIA_TYPES",
    "Admitted",
    "ImageAttachment",
    "ImageRefusal",
    "ImageSet",
    "ImageSupport",
    "admit",
    "anthropic_tokens",
    "estimate_tokens",
    "gemini_tokens",
    "openai_tokens",
]

SUPPORTED_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    """One image as it goes on the wire (already downscaled)."""

    name: str  # as the user knows it (relative to the base dir)
    media_type: str  # image/png, image/jpeg, image/gif or image/webp
    data: bytes = field(repr=False)
    width: int
    height: int
    original_size: tuple[int, int] = (0, 0)  # (width, height) on disk, before downscaling

    @property
    def downscaled(self) -> bool:
        return self.original_size != (0, 0) and self.original_size != (self.width, self.height)

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<type>;base64,...``: the form OpenAI-compatible ``image_url`` parts take."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        width, height = self.original_size
        scaled = f", downscaled from {width}x{height}" if self.downscaled else ""
        size = f"{self.width}x{self.height}{scaled}, {len(self.data):,} bytes"
        return f"{self.name} ({self.media_type}, {size})"


@dataclass(frozen=True, slots=True)
class ImageRefusal:
    """An image that is not sent, and why (shown to the user and in the comms log)."""

    name: str
    reason: str

    def message(self) -> str:
        return f"image {self.name} is not sent: {self.reason}"


@dataclass(frozen=True, slots=True)
class ImageSet:
    """The request's images: what can be sent, and what could not even be read."""

    attached: tuple[ImageAttachment, ...] = ()
    refused: tuple[ImageRefusal, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.attached or self.refused)


@dataclass(frozen=True, slots=True)
class ImageSupport:
    """What a provider takes: media types, the largest image (bytes as sent, before base64),
    the most images in one request, and its token estimate per image."""

    media_types: frozenset[str]
    max_bytes: int
    max_images: int
    tokens: Callable[[int, int], int]
    max_edge_px: int = 0  # a larger image is refused (0: no limit; ours downscales first anyway)
    max_total_bytes: int = 0  # all images of one request together (0: no limit)


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's documented estimate: width * height / 750."""
    return max(1, math.ceil(width * height / 750))


def gemini_tokens(width: int, height: int) -> int:
    """Gemini 2.x: 258 for an image with both sides <= 384 px, else 258 per 768x768 tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def openai_tokens(width: int, height: int) -> int:
    """OpenAI's ``detail: auto/high`` formula: fit in 2048x2048, shortest side to 768, then
    85 + 170 per 512 px tile (other OpenAI-compatible servers count their own way)."""
    scale = min(1.0, 2048 / max(width, height, 1))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / max(min(w, h), 1))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


ANTHROPIC_IMAGES = ImageSupport(SUPPORTED_MEDIA_TYPES, 5 * MB, 100, anthropic_tokens, max_edge_px=8000)
# Gemini takes no GIF; inline data of one request stays under 20 MB in all
GEMINI_IMAGES = ImageSupport(
    frozenset({"image/png", "image/jpeg", "image/webp"}),
    20 * MB,
    3000,
    gemini_tokens,
    max_total_bytes=20 * MB,
)
OPENAI_IMAGES = ImageSupport(SUPPORTED_MEDIA_TYPES, 20 * MB, 500, openai_tokens)


@dataclass(frozen=True, slots=True)
class Admitted:
    """What :func:`admit` decided for one provider: the images it gets, every refusal, the
    comms log entry's payload (``None``: no images at all) and the warnings for the user."""

    sent: tuple[ImageAttachment, ...]
    refused: tuple[ImageRefusal, ...]
    payload: dict[str, Any] | None
    notices: tuple[str, ...]

    def report(
        self, comms: Callable[[dict[str, Any]], None], warn: Callable[[str], None]
    ) -> tuple[ImageAttachment, ...]:
        """Say the decision (the comms log's ``images`` entry, a warning per notice) and return
        the images to send: the text request goes either way."""
        if self.payload is not None:
            comms(self.payload)
        for notice in self.notices:
            warn(notice)
        return self.sent


def admit(images: ImageSet | None, support: ImageSupport | None, provider: str) -> Admitted:
    """The images ``provider`` (which takes ``support``) gets, and a refusal with the reason for
    every other one (the set's own refusals first). A provider that takes no images gets one
    warning for all of them; the text request goes either way."""
    if not images:
        return Admitted((), (), None, ())
    refused = list(images.refused)
    notices = [r.message() for r in images.refused]
    taken: list[ImageAttachment] = []
    if support is None:
        refused += [ImageRefusal(i.name, f"{provider} takes no images") for i in images.attached]
        if images.attached:
            names = ", ".join(i.name for i in images.attached)
            notices.append(f"{provider} takes no images: {names} not sent; the text request goes on")
    else:
        total = 0
        for image in images.attached:
            reason = _reason(image, support, provider, total, len(taken))
            if reason:
                refused.append(ImageRefusal(image.name, reason))
                notices.append(refused[-1].message())
                continue
            taken.append(image)
            total += len(image.data)
    payload = {
        "sent": [image.describe() for image in taken],
        "paths": [image.name for image in taken],  # the GUI shows their thumbnails
        "refused": [{"path": r.name, "reason": r.reason} for r in refused],
    }
    return Admitted(tuple(taken), tuple(refused), payload, tuple(notices))


def _reason(image: ImageAttachment, support: ImageSupport, provider: str, total: int, count: int) -> str:
    size = len(image.data)
    if image.media_type not in support.media_types:
        kinds = ", ".join(sorted(t.removeprefix("image/").upper() for t in support.media_types))
        return f"{provider} takes {kinds} images, not {image.media_type}; convert it to PNG"
    if size > support.max_bytes:
        return f"{size:,} bytes is over {provider}'s limit of {support.max_bytes:,} bytes per image"
    if support.max_total_bytes and total + size > support.max_total_bytes:
        return f"with it the request's images pass {provider}'s {support.max_total_bytes:,} bytes in all"
    if support.max_edge_px and max(image.width, image.height) > support.max_edge_px:
        edge = support.max_edge_px
        return f"{image.width}x{image.height} px is over {provider}'s limit of {edge} px a side"
    if count >= support.max_images:
        return f"{provider} takes at most {support.max_images} images in one request"
    return ""


def estimate_tokens(images: Sequence[ImageAttachment], support: ImageSupport | None) -> int:
    """Tokens ``images`` cost on a provider with ``support`` (0 when it takes none)."""
    if support is None:
        return 0
    return sum(support.tokens(i.width, i.height) for i in images)
