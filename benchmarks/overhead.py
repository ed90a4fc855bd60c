"""Overhead of one RegionFocus round on a 3840x2160 screenshot, stage by stage, no model.

Stages (each what one round really runs, with the real core and adapter code): box proposals
(fixed ratios; layout when regionfocus/proposers/layout.py is present), views (crop + Lanczos toward the
model's size), stars (draw_stars), the adapter's resize to the model size (smart_resize),
and encoding images for transport in several formats, against sending the full-resolution PNG
as the reference code does. Prints per-stage wall and CPU milliseconds, bytes per request, a
fidelity measure of each lossy format, and the round's total against the budget: 5 % of the
model time at 1 s per call (a round's critical path of ~3 calls -> 150 ms), no stage > 100 ms.

    .venv/bin/python -m benchmarks.overhead [--family qwen2.5-vl] [--repeat 3] [--image shot.png]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import math
import os

import numpy as np
from PIL import Image

from regionfocus import Point, Query, crop_view, draw_stars, fixed_ratio_boxes
from regionfocus.adapters.backends.encoding import encode_data_url
from regionfocus.adapters.families.resize import resize_for_model
from regionfocus.adapters.registry import get_adapter
from regionfocus.config import RegionFocusConfig

from ._common import load_screens, parse_size, print_machine, print_table, timeit

FORMATS = [("png", 90), ("jpeg", 75), ("jpeg", 90), ("jpeg", 95), ("webp", 75), ("webp", 90)]
BUDGET_ROUND_MS = 150.0  # 5 % of a 3 s critical path (focal, candidates, choice at 1 s each)
BUDGET_STAGE_MS = 100.0


def reference_png(image: Image.Image) -> bytes:
    """The full-resolution screenshot as PNG with Pillow's defaults (what the reference sends)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def pillow_png_url(image: Image.Image) -> str:
    """The backend's PNG path before this benchmark: Pillow at compress_level 1."""
    import base64

    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def psnr(a: Image.Image, b: Image.Image) -> float:
    x = np.asarray(a, dtype=np.float32)
    y = np.asarray(b, dtype=np.float32)
    mse = float(np.mean((x - y) ** 2))
    return float("inf") if mse == 0 else 10 * math.log10(255.0**2 / mse)


