"""The look of each built-in application (palette, fonts, sizes, chrome) and the icons they draw."""

from __future__ import annotations

from dataclasses import dataclass

from regionfocus.screenspot_pro.builder.geometry import Layout


@dataclass(frozen=True)
class Theme:
    """One made-up application. ``group`` is a ScreenSpot-Pro group name."""

    application: str
    platform: str
    group: str
    title: str
    doc_ext: str
    menus: tuple[str, ...]
    sidebar_title: str
    right_title: str
    bottom_tabs: tuple[str, ...]
    bottom_kind: str  # "code" | "cells" | "palette" | "console" | "files"
    status: tuple[str, ...]
    bg: str
    panel: str
    bar: str
    fg: str
    accent: str
    win_bg: str
    ui_scale: float  # one of UI_SCALES: image px per CSS px

    @property
    def layout(self) -> Layout:
        return Layout(self.ui_scale)


# The last field is the UI scale: two applications at each of UI_SCALES, as ScreenSpot-Pro mixes
# screenshots from 4K monitors at different display scalings. Any three consecutive themes
# cover all three scales, so even a 3-screen build has each.
# fmt: off
THEMES: tuple[Theme, ...] = (
    Theme(
        "codeforge", "linux", "Dev", "CodeForge", "html",
        ("File", "Edit", "Selection", "View", "Go", "Run", "Terminal", "Help"),
        "EXPLORER", "OUTLINE", ("PROBLEMS", "OUTPUT", "DEBUG CONSOLE", "TERMINAL", "PORTS"), "code",
        ("main*", "Ln 12, Col 4", "Spaces: 2", "UTF-8", "LF", "HTML"),
        "#1e1e1e", "#252526", "#333333", "#cccccc", "#007acc", "#2d2d30", 1.0,
    ),
    Theme(
        "sheetwise", "macos", "Office", "Sheetwise", "xlsx",
        ("File", "Home", "Insert", "Page Layout", "Formulas", "Data", "Review", "View", "Automate"),
        "NAVIGATOR", "FORMAT CELLS", ("Sheet Data", "Pivot", "Queries", "Comments"), "cells",
        ("Ready", "Accessibility: Good to go", "Average: 41.5", "Count: 12", "Sum: 498", "100%"),
        "#f3f3f3", "#ffffff", "#dce6df", "#222222", "#217346", "#e9e9e9", 1.5,
    ),
    Theme(
        "pixelsmith", "windows", "Creative", "PixelSmith", "xcf",
        ("File", "Edit", "Select", "View", "Image", "Layers", "Colors", "Tools", "Filters", "Windows"),
        "TOOL OPTIONS", "LAYERS", ("Palette", "Brushes", "Patterns", "Gradients"), "palette",
        ("px", "66.7%", "RGB color 8-bit gamma", "Background (12.4 MB)", "x: 1204 y: 388"),
        "#454545", "#3a3a3a", "#2b2b2b", "#dddddd", "#d08a2f", "#505050", 2.0,
    ),
    Theme(
        "labstat", "macos", "Scientific", "LabStat", "m",
        ("File", "Edit", "View", "Insert", "Analysis", "Plots", "Apps", "Window"),
        "CURRENT FOLDER", "WORKSPACE", ("Command Window", "History", "Profiler"), "console",
        ("Busy", "script: analysis.m", "Ln 40 Col 1", "UTF-8", "zoom: 100%"),
        "#ffffff", "#f7f7f7", "#e4e4e4", "#1b1b1b", "#0b5cad", "#f0f0f0", 1.0,
    ),
    Theme(
        "draftline", "windows", "CAD", "DraftLine", "dwg",
        ("File", "Edit", "Insert", "Format", "Tools", "Draw", "Dimension", "Modify", "Parametric"),
        "LAYERS", "PROPERTIES", ("Command", "Layout1", "Layout2", "Model"), "console",
        ("MODEL", "SNAP", "GRID", "ORTHO", "POLAR", "OSNAP", "1:100", "Decimal"),
        "#212830", "#2b3440", "#1a2027", "#c8d0d8", "#3d8fd1", "#303a47", 1.5,
    ),
    Theme(
        "deskshell", "linux", "OS", "DeskShell Files", "dir",
        ("Files", "Edit", "View", "Go", "Bookmarks", "Tools", "Tabs", "Help"),
        "PLACES", "DETAILS", ("Name", "Size", "Type", "Modified"), "files",
        ("38 items", "2 selected (4.1 kB)", "Free space: 112.4 GB", "List view"),
        "#fafafa", "#eeeeee", "#dcdcdc", "#2e3436", "#3584e4", "#f6f6f6", 2.0,
    ),
)

