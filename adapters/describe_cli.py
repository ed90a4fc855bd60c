"""``regionfocus describe-screen IMAGE``: the screen-to-text description of any screenshot."""

from __future__ import annotations

import argparse
import sys

from PIL import Image, UnidentifiedImageError

from regionfocus.geometry import Box
from regionfocus.kit.command import Parser, run_command

PROG = "regionfocus describe-screen"


def _box(text: str) -> Box:
    try:
        vals = [float(v) for v in text.split(",")]
        if len(vals) != 4:
            raise ValueError
        return Box(*vals)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--ignore wants x1,y1,x2,y2 in image pixels, got {text!r}"
        ) from None


def describe_screen_command(argv: list[str]) -> int:
    """Print the screen-to-text description of a screenshot (OCR lines and UI elements with boxes)."""
    return run_command(PROG, lambda: _describe(argv))


def _describe(argv: list[str]) -> int:
    p = Parser(
        prog=PROG,
        description="Turn a screenshot into text as the screen-to-text agent sees it: OCR lines and "
        "detected UI elements (buttons, text fields, text areas, checkboxes, radio buttons, "
        "dropdowns, links) merged by the paper's rules, sorted by y, boxes [x1, y1, x2, y2] in "
        "the image's own pixels.",
    )
    p.add_argument("image", help="a screenshot (PNG, JPEG, ...)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON (kind, text, label, box; an OCR line's word boxes) instead",
    )
    p.add_argument(
        "--layout", choices=("paper", "merged"), default="paper", help="paper: OCR then detector sections"
    )
    p.add_argument("--min-conf", type=float, default=0.3, help="leave out OCR lines below this confidence")
    p.add_argument(
        "--ignore", type=_box, action="append", default=[], help="x1,y1,x2,y2: leave out this region"
    )
    args = p.parse_args(argv)
    if not 0.0 <= args.min_conf <= 1.0:
        p.error(f"--min-conf must be in [0, 1], got {args.min_conf}")
    try:
        with Image.open(args.image) as im:
            image = im.convert("RGB")
    except FileNotFoundError:
        p.error(f"no such image: {args.image}")
    except (UnidentifiedImageError, OSError) as e:
        p.error(f"cannot read {args.image} as an image: {e}")
    from regionfocus.adapters.perception.screen_text import (
        describe_screen,  # onnxruntime loads only when a command needs it
    )

    screen = describe_screen(image, min_conf=args.min_conf, ignore=args.ignore)
    if args.json:
        print(screen.to_json())
    else:
        print(
            f"# {args.image}: {screen.size[0]}x{screen.size[1]} px, {len(screen.elements)} entries",
            file=sys.stderr,
        )
        print(screen.to_text(layout=args.layout))
    return 0
