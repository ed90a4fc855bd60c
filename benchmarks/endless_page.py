"""Peak memory of a `regionfocus webvoyager` run whose pages never end (issue 30, item 4).

The hostile page server (tests/hostile_pages.py) runs in its own process, so its memory is not
counted; it streams ``endless`` (an HTML document that never ends) and ``download`` (the same
stream as an attachment, started by a click on the ``links`` page) as fast as they are read.
``--plain`` runs the same number of tasks on an ordinary page: the footprint a run has anyway.
The client is the real command line, run as a child: `regionfocus webvoyager` with the CPU OCR
agent (no model server), ``--concurrency`` tasks at a time. Its whole process tree (Python,
Playwright's driver, every Chromium process) is sampled every 50 ms; the table gives the peak
of the summed RSS (shared pages counted in each process: an upper bound) and of the summed
PSS (shared pages shared out: what the tree costs the machine), and each task's
recorded ending. A tree past ``--kill-at-gb`` is killed and reported as such (the code before
the fix reached 4 GB: route.fetch buffered the endless body).

    .venv/bin/python -m benchmarks.endless_page [--concurrency 2] [--repeat 1] [--plain] [--max-page-bytes N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from ._common import print_machine, print_table

ROOT = Path(__file__).resolve().parent.parent


def _tree_memory(proc: psutil.Process) -> tuple[int, int]:
    """(summed RSS, summed PSS) of ``proc`` and its descendants: RSS counts a shared page in
    every process that maps it (an upper bound), PSS shares it out (what the tree costs)."""
    rss = pss = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for p in procs:
        try:
            info = p.memory_full_info()
        except psutil.Error:
            continue
        rss += info.rss
        pss += getattr(info, "pss", info.rss)
    return rss, pss


def _kill_tree(proc: psutil.Process) -> None:
    try:
        procs = [*proc.children(recursive=True), proc]
    except psutil.Error:
        procs = [proc]
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


def _tasks(url: str, repeat: int, plain: bool) -> list[dict]:
    out = []
    for k in range(repeat):
        if plain:  # the control: two tasks on an ordinary page, same agent and flags
            out += [
                {
                    "web_name": "Plain",
                    "id": f"Plain--{2 * k + j}",
                    "ques": "Read the page.",
                    "web": url + "links",
                }
                for j in range(2)
            ]
            continue
        out.append(
            {
                "web_name": "Hostile",
                "id": f"Hostile--{2 * k}",
                "ques": "Read the page.",
                "web": url + "endless",
            }
        )
        out.append(
            {
                "web_name": "Hostile",
                "id": f"Hostile--{2 * k + 1}",
                "ques": "Click download",
                "web": url + "links",
            }
        )
    return out


def run(args: argparse.Namespace) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.hostile_pages"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory(prefix="rf-endless-") as tmp:
            tasks = Path(tmp) / "tasks.jsonl"
            tasks.write_text("".join(json.dumps(t) + "\n" for t in _tasks(url, args.repeat, args.plain)))
            out = Path(tmp) / "run"
            cmd = [
                sys.executable, "-m", "regionfocus.cli", "webvoyager", "--tasks", str(tasks), "--out", str(out),
                "--agent", "ocr", "--no-regionfocus", "--allow-domain", "127.0.0.1", "--viewport", "800x600",
                "--max-steps", "3", "--concurrency", str(args.concurrency), "--no-progress",
            ]  # fmt: skip
            if args.max_page_bytes:
                cmd += ["--max-page-bytes", str(args.max_page_bytes)]
            print("client:", " ".join(["regionfocus", *cmd[3:]]))
            t0 = time.monotonic()
            client = subprocess.Popen(
                cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
            )
            proc = psutil.Process(client.pid)
            peak, peak_pss, killed = 0, 0, False
            while client.poll() is None:
                rss, pss = _tree_memory(proc)
                peak, peak_pss = max(peak, rss), max(peak_pss, pss)
                if peak > args.kill_at_gb * 2**30:
                    _kill_tree(proc)
                    killed = True
                    break
                time.sleep(0.05)
            client.wait()
            wall = time.monotonic() - t0
            results = out / "results.json"
            records = json.loads(results.read_text()) if results.exists() else []
            status = f"killed over {args.kill_at_gb:g} GB" if killed else f"exit {client.returncode}"
            print_table(
                "Peak RSS of the client's process tree (Python + Playwright driver + Chromium)",
                [
                    "pages",
                    "tasks",
                    "concurrency",
                    "max page bytes",
                    "peak RSS (GB)",
                    "peak PSS (GB)",
                    "wall (s)",
                    "ended",
                ],
                [
                    [
                        "plain (control)" if args.plain else "endless + download",
                        2 * args.repeat,
                        args.concurrency,
                        args.max_page_bytes or "default",
                        round(peak / 2**30, 2),
                        round(peak_pss / 2**30, 2),
                        round(wall, 1),
                        status,
                    ]
                ],
            )
            for r in records:
                print(f"  {r['id']}: {r['ended']}: {r['error']}")
            if killed and client.stderr is not None:
                tail = client.stderr.read().strip().splitlines()[-5:]
                print("  client stderr:", *tail, sep="\n    ")
    finally:
        server.kill()
        server.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1, help="pairs of tasks (an endless page, a download click)")
    p.add_argument("--plain", action="store_true", help="the control: an ordinary page, same agent and flags")
    p.add_argument("--max-page-bytes", type=int, default=None, help="passed to the client (default: its own)")
    p.add_argument("--kill-at-gb", type=float, default=6.0, help="kill the client's tree past this (safety)")
    args = p.parse_args()
    print_machine()
    run(args)


if __name__ == "__main__":
    main()
