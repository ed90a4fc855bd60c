"""HTML for the built-in ScreenSpot-Pro-style screens: six application themes, an icon set, and
the page composer.

A screen is one 3840x2160 *image*. Each theme has a UI scale (100 %, 150 % or 200 %, like 4K
monitors set to different display scaling): the page is laid out in a CSS viewport of
3840/scale x 2160/scale px and rendered at device scale factor = scale, so text of 9-13 CSS px
becomes 9-13 image px at 100 % and 18-26 image px at 200 %. Every size in this module is in CSS
px. The screen looks like a professional desktop application: menu bar, icon toolbar, left
sidebar, right panel, bottom panel, status bar, and a main area tiled with "windows" whose
bodies hold MiniWoB++ task snapshots (160x160 CSS px each, 10 px text). Every element that may
become a target carries ``data-rf`` attributes that the extractor in ``builder.py`` reads;
nothing here talks to a browser. All randomness comes from the ``random.Random`` the caller
passes in.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass

from regionfocus.screenspot_pro.builder.geometry import (
    BOTTOM_H,
    LEFT_W,
    MAIN_X,
    MAIN_Y,
    MENU_H,
    RIGHT_W,
    STATUS_H,
    TILE_BODY_H,
    TILE_CAPTION_H,
    TILE_MARGIN,
    TILE_W,
    TOOL_H,
    WIN_GAP,
    WIN_PAD,
    WIN_TITLE_H,
    WINDOW_GRIDS,
    Layout,
)
from regionfocus.screenspot_pro.builder.themes import ICONS, Theme

WINDOW_CONTROLS = {
    "close": ('<path d="M4 4l8 8M12 4l-8 8"/>', "close", "关闭"),
    "maximize": ('<rect x="3.5" y="3.5" width="9" height="9"/>', "maximize", "最大化"),
    "minimize": ('<path d="M3.5 12.5h9"/>', "minimize", "最小化"),
}

ICON_CN = {desc: cn for desc, cn, _ in ICONS.values()}
# Chinese names of MiniWoB++'s ui_utils.COLORS, for the palette swatches' instruction_cn.
COLOR_CN = {
    "black": "黑色",
    "white": "白色",
    "aqua": "水绿色",
    "blue": "蓝色",
    "gray": "灰色",
    "green": "绿色",
    "lime": "酸橙色",
    "maroon": "栗色",
    "navy": "藏青色",
    "olive": "橄榄色",
    "purple": "紫色",
    "red": "红色",
    "silver": "银色",
    "teal": "青色",
    "yellow": "黄色",
    "pink": "粉色",
    "magenta": "洋红色",
    "gold": "金色",
    "orange": "橙色",
}
# fmt: on


@dataclass(frozen=True)
class TileSnapshot:
    """A MiniWoB++ task's ``#area`` element after ``genProblem()`` with a given seed."""

    task: str
    seed: str
    area_html: str


@dataclass(frozen=True)
class Words:
    """Word lists read from MiniWoB++'s ``common/ui_utils.js`` and its task sources."""

    people: tuple[str, ...]
    last_names: tuple[str, ...]
    countries: tuple[str, ...]
    languages: tuple[str, ...]
    lorem: tuple[str, ...]
    colors: tuple[str, ...]
    task_names: tuple[str, ...]
    source_lines: tuple[str, ...]
    functions: tuple[str, ...]


@dataclass(frozen=True)
class WindowSlot:
    """A window in the main area, in screen CSS px, and how many tiles it holds."""

    x: int
    y: int
    w: int
    h: int
    n_tiles: int


def plan_windows(rng: random.Random, layout: Layout) -> list[WindowSlot]:
    """Choose a window grid for the main area and the number of whole tiles each window fits."""
    cols, rows = rng.choice(WINDOW_GRIDS)
    cols, rows = max(1, round(cols / layout.scale)), max(1, round(rows / layout.scale))
    ww = (layout.main_w - WIN_GAP * (cols + 1)) // cols
    wh = (layout.main_h - WIN_GAP * (rows + 1)) // rows
    per_row = (ww - 2 * WIN_PAD) // (TILE_W + TILE_MARGIN)
    # A last row at least half visible is kept, cut off by the window like scrolled content, so
    # windows of larger UI scales are not half empty.
    per_col = round((wh - WIN_TITLE_H - 2 * WIN_PAD) / (TILE_CAPTION_H + TILE_BODY_H + TILE_MARGIN))
    slots = []
    for r in range(rows):
        for c in range(cols):
            x = MAIN_X + WIN_GAP + c * (ww + WIN_GAP)
            y = MAIN_Y + WIN_GAP + r * (wh + WIN_GAP)
            slots.append(WindowSlot(x, y, ww, wh, max(0, per_row * per_col)))
    return slots


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _icon_svg(body: str, size: int = 16) -> str:
    return (
        f'<svg width="{size}" height="{size}" viewBox="0 0 16 16" fill="none" '
        f'stroke="currentColor" stroke-width="1.4" stroke-linejoin="round">{body}</svg>'
    )


