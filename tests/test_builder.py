"""The built-in ScreenSpot-Pro set: a real Chromium build of a small sample, checked for the
official layout, boxes that sit on what they name (pixels and real OCR) at every UI scale,
determinism, caching, and atomic installs. One small build (one screen per UI scale) is shared by
the whole session; a second build (through the cache) provides the determinism comparison."""

from __future__ import annotations

import difflib
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from regionfocus.kit.chromium import ChromiumLaunchError
from regionfocus.screenspot_pro import builder
from regionfocus.screenspot_pro.builder import (
    RECORD_FIELDS,
    TARGETS_PER_SCREEN,
    BuildParams,
    build_sample,
    builtin_dataset_dir,
    is_complete,
    targets,
)

GROUPS = {"Dev", "Creative", "CAD", "Scientific", "Office", "OS"}
SMALL = 3  # screens in the shared build: consecutive themes, one per UI scale


def _records(root: Path) -> list[dict]:
    out = []
    for f in sorted((root / "annotations").glob("*.json")):
        out += json.loads(f.read_text(encoding="utf-8"))
    return out


@pytest.fixture(scope="session")
def small_build(tmp_path_factory) -> Path:
    return build_sample(tmp_path_factory.mktemp("ssp") / "sample", n_screens=SMALL)


@pytest.fixture(scope="session")
def screens(small_build: Path) -> dict[str, Image.Image]:
    """Decoded screenshots of the shared build, by img_filename (decoding 4K PNGs is not free)."""
    out = {}
    for r in _records(small_build):
        if r["img_filename"] not in out:
            with Image.open(small_build / "images" / r["img_filename"]) as im:
                out[r["img_filename"]] = im.convert("RGB")
    return out


