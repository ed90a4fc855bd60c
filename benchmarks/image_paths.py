"""Library or ours: client CPU per sample of the image work we wrote by hand.

Two jobs of one ScreenSpot-Pro sample (a RegionFocus round on a synthetic 4K screen, the model
seeing ~3836x2156):

- resampling the 4 views (crop -> the model's size), by our compiled Lanczos kernel
  (``regionfocus._lanczos``), Pillow's Lanczos (with ``reducing_gap`` where a view shrinks),
  OpenCV's Lanczos-4 and bicubic, Pillow's bicubic, and pyvips when it is importable. PSNR is
  against Pillow's Lanczos of the same crop, the least over the sample's 4 views and over 144
  more view crops placed at random at 2x, 3x and 4x zoom on screens of 1080p, 1440p and 4K (a
  path that dips below 40 dB anywhere is not good enough);
- PNG-encoding the 7 images the sample sends (the model-size screenshot, the judge's and the
  choice's starred copies of it, the 4 views), by our writer (``adapters/backends/png.py``),
  OpenCV's and Pillow's libpng at level 1, and imagecodecs when it is importable; BMP (no
  compression, what the local transport writes) for scale.

Each candidate does one sample's work per round, the candidates take turns within a round (in
an order rotated each round) so a slow patch of the machine hits them all, and each ratio is
taken round by round (paired) before its median. CPU is process CPU (OpenCV's and our
writer's worker threads included).

A row whose code is not importable prints n/a (the kernel is optional; pyvips and imagecodecs
are no dependencies). The writer's strip reuse, dropped for it, was measured by this script at
commit 6ba3b0f (BENCHMARKS.md, "Library or ours").

    .venv/bin/python -m benchmarks.image_paths [--rounds 7] [--max-pixels N] [--size 3840x2160]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import io
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np
from PIL import Image

from regionfocus import Point, crop_view, fixed_ratio_boxes
from regionfocus.adapters.registry import get_adapter
from regionfocus.config import RegionFocusConfig

from ._common import parse_size, print_machine, print_table, synthetic_screen

RULE = 1.5  # the bar: hand-written code stays only if this many times less CPU per sample
MIN_PSNR_DB = 40.0  # a view within this of Pillow's Lanczos is good enough (the issue)

Crop = tuple[Image.Image, tuple[int, int]]  # (crop of the screenshot, the view's size (W, H))


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


# ------------------------------------------------------------------ one sample's work
PROBE_SCREENS = ((1920, 1080), (2560, 1440), (3840, 2160))  # ScreenSpot-Pro's range of sizes


def probe_crops(per_zoom: int) -> list[Crop]:
    """``per_zoom`` boxes at each of 2x, 3x and 4x zoom (max_zoom), placed at random (seeded)
    on a synthetic screen of each size in PROBE_SCREENS: the quality bar holds for a path only
    if it holds wherever a view can land, dense text included, not just on one sample's views."""
    rng = random.Random(0)
    crops = []
    for i, size in enumerate(PROBE_SCREENS):
        shot = synthetic_screen(i + 1, size)
        for zoom in (2.0, 3.0, 4.0):
            for _ in range(per_zoom):
                w = rng.randint(200, 900)
                h = int(w * rng.uniform(0.4, 0.8))
                left, top = rng.randint(0, shot.width - w), rng.randint(0, shot.height - h)
                box = (left, top, left + w, top + h)
                crops.append((shot.crop(box), (round(w * zoom), round(h * zoom))))
    return crops


def sample(
    size: tuple[int, int], family: str, max_pixels: int | None
) -> tuple[list[Crop], list[Image.Image]]:
    """The 4 view crops with their output sizes, and the 7 images one sample sends, made by
    the real adapter and core (the round's boxes around an off-centre focal point)."""
    shot = synthetic_screen(0, size)
    adapter = get_adapter(family, **({"max_pixels": max_pixels} if max_pixels else {}))
    cfg = RegionFocusConfig()
    focal = Point(shot.width * 0.43, shot.height * 0.37)
    boxes = fixed_ratio_boxes(focal, shot.size, cfg.ratios)
    model = adapter.input_size(shot.size)
    views = [crop_view(shot, b, model, cfg.max_zoom, fit=adapter.input_size) for b in boxes]
    crops = []
    for v in views:
        b = v.transform.box
        crops.append((shot.crop((int(b.left), int(b.top), int(b.right), int(b.bottom))), v.image.size))
    stars = [Point(focal.x + dx, focal.y + dy) for dx, dy in ((-300, 0), (300, 0), (0, 200), (0, -200))]

    async def starred() -> list[Image.Image]:
        plain = await adapter.model_image(shot)
        judge = await adapter.annotate(shot, [focal])
        choice = await adapter.annotate(shot, stars, [str(i + 1) for i in range(4)])
        return [plain, judge, choice]

    plain, judge, choice = asyncio.run(starred())
    return crops, [plain, judge, *(v.image for v in views), choice]


