"""Screenshots read for a request: downscaled above ``context.image_max_edge``, refused with
the file and the reason when they cannot go (context.images)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from manual_slop.context.aggregate import ContextRequest
from manual_slop.context.images import prepare_images
from manual_slop.tools.security import PathPolicy


def write_image(path: Path, size: tuple[int, int], fmt: str, colour: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, fmt)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(out.getvalue())
    return out.getvalue()


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.fixture
def project(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    base.mkdir()
    return base


def request(base: Path, shots: list[str], **kw) -> ContextRequest:
    return ContextRequest(base_dir=str(base), screenshots=tuple(shots), **kw)


def test_an_image_within_the_edge_goes_byte_for_byte(project: Path) -> None:
    raw = write_image(project / "small.png", (40, 30), "PNG")
    images = prepare_images(request(project, ["small.png"]))
    assert images.refused == ()
    (shot,) = images.attached
    assert (shot.name, shot.media_type, shot.data, shot.width, shot.height) == (
        "small.png",
        "image/png",
        raw,
        40,
        30,
    )
    assert not shot.downscaled


def test_larger_images_are_downscaled_to_the_longest_edge_keeping_their_format(project: Path) -> None:
    write_image(project / "wide.png", (2000, 1000), "PNG")
    write_image(project / "tall.jpg", (300, 900), "JPEG")
    write_image(project / "anim.gif", (1000, 500), "GIF")
    images = prepare_images(request(project, ["wide.png", "tall.jpg", "anim.gif"], image_max_edge=600))
    assert images.refused == ()
    got = {i.name: i for i in images.attached}
    wide, tall, gif = got["wide.png"], got["tall.jpg"], got["anim.gif"]
    assert (wide.width, wide.height, wide.original_size, wide.media_type) == (
        600,
        300,
        (2000, 1000),
        "image/png",
    )
    assert decoded(wide.data).size == (600, 300) and decoded(wide.data).format == "PNG"
    assert (tall.width, tall.height, tall.media_type) == (200, 600, "image/jpeg")
    assert decoded(tall.data).format == "JPEG"
    # a downscaled GIF goes as a still PNG of its first frame
    assert (gif.width, gif.height, gif.media_type) == (600, 300, "image/png")
    assert decoded(gif.data).format == "PNG"
    assert "downscaled from 2000x1000" in wide.describe()


def test_what_cannot_be_sent_is_refused_naming_the_file_and_the_reason(project: Path) -> None:
    write_image(project / "paint.bmp", (10, 10), "BMP")
    write_image(project / "fake.png", (10, 10), "BMP")  # a BMP under a .png name: its real format counts
    (project / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    write_image(project / "logs" / "shot.png", (10, 10), "PNG")  # in the session logs: never sent
    shots = ["paint.bmp", "fake.png", "broken.png", "gone.png", "logs/shot.png", "shots/*.png"]
    policy = PathPolicy.for_project(project, log_dir=project / "logs")
    images = prepare_images(request(project, shots, policy=policy))
    assert images.attached == ()
    reasons = {r.name: r.reason for r in images.refused}
    assert "format is BMP, not PNG, JPEG, GIF or WebP" in reasons["paint.bmp"]
    assert "format is BMP" in reasons["fake.png"]
    assert reasons["broken.png"].startswith("not a readable image")
    assert reasons["gone.png"] == "file not found"
    assert reasons["shots/*.png"] == "matches no file"
    assert reasons["logs/shot.png"].startswith("refused by the path policy: ")
    assert images.refused[0].message().startswith("image paint.bmp is not sent: ")


def test_the_cache_decodes_a_file_version_once(project: Path) -> None:
    from manual_slop.context.images import ImageCache

    write_image(project / "shot.png", (2000, 100), "PNG")
    cache = ImageCache()
    req = request(project, ["shot.png"], image_max_edge=500)
    (first,) = prepare_images(req, cache).attached
    (again,) = prepare_images(req, cache).attached
    assert again is first and cache.thumbnail(first) is cache.thumbnail(again)
    thumb = cache.thumbnail(first)
    assert (thumb.width, thumb.height, len(thumb.rgba)) == (128, 6, 128 * 6 * 4)
    write_image(project / "shot.png", (3000, 300), "PNG", colour="blue")  # a new version
    (changed,) = prepare_images(req, cache).attached
    assert changed is not first and changed.original_size == (3000, 300) and changed.width == 500
    assert cache.thumbnail(changed).key != thumb.key
    # a policy that now refuses the file wins over the cached copy
    policy = PathPolicy.for_project(project, log_dir=project)
    refused = prepare_images(request(project, ["shot.png"], image_max_edge=500, policy=policy), cache)
    assert refused.attached == () and refused.refused[0].reason.startswith("refused by the path policy")
