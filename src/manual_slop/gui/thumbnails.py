"""Thumbnails of the screenshots: small GPU textures, made once per image version.

The context service makes the RGBA thumbnails off the main thread
(:class:`manual_slop.context.images.Thumbnail`, in ``state.image_thumbnails``); this module
only uploads each one to a texture the first time it is drawn, keyed by the thumbnail's
``key`` (name + content digest), and drops textures whose image is gone. Main thread only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from imgui_bundle import ImVec2, imgui

__all__ = ["THUMB_HEIGHT", "ThumbnailTextures"]

THUMB_HEIGHT = 64.0  # pixels on screen


@dataclass(slots=True)
class ThumbnailTextures:
    """The textures of the thumbnails drawn so far (held in ``GuiState``)."""

    textures: dict[str, Any] = field(default_factory=dict)  # Thumbnail.key -> hello_imgui.TextureGpu

    def draw(self, names: Iterable[str], thumbnails: Mapping[str, Any], height: float = THUMB_HEIGHT) -> int:
        """Draw the thumbnails of ``names`` in a row (a name without one shows as text);
        returns how many images were drawn."""
        drawn = 0
        for index, name in enumerate(names):
            if index:
                imgui.same_line()
            thumb = thumbnails.get(name)
            texture = self._texture(thumb) if thumb is not None else None
            if texture is None:
                imgui.text_disabled(f"[{name}]")
                continue
            width = height * thumb.width / max(1, thumb.height)
            imgui.image(imgui.ImTextureRef(texture.texture_id()), ImVec2(width, height))
            if imgui.is_item_hovered():
                imgui.set_tooltip(name)
            drawn += 1
        self._forget(thumbnails)
        return drawn

    def _texture(self, thumb: Any) -> Any:
        texture = self.textures.get(thumb.key)
        if texture is None:
            import numpy as np
            from imgui_bundle import hello_imgui

            rgba = np.frombuffer(thumb.rgba, dtype=np.uint8).reshape(thumb.height, thumb.width, 4)
            texture = self.textures[thumb.key] = hello_imgui.create_texture_gpu_from_rgba_data(rgba)
        return texture

    def _forget(self, thumbnails: Mapping[str, Any]) -> None:
        if len(self.textures) > len(thumbnails):  # an image changed or left the context
            live = {thumb.key for thumb in thumbnails.values()}
            for key in [k for k in self.textures if k not in live]:
                del self.textures[key]  # the last reference: the texture is freed
