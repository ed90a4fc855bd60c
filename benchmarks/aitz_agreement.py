"""How often ``regionfocus.aitz`` gives the official AITZ evaluation's verdict on a step.

Held-out step pairs (a gold step in the released AITZ layout and a prediction) of every action
type, drawn by a seeded generator where the rules can part: clicks near UI boxes' edges and the
screen's edges (boxes at the top and left edges, whose AITW enlargement is clamped), taps a
little over or under 0.14 of the screen from the gold, gold taps whose lift point is not the
touch point, box predictions; near-diagonal swipes; near-miss typed texts (one edit, a
substring, an empty text); every button; both stop kinds; answers of the wrong type or none.
Each pair is scored by our scorer (the steps read by ``load_aitz`` from files written here)
and by a reference, and the verdicts (type match, exact match) compared per gold action type.

References:
- default: the official rules re-implemented in this file only (they are not product code):
  IMNearth/CoAT coat/evaluate.py at 9ab1a9f (types, directions, buttons, texts with
  ``Levenshtein.ratio`` > 0.8 or containment, a predicted box enlarged 1.2x around its centre
  or IoU > 0.5 with a 1.2x-enlarged UI box holding the gold point) and, for a predicted point,
  AITW's tap matching as CoAT ships it (coat/action_utils.py at 9ab1a9f, from
  google-research/google-research android_in_the_wild/action_matching.py at 1d49f2c): the
  gold *touch* point, boxes enlarged by 1.4 of their size with the top/left clamped at 0 and
  the full enlarged size kept, or both taps within 0.14 of the screen;
- ``--official COAT_GIT_DIR``: the upstream functions themselves, read at 9ab1a9f from a local
  clone of IMNearth/CoAT and imported at run time (they need jax, Levenshtein and imagesize on
  the path, e.g. ``PYTHONPATH=/tmp/oracle-libs``; nothing of them is kept).

Modes: ``official`` scores ours with the evaluator's text rule (``empty_text_matches``)
against evaluate.py with its click gold point set (evaluate.py only sets it for scrolls; we use
the touch point AITW matches); ``literal`` adds ``click_gold_at_origin`` and compares with
evaluate.py as released (every click scored against [0, 0]); ``default`` is our scorer as
shipped against the ``official`` reference, so its only disagreements are the documented
deviations.

    .venv/bin/python benchmarks/aitz_agreement.py [--pairs 2400] [--seed 20240517]
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import random
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from regionfocus.aitz import Prediction, load_aitz, match_step
from regionfocus.geometry import Box, Point

TYPES = ("click", "scroll", "type", "press", "stop")
SIZES = ((1080, 2400), (720, 1280), (1440, 3120), (411, 891))
WORDS = (
    "alarm clock", "weather in Paris", "best pizza near me", "Clock", "usb c cable", "flights to Tokyo",
    "how to make pancakes", "New York Times", "a", "calendar", "Bluetooth headphones under 50",
)  # fmt: skip
UPSTREAM_COMMIT = "9ab1a9f0e76581c50c84f8ebc6ada1a2084a0c71"


@dataclass
class Pair:
    raw: dict  # the gold step, AITZ layout
    pred: Prediction
    size: tuple[int, int]
    kind: str  # how the prediction was drawn (for the disagreement listing)


# --------------------------------------------------------------------------- generator
def _ui_boxes(rng: random.Random, w: int, h: int) -> list[list[int]]:
    """[top, left, height, width] pixel boxes; some hug the top or left edge, where AITW's
    enlargement is clamped."""
    out = []
    for _ in range(rng.randint(3, 14)):
        bw, bh = rng.randint(8, w // 2), rng.randint(8, h // 8)
        kind = rng.random()
        top = rng.randint(0, max(0, int(0.6 * bh))) if kind < 0.25 else rng.randint(0, h - bh)
        left = rng.randint(0, max(0, int(0.6 * bw))) if 0.25 <= kind < 0.45 else rng.randint(0, w - bw)
        out.append([top, left, bh, bw])
    return out


def _near_edge(rng: random.Random, lo: float, hi: float) -> float:
    edge = rng.choice((lo, hi))
    return edge + rng.choice((-1, 1)) * rng.choice((0.0, 0.3, 1.0, 2.0, rng.uniform(0, 6)))


def _click_prediction(
    rng: random.Random, gold: Point, boxes: list[list[int]], w: int, h: int
) -> tuple[Prediction, str]:
    r = rng.random()
    if r < 0.15:  # a box, on the 0-1000 grid the evaluator parses, rounded to pixels as it does
        cx, cy = gold.x + rng.gauss(0, w * 0.05), gold.y + rng.gauss(0, h * 0.03)
        bw, bh = rng.uniform(10, w * 0.4), rng.uniform(10, h * 0.1)
        g = [
            round(v)
            for v in (
                (cx - bw / 2) / w * 1000,
                (cy - bh / 2) / h * 1000,
                (cx + bw / 2) / w * 1000,
                (cy + bh / 2) / h * 1000,
            )
        ]
        g = [max(0, min(1000, v)) for v in g]
        px = [round(g[0] / 1000 * w), round(g[1] / 1000 * h), round(g[2] / 1000 * w), round(g[3] / 1000 * h)]
        if px[2] < px[0] or px[3] < px[1]:
            px = [px[0], px[1], px[0] + 5, px[1] + 5]
        return Prediction("click", box=Box(*px)), "box"
    if r < 0.35:  # at the edge of an enlarged box (AITW's or the centred one)
        top, left, bh, bw = rng.choice(boxes)
        dy, dx = 0.7 * bh, 0.7 * bw
        clamped = rng.random() < 0.5
        t, lft = max(0.0, top - dy), max(0.0, left - dx)
        bottom = t + 2.4 * bh if clamped else top + bh + dy
        right = lft + 2.4 * bw if clamped else left + bw + dx
        x = _near_edge(rng, lft, right) if rng.random() < 0.5 else rng.uniform(lft, right)
        y = _near_edge(rng, t, bottom) if rng.random() < 0.5 else rng.uniform(t, bottom)
        return Prediction("click", point=Point(x, y)), "box edge"
    if r < 0.5:  # about 0.14 of the screen from the gold
        d, a = rng.uniform(0.10, 0.18), rng.uniform(0, 2 * math.pi)
        return Prediction(
            "click", point=Point(gold.x + d * w * math.cos(a), gold.y + d * h * math.sin(a))
        ), "distance"
    if r < 0.65:  # at an edge of the screen
        x = rng.choice((0.0, rng.uniform(0, 4), w - rng.uniform(0, 4), rng.uniform(0, w)))
        y = rng.choice((0.0, rng.uniform(0, 4), h - rng.uniform(0, 4), rng.uniform(0, h)))
        return Prediction("click", point=Point(x, y)), "screen edge"
    if r < 0.8:  # close to the gold
        return Prediction(
            "click", point=Point(gold.x + rng.gauss(0, w * 0.02), gold.y + rng.gauss(0, h * 0.02))
        ), "near"
    return Prediction("click", point=Point(rng.uniform(0, w), rng.uniform(0, h))), "anywhere"


def _near_miss(rng: random.Random, text: str) -> str:
    r = rng.random()
    if r < 0.1 or not text:
        return ""
    i = rng.randrange(len(text))
    if r < 0.3:
        return text[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + text[i + 1 :]
    if r < 0.45:
        return text[:i] + text[i + 1 :]
    if r < 0.55:
        return text[: rng.randint(1, len(text))]
    if r < 0.65:
        return text + " " + rng.choice(WORDS)
    if r < 0.75:
        return text.upper() if rng.random() < 0.5 else text.lower()
    if r < 0.85:
        return text[: len(text) // 2] + rng.choice(WORDS)[: len(text) // 2]
    return rng.choice(WORDS)


def _other_type(rng: random.Random, gold: str) -> Prediction:
    t = rng.choice([x for x in (*TYPES, None) if x != gold])
    if t == "click":
        return Prediction("click", point=Point(10, 10))
    return Prediction(t, direction="up", text="x", button="back")


def generate(n: int, seed: int) -> list[Pair]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        w, h = rng.choice(SIZES)
        boxes = _ui_boxes(rng, w, h)
        gold_type = rng.choices(TYPES, weights=(40, 15, 15, 15, 15))[0]
        raw = {
            "episode_id": "held-out",
            "step_id": i,
            "instruction": "a held-out step",
            "image_size": [w, h],
            "ui_positions": json.dumps(boxes),
            "ui_text": json.dumps([""] * len(boxes)),
            "ui_types": json.dumps(["TEXT"] * len(boxes)),
            "result_action_text": "",
            "result_touch_yx": "[-1.0, -1.0]",
            "result_lift_yx": "[-1.0, -1.0]",
        }
        kind = "same type"
        if gold_type in ("click", "scroll"):
            raw["result_action_type"] = 4
            if gold_type == "click":
                top, left, bh, bw = rng.choice(boxes)
                ty = rng.uniform(top, top + bh) / h if rng.random() < 0.8 else rng.random()
                tx = rng.uniform(left, left + bw) / w if rng.random() < 0.8 else rng.random()
                d, a = rng.choice((0.0, rng.uniform(0, 0.039))), rng.uniform(0, 2 * math.pi)
                ly, lx = min(1.0, max(0.0, ty + d * math.sin(a))), min(1.0, max(0.0, tx + d * math.cos(a)))
                if math.dist((ty, tx), (ly, lx)) > 0.04:
                    ly, lx = ty, tx
            else:
                ty, tx = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8)
                d = rng.uniform(0.05, 0.5)
                a = rng.choice((rng.uniform(0, 2 * math.pi), math.atan2(0.9, 1) + rng.uniform(-0.02, 0.02)))
                ly, lx = ty + d * math.sin(a), tx + d * math.cos(a)
            raw["result_touch_yx"], raw["result_lift_yx"] = json.dumps([ty, tx]), json.dumps([ly, lx])
        elif gold_type == "type":
            raw["result_action_type"] = 3
            raw["result_action_text"] = rng.choice(WORDS) if rng.random() > 0.03 else ""
        elif gold_type == "press":
            raw["result_action_type"] = rng.choice((5, 6, 7))
        else:
            raw["result_action_type"] = rng.choice((10, 11))
        ref_gold = official_gold(raw, w, h)
        raw["coat_action_desc"] = ref_gold["desc"]
        if rng.random() < 0.12:
            pred, kind = _other_type(rng, gold_type), "other type"
        elif gold_type == "click":
            tyx = json.loads(raw["result_touch_yx"])
            pred, kind = _click_prediction(rng, Point(tyx[1] * w, tyx[0] * h), boxes, w, h)
        elif gold_type == "scroll":
            pred = Prediction("scroll", direction=rng.choice(("up", "down", "left", "right")))
        elif gold_type == "type":
            pred, kind = Prediction("type", text=_near_miss(rng, raw["result_action_text"])), "near-miss text"
        elif gold_type == "press":
            pred = Prediction("press", button=rng.choice(("back", "home", "enter")))
        else:
            pred = Prediction("stop")
        pairs.append(Pair(raw, pred, (w, h), kind))
    return pairs


# ---------------------------------------------------------------- the official rules, re-implemented
def official_gold(raw: dict, w: int, h: int) -> dict:
    """CoAT action_utils.extract_gt_action's type and text (the released ``coat_action_desc``
    starts with it), and evaluate.py's gold fields read back from that text."""
    t = raw["result_action_type"]
    touch, lift = json.loads(raw["result_touch_yx"]), json.loads(raw["result_lift_yx"])
    if t == 4 and math.dist(touch, lift) <= 0.04:
        desc = "click on the element"
    elif t == 4:
        v, hz = abs(touch[0] - lift[0]), abs(lift[1] - touch[1])
        if v >= 0.9 * hz:
            desc = "scroll up" if lift[0] < touch[0] else "scroll down"
        else:
            desc = "scroll left" if lift[1] < touch[1] else "scroll right"
    elif t == 3:
        desc = f'type "{raw["result_action_text"]}"'
    elif t in (5, 6):
        desc = f"press the {'back' if t == 5 else 'home'} button"
    elif t == 7:
        desc = "press enter"
    else:
        desc = "stop and set the query as " + ("completed" if t == 10 else "impossible")
    words = desc.split(" ")
    gtype = next(k for k in TYPES if k in words[0].lower())
    button = next((b for b in ("enter", "back", "home") if b in desc), "") if gtype == "press" else ""
    return {
        "desc": desc,
        "type": gtype,
        "direction": words[1].strip() if gtype == "scroll" else "",
        "button": button,
        "text": raw["result_action_text"],
        "touch": touch,
    }


