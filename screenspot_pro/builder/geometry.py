"""The geometry of a built-in screen: its size, the bars and panes around the windows, and the
page layout at each UI scale (image px per CSS px)."""

from __future__ import annotations

from dataclasses import dataclass

SCREEN_W, SCREEN_H = 3840, 2160  # image px
MENU_H, TOOL_H, STATUS_H = 26, 32, 22
LEFT_W, RIGHT_W, BOTTOM_H = 270, 290, 240
MAIN_X, MAIN_Y = LEFT_W, MENU_H + TOOL_H
WIN_GAP, WIN_TITLE_H, WIN_PAD = 6, 20, 4
TILE_W, TILE_BODY_H, TILE_CAPTION_H, TILE_MARGIN = 160, 160, 12, 4
# Window grids (columns, rows) a 100 % screen may use; each gives roughly 100-150 task tiles.
# Larger UI scales divide both counts by the scale (a 200 % screen has a quarter of the room).
WINDOW_GRIDS = ((4, 3), (5, 3), (5, 4), (6, 3), (6, 4))
# Display scalings of 4K monitors in the wild (Windows offers 100-300 % in 25 % steps; these
# three are the common ones). Each maps 3840x2160 to a whole number of CSS px.
UI_SCALES = (1.0, 1.5, 2.0)


@dataclass(frozen=True)
class Layout:
    """The page geometry of one UI scale, in CSS px; ``scale`` image px per CSS px."""

    scale: float

    def __post_init__(self) -> None:
        if self.scale not in UI_SCALES:
            raise ValueError(f"UI scale must be one of {UI_SCALES}, got {self.scale!r}")

    @property
    def w(self) -> int:
        return round(SCREEN_W / self.scale)

    @property
    def h(self) -> int:
        return round(SCREEN_H / self.scale)

    @property
    def main_w(self) -> int:
        return self.w - LEFT_W - RIGHT_W

    @property
    def main_h(self) -> int:
        return self.h - MENU_H - TOOL_H - BOTTOM_H - STATUS_H

    @property
    def side_h(self) -> int:
        return self.h - MAIN_Y - STATUS_H
