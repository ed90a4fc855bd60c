"""Shared pieces of the benchmarks: machine facts, timing, tables, synthetic 4K screens, and a
local chat-completions server (tests/chat_server.py) run in its own process that answers in a
model family's real format.

Frames: every size is (W, H) in pixels; the family responder answers in the model frame of the
image the request carried (absolute pixels of that image for UI-TARS 1.5 / Qwen2.5-VL, 0-1000
for UI-TARS 1.0 / Qwen3-VL), exactly what the adapters parse.
"""

from __future__ import annotations

import base64
import datetime as _dt
import io
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageDraw, ImageFont

SCREEN_4K = (3840, 2160)
RELATIVE_FAMILIES = ("uitars-1.0", "qwen3-vl")


# ------------------------------------------------------------------ machine and tables
def machine() -> dict[str, Any]:
    """nproc, CPU model, RAM, load average and date: what a number in BENCHMARKS.md needs."""
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    ram_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": round(ram_gb, 1),
        "python": platform.python_version(),
        "pillow": Image.__version__,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "date": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
    }


def print_machine() -> None:
    m = machine()
    print(
        f"machine: nproc={m['nproc']} cpu={m['cpu']!r} ram={m['ram_gb']} GB python={m['python']} "
        f"pillow={m['pillow']} load(1m)={m['loadavg_1m']} date={m['date']}"
    )


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A Markdown table (pastes into BENCHMARKS.md as is), preceded by ``### title``."""
    cells = [[_fmt(v) for v in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print(f"\n### {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    print(flush=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


@dataclass
class Timing:
    """Best (minimum) wall and CPU milliseconds over ``n`` runs: the least disturbed run, the
    usual choice for micro-benchmarks on a shared machine (other processes only ever add
    time). CPU is process CPU time, steadier than wall time when the machine is loaded;
    multi-threaded code (OpenCV) can make CPU exceed wall."""

    wall_ms: float
    cpu_ms: float
    n: int


def timeit(fn: Callable[[], Any], repeat: int = 3) -> tuple[Timing, Any]:
    walls, cpus, out = [], [], None
    for _ in range(max(1, repeat)):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((time.process_time() - c0) * 1000)
    return Timing(min(walls), min(cpus), len(walls)), out


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------ synthetic screens
def _font(px: int, mono: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    name = "DejaVuSansMono.ttf" if mono else "DejaVuSans.ttf"
    for path in (name, f"/usr/share/fonts/truetype/dejavu/{name}"):
        try:
            return ImageFont.truetype(path, px)
        except OSError:
            continue
    return ImageFont.load_default(size=px)


_WORDS = (
    "file edit view layer select filter render window help export import mesh vertex normal "
    "buffer kernel thread signal matrix vector sample frame track clip audio channel volume "
    "profile settings debug run build target module package commit branch merge diff patch"
).split()


def synthetic_screen(seed: int = 0, size: tuple[int, int] = SCREEN_4K) -> Image.Image:
    """A deterministic professional-app-like screen: menu and tool bars, a file tree, a code
    pane of 11-13 px text, a property panel, a photo-like canvas and a status bar. Small text
    and flat chrome make PNG sizes and resampling costs behave like real 4K screenshots."""
    rng = random.Random(seed)
    w, h = size
    dark = seed % 2 == 0
    bg, panel, fg = (
        ((30, 31, 34), (43, 45, 48), (200, 200, 200))
        if dark
        else (
            (245, 245, 245),
            (232, 232, 236),
            (30, 30, 30),
        )
    )
    img = Image.new("RGB", size, bg)
    d = ImageDraw.Draw(img)
    small, mono = _font(13), _font(12, mono=True)
    d.rectangle((0, 0, w, 30), fill=panel)
    x = 10
    for word in rng.sample(_WORDS, 9):
        d.text((x, 8), word.title(), fill=fg, font=small)
        x += 14 + int(d.textlength(word.title(), font=small))
    for i in range(60):  # tool bar icons
        c = tuple(rng.randrange(60, 230) for _ in range(3))
        x0 = 10 + i * 30
        d.rounded_rectangle((x0, 40, x0 + 20, 60), radius=4, fill=c)
    side = int(w * 0.14)
    d.rectangle((0, 70, side, h - 28), fill=panel)
    for i, y in enumerate(range(80, h - 40, 19)):
        d.text((12 + 14 * (i % 4), y), f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}.py", fill=fg, font=small)
    code_x1 = int(w * 0.62)
    for y in range(80, h - 40, 16):
        indent = 8 * rng.randrange(0, 5)
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(2, 12)))
        d.text((side + 50 + indent, y), f"{line}({rng.randrange(1000)})", fill=fg, font=mono)
        d.text((side + 8, y), str((y - 80) // 16 + 1).rjust(4), fill=(120, 120, 120), font=mono)
    # A photo-like canvas (creative apps): smooth gradient with a little noise.
    cx0, cy0, cx1, cy1 = code_x1 + 20, 80, w - int(w * 0.12), int(h * 0.6)
    grad = Image.linear_gradient("L").resize((cx1 - cx0, cy1 - cy0))
    noise = Image.effect_noise((cx1 - cx0, cy1 - cy0), 24).convert("L")
    canvas = Image.merge("RGB", (grad, Image.blend(grad, noise, 0.3), noise.transpose(Image.FLIP_LEFT_RIGHT)))
    img.paste(canvas, (cx0, cy0))
    px0 = w - int(w * 0.12) + 10
    d.rectangle((px0 - 10, 70, w, h - 28), fill=panel)
    for y in range(80, h - 40, 22):
        d.text((px0, y), rng.choice(_WORDS).title(), fill=fg, font=small)
        d.rectangle((px0 + 150, y, px0 + 150 + rng.randrange(40, 240), y + 14), outline=fg)
    for y in range(cy1 + 20, h - 40, 18):
        d.text((code_x1 + 20, y), " ".join(rng.choice(_WORDS) for _ in range(14)), fill=fg, font=small)
    d.rectangle((0, h - 28, w, h), fill=(0, 122, 204))
    d.text((10, h - 22), "Ln 42, Col 7  UTF-8  LF  Python 3.11", fill=(255, 255, 255), font=small)
    return img


def load_screens(
    paths: Sequence[str], n_synthetic: int, size: tuple[int, int] = SCREEN_4K
) -> list[Image.Image]:
    """RGB screenshots from ``paths`` (real screenshots) or, if none, ``n_synthetic`` synthetic
    screens of ``size`` (W, H)."""
    if paths:
        out = []
        for p in paths:
            with Image.open(p) as im:
                out.append(im.convert("RGB"))
        return out
    return [synthetic_screen(i, size) for i in range(max(1, n_synthetic))]


# ------------------------------------------------------------------ family-format responder
def image_size_from_data_url(url: str) -> tuple[int, int]:
    """(W, H) of a base64 data-URL image from its header only (PNG, JPEG, WebP): decoding a
    few KB instead of the whole image keeps the stand-in server cheap."""
    if url.startswith("file://"):  # the local transport: the file's header, as a server reads it
        from urllib.parse import unquote, urlparse

        with Image.open(unquote(urlparse(url).path)) as im:
            return im.size
    _, _, data = url.partition(",")
    head = base64.b64decode(data[:16384])
    with Image.open(io.BytesIO(head)) as im:
        return im.size


def _request_parts(body: dict[str, Any]) -> tuple[str, list[str]]:
    texts, urls = [], []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    texts.append(part.get("text", ""))
                elif part.get("type") == "image_url":
                    urls.append(part["image_url"]["url"])
    return "\n".join(texts), urls


def _point_text(family: str, kind: str, x: float, y: float, size: tuple[int, int]) -> str:
    """A point (pixels of the image the request carried) written as ``family`` writes it."""
    if family in RELATIVE_FAMILIES:
        x, y = 1000 * x / size[0], 1000 * y / size[1]
    x, y = round(x), round(y)
    if family.startswith("uitars"):
        if kind == "focal":
            return f"Thought: The target is probably here.\nAction: click(start_box='<|box_start|>({x},{y})<|box_end|>')"
        if family == "uitars-1.5":
            return f"Thought: I see it.\nAction: click(point='<point>{x} {y}</point>')"
        return f"Thought: I see it.\nAction: click(start_box='({x},{y})')"
    action = "mouse_move" if kind == "focal" else "left_click"
    args = {"action": action, "coordinate": [x, y]}
    return f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': args})}\n</tool_call>"


def family_reply(family: str, body: dict[str, Any]) -> str:
    """Answer one RegionFocus request in the family's own format so every parse succeeds and a
    round runs in full: the judge always rejects (the round is triggered), the focal point is
    off-centre, each zoomed view gets a point at a fixed fraction of *its* image (different
    boxes -> distinct screen points -> the choice request is needed), the choice is 1. Views are
    sent with the family's own template, as a full screenshot is, so both get the same answer."""
    text, urls = _request_parts(body)
    # Our texts, or the authors' (UI-TARS, Qwen2.5-VL in the static setting).
    if "Verdict:" in text or "pink star position" in text:
        return "The star is on empty space next to the target.\nVerdict: NO"
    if "Selected point: N" in text or 'Selected point: #"' in text:
        return "Candidate 1 is on the target.\nSelected point: 1"
    size = image_size_from_data_url(urls[-1]) if urls else (1000, 1000)
    if "most relevant point" in text or "most relevant coordinates" in text:
        return _point_text(family, "focal", 0.43 * size[0], 0.37 * size[1], size)
    return _point_text(family, "act", 0.61 * size[0], 0.52 * size[1], size)


class FamilyResponder:
    """A picklable responder for :class:`tests.chat_server.ChatServer`."""

    def __init__(self, family: str):
        self.family = family

    def __call__(self, body: dict[str, Any]) -> str:
        return family_reply(self.family, body)


# ------------------------------------------------------------------ a server in its own process
def _serve(conn, family: str, latency: float, max_concurrency: int | None) -> None:
    from tests.chat_server import ChatServer

    srv = ChatServer(
        FamilyResponder(family), latency=latency, max_concurrency=max_concurrency, keep_bodies=False
    )
    srv.start()
    cpu0 = time.process_time()
    conn.send(srv.base_url)
    conn.recv()  # any message: stop
    st = srv.stats
    stats = {
        "chat_requests": st.chat_requests,
        "max_in_flight": st.max_in_flight,
        "max_active": st.max_active,
        # The stand-in shares the client's cores here; a real server has its own machine.
        "cpu_s": time.process_time() - cpu0,
    }
    srv.stop()
    conn.send(stats)


class ServerProcess:
    """``tests.chat_server.ChatServer`` in a child process (``with ServerProcess(...) as s``).

    A real model server runs in another process (usually another machine); running the
    stand-in in-process would make its request parsing compete with the client for the GIL.
    ``stats`` (chat_requests, max_in_flight, max_active, cpu_s) is filled in on exit."""

    def __init__(self, family: str, latency: float, max_concurrency: int | None = None):
        self.args = (family, latency, max_concurrency)
        self.stats: dict[str, int] = {}
        self.base_url = ""

    def __enter__(self) -> ServerProcess:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child, *self.args), daemon=True)
        self._proc.start()
        if not self._conn.poll(60):
            self._proc.kill()
            raise RuntimeError("benchmark chat server did not start within 60 s")
        self.base_url = self._conn.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._conn.send("stop")
            if self._conn.poll(30):
                self.stats = self._conn.recv()
        finally:
            self._proc.join(timeout=10)
            if self._proc.is_alive():
                self._proc.kill()


def make_adapter(
    family: str,
    base_urls: list[str],
    *,
    image_format: str = "png",
    quality: int = 90,
    max_in_flight: int = 64,
    max_pixels: int | None = None,
):
    """The real adapter over the real HTTP backend."""
    from regionfocus.adapters.backends.openai_http import OpenAIBackend
    from regionfocus.adapters.registry import get_adapter

    backend = OpenAIBackend(
        base_urls,
        model="test-model",
        max_in_flight=max_in_flight,
        timeout=120,
        max_retries=0,
        image_format=image_format,
        image_quality=quality,
    )
    options: dict[str, Any] = {"backend": backend}
    if max_pixels is not None:
        options["max_pixels"] = max_pixels
    return get_adapter(family, **options)


def add_common_flags(p) -> None:
    p.add_argument("--family", default="qwen2.5-vl", help="adapter family (default qwen2.5-vl)")
    p.add_argument(
        "--max-pixels", type=int, default=None, help="the adapter's max_pixels (default: family's own)"
    )
    p.add_argument("--format", default="png", help="transport image format: png, jpeg, webp")
    p.add_argument(
        "--local",
        action="store_true",
        help="local transport: images as file:// URLs of BMP files in /dev/shm (--format is the fallback)",
    )
    p.add_argument("--quality", type=int, default=90, help="JPEG/WebP quality")
    p.add_argument("--image", action="append", default=[], help="real screenshot(s) instead of synthetic")
    p.add_argument("--size", type=parse_size, default=SCREEN_4K, help="synthetic screen WxH (3840x2160)")


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size must be WxH, e.g. 3840x2160; got {text!r}") from None
    return w, h