def _aitw_tap(touch_yx, pred_yx, boxes_rel) -> bool:
    for top, left, bh, bw in boxes_rel:
        t, lft = max(0.0, top - 1.4 * bh / 2), max(0.0, left - 1.4 * bw / 2)
        hh, ww = min(1.0, bh + 1.4 * bh), min(1.0, bw + 1.4 * bw)
        inside = [t <= y <= t + hh and lft <= x <= lft + ww for y, x in (touch_yx, pred_yx)]
        if all(inside):
            return True
    return math.dist(touch_yx, pred_yx) <= 0.14


def _enlarge(b, s=1.2):
    cx, cy, bw, bh = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2, (b[2] - b[0]) * s, (b[3] - b[1]) * s
    return [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]


def _iou(a, b) -> float:
    inter = max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))
    area_a = max((a[2] - a[0]) * (a[3] - a[1]), 1)
    area_b = max((b[2] - b[0]) * (b[3] - b[1]), 1)
    return inter / (area_a + area_b - inter)


def _box_click(pred_box, gt_xy, boxes_px) -> bool:
    pb = _enlarge(pred_box)
    x, y = gt_xy
    if pb[0] <= x <= pb[2] and pb[1] <= y <= pb[3]:
        return True
    holders = [
        e
        for e in (_enlarge([b[1], b[0], b[1] + b[3], b[0] + b[2]]) for b in boxes_px)
        if e[0] <= x <= e[2] and e[1] <= y <= e[3]
    ]
    return any(_iou(pb, e) > 0.5 for e in holders)