def _abs(x: int, y: int, w: int, h: int) -> str:
    return f"position:absolute;left:{x}px;top:{y}px;width:{w}px;height:{h}px;"


def _text_target(kind: str, text: str, tag: str = "span", cls: str = "") -> str:
    return f'<{tag} class="{cls}" data-rf="text" data-rf-kind="{kind}">{_e(text)}</{tag}>'


def _icon_target(kind: str, label: str, body: str, cls: str = "ib", size: int = 16) -> str:
    return (
        f'<span class="{cls}" data-rf="icon" data-rf-kind="{kind}" data-rf-label="{_e(label)}">'
        f"{_icon_svg(body, size)}</span>"
    )


def _distinct(rng: random.Random, pool: tuple[str, ...], n: int) -> list[str]:
    """n distinct entries (case-insensitively) of pool, in a seeded order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in rng.sample(pool, min(len(pool), n * 3)):
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
        if len(out) == n:
            break
    return out


def _sidebar_items(theme: Theme, words: Words, rng: random.Random, n: int) -> list[tuple[int, str]]:
    """(indent level, label) rows for the left sidebar."""
    if theme.bottom_kind == "code":
        names = [f"{t}.html" for t in _distinct(rng, words.task_names, n)]
        folders = ["miniwob", "core", "common", "special", "flight"]
        rows: list[tuple[int, str]] = []
        for i, name in enumerate(names):
            if i % 9 == 0:
                rows.append((0, folders[(i // 9) % len(folders)]))
            rows.append((1, name))
        return rows[:n]
    if theme.application == "sheetwise":
        return [(0, f"{c} {rng.randint(2019, 2025)}") for c in _distinct(rng, words.countries, n)]
    if theme.application == "pixelsmith":
        opts = [
            "Mode",
            "Opacity",
            "Brush",
            "Size",
            "Aspect Ratio",
            "Angle",
            "Spacing",
            "Hardness",
            "Force",
            "Dynamics",
            "Fade Options",
            "Color Options",
            "Apply Jitter",
            "Smooth stroke",
            "Lock brush to view",
            "Incremental",
            "Sample merged",
            "Antialiasing",
            "Feather edges",
        ]
        opts += [
            f"{w.strip(',').capitalize()} preset" for w in _distinct(rng, words.lorem, max(0, n - len(opts)))
        ]
        return [(0 if i % 5 == 0 else 1, o) for i, o in enumerate(opts[:n])]
    if theme.application == "labstat":
        ext = (".m", ".mat", ".csv", ".fig", ".mlx")
        return [
            (0, f"{w.strip(',')}_{rng.randint(1, 99)}{rng.choice(ext)}")
            for w in _distinct(rng, words.lorem, n)
        ]
    if theme.application == "draftline":
        prefixes = ("A-WALL", "A-DOOR", "E-LITE", "S-GRID", "M-DUCT", "P-PIPE", "C-TOPO", "A-ANNO")
        return [(1, f"{rng.choice(prefixes)}-{name.upper()}") for name in _distinct(rng, words.last_names, n)]
    places = ["Home", "Desktop", "Documents", "Downloads", "Music", "Pictures", "Videos", "Trash"]
    rows = [(0, p) for p in places]
    rows += [(1, name) for name in _distinct(rng, words.people, n - len(places))]
    return rows[:n]


def _right_rows(theme: Theme, words: Words, rng: random.Random, n: int) -> str:
    parts = []
    if theme.application == "pixelsmith":
        # Layers panel: an eye icon per layer (icon targets) beside its name.
        for name in _distinct(rng, words.lorem, n):
            name = name.strip(",").capitalize() + f" copy {rng.randint(1, 9)}"
            eye = _icon_target("eye", name, ICONS["eye"][2], "ib eye", 14)
            parts.append(
                f'<div class="row">{eye}<span class="sw" style="background:#{rng.randint(0, 0xFFFFFF):06x}"></span>'
                f"<span>{_e(name)}</span></div>"
            )
        return "".join(parts)
    if theme.bottom_kind == "code":
        for fn in words.functions[:n]:
            parts.append(f'<div class="row"><span class="sym">ƒ</span><span>{_e(fn)}</span></div>')
        return "".join(parts)
    keys = {
        "sheetwise": [
            "Number",
            "Alignment",
            "Font",
            "Border",
            "Fill",
            "Protection",
            "Decimal places",
            "Symbol",
            "Negative numbers",
            "Wrap text",
            "Shrink to fit",
            "Merge cells",
        ],
        "labstat": [f"{w.strip(',')}" for w in _distinct(rng, words.lorem, n)],
        "draftline": [
            "Color",
            "Layer",
            "Linetype",
            "Linetype scale",
            "Lineweight",
            "Transparency",
            "Thickness",
            "Start X",
            "Start Y",
            "End X",
            "End Y",
            "Delta X",
            "Delta Y",
            "Length",
            "Angle",
        ],
        "deskshell": [
            "Name",
            "Type",
            "Size",
            "Parent folder",
            "Accessed",
            "Modified",
            "Created",
            "Owner",
            "Group",
            "Permissions",
            "Execute",
            "Security context",
        ],
    }[theme.application]
    for key in keys[:n]:
        val = f"{rng.uniform(0, 999):.2f}" if rng.random() < 0.6 else rng.choice(words.languages)
        parts.append(
            f'<div class="row kv"><span class="k">{_e(key)}</span><span class="v">{_e(val)}</span></div>'
        )
    return "".join(parts)


def _bottom_body(theme: Theme, words: Words, rng: random.Random) -> str:
    if theme.bottom_kind == "code":
        start = rng.randrange(max(1, len(words.source_lines) - 14))
        lines = words.source_lines[start : start + 14]
        return "".join(
            f'<div class="code"><span class="ln">{start + i + 1}</span>{_e(line)}</div>'
            for i, line in enumerate(lines)
        )
    if theme.bottom_kind == "cells":
        cols = "ABCDEFGHIJKLMNOPQRSTUVWX"
        head = "".join(f"<th>{c}</th>" for c in cols)
        body = []
        for r in range(1, 11):
            cells = []
            for c in range(len(cols)):
                cells.append(rng.choice(words.last_names) if c % 4 == 0 else f"{rng.randint(0, 9999)}")
            body.append(f"<tr><th>{r}</th>" + "".join(f"<td>{_e(v)}</td>" for v in cells) + "</tr>")
        return f'<table class="cells"><tr><th></th>{head}</tr>{"".join(body)}</table>'
    if theme.bottom_kind == "palette":
        swatches = []
        for color in words.colors:
            swatches.append(
                f'<span class="swatch" data-rf="icon" data-rf-kind="swatch" data-rf-label="{_e(color)}" '
                f'style="background:{_e(color)}"></span>'
            )
        lines = []
        for _ in range(8):
            lines.append(
                "  ·  ".join(f"{w.strip(',')} {rng.randint(5, 200)}" for w in _distinct(rng, words.lorem, 9))
            )
        brushes = "".join(f'<div class="code">{_e(line)}</div>' for line in lines)
        return f'<div class="palette">{"".join(swatches)}</div>{brushes}'
    if theme.bottom_kind == "console":
        out = []
        for _ in range(13):
            if theme.application == "draftline":
                cmd = rng.choice(["LINE", "CIRCLE", "TRIM", "OFFSET", "HATCH", "DIMLINEAR", "MOVE", "ARRAY"])
                out.append(
                    f"Command: {cmd}  Specify point: {rng.uniform(0, 9999):.4f},{rng.uniform(0, 9999):.4f}"
                )
            else:
                var = rng.choice(words.lorem).strip(",")
                out.append(
                    f">> {var} = mean({var}_{rng.randint(1, 99)}(:, {rng.randint(1, 9)}))   ans = {rng.uniform(-99, 99):.4f}"
                )
        return "".join(f'<div class="code">{_e(line)}</div>' for line in out)
    rows = []
    for name in _distinct(rng, words.lorem, 10):
        kind = rng.choice(["Folder", "PDF document", "Plain text", "PNG image", "Spreadsheet"])
        rows.append(
            f"<tr><td>{_e(name.strip(','))}.{rng.choice(['pdf', 'txt', 'png', 'ods', 'tar.gz'])}</td>"
            f"<td>{rng.randint(1, 999)} kB</td><td>{kind}</td><td>{rng.randint(1, 28)}/{rng.randint(1, 12)}/2024</td></tr>"
        )
    return f'<table class="cells files">{"".join(rows)}</table>'


def _css(theme: Theme) -> str:
    t, lay = theme, theme.layout
    return f"""