@pytest.fixture(scope="session")
def cached_build(tmp_path_factory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("cache")
    return cache, builtin_dataset_dir(cache, n_screens=SMALL)


@pytest.mark.slow
def test_official_layout_and_field_types(small_build: Path):
    ann_files = sorted((small_build / "annotations").glob("*.json"))
    assert ann_files, "no annotation files"
    ids = set()
    for f in ann_files:
        recs = json.loads(f.read_text(encoding="utf-8"))
        assert isinstance(recs, list) and recs
        for r in recs:
            assert tuple(r) == RECORD_FIELDS
            assert f.stem == f"{r['application']}_{r['platform']}"
            assert isinstance(r["id"], str) and r["id"] not in ids
            ids.add(r["id"])
            img_path = small_build / "images" / r["img_filename"]
            assert not Path(r["img_filename"]).is_absolute() and img_path.is_file()
            with Image.open(img_path) as im:
                assert im.format == "PNG" and list(im.size) == r["img_size"] == [3840, 2160]
            assert len(r["bbox"]) == 4 and all(type(v) is int for v in r["bbox"])
            assert r["instruction"] and isinstance(r["instruction"], str)
            assert re.search(r"[\u4e00-\u9fff]", r["instruction_cn"]), r["instruction_cn"]
            assert r["group"] in GROUPS and r["ui_type"] in ("text", "icon")
            assert r["platform"] in ("windows", "macos", "linux")
    # Every screen found its full quota of targets, so n screens give n * TARGETS_PER_SCREEN.
    manifest = json.loads((small_build / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["n_samples"] == len(ids) == SMALL * TARGETS_PER_SCREEN
    assert {r["ui_type"] for r in _records(small_build)} == {"text", "icon"}
    assert sorted(manifest["ui_scales"]) == [f.stem for f in ann_files]
    assert sorted(manifest["ui_scales"].values()) == [1.0, 1.5, 2.0]


def _ink(crop: np.ndarray) -> np.ndarray:
    """Pixels of an (h, w, 3) crop that clearly differ from its most common colour."""
    colors, counts = np.unique(crop.reshape(-1, 3), axis=0, return_counts=True)
    return np.abs(crop.astype(np.int16) - colors[counts.argmax()]).max(axis=2) > 60


@pytest.mark.slow
def test_boxes_are_in_image_pixels_at_every_ui_scale(small_build: Path, screens):
    """Text is rendered ``scale`` times larger, and every box scales with it: its drawing is
    centred in it and text spans its width (a CSS-px box would sit on unrelated pixels)."""
    scales = json.loads((small_build / "manifest.json").read_text(encoding="utf-8"))["ui_scales"]
    heights: dict[float, list[int]] = {}
    for r in _records(small_build):
        x1, y1, x2, y2 = r["bbox"]
        ink = _ink(np.asarray(screens[r["img_filename"]].crop((x1, y1, x2, y2))))
        ys, xs = np.nonzero(ink)
        assert len(xs), r
        cx = (xs.min() + xs.max() + 1) / 2 / (x2 - x1)
        cy = (ys.min() + ys.max() + 1) / 2 / (y2 - y1)
        off = 0.2 if r["ui_type"] == "text" else 0.3  # a minimize icon's bar sits low
        assert abs(cx - 0.5) <= off and abs(cy - 0.5) <= off, (r, cx, cy)
        if r["ui_type"] == "text":
            assert (xs.max() - xs.min() + 1) / (x2 - x1) >= 0.5, r
            heights.setdefault(scales[f"{r['application']}_{r['platform']}"], []).append(y2 - y1)
    # Most text targets are one line of 9-13 CSS px type (its box ~11-15 CSS px tall).
    medians = {s: float(np.median(h)) for s, h in heights.items()}
    assert sorted(medians) == [1.0, 1.5, 2.0]
    for s, m in medians.items():
        assert 10 <= m / s <= 16, medians


@pytest.mark.slow
def test_boxes_are_inside_and_cover_drawn_pixels(small_build: Path, screens):
    for r in _records(small_build):
        w, h = r["img_size"]
        x1, y1, x2, y2 = r["bbox"]
        assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h, r
        assert (x2 - x1) * (y2 - y1) < 0.01 * w * h, f"{r['id']}: box too large for a UI element"
        crop = np.asarray(screens[r["img_filename"]].crop((x1, y1, x2, y2))).reshape(-1, 3)
        colors, counts = np.unique(crop, axis=0, return_counts=True)
        # Something is drawn inside: not a flat patch of background.
        assert len(colors) >= 2 and 1 - counts.max() / counts.sum() >= 0.02, r


def _norm(s: str) -> str:
    return re.sub(r"[^0-9a-z]", "", s.lower())


@pytest.mark.slow
def test_text_boxes_read_back_as_their_quoted_text(small_build: Path, screens):
    """Real OCR of each text target's zoomed box finds the text its instruction quotes."""
    rapidocr = pytest.importorskip("rapidocr")
    models = Path(rapidocr.__file__).resolve().parent / "models"
    engine = rapidocr.RapidOCR(
        params={
            "Global.log_level": "critical",
            "Global.use_cls": False,
            "Det.model_path": str(models / "PP-OCRv6_det_small.onnx"),
            "Rec.model_path": str(models / "PP-OCRv6_rec_small.onnx"),
        }
    )
    hits, total = 0, 0
    for r in _records(small_build):
        if r["ui_type"] != "text":
            continue
        quoted = re.search(r'"([^"]+)"', r["instruction"]).group(1)
        x1, y1, x2, y2 = r["bbox"]
        crop = screens[r["img_filename"]].crop((x1 - 3, y1 - 3, x2 + 3, y2 + 3))
        crop = crop.resize((crop.width * 3, crop.height * 3), Image.Resampling.LANCZOS)
        # Every text target is one line, so recognition alone (no detector) reads it.
        out = engine(np.asarray(crop), use_det=False, use_cls=False, use_rec=True)
        read = _norm("".join(out.txts or ())) if out is not None and out.txts is not None else ""
        total += 1
        want = _norm(quoted)
        hits += want in read or difflib.SequenceMatcher(None, want, read).ratio() >= 0.75
    print(f"OCR read back {hits}/{total} text boxes")
    assert total >= 8
    assert hits / total >= 0.7, f"only {hits}/{total} text boxes read back as their text"


@pytest.mark.slow
def test_rebuild_is_identical_and_cache_is_reused(small_build: Path, cached_build):
    cache, root = cached_build
    assert root.parent == cache and is_complete(root, BuildParams(n_screens=SMALL))
    for f in sorted((small_build / "annotations").glob("*.json")):
        assert (root / "annotations" / f.name).read_bytes() == f.read_bytes(), f.name
    # Images agree too, pixel for pixel or nearly (the annotations are what must not change).
    for f in sorted((small_build / "images").rglob("*.png")):
        a = np.asarray(Image.open(f).convert("L"), dtype=np.int16)
        b = np.asarray(
            Image.open(root / "images" / f.relative_to(small_build / "images")).convert("L"), dtype=np.int16
        )
        assert np.abs(a - b).mean() < 0.5
    stamp = (root / "manifest.json").stat().st_mtime_ns
    again = builtin_dataset_dir(cache, n_screens=SMALL)
    assert again == root
    assert (root / "manifest.json").stat().st_mtime_ns == stamp  # found complete, not rebuilt
    # build_sample on a finished folder with the same parameters is a no-op as well.
    assert build_sample(small_build, n_screens=SMALL) == small_build.resolve()


@pytest.mark.slow
def test_failed_build_leaves_nothing_that_looks_complete(tmp_path: Path):
    # /bin/false exists but is not a browser: the launch fails mid-build.
    with pytest.raises(ChromiumLaunchError, match="browser_path=/bin/false exited at start"):
        build_sample(tmp_path / "out", n_screens=1, browser_path="/bin/false")
    assert list(tmp_path.iterdir()) == [], "a failed build left files behind"


def test_input_errors_name_the_bad_input(tmp_path: Path):
    with pytest.raises(ChromiumLaunchError, match="browser_path=/nonexistent/chromium does not exist"):
        build_sample(tmp_path / "a", n_screens=1, browser_path="/nonexistent/chromium")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="foreign"):
        build_sample(foreign, n_screens=1)
    with pytest.raises(ValueError, match="n_screens"):
        build_sample(tmp_path / "b", n_screens=0)
    assert not is_complete(foreign, BuildParams())


def test_full_build_plan_covers_groups_scales_and_sample_count():
    plans = builder._plan(BuildParams())
    assert {p.theme.group for p in plans} == GROUPS
    assert len(plans) * TARGETS_PER_SCREEN >= 120
    # Each application keeps one UI scale; a third of them at each.
    scales = {p.theme.application: p.theme.ui_scale for p in plans}
    assert sorted(scales.values()) == [1.0, 1.0, 1.5, 1.5, 2.0, 2.0]
    # Dense for their CSS area: a 200 % screen has a quarter of the room of a 100 % one.
    assert all(len(p.tiles) * p.theme.ui_scale**2 >= 60 for p in plans), "screens should be dense"
    for p in plans:
        lay = p.theme.layout
        assert (lay.w * lay.scale, lay.h * lay.scale) == (3840, 2160)
        for w in p.windows:  # windows inside the main area, which is inside the CSS viewport
            assert builder.pages.MAIN_X <= w.x and w.x + w.w <= builder.pages.MAIN_X + lay.main_w
            assert builder.pages.MAIN_Y <= w.y and w.y + w.h <= builder.pages.MAIN_Y + lay.main_h
    assert builder._plan(BuildParams()) == plans  # seeded


def test_cache_key_tracks_parameters(tmp_path: Path, monkeypatch):
    assert BuildParams(n_screens=2).key() != BuildParams(n_screens=3).key()
    assert BuildParams(seed=1).key() != BuildParams(seed=0).key()
    assert BuildParams().key() == BuildParams().key()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert builder.default_cache_root() == tmp_path / "regionfocus" / "screenspot-builtin-v1"


def test_occurrences_are_whole_word_and_case_insensitive():
    units = ["Submit", "submit form", "Resubmit", "OK", "ok?"]
    assert targets._occurrences("submit", units) == 2
    assert targets._occurrences("ok", units) == 2
    assert targets._occurrences("form", units) == 1
    assert targets._occurrences("sub", units) == 0
    # Letters beyond ASCII are word characters; matches do not overlap.
    assert targets._occurrences("caf", ["café", "caf-e"]) == 1
    assert targets._occurrences("a a", ["a a a"]) == 1
    assert targets._occurrences("ab", "ab\nab") == 2


def test_select_targets_respects_quotas_and_never_overlaps():
    rng = random.Random(3)
    pool = []
    buckets = (
        ["tile-text"] * 30 + ["chrome-text"] * 10 + ["tool"] * 10 + ["tile-icon"] * 10 + ["chrome-icon"] * 5
    )
    for i, bucket in enumerate(buckets):
        x, y = (i % 10) * 50, (i // 10) * 50
        kind = "tool" if bucket == "tool" else "text"
        pool.append({"bucket": bucket, "kind": kind, "text": f"t{i}", "bbox": [x, y, x + 30, y + 30]})
    pool.append({"bucket": "tile-text", "kind": "text", "text": "dup", "bbox": [5, 5, 20, 20]})
    chosen = targets.select_targets(pool, rng)
    assert len(chosen) == TARGETS_PER_SCREEN
    for i, a in enumerate(chosen):
        for b in chosen[i + 1 :]:
            assert not targets._overlaps(a["bbox"], b["bbox"])
    counts = {b: sum(c["bucket"] == b for c in chosen) for b, _ in targets.QUOTAS}
    assert all(counts[b] >= min(q, 1) for b, q in targets.QUOTAS)


def test_int_box_covers_the_float_rect_and_stays_on_screen():
    assert targets._int_box([10.2, 5.0, 20.1, 9.5]) == [10, 5, 21, 10]
    assert targets._int_box([-3.0, -1.0, 5000.0, 3000.0]) == [0, 0, 3840, 2160]
    # CSS px -> image px at a UI scale, rounded outward.
    assert targets._int_box([10.2, 5.0, 20.1, 9.5], 1.5) == [15, 7, 31, 15]
    assert targets._int_box([10.25, 5.5, 20.0, 9.75], 2.0) == [20, 11, 40, 20]
    assert targets._int_box([0.0, 0.0, 2560.0, 1440.0], 1.5) == [0, 0, 3840, 2160]


def test_layout_rejects_unknown_scales():
    with pytest.raises(ValueError, match="1.25"):
        builder.geometry.Layout(1.25)