def _indel_ratio(a: str, b: str) -> float:
    if not a and not b:
        return 1.0
    m = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]  # longest common subsequence
    for i, ca in enumerate(a):
        for j, cb in enumerate(b):
            m[i + 1][j + 1] = m[i][j] + 1 if ca == cb else max(m[i][j + 1], m[i + 1][j])
    return 2 * m[len(a)][len(b)] / (len(a) + len(b))


def reference_verdict(pair: Pair, origin: bool) -> tuple[bool, bool]:
    w, h = pair.size
    gold = official_gold(pair.raw, w, h)
    p = pair.pred
    type_match = p.type is not None and p.type == gold["type"]
    if not type_match:
        return False, False
    boxes = json.loads(pair.raw["ui_positions"])
    if p.type == "click":
        gx, gy = (0.0, 0.0) if origin else (gold["touch"][1] * w, gold["touch"][0] * h)
        if p.box is not None:  # evaluate.py's whole pixels: int(rel * size), its line 86
            return True, _box_click(p.box.to_list(), (int(gx), int(gy)), boxes)
        rel = [[t / h, lft / w, bh / h, bw / w] for t, lft, bh, bw in boxes]
        return True, _aitw_tap((gy / h, gx / w), (p.point.y / h, p.point.x / w), rel)
    if p.type == "scroll":
        return True, p.direction == gold["direction"]
    if p.type == "type":
        a, b = p.text, gold["text"]
        return True, a in b or b in a or _indel_ratio(a, b) > 0.8
    if p.type == "press":
        return True, p.button == gold["button"]
    return True, True


