"""Peak memory of the client given one huge reply: a gzip body of ~2 MB that inflates to 2 GB.

The stand-in server (tests/chat_server.py, in this process) answers every request with
``tests.hostile.gzip_completion(--inflates-to)``; each setting runs one ``OpenAIBackend.complete``
in a fresh child process, which reports its own peak resident set (``VmHWM`` of
/proc/self/status, kept per address space: the child's ``ru_maxrss`` would carry this
process's peak, as Linux folds the forking parent's high-water mark into it at exec). Rows: a normal reply (what the client costs
at all), the huge one under the default ``--max-reply-bytes``, and with ``--uncapped`` the same
reply with the cap raised past it (the client before the cap: it decompresses and parses the
whole body; needs ~5 GB free).

    .venv/bin/python -m benchmarks.reply_size [--inflates-to 2147483648] [--uncapped]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

from ._common import print_machine, print_table

UNCAPPED = 2**62


def _child(url: str, limit: int) -> None:
    """One request; prints what came back (its length, or the error) as one JSON line."""
    from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend

    async def one() -> dict:
        async with OpenAIBackend([url], "m", max_retries=0, timeout=600, max_reply_bytes=limit) as backend:
            try:
                reply = await backend.complete([{"role": "user", "content": "where is Save?"}])
            except BackendError as e:
                return {"error": e.reason}
            return {"chars": len(reply.text)}

    got = asyncio.run(one())
    print(json.dumps({**got, "peak_kb": _peak_kb()}), flush=True)


def _peak_kb() -> int:
    """This process's peak resident set in KB (Linux)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def peak_rss(url: str, limit: int) -> tuple[float, dict, float]:
    """(peak RSS in MB, what the request gave: its length or its error, wall seconds) of one
    request to ``url`` in a fresh child process."""
    cmd = [sys.executable, "-m", "benchmarks.reply_size", "--child", url, str(limit)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=root, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"child exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    got = json.loads(done.stdout.decode().splitlines()[-1])
    return got.pop("peak_kb") / 1024, got, wall


def main(argv: list[str] | None = None) -> int:
    from regionfocus.adapters.backends.base import MAX_REPLY_BYTES
    from tests.chat_server import ChatServer, Reply
    from tests.hostile import BOMB_BYTES, gzip_completion

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inflates-to", type=int, default=BOMB_BYTES, metavar="BYTES")
    p.add_argument("--uncapped", action="store_true", help="also run with the cap past the reply")
    p.add_argument("--child", nargs=2, metavar=("URL", "LIMIT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return 0

    print_machine()
    body = gzip_completion(args.inflates_to)
    bomb = Reply(body=body, headers={"Content-Encoding": "gzip"})
    settings = [("normal reply", "ok", MAX_REPLY_BYTES), ("huge reply", bomb, MAX_REPLY_BYTES)]
    if args.uncapped:
        settings.append(("huge reply, uncapped", bomb, UNCAPPED))
    rows = []
    with ChatServer() as srv:
        for name, reply, limit in settings:
            srv.set_responder(reply)
            mb, got, wall = peak_rss(srv.base_url, limit)
            shown = got.get("error") or f"{got['chars']} chars"
            rows.append([name, len(body) if reply is bomb else "-", limit, round(mb), round(wall, 1), shown])
    print_table(
        f"Client peak RSS, one reply inflating to {args.inflates_to} bytes",
        ["setting", "gzip bytes", "--max-reply-bytes", "peak RSS MB", "wall s", "outcome"],
        rows,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
