"""The project's screenshots read for a request: checked, decoded and downscaled.

:func:`prepare_images` resolves ``screenshots.paths`` like the tracked files, asks the
app's one path policy about each file (a refused file is never opened), decodes it with
Pillow to learn its real format and size, and downscales anything whose longest edge is
over ``context.image_max_edge`` (the vendors' own advice: larger images cost more tokens
and are scaled down on their side anyway). The result is an
:class:`~manual_slop.ai.images.ImageSet`; each image that cannot go gets a refusal naming
the file and the reason. Which provider takes which images is the AI client's check
(:func:`manual_slop.ai.images.admit`).

Blocking (file I/O and decoding): call it off the main thread.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from manual_slop.ai.images import ImageAttachment, ImageRefusal, ImageSet
from manual_slop.context.errors import FileSetError
from manual_slop.context.fileset import resolve_files

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

    from manual_slop.context.aggregate import ContextRequest
    from manual_slop.tools.security import PathPolicy

__all__ = [
    "DEFAULT_IMAGE_MAX_EDGE",
    "MAX_IMAGE_FILE_BYTES",
    "ImageCache",
    "ImageError",
    "Thumbnail",
    "load_image",
    "prepare_images",
    "thumbnail",
]

THUMBNAIL_EDGE = 128  # the GUI's thumbnails (comms log, message box): small RGBA, one texture each
DEFAULT_IMAGE_MAX_EDGE = 1568  # Anthropic's advice; Gemini and OpenAI tile at 768 / 512 below it
MAX_IMAGE_FILE_BYTES = 50 * 1024 * 1024  # a bigger file is not read at all
_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


class ImageError(Exception):
    """An image that cannot be sent; the message says why (without the file name)."""


@dataclass(frozen=True, slots=True)
class Thumbnail:
    """A small RGBA copy of a screenshot for the GUI; ``key`` changes when the image does."""

    name: str
    width: int
    height: int
    rgba: bytes = field(repr=False)
    key: str


def thumbnail(image: ImageAttachment, edge: int = THUMBNAIL_EDGE) -> Thumbnail:
    """``image`` as an RGBA thumbnail at most ``edge`` pixels on its longest side."""
    from PIL import Image

    with Image.open(io.BytesIO(image.data)) as decoded:
        small = decoded.convert("RGBA")
    small.thumbnail((edge, edge), Image.Resampling.BILINEAR)
    key = f"{image.name}:{hashlib.blake2b(image.data, digest_size=8).hexdigest()}"
    return Thumbnail(image.name, small.width, small.height, small.tobytes(), key)


class ImageCache:
    """Prepared images by (path, mtime, size, max edge): a preview and the send after it decode a
    screenshot once. Thread-safe; keeps the :attr:`capacity` most recent."""

    capacity = 32

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int, int, int], ImageAttachment] = OrderedDict()
        self._thumbnails: dict[str, tuple[ImageAttachment, Thumbnail]] = {}  # by name

    def load(self, path: Path, name: str, max_edge: int, policy: PathPolicy | None) -> ImageAttachment:
        """:func:`load_image`, from the cache when the file has not changed."""
        refusal = policy.refusal(path) if policy is not None else None
        if refusal:  # asked every time: the policy may have changed since
            raise ImageError(f"refused by the path policy: {refusal}")
        try:
            info = path.stat()
        except OSError:
            return load_image(path, name, max_edge)  # raises what is wrong with it
        key = (str(path), info.st_mtime_ns, info.st_size, max_edge)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit if hit.name == name else dataclasses.replace(hit, name=name)
        image = load_image(path, name, max_edge)
        with self._lock:
            self._entries[key] = image
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return image

    def thumbnail(self, image: ImageAttachment) -> Thumbnail:
        """:func:`thumbnail` of ``image``, made once while its file version is cached."""
        with self._lock:
            made = self._thumbnails.get(image.name)
        if made is not None and made[0] is image:
            return made[1]
        small = thumbnail(image)
        with self._lock:
            self._thumbnails[image.name] = (image, small)  # one per name: the latest version
            while len(self._thumbnails) > self.capacity:
                self._thumbnails.pop(next(iter(self._thumbnails)))
        return small


def prepare_images(request: ContextRequest, cache: ImageCache | None = None) -> ImageSet:
    """The screenshots of ``request``, read and downscaled (blocking; any thread but the main one)."""
    attached: list[ImageAttachment] = []
    refused: list[ImageRefusal] = []
    seen: set[Path] = set()
    for pattern in request.screenshots:
        try:
            found = resolve_files(Path(request.base_dir), [pattern])
        except FileSetError as exc:
            refused.append(ImageRefusal(pattern, str(exc)))
            continue
        if not found and pattern.strip():  # a named file that is gone is said, never skipped
            refused.append(ImageRefusal(pattern, "matches no file"))
        for resolved in found:
            if resolved.path in seen:
                continue
            seen.add(resolved.path)
            try:
                args = (resolved.path, resolved.name, request.image_max_edge, request.policy)
                image = cache.load(*args) if cache is not None else load_image(*args)
            except ImageError as exc:
                refused.append(ImageRefusal(resolved.name, str(exc)))
            else:
                attached.append(image)
    return ImageSet(tuple(attached), tuple(refused))


def load_image(path: Path, name: str, max_edge: int, policy: PathPolicy | None = None) -> ImageAttachment:
    """``path`` as an attachment, downscaled to ``max_edge`` pixels on its longest side.

    Raises :class:`ImageError` when the path policy refuses the file, or it is missing,
    too large to read, not an image Pillow can decode, or not PNG, JPEG, GIF or WebP.
    """
    refusal = policy.refusal(path) if policy is not None else None
    if refusal:
        raise ImageError(f"refused by the path policy: {refusal}")
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_FILE_BYTES:
            raise ImageError(f"too large to read ({size:,} bytes; limit {MAX_IMAGE_FILE_BYTES:,})")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except OSError as exc:
        raise ImageError(f"cannot read: {exc.strerror or exc}") from exc
    from PIL import Image, UnidentifiedImageError  # lazily: start-up does not pay for Pillow

    try:
        with Image.open(io.BytesIO(data)) as image:
            media_type = _FORMATS.get(image.format or "")
            if media_type is None:
                raise ImageError(f"its format is {image.format or 'unknown'}, not PNG, JPEG, GIF or WebP")
            original = image.size
            if max(original) <= max_edge:
                return ImageAttachment(name, media_type, data, *original, original_size=original)
            image.load()
            return _downscaled(image, name, media_type, max_edge, original)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise ImageError(f"not a readable image ({exc})") from exc


def _downscaled(
    image: PILImage, name: str, media_type: str, max_edge: int, original: tuple[int, int]
) -> ImageAttachment:
    from PIL import Image

    frame = image.copy()  # the first frame of an animated GIF or WebP
    frame.thumbnail((max_edge, max_edge), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if media_type == "image/jpeg":
        frame.convert("RGB").save(out, "JPEG", quality=90)
    elif media_type == "image/webp":
        frame.save(out, "WEBP", quality=90)
    else:  # PNG, and a GIF's first frame (a still PNG: every provider that takes images reads it)
        frame.save(out, "PNG")
        media_type = "image/png"
    return ImageAttachment(name, media_type, out.getvalue(), *frame.size, original_size=original)
