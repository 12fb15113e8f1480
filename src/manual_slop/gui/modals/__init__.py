"""Approval modals: one per pending-dialog kind, shown one at a time, oldest first."""

from manual_slop.gui.modals.host import MODAL_TITLES, render_modals

__all__ = ["MODAL_TITLES", "render_modals"]
