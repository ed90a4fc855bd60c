"""ZoomClick's own loop beside ours, on the samples of a screenspot-pro run.

The official loop is Princeton-AI2-Lab/ZoomClick @ 6a0c3633, grounding/eval_sspro_zoomclick.py
(``PrezoomIterativeNarrowingRunner`` with its run scripts' settings: in_depth 3, ratio 0.5,
min crop 768, patch size 2, clip, 50 px), read from a local clone at that commit and imported
for this run only (it imports torch and transformers at the top; nothing of it is kept). Its one
model call, ``infer_norm_point``, is answered by the grounder the run used (``--agent``, built
as the harness builds it), on the image the official code cut. Each sample's official point is
scored as the harness scores (inside the box, edges inclusive) and compared with the run's
``zoomclick`` answer.

    regionfocus screenspot-pro --data builtin --agent ocr --strategy zoomclick --no-regionfocus --out RUN
    .venv/bin/python benchmarks/zoomclick_official.py RUN --official ZOOMCLICK_GIT_DIR [--agent ocr]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

UPSTREAM_COMMIT = "6a0c3633eb6985a21d99c94400bc64fe54ac5221"
SOURCE = "grounding/eval_sspro_zoomclick.py"


def official_module(git_dir: str, workdir: Path):
    src = subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{UPSTREAM_COMMIT}:{SOURCE}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (workdir / "zoomclick_upstream.py").write_text(src)
    sys.path.insert(0, str(workdir))
    import zoomclick_upstream  # type: ignore[import-not-found]

    return zoomclick_upstream


def inside(point, bbox) -> bool:
    return point is not None and bbox[0] <= point[0] <= bbox[2] and bbox[1] <= point[1] <= bbox[3]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a screenspot-pro run folder with a zoomclick row")
    ap.add_argument("--official", required=True, metavar="ZOOMCLICK_GIT_DIR", help="a clone's git dir")
    ap.add_argument("--agent", default="ocr", help="the grounder the run used (default ocr)")
    args = ap.parse_args()

    from regionfocus.adapters.build import build_grounder
    from regionfocus.model import Query

    grounder = build_grounder(args.agent)
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        up = official_module(args.official, Path(tmp))

        class Backend(up.BaseBackend):
            def infer_norm_point(self, instruction, pil_img):
                reply = loop.run_until_complete(grounder.act(pil_img, Query(instruction), zoomed=True))
                p = reply.action.point if reply.action is not None else None
                if p is None:
                    return None, reply.text
                return (p.x / pil_img.width, p.y / pil_img.height), reply.text

        runner = up.PrezoomIterativeNarrowingRunner(
            Backend(), max_search_depth=3, shrink_ratio=0.5, min_crop_size=768, debug=False,
            patch_size=2, center_mode="clip", prezoom_px_thresh=50.0,
        )  # fmt: skip
        n = ours_right = theirs_right = same = close = 0
        for line in (Path(args.run) / "records.jsonl").read_text().splitlines():
            rec = json.loads(line)
            s, z = rec["sample"], rec["strategies"]["zoomclick"]
            with contextlib.redirect_stdout(io.StringIO()):  # its [DEBUG] prints
                theirs = runner.ground_only_positive(
                    s["instruction"], Image.open(s["img_path"]).convert("RGB")
                )
            t, o = theirs["point"], z["point"]
            n += 1
            ours_right += z["correctness"] == "correct"
            theirs_right += inside(t, s["bbox"])
            same += (z["correctness"] == "correct") == inside(t, s["bbox"])
            close += (t is None) == (o is None) and (
                t is None or max(abs(a - b) for a, b in zip(t, o, strict=True)) <= 2
            )
            if (z["correctness"] == "correct") != inside(t, s["bbox"]):
                print(f"verdicts differ: {rec['id']} ours {o} ({z['correctness']}), official {t}")
    print(f"{n} samples; ours {100 * ours_right / n:.1f} %, official loop {100 * theirs_right / n:.1f} %")
    print(f"same verdict on {same}/{n}; points within 2 px on {close}/{n}")


if __name__ == "__main__":
    main()