# ------------------------------------------------------------------ resampling candidates
def _cv2(interpolation: int) -> Callable[[Image.Image, tuple[int, int]], np.ndarray]:
    return lambda im, size: cv2.resize(np.asarray(im), size, interpolation=interpolation)


def _pillow_gap(im: Image.Image, size: tuple[int, int]) -> Image.Image:
    return im.resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0)


def _cubic_path(im: Image.Image, size: tuple[int, int]) -> Any:
    """OpenCV's bicubic, except where an axis shrinks by more than 5 %: OpenCV's kernel does not
    widen with a shrink (it aliases), Pillow's does."""
    if size[0] < 0.95 * im.width or size[1] < 0.95 * im.height:
        return im.resize(size, Image.Resampling.BICUBIC)
    return cv2.resize(np.asarray(im), size, interpolation=cv2.INTER_CUBIC)


def resample_candidates() -> dict[str, Callable | None]:
    kernel = _optional("regionfocus._lanczos")
    vips = _optional("pyvips")

    def ours(im: Image.Image, size: tuple[int, int]) -> bytes:
        return kernel.resample_rgb(im.tobytes(), im.width, im.height, size[0], size[1])

    def pyvips_lanczos3(im: Image.Image, size: tuple[int, int]) -> np.ndarray:
        v = vips.Image.new_from_array(np.asarray(im))
        return v.resize(size[0] / im.width, vscale=size[1] / im.height, kernel="lanczos3").numpy()

    return {
        "ours: C Lanczos kernel (regionfocus._lanczos)": ours if kernel is not None else None,
        "Pillow LANCZOS": lambda im, size: im.resize(size, Image.Resampling.LANCZOS),
        "Pillow LANCZOS, reducing_gap=2.0": _pillow_gap,
        "cv2 INTER_LANCZOS4": _cv2(cv2.INTER_LANCZOS4),
        "cv2 INTER_CUBIC": _cv2(cv2.INTER_CUBIC),
        "Pillow BICUBIC": lambda im, size: im.resize(size, Image.Resampling.BICUBIC),
        "library path: cv2 INTER_CUBIC, Pillow BICUBIC for shrinks > 5 %": _cubic_path,
        "pyvips lanczos3": pyvips_lanczos3 if vips is not None else None,
    }


def _pixels(out: Any, size: tuple[int, int]) -> np.ndarray:
    if isinstance(out, bytes):
        return np.frombuffer(out, np.uint8).reshape(size[1], size[0], 3)
    return np.asarray(out)


def _min_psnr(fn: Callable, crops: list[Crop]) -> float:
    """The least PSNR of ``fn``'s resizes of ``crops`` against Pillow's Lanczos (inf: none)."""
    return min(
        (psnr(_pixels(fn(c, s), s), np.asarray(c.resize(s, Image.Resampling.LANCZOS))) for c, s in crops),
        default=float("inf"),
    )


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


# ------------------------------------------------------------------ PNG candidates
def _pillow_save(fmt: str, **params: Any) -> Callable[[Image.Image], bytes]:
    def save(im: Image.Image) -> bytes:
        buf = io.BytesIO()
        im.save(buf, format=fmt, **params)
        return buf.getvalue()

    return save


def _cv2_png(params: Sequence[int]) -> Callable[[Image.Image], bytes]:
    def encode(im: Image.Image) -> bytes:
        ok, buf = cv2.imencode(".png", cv2.cvtColor(np.asarray(im), cv2.COLOR_RGB2BGR), list(params))
        if not ok:
            raise RuntimeError("cv2.imencode failed")
        return buf.tobytes()

    return encode


def png_candidates() -> dict[str, Callable[[list[Image.Image]], list[bytes]] | None]:
    png = _optional("regionfocus.adapters.backends.png")
    codecs = _optional("imagecodecs")

    def each(fn: Callable[[Image.Image], bytes]) -> Callable[[list[Image.Image]], list[bytes]]:
        return lambda images: [fn(im) for im in images]

    sub_rle = [
        cv2.IMWRITE_PNG_COMPRESSION, 1,
        cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_SUB,
        cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
    ]  # fmt: skip
    return {
        "ours: ISA-L writer": each(png.encode) if png is not None else None,
        "cv2.imencode PNG level 1": each(_cv2_png([cv2.IMWRITE_PNG_COMPRESSION, 1])),
        "cv2.imencode PNG level 1, sub + RLE": each(_cv2_png(sub_rle)),
        "Pillow PNG compress_level=1": each(_pillow_save("PNG", compress_level=1)),
        "imagecodecs png_encode level 1, sub + RLE": (
            each(lambda im: codecs.png_encode(np.asarray(im), level=1, strategy=3, filter=16))
            if codecs is not None
            else None
        ),
        "BMP, no compression (local transport only)": each(_pillow_save("BMP")),
    }


