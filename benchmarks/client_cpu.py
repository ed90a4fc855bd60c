"""Client CPU per ScreenSpot-Pro sample, by model size and transport, and what each transport
costs the server to decode.

Runs the real ScreenSpot-Pro runner (decode the 4K PNG, RegionFocusAgent.predict: act, judge
"no", focal, 4 views, choice: 8 calls) one sample at a time against the local chat server
(tests/chat_server.py in its own process, latency L), in a fresh child process per setting, and
reports process CPU seconds per sample (the least of ``--repeats`` runs: other processes only
ever add time), image bytes sent per sample and the CPU the backend spent encoding or writing
them. Transports: ``png`` and ``jpeg`` (q95) data URLs, ``local`` (file:// URLs of BMP files
in /dev/shm, what a client on the server's machine can use; the stand-in server reads only the
header, as it does for data URLs). A tree without the local transport (an older checkout)
prints "n/a" for it, so the same script gives before -> after on one machine.

The second table: one model-size image per transport, the bytes of a request's image, the
client's CPU to produce it and a server's CPU to get pixels back (base64 + PNG/JPEG decode for
data URLs, a file read + BMP/PNG decode for file URLs), as vLLM's media loader does it
(PIL ``Image.open`` + ``load``).

    .venv/bin/python -m benchmarks.client_cpu [--samples 4] [--repeats 2] [--max-pixels 1003520]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import multiprocessing as mp
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from ._common import ServerProcess, load_screens, make_adapter, print_machine, print_table, synthetic_screen

TRANSPORTS = ("png", "jpeg", "local")


def _child(conn, opts: dict[str, Any]) -> None:
    from regionfocus import RegionFocusAgent
    from regionfocus.screenspot_pro.runner import run_samples

    from .throughput import write_samples

    fmt = "png" if opts["transport"] == "local" else opts["transport"]
    with tempfile.TemporaryDirectory(prefix="rf-cpu-") as tmp:
        root = Path(tmp)
        samples = write_samples(root, opts["samples"] + 1, opts["screens"], [], opts["size"])
        adapter = make_adapter(
            opts["family"], opts["base_urls"], image_format=fmt, quality=95, max_pixels=opts["max_pixels"]
        )
        if opts["transport"] == "local":
            if not hasattr(adapter.backend, "use_local_media"):
                conn.send(None)
                return
            adapter.backend.use_local_media(None, "bmp")
        agent = RegionFocusAgent(adapter)

        async def go():
            await run_samples(
                samples[:1], agent, root / "warm", concurrency=1, progress=False, tune_allocator=True
            )
            sent0 = dict(getattr(adapter.backend, "sent", {}) or {})
            c0 = time.process_time()
            recs = await run_samples(
                samples[1:], agent, root / "run", concurrency=1, progress=False, tune_allocator=True
            )
            cpu = time.process_time() - c0
            sent = getattr(adapter.backend, "sent", None)
            await adapter.backend.aclose()
            n = len(recs)
            if any(r["status"] != "ok" for r in recs):
                raise RuntimeError([r["error"] for r in recs if r["status"] != "ok"][:2])
            out = {"cpu": cpu / n, "bytes": None, "encode": None}
            if sent:
                out["bytes"] = (sent["image_bytes"] - sent0.get("image_bytes", 0)) / n
                out["encode"] = (sent["encode_s"] - sent0.get("encode_s", 0.0)) / n
            return out

        conn.send(asyncio.run(go()))


def measure(opts: dict[str, Any]) -> dict[str, Any] | None:
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(child, opts))
    proc.start()
    proc.join()
    if not parent.poll(1):
        raise RuntimeError(f"client_cpu child failed (exit code {proc.exitcode})")
    return parent.recv()


def decode_table(size: tuple[int, int], family: str, max_pixels: int | None) -> list[list]:
    """Bytes, client CPU ms and server decode CPU ms of one model-size image per transport."""
    from regionfocus.adapters.backends.encoding import encode_data_url
    from regionfocus.adapters.registry import get_adapter

    opts = {"max_pixels": max_pixels} if max_pixels else {}
    shot = synthetic_screen(0, size)
    image = asyncio.run(get_adapter(family, **opts).model_image(shot))
    rows = []

    def best(fn, n=3):
        t = []
        out = None
        for _ in range(n):
            c0 = time.process_time()
            out = fn()
            t.append(time.process_time() - c0)
        return 1000 * min(t), out

    def server_data(url: str):
        with Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2]))) as im:
            im.load()

    def server_file(path: str):
        with Image.open(path) as im:
            im.load()

    for name, fmt, q in (("data png", "png", 90), ("data jpeg q95", "jpeg", 95)):
        enc, url = best(lambda fmt=fmt, q=q: encode_data_url(image, fmt, q))
        dec, _ = best(lambda url=url: server_data(url))
        rows.append([name, f"{image.width}x{image.height}", round(len(url) / 1e6, 2), round(enc), round(dec)])
    try:
        from regionfocus.adapters.backends.encoding import LocalFiles
    except ImportError:
        return rows
    for fmt in ("bmp", "png"):
        files = LocalFiles(None, fmt)
        enc, (url, nbytes) = best(lambda files=files: files.write(image))
        path = url[len("file://") :]
        dec, _ = best(lambda path=path: server_file(path))
        rows.append(
            [
                f"file:// {fmt}",
                f"{image.width}x{image.height}",
                round(nbytes / 1e6, 2),
                round(enc),
                round(dec),
            ]
        )
        files.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="qwen2.5-vl")
    p.add_argument(
        "--max-pixels",
        type=int,
        nargs="+",
        default=[0, 1003520],
        help="model sizes to measure (0: the family's default, 4K stays ~4K)",
    )
    p.add_argument("--transport", nargs="+", default=list(TRANSPORTS), choices=TRANSPORTS)
    p.add_argument("--samples", type=int, default=4, help="timed samples per run")
    p.add_argument("--repeats", type=int, default=2, help="runs per setting (the least CPU is kept)")
    p.add_argument("--latency", type=float, default=0.05, help="server latency per call, s")
    p.add_argument("--screens", type=int, default=3)
    p.add_argument("--size", default="3840x2160")
    p.add_argument("--no-decode-table", action="store_true")
    args = p.parse_args(argv)
    size = tuple(int(v) for v in args.size.lower().split("x"))
    load_screens([], 1, size)  # fail early on a bad size

    print_machine()
    rows = []
    with ServerProcess(args.family, args.latency) as srv:
        for mp_ in args.max_pixels:
            for t in args.transport:
                runs = []
                for _ in range(max(1, args.repeats)):
                    r = measure(
                        {
                            "family": args.family,
                            "base_urls": [srv.base_url],
                            "transport": t,
                            "max_pixels": mp_ or None,
                            "samples": args.samples,
                            "screens": args.screens,
                            "size": size,
                        }
                    )
                    if r is None:
                        break
                    runs.append(r)
                label = f"{args.family} max_pixels={mp_ or 'default'}"
                if not runs:
                    rows.append([label, t, "n/a", "n/a", "n/a"])
                    continue
                r = min(runs, key=lambda x: x["cpu"])
                mb = "n/a" if r["bytes"] is None else round(r["bytes"] / 1e6, 1)
                enc = "n/a" if r["encode"] is None else round(1000 * r["encode"])
                rows.append([label, t, round(r["cpu"], 3), mb, enc])
                print(f"  {label} {t}: {r['cpu']:.3f} CPU s/sample", flush=True)
    print_table(
        f"Client CPU per sample (8 calls, round on every sample; least of {args.repeats} runs of "
        f"{args.samples} samples)",
        ["setup", "transport", "client CPU s/sample", "image MB sent/sample", "encode CPU ms/sample"],
        rows,
    )
    if not args.no_decode_table:
        for mp_ in args.max_pixels:
            print_table(
                f"One model-size image per transport ({args.family} max_pixels={mp_ or 'default'}; least of 3)",
                ["transport", "size", "MB per image", "client CPU ms", "server decode CPU ms"],
                decode_table(size, args.family, mp_ or None),
            )


if __name__ == "__main__":
    main()