def decode(url: str) -> Image.Image:
    import base64

    with Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2]))) as im:
        return im.convert("RGB")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="qwen2.5-vl")
    p.add_argument("--max-pixels", type=int, default=None)
    p.add_argument("--repeat", type=int, default=3, help="runs per stage (best reported)")
    p.add_argument("--image", action="append", default=[], help="a real screenshot instead of synthetic")
    p.add_argument("--size", type=parse_size, default=(3840, 2160), help="synthetic screen size WxH")
    p.add_argument("--formats", default=",".join(f"{f}:{q}" for f, q in FORMATS), help="fmt:quality,...")
    p.add_argument("--no-layout", action="store_true", help="skip the layout proposer")
    args = p.parse_args(argv)

    print_machine()
    if args.image:
        (screen,) = load_screens(args.image[:1], 0)
    else:
        from ._common import synthetic_screen

        screen = synthetic_screen(0, args.size)
    options = {"max_pixels": args.max_pixels} if args.max_pixels else {}
    adapter = get_adapter(args.family, **options)
    model_size = adapter.input_size(screen.size)
    cfg = RegionFocusConfig()
    focal = Point(screen.width * 0.43, screen.height * 0.37)
    r = args.repeat
    print(f"screenshot {screen.size[0]}x{screen.size[1]}, {args.family} sees {model_size[0]}x{model_size[1]}")

    rows: list[list] = []
    stage_ms: dict[str, float] = {}

    def stage(name: str, fn, count: int, note: str = ""):
        t, out = timeit(fn, r)
        rows.append([name, round(t.wall_ms, 1), round(t.cpu_ms, 1), count, note])
        stage_ms[name] = t.cpu_ms
        return out

    boxes = stage("proposals: fixed ratios", lambda: fixed_ratio_boxes(focal, screen.size, cfg.ratios), 1)
    if not args.no_layout:
        try:
            from regionfocus.proposers.base import ProposalContext
            from regionfocus.proposers.layout import LayoutProposer

            lp = LayoutProposer()
            stage(
                "proposals: layout (opt-in)",
                lambda: asyncio.run(lp.propose(ProposalContext(screen, focal, Query("x")))),
                1,
                "not in the default round",
            )
        except ImportError:
            pass
    views = [crop_view(screen, b, model_size, cfg.max_zoom) for b in boxes]
    # The round's views come out at exactly the model's input size (fit=input_size).
    fitted = [crop_view(screen, b, model_size, cfg.max_zoom, fit=adapter.input_size) for b in boxes]
    for i, b in enumerate(boxes):
        stage(
            f"view {i}: crop + Lanczos {round(b.width)}x{round(b.height)}",
            lambda b=b: crop_view(screen, b, model_size, cfg.max_zoom, fit=adapter.input_size),
            1,
            f"-> {fitted[i].image.size[0]}x{fitted[i].image.size[1]}",
        )
    stage("stars: 1 history star (focal image)", lambda: draw_stars(screen, [focal]), 1)
    stars4 = [Point(focal.x + dx, focal.y + dy) for dx, dy in ((-300, 0), (300, 0), (0, 200), (0, -200))]
    choose_img = stage("stars: 4 candidates (choice image)", lambda: draw_stars(screen, stars4), 1)
    spec = adapter.resize
    resized = stage(
        "adapter resize: screenshot",
        lambda: resize_for_model(choose_img, spec.factor, spec.min_pixels, spec.max_pixels),
        2,
        "focal + choice images",
    ).image
    stage(
        "adapter resize: view (old path)",
        lambda: resize_for_model(views[0].image, spec.factor, spec.min_pixels, spec.max_pixels),
        4,
        f"{views[0].image.size[0]}x{views[0].image.size[1]} -> model size",
    )
    stage(
        "adapter resize: view (snapped)",
        lambda: resize_for_model(fitted[0].image, spec.factor, spec.min_pixels, spec.max_pixels),
        4,
        "already model size: identity" if fitted[0].image.size == model_size else "not snapped",
    )

    ref_t, ref = timeit(lambda: reference_png(screen), 1)
    rows.append(
        ["reference: full-res PNG (Pillow default)", round(ref_t.wall_ms, 1), round(ref_t.cpu_ms, 1), 1, ""]
    )
    ref_bytes = len(ref) * 4 / 3  # as base64

    enc_rows = []
    text_box = (int(screen.width * 0.15), 80, int(screen.width * 0.6), int(screen.height * 0.5))
    sx, sy = model_size[0] / screen.width, model_size[1] / screen.height
    text_box = tuple(round(v * s) for v, s in zip(text_box, (sx, sy, sx, sy), strict=True))
    formats = [
        (f.split(":")[0], int(f.split(":")[1]) if ":" in f else 90) for f in args.formats.split(",") if f
    ]
    formats.insert(1, ("png-pillow", 0))
    enc_ms: dict[str, float] = {}
    for fmt, q in formats:
        name = {"png": "png (backend: OpenCV, sub+RLE)", "png-pillow": "png (Pillow level 1, before)"}.get(
            fmt, f"{fmt} q{q}"
        )

        def encode(fmt=fmt, q=q) -> str:
            return pillow_png_url(resized) if fmt == "png-pillow" else encode_data_url(resized, fmt, q)

        t, url = timeit(encode, r)
        back = decode(url)
        enc_ms[name] = t.cpu_ms
        enc_rows.append(
            [
                name,
                round(t.wall_ms, 1),
                round(t.cpu_ms, 1),
                round(len(url) / 1e6, 2),
                f"{len(url) / ref_bytes:.2f}x",
                "lossless" if fmt.startswith("png") else f"{psnr(back, resized):.1f}",
                "lossless"
                if fmt.startswith("png")
                else f"{psnr(back.crop(text_box), resized.crop(text_box)):.1f}",
            ]
        )
    enc_rows.append(
        [
            "reference full-res PNG",
            round(ref_t.wall_ms, 1),
            round(ref_t.cpu_ms, 1),
            round(ref_bytes / 1e6, 2),
            "1.00x",
            "lossless",
            "lossless",
        ]
    )

    print_table(
        f"Stages of one round ({args.family}, model size {model_size[0]}x{model_size[1]}; best of {r})",
        ["stage", "wall ms", "CPU ms", "per round", "note"],
        rows,
    )
    print_table(
        f"Encoding one {model_size[0]}x{model_size[1]} image for transport (base64 data URL)",
        ["format", "wall ms", "CPU ms", "MB / request", "vs full-res PNG", "PSNR dB", "PSNR text pane dB"],
        enc_rows,
    )

    # A round: focal image (1 star), 4 views, choice image (4 stars). Views and their encodings
    # run concurrently (threads), so on n cores their share of the critical path is /min(4, n).
    cores = min(4, os.cpu_count() or 1)
    view_ms = [stage_ms[k] for k in stage_ms if k.startswith("view ")]
    resize_view = stage_ms["adapter resize: view (snapped)"]
    total_rows = []
    for name, e in enc_ms.items():
        focal_part = (
            stage_ms["stars: 1 history star (focal image)"] + stage_ms["adapter resize: screenshot"] + e
        )
        views_part = (sum(view_ms) + 4 * (resize_view + e)) / cores
        choose_part = (
            stage_ms["stars: 4 candidates (choice image)"] + stage_ms["adapter resize: screenshot"] + e
        )
        crit = focal_part + views_part + choose_part
        worst = max(e, stage_ms["adapter resize: screenshot"], *view_ms)
        total_rows.append(
            [
                name,
                round(focal_part),
                round(views_part),
                round(choose_part),
                round(crit),
                f"{100 * crit / 3000:.1f} %",
                "yes" if crit < BUDGET_ROUND_MS and worst <= BUDGET_STAGE_MS else "no",
            ]
        )
    print_table(
        f"Round overhead on the critical path from CPU ms, by transport format ({cores} cores share the 4 views)",
        [
            "format",
            "focal ms",
            "views ms",
            "choice ms",
            "total ms",
            "of 3 s",
            f"< {BUDGET_ROUND_MS:.0f} ms, stages <= 100 ms",
        ],
        total_rows,
    )
    return {"stages": rows, "encoding": enc_rows, "totals": total_rows}


if __name__ == "__main__":
    main()
