"""Build a ScreenSpot-Pro-format grounding set from MiniWoB++ task pages rendered by Chromium.

Output layout (the official one, docs/ARCHITECTURE.md §6)::

    DIR/annotations/<application>_<platform>.json   JSON list of records
    DIR/images/<application>_<platform>/screen_NN.png
    DIR/manifest.json                               written last: marks a complete build

Each screen is a 3840x2160 image of a page composed by ``pages.screen_html``:
professional-app chrome around windows of MiniWoB++ task snapshots (``genProblem()`` after
``Math.seedrandom``, docs/ARCHITECTURE.md §9), mostly 9-13 CSS px text. Each application has a UI scale
(100/150/200 %, ``Theme.ui_scale``): its screens are laid out in a 3840/s x 2160/s CSS viewport
and rendered at device scale factor s, so the image stays 3840x2160 and its text is 9-13, 14-20
or 18-26 image px. Targets are read from the rendered DOM in CSS px and converted to image px
(times s, rounded outward), [x1, y1, x2, y2] with x2/y2 the right/bottom edges.
A text target is kept only if its text occurs exactly once among the screen's visible text, so
every instruction names one element. ``instruction_cn`` is a simple Chinese template rendering
of the same instruction (quoted UI text stays in English).

Public API: ``build_sample`` / ``build_sample_async`` (build into a folder) and
``builtin_dataset_dir`` (build once into the user cache and reuse).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import json
import os
import random
import re
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from regionfocus.kit.chromium import DEBIAN_CHROMIUM, choose_chromium, launched
from regionfocus.kit.runlog import atomic_write_text
from regionfocus.screenspot_pro.builder.targets import (
    TARGETS_PER_SCREEN,
    instruction_for,
    select_targets,
    unambiguous_targets,
)

from . import geometry, pages, themes
from .pages import TileSnapshot, Words
from .themes import THEMES

_JS_DIR = Path(__file__).with_name("js")


def _js(name: str) -> str:
    """A script the builder runs in the page (package data beside this module)."""
    return (_JS_DIR / name).read_text(encoding="utf-8")


# Bump when the output for the same parameters changes; it is part of the cache key.
BUILD_VERSION = 2
DEFAULT_SCREENS = 12
DEFAULT_BROWSER = DEBIAN_CHROMIUM
MANIFEST = "manifest.json"
RECORD_FIELDS = (
    "id", "img_filename", "bbox", "img_size", "instruction", "instruction_cn",
    "application", "platform", "group", "ui_type",
)  # fmt: skip

# MiniWoB++ tasks whose genProblem() output is a pure function of the seed (checked by
# re-seeding in one page) and that render as static DOM (no canvas, no body-level dialogs).
TASKS = (
    "click-button", "click-button-sequence", "click-checkboxes", "click-checkboxes-large",
    "click-checkboxes-soft", "click-checkboxes-transfer", "click-collapsible-nodelay",
    "click-collapsible-2-nodelay", "click-link", "click-menu", "click-option", "click-tab",
    "click-tab-2", "click-tab-2-hard", "click-test-2", "click-widget", "click-shape", "click-color",
    "click-shades", "count-shape", "identify-shape", "email-inbox", "email-inbox-forward",
    "social-media", "social-media-all", "choose-list", "navigate-tree", "multi-layouts",
    "multi-orderings", "phone-book", "stock-market", "grid-coordinate", "tic-tac-toe",
    "odd-or-even", "unicode-test", "copy-paste", "sign-agreement",
)  # fmt: skip


_SNAPSHOT_JS = _js("snapshot.js")

# Rewrites the task page's own <style> rules under `.mw-<task>` so tasks can share one page.
_SCOPED_CSS_JS = _js("scoped_css.js")

# Large results and arguments cross the Playwright protocol as one JSON string: its per-value
# (de)serialisation and validation of thousands of strings cost seconds of Python CPU per build.
_WORDS_JS = _js("words.js")

# Reads every visible text unit and every candidate target from the composed screen.
# Boxes are viewport CSS px (image px / device scale factor): [left, top, right, bottom].
_EXTRACT_JS = _js("extract.js")


# Is the candidate what a click at its box centre would hit (not covered by another element)?
_HIT_TEST_JS = _js("hit_test.js")


@dataclass(frozen=True)
class BuildParams:
    """Everything the output depends on; its hash keys the cache."""

    n_screens: int = DEFAULT_SCREENS
    seed: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "build_version": BUILD_VERSION,
            "n_screens": self.n_screens,
            "seed": self.seed,
            "targets_per_screen": TARGETS_PER_SCREEN,
            "miniwob_version": _miniwob_version(),
        }

    def key(self) -> str:
        blob = json.dumps(self.as_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:12]


@dataclass(frozen=True)
class _ScreenPlan:
    index: int
    seed: int
    theme: themes.Theme
    windows: list[pages.WindowSlot]
    tiles: list[tuple[str, str]]  # (task, seed string)


def _miniwob_version() -> str:
    try:
        return importlib.metadata.version("miniwob")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def miniwob_html_root() -> Path:
    """The ``html`` folder the ``miniwob`` wheel ships (task pages under ``miniwob/``)."""
    try:
        import miniwob
    except ImportError as exc:
        raise RuntimeError(
            "the built-in ScreenSpot-Pro set needs the `miniwob` package: pip install miniwob"
        ) from exc
    root = Path(miniwob.__file__).resolve().parent / "html"
    if not (root / "core" / "core.js").is_file():
        raise RuntimeError(f"miniwob is installed but its task pages are missing under {root}")
    return root


def _plan(params: BuildParams) -> list[_ScreenPlan]:
    plans = []
    for i in range(params.n_screens):
        rng = random.Random(f"regionfocus-builtin/{params.seed}/{i}/plan")
        theme = THEMES[i % len(THEMES)]
        windows = pages.plan_windows(rng, theme.layout)
        n_tiles = sum(w.n_tiles for w in windows)
        tiles = [(rng.choice(TASKS), f"{params.seed}-{i}-{j}") for j in range(n_tiles)]
        plans.append(_ScreenPlan(i, params.seed, theme, windows, tiles))
    return plans


def _read_words(root: Path, raw: dict[str, list[str]]) -> Words:
    lines: list[str] = []
    functions: list[str] = []
    for i, task in enumerate(TASKS):
        src = (root / "miniwob" / f"{task}.html").read_text(encoding="utf-8")
        if i < 6:
            lines += [ln.rstrip() for ln in src.splitlines() if ln.strip() and len(ln) <= 120]
        for name in re.findall(r"(?:var\s+)?([A-Za-z_]\w*)\s*=\s*function", src):
            if name not in functions:
                functions.append(name)
    return Words(
        people=tuple(raw["people"]),
        last_names=tuple(raw["last_names"]),
        countries=tuple(raw["countries"]),
        languages=tuple(raw["languages"]),
        lorem=tuple(dict.fromkeys(w for w in raw["lorem"] if len(w.strip(",")) > 3)),
        colors=tuple(raw["colors"]),
        task_names=tuple(sorted(p.stem for p in (root / "miniwob").glob("*.html"))),
        source_lines=tuple(lines),
        functions=tuple(functions),
    )


async def _snapshot_tasks(context, root: Path, wanted: dict[str, list[str]], workers: int = 3):
    """Load each wanted task page once and snapshot ``#area`` for each seed.

    Returns ({(task, seed): TileSnapshot}, {task: scoped CSS}, raw ui_utils word lists)."""
    queue = sorted(wanted)
    snaps: dict[tuple[str, str], TileSnapshot] = {}
    css: dict[str, str] = {}
    raw_words: dict[str, list[str]] = {}

    async def worker() -> None:
        page = await context.new_page()
        try:
            while queue:
                task = queue.pop(0)
                # The load event has run the page's onload (core.startEpisode), so genProblem exists.
                await page.goto((root / "miniwob" / f"{task}.html").as_uri(), wait_until="load")
                seeds = wanted[task]
                htmls = await page.evaluate(_SNAPSHOT_JS, seeds)
                for seed, area in zip(seeds, htmls, strict=True):
                    snaps[(task, seed)] = TileSnapshot(task, seed, area)
                css[task] = await page.evaluate(_SCOPED_CSS_JS, f".mw-{task}")
                if not raw_words and await page.evaluate("typeof ui_utils !== 'undefined'"):
                    raw_words.update(json.loads(await page.evaluate(_WORDS_JS)))
        finally:
            await page.close()

    await asyncio.gather(*(worker() for _ in range(workers)))
    if not raw_words:
        raise RuntimeError("no MiniWoB++ task page exposed ui_utils word lists")
    return snaps, css, raw_words


def _png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, without decoding the image."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise RuntimeError("Chromium returned a screenshot that is not a PNG")
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


async def _screenshot(page, path: Path) -> None:
    """The viewport at device resolution (3840x2160 at every UI scale), as PNG, into ``path``.

    Playwright's own screenshot, not a second CDP session's ``Page.captureScreenshot`` with
    ``optimizeForSpeed`` (zlib level 1, about half the encoding time): with a clip, that one was
    seen to drop the device-metrics override Playwright's session holds, so under load the page
    fell back to the headless window's size (3840x2073) before the hit test and targets near the
    bottom edge came and went between builds."""
    data = await page.screenshot(type="png")
    size = _png_size(data)
    if size != (geometry.SCREEN_W, geometry.SCREEN_H):
        raise RuntimeError(
            f"screenshot {path.name} is {size[0]}x{size[1]}, not {geometry.SCREEN_W}x{geometry.SCREEN_H}"
        )
    path.write_bytes(data)


async def _render_screen(page, plan: _ScreenPlan, snaps, css, words, root: Path, images_dir: Path, tmp: Path):
    """Compose, load, extract targets from and screenshot one screen; returns its records."""
    rng = random.Random(f"regionfocus-builtin/{plan.seed}/{plan.index}/compose")
    html_text = pages.screen_html(
        plan.theme,
        rng,
        plan.windows,
        [snaps[t] for t in plan.tiles],
        words,
        base_href=(root / "miniwob").as_uri() + "/",
        scoped_css={t: css[t] for t in {t for t, _ in plan.tiles}},
        core_css_href=(root / "core" / "core.css").as_uri(),
        jquery_ui_css_href=(root / "core" / "jquery-ui" / "jquery-ui.min.css").as_uri(),
    )
    page_file = tmp / f"screen_{plan.index:02d}.html"
    page_file.write_text(html_text, encoding="utf-8")
    await page.goto(page_file.as_uri(), wait_until="load")
    await page.evaluate("document.fonts.ready.then(() => true)")
    found = json.loads(await page.evaluate(_EXTRACT_JS))
    theme = plan.theme
    sub = f"{theme.application}_{theme.platform}"
    img_rel = f"{sub}/screen_{plan.index:02d}.png"
    (images_dir / sub).mkdir(parents=True, exist_ok=True)
    await _screenshot(page, images_dir / img_rel)
    pool = unambiguous_targets(found["cands"], found["units"], theme.ui_scale)
    hits = await page.evaluate(_HIT_TEST_JS, json.dumps([[c["ref"], c["css_bbox"]] for c in pool]))
    targets = select_targets([c for c, ok in zip(pool, hits, strict=True) if ok], rng)
    records = []
    for k, c in enumerate(targets):
        en, cn = instruction_for(c)
        records.append(
            {
                "id": f"{sub}_{plan.index:02d}_{k:02d}",
                "img_filename": img_rel,
                "bbox": c["bbox"],
                "img_size": [geometry.SCREEN_W, geometry.SCREEN_H],
                "instruction": en,
                "instruction_cn": cn,
                "application": theme.application,
                "platform": theme.platform,
                "group": theme.group,
                "ui_type": c["ui_type"],
            }
        )
    return records


async def _render_screens(
    browser, plans, snaps, css, words, root: Path, images_dir: Path, tmp: Path, workers: int = 2
):
    """Render all screens, ``workers`` pages at a time (each page has its own renderer).

    One browser context per UI scale: its viewport is the layout's CSS size and its device scale
    factor the scale, so every screenshot is 3840x2160 image px. The queue runs scale by scale,
    densest (slowest) screens first, so a worker rarely switches context."""
    contexts: dict[float, object] = {}
    for scale in sorted({p.theme.ui_scale for p in plans}):
        lay = geometry.Layout(scale)
        contexts[scale] = await browser.new_context(
            viewport={"width": lay.w, "height": lay.h}, device_scale_factor=scale
        )
    queue = sorted(plans, key=lambda p: (p.theme.ui_scale, p.index))
    records: list[dict] = []

    async def worker() -> None:
        page, page_scale = None, None
        while queue:
            plan = queue.pop(0)
            if plan.theme.ui_scale != page_scale:
                if page is not None:
                    await page.close()
                page_scale = plan.theme.ui_scale
                page = await contexts[page_scale].new_page()
            records.extend(await _render_screen(page, plan, snaps, css, words, root, images_dir, tmp))

    try:
        await asyncio.gather(*(worker() for _ in range(workers)))
    finally:
        for context in contexts.values():
            await context.close()
    return sorted(records, key=lambda r: r["id"])


def _validate(records: list[dict], images_dir: Path) -> None:
    """Raise ValueError naming every malformed record (fields, box inside image, image present)."""
    bad = []
    for r in records:
        if tuple(r) != RECORD_FIELDS:
            bad.append(f"{r.get('id')}: fields {list(r)}")
            continue
        w, h = r["img_size"]
        x1, y1, x2, y2 = r["bbox"]
        if not (0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h):
            bad.append(f"{r['id']}: bbox {r['bbox']} empty or outside {w}x{h}")
        if not (images_dir / r["img_filename"]).is_file():
            bad.append(f"{r['id']}: missing image {r['img_filename']}")
    if bad:
        raise ValueError("built-in ScreenSpot-Pro build produced bad records:\n  " + "\n  ".join(bad))


def _counts(records: list[dict]) -> dict[str, dict[str, int]]:
    return {
        "group": dict(sorted(Counter(r["group"] for r in records).items())),
        "ui_type": dict(sorted(Counter(r["ui_type"] for r in records).items())),
        "group_ui_type": dict(sorted(Counter(f"{r['group']}/{r['ui_type']}" for r in records).items())),
    }


def _read_manifest(out_dir: Path) -> dict | None:
    try:
        return json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_complete(out_dir: Path, params: BuildParams) -> bool:
    """True if ``out_dir`` holds a finished build of exactly these parameters."""
    manifest = _read_manifest(out_dir)
    return manifest is not None and manifest.get("params") == params.as_dict()


def _write_json(path: Path, obj: object) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, ensure_ascii=False) + "\n")


def _install(tmp_dir: Path, out_dir: Path, params: BuildParams) -> None:
    """Move a finished build into place; out_dir is never seen half-written."""
    old = None
    if out_dir.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, old / "d")
    try:
        os.replace(tmp_dir, out_dir)
    except OSError:
        if not is_complete(out_dir, params):  # not a concurrent identical build winning the race
            raise
        shutil.rmtree(tmp_dir, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


async def build_sample_async(
    out_dir: str | os.PathLike[str],
    *,
    n_screens: int = DEFAULT_SCREENS,
    seed: int = 0,
    browser_path: str | None = None,
    browser_flag: str = "browser_path=",
    force: bool = False,
) -> Path:
    """Render ``n_screens`` 3840x2160 screens (``TARGETS_PER_SCREEN`` targets each) into ``out_dir``.

    Reuses ``out_dir`` if it already holds this exact build, unless ``force``. Refuses to
    overwrite a non-empty folder that is not a build of ours. Returns ``out_dir`` as a Path.
    ``browser_path``: the Chromium to render with (default Debian's, :data:`DEFAULT_BROWSER`);
    one that does not start raises :class:`~regionfocus.kit.chromium.ChromiumLaunchError` naming
    it as ``browser_flag`` sets it (the command's ``--browser``) and leaves nothing behind.
    """
    if n_screens < 1:
        raise ValueError(f"n_screens must be >= 1, got {n_screens}")
    out = Path(out_dir).expanduser().resolve()
    params = BuildParams(n_screens=n_screens, seed=seed)
    if not force and is_complete(out, params):
        return out
    if out.exists() and any(out.iterdir()) and _read_manifest(out) is None and not force:
        raise FileExistsError(
            f"{out} is not empty and is not a built-in ScreenSpot-Pro build; use force=True"
        )
    # Debian's Chromium or the one named, never Playwright's own build: the screens are
    # rendered with the fonts and version the cached sets were checked with.
    choice = choose_chromium(browser_path, browser_flag, fallback=False)
    root = miniwob_html_root()
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        images_dir = tmp_dir / "images"
        (tmp_dir / "annotations").mkdir()
        images_dir.mkdir()
        plans = _plan(params)
        wanted: dict[str, list[str]] = {}
        for plan in plans:
            for task, s in plan.tiles:
                wanted.setdefault(task, []).append(s)
        async with launched(choice) as browser:
            context = await browser.new_context(viewport={"width": 500, "height": 400})
            snaps, css, raw_words = await _snapshot_tasks(context, root, wanted)
            await context.close()
            words = _read_words(root, raw_words)
            with tempfile.TemporaryDirectory(prefix="rf-screens-") as pages_tmp:
                records = await _render_screens(
                    browser, plans, snaps, css, words, root, images_dir, Path(pages_tmp)
                )
        _validate(records, images_dir)
        by_file: dict[str, list[dict]] = {}
        for r in records:
            by_file.setdefault(f"{r['application']}_{r['platform']}.json", []).append(r)
        for name, recs in sorted(by_file.items()):
            _write_json(tmp_dir / "annotations" / name, sorted(recs, key=lambda r: r["id"]))
        manifest = {
            "format": "screenspot-pro",
            "generator": "regionfocus regionfocus.screenspot_pro.builder",
            "params": params.as_dict(),
            "n_samples": len(records),
            # Not a ScreenSpot-Pro field: image px per CSS px of each annotation file's screens.
            "ui_scales": {
                f"{p.theme.application}_{p.theme.platform}": p.theme.ui_scale
                for p in sorted(plans, key=lambda p: p.theme.application)
            },
            "counts": _counts(records),
            "build_seconds": round(time.monotonic() - started, 2),
        }
        _write_json(tmp_dir / MANIFEST, manifest)  # last: its presence marks a complete build
        _install(tmp_dir, out, params)
    finally:
        if tmp_dir.exists():
            shutil.rmtree(tmp_dir, ignore_errors=True)
    return out


def build_sample(out_dir: str | os.PathLike[str], **options: Any) -> Path:
    """Synchronous :func:`build_sample_async` (same keyword options); call the async one from
    inside an event loop."""
    return asyncio.run(build_sample_async(out_dir, **options))


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/regionfocus/screenspot-builtin-v1`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "regionfocus" / "screenspot-builtin-v1"


def _builtin_target(cache_dir, params: BuildParams) -> Path:
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_root()
    return root / f"v{BUILD_VERSION}-{params.key()}"


def builtin_cached(
    cache_dir: str | os.PathLike[str] | None = None, *, n_screens: int = DEFAULT_SCREENS
) -> bool:
    """The built-in dataset is already built (``builtin_dataset_dir`` renders nothing)."""
    params = BuildParams(n_screens=n_screens, seed=0)
    return is_complete(_builtin_target(cache_dir, params), params)


def builtin_dataset_dir(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    n_screens: int = DEFAULT_SCREENS,
    seed: int = 0,
    browser_path: str | None = None,
    browser_flag: str = "browser_path=",
) -> Path:
    """The built-in dataset, built on first use under ``cache_dir`` (default
    ``default_cache_root()``) in a folder named by the build parameters' hash, then reused.
    A folder without a matching ``manifest.json`` (e.g. from an older version) is rebuilt."""
    params = BuildParams(n_screens=n_screens, seed=seed)
    target = _builtin_target(cache_dir, params)
    if is_complete(target, params):
        return target.resolve()
    return build_sample(
        target,
        n_screens=n_screens,
        seed=seed,
        browser_path=browser_path,
        browser_flag=browser_flag,
        force=True,
    )