# Icon set drawn here (16x16 viewBox, stroke = currentColor).
# Name -> (English description, Chinese description, SVG body).
ICONS: dict[str, tuple[str, str, str]] = {
    "new-file": ("new file", "新建文件", '<path d="M4 1.5h5l3 3v10H4z"/><path d="M9 1.5v3h3"/>'),
    "open-folder": ("open folder", "打开文件夹", '<path d="M1.5 4h5l1.5 2h6.5v7.5h-13z"/>'),
    "save": ("save", "保存", '<path d="M2 2h10l2 2v10H2z"/><path d="M5 2v4h6V2M5 14v-4h6v4"/>'),
    "undo": ("undo", "撤销", '<path d="M5 4L2 7l3 3"/><path d="M2 7h8a4 4 0 010 8H7"/>'),
    "redo": ("redo", "重做", '<path d="M11 4l3 3-3 3"/><path d="M14 7H6a4 4 0 000 8h3"/>'),
    "search": ("search", "搜索", '<circle cx="6.5" cy="6.5" r="4.5"/><path d="M10 10l4.5 4.5"/>'),
    "zoom-in": ("zoom in", "放大", '<circle cx="6.5" cy="6.5" r="4.5"/><path d="M10 10l4.5 4.5M4.5 6.5h4M6.5 4.5v4"/>'),
    "zoom-out": ("zoom out", "缩小", '<circle cx="6.5" cy="6.5" r="4.5"/><path d="M10 10l4.5 4.5M4.5 6.5h4"/>'),
    "settings": ("settings", "设置", '<circle cx="8" cy="8" r="2.5"/><path d="M8 1v2.5M8 12.5V15M1 8h2.5M12.5 8H15M3 3l1.8 1.8M11.2 11.2L13 13M3 13l1.8-1.8M11.2 4.8L13 3"/>'),
    "run": ("run", "运行", '<path d="M4 2.5l9 5.5-9 5.5z" fill="currentColor"/>'),
    "stop": ("stop", "停止", '<rect x="3" y="3" width="10" height="10" fill="currentColor"/>'),
    "refresh": ("refresh", "刷新", '<path d="M13.5 8A5.5 5.5 0 112 6.5"/><path d="M13.5 2.5v4h-4"/>'),
    "split": ("split editor", "拆分编辑器", '<rect x="1.5" y="2.5" width="13" height="11"/><path d="M8 2.5v11"/>'),
    "bell": ("notifications", "通知", '<path d="M4 11V7a4 4 0 018 0v4l1.5 1.5h-11z"/><path d="M6.5 14h3"/>'),
    "download": ("download", "下载", '<path d="M8 1.5v9M4.5 7L8 10.5 11.5 7M2 14.5h12"/>'),
    "upload": ("upload", "上传", '<path d="M8 11V2M4.5 5.5L8 2l3.5 3.5M2 14.5h12"/>'),
    "filter": ("filter", "筛选", '<path d="M1.5 2h13L9.5 8v5l-3 1.5V8z"/>'),
    "home": ("home", "主页", '<path d="M1.5 8L8 2l6.5 6M3.5 6.5v8h9v-8"/>'),
    "star": ("favorite", "收藏", '<path d="M8 1.5l2 4.3 4.6.5-3.4 3.1 1 4.6L8 11.6 3.8 14l1-4.6L1.4 6.3 6 5.8z"/>'),
    "trash": ("delete", "删除", '<path d="M2.5 4h11M6 4V2h4v2M4 4l1 10.5h6L12 4"/>'),
    "lock": ("lock", "锁定", '<rect x="3" y="7" width="10" height="7.5"/><path d="M5 7V5a3 3 0 016 0v2"/>'),
    "copy": ("copy", "复制", '<rect x="5" y="5" width="9" height="9.5"/><path d="M2 11V1.5h9"/>'),
    "paste": ("paste", "粘贴", '<rect x="3" y="2.5" width="10" height="12"/><path d="M6 1.5h4v2.5H6z"/>'),
    "grid": ("toggle grid", "切换网格", '<path d="M1.5 1.5h13v13h-13zM1.5 6h13M1.5 10.5h13M6 1.5v13M10.5 1.5v13"/>'),
    "chart": ("insert chart", "插入图表", '<path d="M1.5 14.5h13"/><rect x="3" y="8" width="2.5" height="6"/><rect x="7" y="4" width="2.5" height="10"/><rect x="11" y="10" width="2.5" height="4"/>'),
    "pencil": ("pencil tool", "铅笔工具", '<path d="M2 14l1-4 8-8 3 3-8 8z"/><path d="M9.5 3.5l3 3"/>'),
    "crop": ("crop", "裁剪", '<path d="M4 1v11h11M1 4h11v11"/>'),
    "rotate": ("rotate", "旋转", '<path d="M3 8a5 5 0 109-3"/><path d="M12.5 1.5V5H9"/>'),
    "layers": ("layers", "图层", '<path d="M8 2l6.5 3.5L8 9 1.5 5.5z"/><path d="M1.5 9L8 12.5 14.5 9"/>'),
    "eye": ("visibility", "可见性", '<path d="M1 8s2.5-4.5 7-4.5S15 8 15 8s-2.5 4.5-7 4.5S1 8 1 8z"/><circle cx="8" cy="8" r="2"/>'),
    "align-left": ("align left", "左对齐", '<path d="M2 3h12M2 6.5h8M2 10h12M2 13.5h8"/>'),
    "link": ("insert link", "插入链接", '<path d="M7 9a3 3 0 004 0l2.5-2.5a3 3 0 00-4-4L8.5 3.5"/><path d="M9 7a3 3 0 00-4 0L2.5 9.5a3 3 0 004 4l1-1"/>'),
    "bookmark": ("bookmark", "书签", '<path d="M3.5 1.5h9v13L8 11l-4.5 3.5z"/>'),
    "terminal": ("new terminal", "新建终端", '<rect x="1.5" y="2.5" width="13" height="11"/><path d="M4 6l2.5 2L4 10M8 10.5h4"/>'),
    "circle-tool": ("ellipse tool", "椭圆工具", '<ellipse cx="8" cy="8" rx="6.5" ry="4.5"/>'),
    "line-tool": ("line tool", "直线工具", '<path d="M2 14L14 2"/><circle cx="2" cy="14" r="1" fill="currentColor"/><circle cx="14" cy="2" r="1" fill="currentColor"/>'),
    "measure": ("measure distance", "测量距离", '<path d="M1.5 10.5l9-9 4 4-9 9z"/><path d="M4 8l1.5 1.5M6 6l1 1M8 4l1.5 1.5"/>'),
    "mail": ("send by mail", "邮件发送", '<rect x="1.5" y="3" width="13" height="10"/><path d="M1.5 3.5L8 9l6.5-5.5"/>'),
}