# ---------------------------------------------------------------- the upstream functions, if given
class Upstream:
    """coat/evaluate.py's ActionEvaluator and coat/action_utils.py's check_actions_match, read
    from a clone at the commit the docs cite and imported for this run only."""

    def __init__(self, git_dir: str, workdir: Path):
        pkg = workdir / "coat"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        for name in ("evaluate.py", "action_utils.py", "screen_utils.py"):
            src = subprocess.run(
                ["git", "--git-dir", git_dir, "show", f"{UPSTREAM_COMMIT}:coat/{name}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            (pkg / name).write_text(src)
        if "pandas" not in sys.modules:  # evaluate.py imports it and never uses it
            try:
                import pandas  # noqa: F401
            except ImportError:
                import types

                sys.modules["pandas"] = types.ModuleType("pandas")
        sys.path.insert(0, str(workdir))
        from coat import action_utils, evaluate  # type: ignore[import-not-found]

        self.au = action_utils
        self.ev = evaluate.ActionEvaluator("plain", "raw")
        self.images: dict[tuple[int, int], str] = {}
        self.workdir = workdir

    def image(self, size: tuple[int, int]) -> str:
        if size not in self.images:
            from PIL import Image

            path = self.workdir / f"{size[0]}x{size[1]}.png"
            Image.new("L", size).save(path)
            self.images[size] = str(path)
        return self.images[size]

    def verdict(self, pair: Pair, origin: bool) -> tuple[bool, bool]:
        import numpy as np

        w, h = pair.size
        raw = pair.raw
        gt = {
            **raw,
            "subset": "held-out",
            "image_full_path": self.image(pair.size),
            "ui_positions": json.loads(raw["ui_positions"]),
            "ui_text": json.loads(raw["ui_text"]),
            "ui_types": json.loads(raw["ui_types"]),
        }
        p = pair.pred
        if p.type == "click" and p.point is not None and p.type == official_gold(raw, w, h)["type"]:
            touch = (0.0, 0.0) if origin else json.loads(raw["result_touch_yx"])
            lift = (0.0, 0.0) if origin else json.loads(raw["result_lift_yx"])
            yx = (p.point.y / h, p.point.x / w)
            rel = np.array([[t / h, lft / w, bh / h, bw / w] for t, lft, bh, bw in gt["ui_positions"]])
            return True, bool(self.au.check_actions_match(touch, lift, 4, yx, yx, 4, rel))
        args: dict = {"direction": p.direction, "text": p.text}
        if p.box is not None:
            b = p.box
            args["bbox"] = [b.left / w * 1000, b.top / h * 1000, b.right / w * 1000, b.bottom / h * 1000]
        action = f"PRESS_{p.button.upper()}" if p.type == "press" else (p.type or "").upper()
        pred = {"action_predict": {"plain": {"raw": {"ACTION": action, "ARGS": args}}}} if p.type else {}
        out = self.ev(gt, pred)
        if p.box is not None and out["type_match"] and not origin:  # the gold point evaluate.py never sets
            touch = json.loads(raw["result_touch_yx"])
            nodes = [{"bounds": [x, y, x + bw, y + bh]} for y, x, bh, bw in gt["ui_positions"]]
            bbox = [round(v) for v in (b.left, b.top, b.right, b.bottom)]
            gold = [int(touch[1] * w), int(touch[0] * h)]  # as evaluate.py line 86 sets a gold point
            return True, bool(self.ev._check_click_(bbox, gold, nodes))
        return bool(out["type_match"]), bool(out["exact_match"])


# --------------------------------------------------------------------------- the comparison
def ours(pairs: list[Pair], folder: Path, **options) -> list[tuple[bool, bool]]:
    (folder / "held-out.json").write_text(json.dumps([p.raw for p in pairs]))
    steps = {s.step_id: s for ep in load_aitz(folder) for s in ep.steps}
    return [match_step(steps[p.raw["step_id"]], p.pred, **options) for p in pairs]


def agreement(pairs: list[Pair], mine, ref) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = {t: [0, 0] for t in (*TYPES, "total")}
    for p, a, b in zip(pairs, mine, ref, strict=True):
        g = official_gold(p.raw, *p.size)["type"]
        for k in (g, "total"):
            out[k][0] += a == b
            out[k][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2400)
    ap.add_argument("--seed", type=int, default=20240517)
    ap.add_argument("--official", metavar="COAT_GIT_DIR", help="score with the upstream code from this clone")
    ap.add_argument("--show", type=int, default=0, metavar="N", help="list N disagreements per mode")
    args = ap.parse_args(argv)
    pairs = generate(args.pairs, args.seed)
    options = set(inspect.signature(match_step).parameters)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        up = None
        if args.official:
            (folder / "upstream").mkdir()
            up = Upstream(args.official, folder / "upstream")
        (folder / "data").mkdir()
        modes = {
            "official": (dict(empty_text_matches=True), False),
            "default": ({}, False),
            "literal": (dict(empty_text_matches=True, click_gold_at_origin=True), True),
        }
        counts = Counter(official_gold(p.raw, *p.size)["type"] for p in pairs)
        print(f"{len(pairs)} pairs, seed {args.seed}: " + ", ".join(f"{t} {counts[t]}" for t in TYPES))
        print(
            f"reference: {'upstream code at ' + UPSTREAM_COMMIT[:7] if up else 're-implemented official rules'}"
        )
        print(f"{'mode':<9} " + " ".join(f"{t:>14}" for t in (*TYPES, "total")))
        for mode, (opts, origin) in modes.items():
            if not set(opts) <= options:
                print(f"{mode:<9} (this scorer has no {', '.join(sorted(set(opts) - options))})")
                continue
            mine = ours(pairs, folder / "data", **opts)
            ref = [(up.verdict if up else reference_verdict)(p, origin) for p in pairs]
            table = agreement(pairs, mine, ref)
            cells = [
                f"{a / n:>7.1%} {a:>3}/{n:<3}" if n else f"{'-':>14}"
                for a, n in (table[t] for t in (*TYPES, "total"))
            ]
            print(f"{mode:<9} " + " ".join(cells))
            shown = 0
            for p, a, b in zip(pairs, mine, ref, strict=True):
                if a != b and shown < args.show:
                    shown += 1
                    print(
                        f"   {p.kind}: gold {p.raw['coat_action_desc']!r} touch {p.raw['result_touch_yx']} lift {p.raw['result_lift_yx']} size {p.size}; pred {p.pred}; ours {a} ref {b}"
                    )
        if up:
            table = agreement(
                pairs, [reference_verdict(p, False) for p in pairs], [up.verdict(p, False) for p in pairs]
            )
            a, n = table["total"]
            print(f"this file's re-implementation vs the upstream code: {a}/{n} verdicts agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
