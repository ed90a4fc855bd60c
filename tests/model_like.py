"""A scripted VLM for the test chat server that answers from what it sees, like a real model.

``model_like(family, target_colour, small_side=..., near_miss=...)`` returns a responder for :class:`tests.chat_server.ChatServer`.
It reads only what a request carries (the messages, the images, an assistant pre-fill and the
body's options) and answers in the family's own syntax and coordinate frame:

* UI-TARS 1.0: ``Thought: ...`` then ``Action: click(start_box='<|box_start|>(x,y)<|box_end|>')``,
  relative 0-1000 on each axis.
* UI-TARS 1.5: ``Action: click(point='<point>x y</point>')``, absolute pixels of the image received.
* Qwen2.5-VL: a ``<tool_call>`` with a ``computer_use`` ``left_click``, absolute pixels.
* Qwen3-VL: the same tool call, relative 0-1000.

A request whose last message is an assistant pre-fill and whose body sets
``continue_final_message`` gets only the continuation, as vLLM returns it; a pre-fill without
that option gets a whole new message, as a server without the option answers.

Perception. The target is found by its colour on the received image, also where a translucent
pink star lies over it. Its apparent size decides the answer the way it does for a real model:
small (short side below ``small_side`` received pixels, i.e. a downscaled full screenshot) gives
a near miss ``near_miss`` of its widths to the right of its centre, clamped inside the image; large (a zoomed view) gives its centre; not visible gives the image
centre with a remark. Pink stars are found by their shape (template matching on how pink each
pixel is), number tags as solid pink blocks holding white digits, and a tag's number is read
with rapidocr (the OCR engine the project ships with) from a crop of the tag.

Request kinds are told apart by markers in the request text (:func:`request_kind`); the answers
to our own requests are natural prose, never the exact formats our prompts ask for, so a test
over this responder proves the parsers read what a real model writes.

Deterministic: no randomness; phrasing varies with a checksum of the request text. A failure of
the responder itself is answered with HTTP 422 (not retried, not mistaken for a refused pre-fill)
and kept in ``errors``, so a test can tell a broken double from a broken product.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import traceback
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from .chat_server import Reply, request_images, request_text

__all__ = [
    "FAMILIES",
    "ModelLike",
    "Seen",
    "find_stars",
    "find_tags",
    "find_target",
    "model_like",
    "read_tag",
    "request_kind",
]

STAR_PINK = (255, 20, 147)
SMALL_SIDE = 14.0  # received pixels: a target whose short side is below this is "small"
NEAR_MISS = 1.5  # a small target is missed by this many of its widths, to the right
MAX_TINT = 0.6  # most pink a translucent star body adds over what it covers

# family -> (frame, syntax)
FAMILIES: dict[str, tuple[str, str]] = {
    "uitars-1.0": ("relative", "uitars10"),
    "uitars-1.5": ("absolute", "uitars15"),
    "qwen2.5-vl": ("absolute", "qwen"),
    "qwen3-vl": ("relative", "qwen"),
}


# --------------------------------------------------------------------------- request kinds
_CORRECTNESS = re.compile(r"\b(?:correct|precise|accurate|right)\b[^.?!\n]*\?", re.I)


def request_kind(text: str) -> str:
    """What a request asks, from the markers our prompts carry (first match wins):
    "choose" ("Selected point", or the older "Choice: N"), "judge" ("Verdict", or "pink star"
    with a question about correctness), "focal" ("most relevant point", or the authors' Qwen2.5-VL
    "most relevant coordinates"), "region" ("bbox" or
    "Region:"), else "ground" (the model's own grounding or action request)."""
    low = text.lower()
    if "selected point" in low or re.search(r"\bchoice:\s*n\b", low):
        return "choose"
    if "verdict" in low or ("pink star" in low and _CORRECTNESS.search(text)):
        return "judge"
    if "most relevant point" in low or "most relevant coordinates" in low:
        return "focal"
    if "bbox" in low or "Region:" in text:
        return "region"
    return "ground"


# --------------------------------------------------------------------------- perception
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in received pixels (x1, y1 exclusive)


def _rgb(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def find_target(arr: np.ndarray, colour: tuple[int, int, int], tol: float = 40.0) -> Box | None:
    """The box of the pixels that show ``colour``, plainly or under a translucent pink tint
    (a star drawn over the target), or None when nothing shows it."""
    import cv2

    c = np.array(colour, dtype=np.float32)
    d = np.array(STAR_PINK, dtype=np.float32) - c
    # Cheap pass first: each channel within the range the tinted colour can take.
    ends = np.stack([c, c + MAX_TINT * d])
    lo, hi = np.clip(ends.min(axis=0) - tol, 0, 255), np.clip(ends.max(axis=0) + tol, 0, 255)
    near = cv2.inRange(arr.astype(np.uint8), lo.astype(np.uint8), hi.astype(np.uint8))
    ys, xs = np.nonzero(near)
    if len(xs) == 0:
        return None
    rel = arr[ys, xs].astype(np.float32) - c
    a = np.clip((rel @ d) / float(d @ d), 0.0, MAX_TINT)
    keep = np.abs(rel - a[:, None] * d).max(axis=1) <= tol
    mask = np.zeros(arr.shape[:2], np.uint8)
    mask[ys[keep], xs[keep]] = 1
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if n <= 1:
        return None
    i = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[i])
    if area < 2:
        return None
    box = [x, y, x + w, y + h]
    # A star's outline crossing the target can cut pieces off it: add pieces a line apart.
    for j in range(1, n):
        jx, jy, jw, jh, _ = (int(v) for v in stats[j])
        if (
            j != i
            and jx <= box[2] + 2
            and box[0] <= jx + jw + 2
            and jy <= box[3] + 2
            and box[1] <= jy + jh + 2
        ):
            box = [min(box[0], jx), min(box[1], jy), max(box[2], jx + jw), max(box[3], jy + jh)]
    return float(box[0]), float(box[1]), float(box[2]), float(box[3])


def _strong_pink(arr: np.ndarray, tol: int = 60) -> np.ndarray:
    """Pixels of nearly the star colour (opaque tags, outlines, cores)."""
    near = np.abs(arr - np.array(STAR_PINK, dtype=np.int16)).max(axis=2) <= tol
    return (near & (arr[..., 2] - arr[..., 1] >= 50)).astype(np.uint8)


def _shift_any(mask: np.ndarray, dx: int, dy: int, reach: int) -> np.ndarray:
    """Where ``mask`` is set within ``reach`` pixels in direction (dx, dy)."""
    out = np.zeros_like(mask)
    h, w = mask.shape
    for k in range(1, reach + 1):
        sx, sy = dx * k, dy * k
        out[max(0, -sy) : h - max(0, sy), max(0, -sx) : w - max(0, sx)] |= mask[
            max(0, sy) : h - max(0, -sy), max(0, sx) : w - max(0, -sx)
        ]
    return out


def find_tags(arr: np.ndarray, reach: int = 8) -> list[Box]:
    """Number tags: solid pink blocks holding white marks (digits). A pixel that is not pink
    but has pink within ``reach`` pixels in all four directions is inside a pink shape."""
    import cv2

    full = _strong_pink(arr)
    ys, xs = np.nonzero(full)
    if len(xs) == 0:
        return []
    ox, oy = max(0, int(xs.min()) - reach - 2), max(0, int(ys.min()) - reach - 2)
    arr = arr[oy : int(ys.max()) + reach + 3, ox : int(xs.max()) + reach + 3]
    strong = full[oy : oy + arr.shape[0], ox : ox + arr.shape[1]].astype(bool)
    inside = ~strong
    for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        inside &= _shift_any(strong, dx, dy, reach)
    white = inside & (arr[..., 0] >= 225) & (arr[..., 1] >= 185) & (arr[..., 2] >= 215)
    solid = cv2.morphologyEx((strong | inside).astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(solid, connectivity=4)
    tags = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area < 24 or w < 5 or h < 5 or w < 0.75 * h or area < 0.7 * w * h:
            continue
        mine = labels[y : y + h, x : x + w] == i
        if (white[y : y + h, x : x + w] & mine).sum() < 2 or strong[y : y + h, x : x + w][mine].mean() < 0.5:
            continue  # no digits, or not opaque pink (where translucent star bodies overlap)
        tags.append((float(ox + x), float(oy + y) - 1.0, float(ox + x + w), float(oy + y + h) + 1.0))
    # Every tag of one drawing has the same height, whatever its digits: smaller blocks are
    # something else (a star's centre seen through its fill).
    tallest = max((t[3] - t[1] for t in tags), default=0.0)
    return [t for t in tags if t[3] - t[1] >= 0.85 * tallest]


_TEMPLATES: dict[int, np.ndarray] = {}


def _star_template(r: int) -> np.ndarray:
    """How pink a five-pointed star outline of outer radius ``r`` with a solid core looks,
    rendered at 4x and box-filtered (a resized image's blur)."""
    if r in _TEMPLATES:
        return _TEMPLATES[r]
    s = 4
    side = 2 * r + 3
    img = Image.new("L", (side * s, side * s), 0)
    d = ImageDraw.Draw(img)
    c = side * s / 2
    pts = []
    for i in range(10):
        rad = (r if i % 2 == 0 else r * 0.5) * s
        ang = -np.pi / 2 + i * np.pi / 5
        pts.append((c + rad * np.cos(ang), c + rad * np.sin(ang)))
    d.polygon(pts, outline=255, width=max(1, round(0.15 * r * s)))
    core = max(1.0, 0.2 * r) * s
    d.ellipse((c - core, c - core, c + core, c + core), fill=255)
    t = np.asarray(img.resize((side, side), Image.Resampling.BOX), dtype=np.float32) / 255.0
    _TEMPLATES[r] = t
    return t


def find_stars(arr: np.ndarray, tags: list[Box] | None = None) -> list[tuple[float, float]]:
    """Centres of the pink stars on the image (received pixels), found by their shape."""
    return _stars(arr, tags)[0]


def _pinkness(arr: np.ndarray) -> np.ndarray:
    """How pink each pixel looks, 0-1 (1: the star colour itself). Near the colour, and blue
    well above green: a light red (a red icon's edge on white) is not pink."""
    d = np.abs(arr - np.array(STAR_PINK, dtype=np.int16)).max(axis=2).astype(np.float32)
    bluish = (arr[..., 2] - arr[..., 1]).astype(np.float32) / 100.0
    return np.clip(np.minimum(1.0 - d / 150.0, bluish), 0.0, 1.0)


def _stars(arr: np.ndarray, tags: list[Box] | None = None) -> tuple[list[tuple[float, float]], int]:
    """(centres, outer radius) of the stars: template matching of a star outline with a solid
    core over the image's pinkness, number tags blanked out first."""
    import cv2

    pink = _pinkness(arr)
    for x0, y0, x1, y1 in tags if tags is not None else find_tags(arr):
        pink[max(0, int(y0) - 1) : int(y1) + 1, max(0, int(x0) - 1) : int(x1) + 1] = 0.0
    # Blobs of pink, with the gaps of an outline thinned by resizing closed.
    blobs = cv2.dilate((pink > 0.5).astype(np.uint8), np.ones((3, 3), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(blobs, connectivity=8)
    big = [i for i in range(1, n) if stats[i, cv2.CC_STAT_AREA] >= 12]
    if not big:
        return [], 0
    # A star is about 1.8 radii tall; overlapping stars make taller blobs, never shorter ones.
    r_hi = min(40, int(max(stats[i, cv2.CC_STAT_HEIGHT] for i in big) / 1.6) + 2)
    x0 = min(stats[i, cv2.CC_STAT_LEFT] for i in big)
    y0 = min(stats[i, cv2.CC_STAT_TOP] for i in big)
    x1 = max(stats[i, cv2.CC_STAT_LEFT] + stats[i, cv2.CC_STAT_WIDTH] for i in big)
    y1 = max(stats[i, cv2.CC_STAT_TOP] + stats[i, cv2.CC_STAT_HEIGHT] for i in big)
    H, W = pink.shape
    pad = 2 * r_hi + 4
    ox, oy = max(0, int(x0) - pad), max(0, int(y0) - pad)
    region = np.ascontiguousarray(pink[oy : min(H, int(y1) + pad), ox : min(W, int(x1) + pad)])
    # A star has a solid pink core at its centre: only positions over pink count.
    core = cv2.dilate(region, np.ones((3, 3), np.uint8)) >= 0.5
    best: tuple[float, int, np.ndarray] | None = None
    for r in range(3, r_hi + 1):
        t = _star_template(r)
        if t.shape[0] > region.shape[0] or t.shape[1] > region.shape[1]:
            break
        res = cv2.matchTemplate(region, t, cv2.TM_CCOEFF_NORMED)
        half = (2 * r + 3) // 2
        res[~core[half : half + res.shape[0], half : half + res.shape[1]]] = -1.0
        top = float(res.max())
        if best is None or top > best[0] + 1e-6:
            best = (top, r, res)
    if best is None or best[0] < 0.3:
        return [], 0
    top, r, res = best
    k = max(3, r) | 1
    peaks = (res >= cv2.dilate(res, np.ones((k, k), np.uint8))) & (res >= max(0.3, 0.45 * top))
    half = (2 * r + 3) // 2
    out: list[tuple[float, float]] = []
    for y, x in sorted(zip(*np.nonzero(peaks), strict=True), key=lambda p: -res[p]):
        c = (float(ox + x + half), float(oy + y + half))
        if all(abs(c[0] - q[0]) + abs(c[1] - q[1]) > 0.5 * r for q in out):
            out.append(c)
    return out, r


_OCR: Any = None
_OCR_LOCK = threading.Lock()


def _engine() -> Any:
    """One rapidocr recogniser for the process, built from the models inside its wheel."""
    global _OCR
    if _OCR is None:
        import rapidocr
        from rapidocr import RapidOCR

        models = Path(rapidocr.__file__).resolve().parent / "models"
        _OCR = RapidOCR(
            params={
                "Global.log_level": "critical",
                "Global.use_det": False,  # a tag crop is one line already
                "Global.use_cls": False,
                "Global.text_score": 0.0,
                "Rec.model_path": str(models / "PP-OCRv6_rec_small.onnx"),
                "EngineConfig.onnxruntime.intra_op_num_threads": 1,
            }
        )
    return _OCR


_LOOKALIKES = str.maketrans({"I": "1", "l": "1", "|": "1", "i": "1", "O": "0", "o": "0", "S": "5", "Z": "2"})


def read_tag(arr: np.ndarray, tag: Box) -> int | None:
    """The number written on a tag, read by OCR from a crop of it (white digits on pink,
    turned into dark text on white and enlarged to the recogniser's line height)."""
    x0, y0, x1, y1 = (int(v) for v in tag)
    crop = arr[max(0, y0 - 1) : y1 + 1, max(0, x0 - 1) : x1 + 1].astype(np.float32)
    if crop.size == 0:
        return None
    white = np.clip((crop[..., 1] - STAR_PINK[1]) / (255.0 - STAR_PINK[1]), 0.0, 1.0)
    gray = Image.fromarray((255.0 * (1.0 - white)).astype(np.uint8))
    votes: dict[str, float] = {}
    for height in (40, 32, 48):  # a sure reading at once, else the most confident over a few heights
        if any(v >= 0.9 for v in votes.values()):
            break
        line = gray.resize(
            (max(1, round(gray.width * height / gray.height)), height), Image.Resampling.BICUBIC
        )
        rgb = np.ascontiguousarray(np.stack([np.asarray(line)] * 3, axis=2))
        with _OCR_LOCK:
            out = _engine()(rgb, use_det=False, use_cls=False, use_rec=True)
        for text, score in zip(
            getattr(out, "txts", None) or (), getattr(out, "scores", None) or (), strict=False
        ):
            digits = re.sub(r"\D", "", str(text).translate(_LOOKALIKES))
            if digits:
                votes[digits] = votes.get(digits, 0.0) + float(score)
    if not votes:
        return None
    return int(max(sorted(votes), key=lambda k: votes[k]))


def _box_distance(box: Box, p: tuple[float, float]) -> float:
    dx = max(box[0] - p[0], 0.0, p[0] - box[2])
    dy = max(box[1] - p[1], 0.0, p[1] - box[3])
    return float(np.hypot(dx, dy))


def _leader(pink: np.ndarray, star: tuple[float, float], tag: Box, r: int) -> bool:
    """Does a thin pink line run from the star's rim to the tag (a tag placed away from its
    star)? Along the way the pixels on the line must be pink and those beside it much less so
    (a line, not the body of another star)."""
    qx, qy = min(max(star[0], tag[0]), tag[2] - 1), min(max(star[1], tag[1]), tag[3] - 1)
    length = float(np.hypot(qx - star[0], qy - star[1]))
    if length <= r + 2:
        return False
    ux, uy = (qx - star[0]) / length, (qy - star[1]) / length
    h, w = pink.shape

    def at(x: float, y: float) -> float:
        xi, yi = int(round(x)), int(round(y))
        return float(pink[yi, xi]) if 0 <= xi < w and 0 <= yi < h else 0.0

    gaps = []
    for d in np.arange(r + 0.5, length - 0.5, 0.5):
        x, y = star[0] + ux * d, star[1] + uy * d
        on = max(at(x + dx, y + dy) for dx, dy in ((0, 0), (uy * 0.5, -ux * 0.5), (-uy * 0.5, ux * 0.5)))
        off = max(at(x + uy * k, y - ux * k) for k in (-2.5, -2.0, 2.0, 2.5))
        gaps.append(on - off)
    return len(gaps) >= 3 and float(np.mean(gaps)) >= 0.25


def assign_tags(arr: np.ndarray, stars: list[tuple[float, float]], r: int, tags: list[Box]) -> dict[int, Box]:
    """Star index -> its tag. A tag joined to a star by a pink leader line is that star's; the
    rest is the pairing with the least total star-to-tag distance (a tag sits beside its own
    star)."""
    if not stars or not tags:
        return {}
    pink = _pinkness(arr)
    cost = [[0.0 if _leader(pink, st, tg, r) else _box_distance(tg, st) for tg in tags] for st in stars]
    n = min(len(stars), len(tags))
    best: tuple[float, tuple[int, ...], tuple[int, ...]] | None = None
    for si in itertools.combinations(range(len(stars)), n):
        for ti in itertools.permutations(range(len(tags)), n):
            total = sum(cost[a][b] for a, b in zip(si, ti, strict=True))
            if best is None or total < best[0]:
                best = (total, si, ti)
    assert best is not None
    return {a: tags[b] for a, b in zip(best[1], best[2], strict=True)}


@dataclass
class Seen:
    """What one request showed: the image size and the target's box (received pixels) or None.
    ``small_side`` and ``near_miss``: see the module docstring."""

    size: tuple[int, int]
    target: Box | None
    small_side: float = SMALL_SIDE
    near_miss: float = NEAR_MISS

    @property
    def small(self) -> bool:
        t = self.target
        return t is not None and min(t[2] - t[0], t[3] - t[1]) < self.small_side

    def centre(self) -> tuple[float, float]:
        t = self.target
        assert t is not None
        return (t[0] + t[2]) / 2, (t[1] + t[3]) / 2

    def contains(self, p: tuple[float, float], slack: float = 1.0) -> bool:
        t = self.target
        return t is not None and t[0] - slack <= p[0] <= t[2] + slack and t[1] - slack <= p[1] <= t[3] + slack

    def aim(self) -> tuple[float, float] | None:
        """Where the model points: the centre of a large target, just beside a small one,
        None when it does not see the target."""
        if self.target is None:
            return None
        cx, cy = self.centre()
        if not self.small:
            return cx, cy
        w = self.target[2] - self.target[0]
        x = cx + self.near_miss * w
        return min(max(x, 0.0), self.size[0] - 1.0), min(max(cy, 0.0), self.size[1] - 1.0)


# --------------------------------------------------------------------------- the responder
_JUDGE = {
    "uitars-1.0": ("Yes, the star is on the target.", "No, the star is next to the target, not on it."),
    "uitars-1.5": ("YES - the star sits right on it.", "NO - it is next to it."),
    "qwen2.5-vl": ("Correct.", "Incorrect: the star misses the target."),
    "qwen3-vl": (
        "Yes. The star's centre lies on the target element.",
        "No. The pink star is beside the target; clicking there would miss it.",
    ),
}
_CHOOSE = {
    "uitars-1.0": "Star {n} is on the target.\nSelected point: {n}",
    "uitars-1.5": "The target is under star {n}; the other stars are beside it.\nSelected point: {n}",
    "qwen2.5-vl": "Point {n} lies on the target element.\nSelected point: {n}",
    "qwen3-vl": "Looking at the stars, number {n} sits on the target.\nSelected point: {n}",
}
_THOUGHTS_FOUND = (
    "I see the element the instruction asks for; I'll click it.",
    "The requested control is right there, so I click on it.",
    "That small square matches the instruction. Clicking it.",
)
_THOUGHTS_LOST = (
    "I can't find it; clicking the middle.",
    "I don't see the target anywhere, so I'll try the middle of the screen.",
)
_NUM = r"-?\d+(?:\.\d+)?"
# A candidate listed with its coordinates: "Candidate 2: click at (x, y)", "Option 2 - [x, y]",
# "2. click at (x, y)".
_CANDIDATE = re.compile(
    rf"(?:(?:candidate|option|point)\s*#?(\d+)\s*[:.)\-]|^\s*(\d+)\s*[.):])[^\n]*?"
    rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*[\])]",
    re.I | re.M,
)


@dataclass
class ModelLike:
    """The responder (see the module docstring). ``log`` keeps (kind, answer) per request;
    ``errors`` the tracebacks of requests the responder itself failed on."""

    family: str
    target_colour: tuple[int, int, int]
    small_side: float = SMALL_SIDE
    near_miss: float = NEAR_MISS
    log: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown family {self.family!r}; known: {', '.join(FAMILIES)}")
        self.frame, self.syntax = FAMILIES[self.family]
        self._lock = threading.Lock()

    # ---- frames
    def to_model(self, p: tuple[float, float], size: tuple[int, int]) -> tuple[int, int]:
        if self.frame == "relative":
            return round(p[0] * 1000 / size[0]), round(p[1] * 1000 / size[1])
        return round(p[0]), round(p[1])

    def from_model(self, xy: tuple[float, float], size: tuple[int, int]) -> tuple[float, float]:
        if self.frame == "relative":
            return xy[0] * size[0] / 1000, xy[1] * size[1] / 1000
        return xy

    # ---- entry point
    def __call__(self, body: dict[str, Any]) -> Reply:
        text = request_text(body)
        kind = request_kind(text)
        try:
            images = request_images(body)
            image = images[-1] if images else None  # the current screenshot comes last
            answer = {
                "choose": self._choose,
                "judge": self._judge,
                "focal": self._focal,
                "region": self._region,
            }.get(kind, self._ground)(body, text, image)
        except Exception:  # noqa: BLE001 - reported through ``errors``
            with self._lock:
                self.errors.append(traceback.format_exc())
            return Reply.client_error(422, "model_like failed on this request (see responder.errors)")
        with self._lock:
            self.log.append((kind, answer))
        return Reply.text(answer)

    @staticmethod
    def _pick(options: tuple[str, ...], text: str, image: Image.Image | None = None) -> str:
        key = f"{text}|{image.size if image is not None else ''}"
        return options[zlib.crc32(key.encode()) % len(options)]

    def _see(self, image: Image.Image | None) -> tuple[Seen, np.ndarray | None]:
        if image is None:
            return Seen((1, 1), None, self.small_side, self.near_miss), None
        arr = _rgb(image)
        target = find_target(arr, self.target_colour)
        return Seen(image.size, target, self.small_side, self.near_miss), arr

    # ---- grounding / action requests, in the family's own syntax
    def _ground(self, body: dict[str, Any], text: str, image: Image.Image | None) -> str:
        seen, _ = self._see(image)
        aim = seen.aim()
        lost = aim is None
        if lost:
            aim = (seen.size[0] / 2, seen.size[1] / 2)
        x, y = self.to_model(aim, seen.size)
        messages = body.get("messages") or []
        prefill = ""
        if messages and messages[-1].get("role") == "assistant":
            content = messages[-1].get("content")
            parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            prefill = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        if self.syntax == "qwen":
            call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [x, y]}}
            if prefill and body.get("continue_final_message"):
                return f"{x}, {y}]}}}}\n</tool_call>"  # the pre-fill ends at '"coordinate": ['
            prose = self._pick(_THOUGHTS_LOST, text, image) + "\n" if lost else ""
            return f"{prose}<tool_call>\n{json.dumps(call)}\n</tool_call>"
        if self.syntax == "uitars10":
            thought = self._pick(_THOUGHTS_LOST if lost else _THOUGHTS_FOUND, text, image)
            return f"Thought: {thought}\nAction: click(start_box='<|box_start|>({x},{y})<|box_end|>')"
        action = f"Action: click(point='<point>{x} {y}</point>')"
        return f"Thought: {self._pick(_THOUGHTS_LOST, text, image)}\n{action}" if lost else action

    # ---- our own requests
    def _focal(self, body: dict[str, Any], text: str, image: Image.Image | None) -> str:
        seen, _ = self._see(image)
        aim = seen.aim() or (seen.size[0] / 2, seen.size[1] / 2)
        x, y = self.to_model(aim, seen.size)
        return f"({x}, {y})"

    def _region(self, body: dict[str, Any], text: str, image: Image.Image | None) -> str:
        seen, _ = self._see(image)
        cx, cy = seen.aim() or (seen.size[0] / 2, seen.size[1] / 2)
        w, h = seen.size[0] * 0.15, seen.size[1] * 0.15
        x0, y0 = self.to_model((max(0.0, cx - w), max(0.0, cy - h)), seen.size)
        x1, y1 = self.to_model((min(seen.size[0] - 1.0, cx + w), min(seen.size[1] - 1.0, cy + h)), seen.size)
        return f"The target should be inside [{x0}, {y0}, {x1}, {y1}]."

    def _judge(self, body: dict[str, Any], text: str, image: Image.Image | None) -> str:
        seen, arr = self._see(image)
        yes, no = _JUDGE[self.family]
        if arr is None or seen.target is None:
            return "No, I cannot see the target anywhere near the star."
        stars = find_stars(arr)
        if not stars:
            return "I don't see any pink star on this screenshot, so I can't say."
        return yes if any(seen.contains(s) for s in stars) else no

    def _choose(self, body: dict[str, Any], text: str, image: Image.Image | None) -> str:
        seen, arr = self._see(image)
        listed = [(int(a or b), (float(x), float(y))) for a, b, x, y in _CANDIDATE.findall(text)]
        if listed:  # text aggregation: candidates as coordinates in the model frame
            if seen.target is None:
                n = listed[0][0]
                return f"I cannot see the target, so I go with candidate {n}.\nSelected point: {n}"
            pts = [(n, self.from_model(xy, seen.size)) for n, xy in listed]
            c = seen.centre()
            n = min(pts, key=lambda q: (not seen.contains(q[1]), np.hypot(q[1][0] - c[0], q[1][1] - c[1])))[0]
            return f"Candidate {n} clicks on the target.\nSelected point: {n}"
        if arr is None or seen.target is None:
            return "I cannot see the target, so none of the stars looks right to me."
        tags = find_tags(arr)
        stars, r = _stars(arr, tags)
        if not stars:
            return "I see no numbered stars on this screenshot."
        c = seen.centre()
        i = min(range(len(stars)), key=lambda k: np.hypot(stars[k][0] - c[0], stars[k][1] - c[1]))
        tag = assign_tags(arr, stars, r, tags).get(i)
        n = read_tag(arr, tag) if tag is not None else None
        if n is None:
            return "One star sits on the target, but I can't make out its number."
        if not seen.contains(stars[i]):
            return f"None is exactly on it; star {n} is the closest.\nSelected point: {n}"
        return _CHOOSE[self.family].format(n=n)


def model_like(
    family: str,
    target_colour: tuple[int, int, int],
    *,
    small_side: float = SMALL_SIDE,
    near_miss: float = NEAR_MISS,
) -> ModelLike:
    """A responder answering as ``family`` would about a target of ``target_colour``: a
    target whose short side looks shorter than ``small_side`` received pixels is missed by
    ``near_miss`` of its widths to the right."""
    colour = (int(target_colour[0]), int(target_colour[1]), int(target_colour[2]))
    return ModelLike(family, colour, small_side, near_miss)