html, body {{ margin:0; padding:0; width:{lay.w}px; height:{lay.h}px; overflow:hidden;
  background:{t.bg}; color:{t.fg}; font-family:"Liberation Sans","DejaVu Sans",sans-serif; font-size:12px; }}
.bar {{ background:{t.bar}; color:{t.fg}; display:flex; align-items:center; gap:2px; padding:0 6px; box-sizing:border-box; }}
.menu .app {{ font-weight:bold; margin-right:14px; color:{t.accent}; }}
.menu .mi {{ padding:3px 7px; }}
.tool .ib {{ display:inline-flex; width:24px; height:24px; align-items:center; justify-content:center; margin-right:3px; }}
.tool .sep {{ width:1px; height:18px; background:{t.fg}; opacity:.3; margin:0 6px; }}
.panel {{ background:{t.panel}; overflow:hidden; box-sizing:border-box; padding:4px 6px; font-size:11px; }}
.ptitle {{ font-size:10px; font-weight:bold; letter-spacing:.5px; opacity:.8; margin:2px 0 5px; }}
.row {{ height:17px; line-height:17px; white-space:nowrap; display:flex; align-items:center; gap:5px; }}
.row.kv .k {{ width:110px; opacity:.75; }}
.row .sym {{ color:{t.accent}; }}
.row .eye {{ display:inline-flex; width:16px; height:16px; align-items:center; justify-content:center; }}
.row .sw {{ width:22px; height:14px; border:1px solid #0006; }}
.tabs {{ display:flex; gap:14px; font-size:11px; padding:3px 2px 5px; }}
.tabs .tab {{ padding:1px 2px; }}
.tabs .tab.on {{ border-bottom:1px solid {t.accent}; }}
.code {{ font-family:"DejaVu Sans Mono",monospace; font-size:10px; line-height:14px; white-space:pre; }}
.code .ln {{ display:inline-block; width:34px; opacity:.5; }}
table.cells {{ border-collapse:collapse; font-size:10px; }}
table.cells td, table.cells th {{ border:1px solid #8884; padding:1px 4px; height:14px; }}
table.cells th {{ background:#8882; font-weight:normal; }}
table.files td {{ padding:1px 12px; }}
.palette {{ display:flex; gap:6px; margin:4px 0 10px; }}
.swatch {{ display:inline-block; width:14px; height:14px; border:1px solid #0008; }}
.status {{ font-size:11px; gap:22px; background:{t.accent}; color:#fff; }}
.win {{ position:absolute; background:{t.win_bg}; border:1px solid #8886; box-sizing:border-box; overflow:hidden; }}
.wtitle {{ height:{WIN_TITLE_H}px; display:flex; align-items:center; padding:0 4px 0 8px; font-size:11px;
  background:{t.bar}; gap:6px; }}
.wtitle .name {{ flex:1; }}
.wtitle .ib {{ display:inline-flex; width:16px; height:16px; align-items:center; justify-content:center; }}
.wbody {{ padding:{WIN_PAD}px; display:flex; flex-wrap:wrap; align-content:flex-start; }}
.tile {{ width:{TILE_W}px; margin:0 {TILE_MARGIN}px {TILE_MARGIN}px 0; }}
.cap {{ height:{TILE_CAPTION_H}px; font-size:9px; line-height:{TILE_CAPTION_H}px; opacity:.7; overflow:hidden; white-space:nowrap; }}
.mwt {{ width:{TILE_W}px; height:{TILE_BODY_H}px; overflow:hidden; background:#fff; color:#000; position:relative; }}
.mwt #wrap {{ width:{TILE_W}px; height:{TILE_BODY_H}px; overflow:hidden; font-family:Arial,"Liberation Sans",sans-serif; }}
"""


def screen_html(
    theme: Theme,
    rng: random.Random,
    windows: list[WindowSlot],
    tiles: list[TileSnapshot],
    words: Words,
    base_href: str,
    scoped_css: dict[str, str],
    core_css_href: str,
    jquery_ui_css_href: str,
) -> str:
    """The full HTML of one screen, laid out for ``theme.layout`` (CSS px). ``tiles`` are consumed
    in order, ``sum(w.n_tiles)`` of them; ``windows`` come from ``plan_windows`` with that layout.

    ``base_href`` is the file URL of MiniWoB++'s ``html/miniwob/`` folder so the snapshots'
    relative URLs (images, CSS ``url()``) resolve exactly as they do in the task pages.
    """
    t, lay = theme, theme.layout
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f'<base href="{_e(base_href)}">',
        f'<link rel="stylesheet" href="{_e(core_css_href)}">',
        f'<link rel="stylesheet" href="{_e(jquery_ui_css_href)}">',
        "<style>" + "\n".join(scoped_css[k] for k in sorted(scoped_css)) + "</style>",
        f"<style>{_css(t)}</style></head><body>",
    ]
    # Menu bar.
    menu = [f'<span class="app">{_e(t.title)}</span>']
    menu += [_text_target("menu", m, cls="mi") for m in t.menus]
    parts.append(f'<div class="bar menu" style="{_abs(0, 0, lay.w, MENU_H)}">{"".join(menu)}</div>')
    # Toolbar: a seeded subset of the icon set, in groups separated by rules.
    names = rng.sample(sorted(ICONS), 22)
    tool = []
    for i, name in enumerate(names):
        if i and i % 5 == 0:
            tool.append('<span class="sep"></span>')
        desc, _, body = ICONS[name]
        tool.append(_icon_target("tool", desc, body))
    parts.append(f'<div class="bar tool" style="{_abs(0, MENU_H, lay.w, TOOL_H)}">{"".join(tool)}</div>')
    # Left sidebar.
    side_h = lay.side_h
    rows = _sidebar_items(t, words, rng, (side_h - 30) // 17)
    side = [f'<div class="ptitle">{_e(t.sidebar_title)}</div>']
    for level, label in rows:
        side.append(
            f'<div class="row" style="padding-left:{4 + 12 * level}px">{_text_target("side", label)}</div>'
        )
    parts.append(f'<div class="panel" style="{_abs(0, MAIN_Y, LEFT_W, side_h)}">{"".join(side)}</div>')
    # Right panel.
    right = f'<div class="ptitle">{_e(t.right_title)}</div>' + _right_rows(t, words, rng, (side_h - 30) // 17)
    parts.append(f'<div class="panel" style="{_abs(lay.w - RIGHT_W, MAIN_Y, RIGHT_W, side_h)}">{right}</div>')
    # Bottom panel.
    tabs = "".join(
        _text_target("tab", name, cls="tab on" if i == 0 else "tab") for i, name in enumerate(t.bottom_tabs)
    )
    bottom = f'<div class="tabs">{tabs}</div>{_bottom_body(t, words, rng)}'
    parts.append(
        f'<div class="panel" style="{_abs(MAIN_X, MAIN_Y + lay.main_h, lay.main_w, BOTTOM_H)};border-top:1px solid #8886">{bottom}</div>'
    )
    # Status bar.
    status = "".join(_text_target("status", s) for s in t.status)
    parts.append(
        f'<div class="bar status" style="{_abs(0, lay.h - STATUS_H, lay.w, STATUS_H)}">{status}</div>'
    )
    # Windows of MiniWoB++ tiles.
    titles = _distinct(rng, words.lorem, len(windows))
    tile_iter = iter(tiles)
    for k, (slot, word) in enumerate(zip(windows, titles, strict=True)):
        title = f"{word.strip(',')}_{k + 1:02d}.{t.doc_ext}"
        controls = "".join(
            _icon_target(f"win-{name}", title, body) for name, (body, _, _) in WINDOW_CONTROLS.items()
        )
        body = []
        for _ in range(slot.n_tiles):
            tile = next(tile_iter)
            body.append(
                f'<div class="tile"><div class="cap">{_e(tile.task)}</div>'
                f'<div class="mwt mw-{_e(tile.task)}"><div id="wrap">{tile.area_html}</div></div></div>'
            )
        parts.append(
            f'<div class="win" style="{_abs(slot.x, slot.y, slot.w, slot.h)}">'
            f'<div class="wtitle">{_text_target("wintitle", title, cls="name")}{controls}</div>'
            f'<div class="wbody">{"".join(body)}</div></div>'
        )
    parts.append("</body></html>")
    return "".join(parts)
