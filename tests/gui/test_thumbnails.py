"""Screenshots as thumbnails in the real window: the message box shows the screenshots the
next send attaches (one texture per image version), a discussion entry the screenshots its
send read, and a selected ``images`` entry of the Comms Log what a request sent."""

from __future__ import annotations

from pathlib import Path

from imgui_bundle.immapp import testing
from PIL import Image

from tests.gui.conftest import frames_until


def test_screenshots_show_as_thumbnails(make_controller, run_gui, app_dir: Path, artifacts: Path) -> None:
    Image.new("RGB", (400, 200), "orange").save(app_dir / "ui.png")
    ctrl = make_controller()
    ctrl.fields.set("screenshots", ["ui.png"])
    entry = {"role": "User", "content": "look", "ts": "", "collapsed": False, "images": ["ui.png"]}
    ctrl.state.discussions[ctrl.state.active_discussion]["history"].append(entry)
    ctrl.state.comms_log.append(
        {"seq": 1, "kind": "images", "direction": "OUT", "payload": {"paths": ["ui.png"], "sent": []}}
    )
    drawn: list[int] = []
    guis: list = []

    def test(ctx, app) -> None:
        guis.append(app.gui)
        ctx.yield_(3)
        ctrl.actions.invoke("btn_refresh_context")
        frames_until(ctx, lambda: bool(ctrl.state.image_thumbnails))
        frames_until(ctx, lambda: bool(app.gui.thumbnails.textures))
        keys = set(app.gui.thumbnails.textures)
        app.gui.comms_filter.selected = 0
        app.focus("Comms Log")
        ctx.yield_(3)
        testing.capture(ctx, str(artifacts / "thumbnails.png"))
        drawn.append(len(app.gui.thumbnails.textures))
        assert set(app.gui.thumbnails.textures) == keys  # the same image: no second texture

    run_gui(ctrl, test)
    assert ctrl._frame_failure is None, ctrl._frame_failure  # no panel failed drawing them
    thumb = ctrl.state.image_thumbnails["ui.png"]
    assert (thumb.width, thumb.height) == (128, 64) and len(thumb.rgba) == 128 * 64 * 4
    assert drawn == [1]
    assert guis[0].thumbnails.textures == {}  # freed while the GL context was alive, at the window's exit