# ------------------------------------------------------------------ interleaved timing
def interleaved(jobs: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each job per round; within a round the jobs take turns, the order
    rotated each round."""
    names = list(jobs)
    for fn in jobs.values():  # warm-up: first-touch page faults, OpenCV's thread pool
        fn()
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            c0 = time.process_time()
            jobs[n]()
            cpu[n].append(time.process_time() - c0)
    return cpu


def _paired(num: list[float], den: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(num, den, strict=True))


def _verdict(cpu: dict[str, list[float]], ours: str, libraries: list[str]) -> str:
    if ours not in cpu:
        return f"{ours}: not in this tree"
    best = min(libraries, key=lambda n: statistics.median(cpu[n]))
    ratio = _paired(cpu[best], cpu[ours])
    keep = "keep ours" if ratio >= RULE else "use the library"
    return (
        f"{ours}: the best library path ({best}) takes {ratio:.2f}x its CPU per sample "
        f"(keep ours at >= {RULE}x) -> {keep}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="qwen2.5-vl")
    p.add_argument(
        "--max-pixels", type=int, default=None, help="the adapter's max_pixels (default: 4K stays ~4K)"
    )
    p.add_argument("--size", type=parse_size, default=(3840, 2160), help="synthetic screen WxH")
    p.add_argument("--rounds", type=int, default=7, help="samples timed per candidate (interleaved)")
    p.add_argument("--probe-crops", type=int, default=16, help="view crops per zoom (2x, 3x, 4x) for PSNR")
    args = p.parse_args(argv)

    print_machine()
    crops, images = sample(args.size, args.family, args.max_pixels)
    probes = probe_crops(args.probe_crops)
    shapes = ", ".join(f"{c.width}x{c.height}->{s[0]}x{s[1]}" for c, s in crops)
    print(f"views: {shapes}; images sent: {len(images)} at {images[0].width}x{images[0].height}")
    result: dict[str, Any] = {}

    # Resampling: Pillow's Lanczos is the reference every candidate is compared with.
    cands = {n: fn for n, fn in resample_candidates().items() if fn is not None}
    quality = {n: (_min_psnr(fn, crops), _min_psnr(fn, probes)) for n, fn in cands.items()}
    cpu = interleaved(
        {n: (lambda fn=fn: [fn(c, s) for c, s in crops]) for n, fn in cands.items()}, args.rounds
    )
    ours = "ours: C Lanczos kernel (regionfocus._lanczos)"
    rows = []
    for n, fn in resample_candidates().items():
        if fn is None:
            rows.append([n, *["n/a"] * 6])
            continue
        med = statistics.median(cpu[n])
        vs = f"{_paired(cpu[n], cpu[ours]):.2f}x" if ours in cpu else "n/a"
        db = ["exact" if q == float("inf") else f"{q:.1f}" for q in quality[n]]
        spread = f"{1000 * min(cpu[n]):.0f}-{1000 * max(cpu[n]):.0f}"
        rows.append([n, round(1000 * med), spread, round(1000 * med / len(crops)), vs, *db])
    print_table(
        f"Resampling the {len(crops)} views of one sample (median of {args.rounds} interleaved rounds)",
        [
            "candidate",
            "CPU ms/sample",
            "min-max",
            "CPU ms/view",
            "CPU / ours (paired)",
            "PSNR dB, the sample's views (min)",
            f"PSNR dB, {len(probes)} view crops at 2-4x (min)",
        ],
        rows,
    )
    good = [n for n in cpu if n != ours and min(quality[n]) >= MIN_PSNR_DB]
    result["resample"] = {n: statistics.median(v) for n, v in cpu.items()}
    result["resample_psnr"] = quality
    print(_verdict(cpu, ours, good) if good else "no library path reaches the PSNR bar")

    # PNG: every candidate is lossless; bytes are what a request carries before base64.
    cands = {n: fn for n, fn in png_candidates().items() if fn is not None}
    sizes = {n: sum(map(len, fn(images))) for n, fn in cands.items()}
    cpu = interleaved({n: (lambda fn=fn: fn(images)) for n, fn in cands.items()}, args.rounds)
    ours = "ours: ISA-L writer"
    rows = []
    for n, fn in png_candidates().items():
        if fn is None:
            rows.append([n, "n/a", "n/a", "n/a", "n/a", "n/a"])
            continue
        med = statistics.median(cpu[n])
        vs = f"{_paired(cpu[n], cpu[ours]):.2f}x" if ours in cpu else "n/a"
        rows.append(
            [
                n,
                round(1000 * med),
                f"{1000 * min(cpu[n]):.0f}-{1000 * max(cpu[n]):.0f}",
                round(1000 * med / len(images)),
                vs,
                round(sizes[n] / 1e6, 1),
            ]
        )
    print_table(
        f"Encoding the {len(images)} images of one sample (median of {args.rounds} interleaved rounds)",
        ["candidate", "CPU ms/sample", "min-max", "CPU ms/image", "CPU / ours (paired)", "MB/sample"],
        rows,
    )
    libraries = [n for n in cpu if not n.startswith(("ours", "BMP"))]
    print(_verdict(cpu, ours, libraries))
    result["png"] = {n: statistics.median(v) for n, v in cpu.items()}
    result["png_bytes"] = sizes
    return result


if __name__ == "__main__":
    main()
