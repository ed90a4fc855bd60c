"""Throughput of a ScreenSpot-Pro run at 1, 8, 32 and 64 samples in flight, and scale-out.

Drives the real ScreenSpot-Pro runner (``regionfocus.screenspot_pro.runner.run_samples``: load the image,
RegionFocusAgent.predict, append the record) over synthetic 3840x2160 samples (a handful of
screens reused) against local chat-completions servers (tests/chat_server.py, each in its own
process) with latency L per call and a concurrency limit of their own. Every sample makes 8 calls
(act, judge -> "no", focal, 4 candidates, choice) on a critical path of 5·L, so

    ideal samples/s = min(in_flight / (5·L), servers · server_concurrency / (8·L)).

Each level runs in a fresh child process so its peak RSS (getrusage) is its own; "client CPU
s/sample" is that process's CPU time per sample (a 2-core client saturates at about
2 / that). benchmarks/scale_out.py calls :func:`run_level` with several servers.

    .venv/bin/python -m benchmarks.throughput [--latency 0.2] [--in-flight 1 8 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._common import (
    ServerProcess,
    add_common_flags,
    load_screens,
    make_adapter,
    peak_rss_mb,
    print_machine,
    print_table,
)


@dataclass
class Level:
    """One measured configuration."""

    in_flight: int
    servers: int
    samples: int
    seconds: float
    errors: int
    cpu_s: float
    peak_rss_mb: float
    server_max_active: list[int]
    server_cpu_s: float = 0.0  # the stand-in servers' CPU, on the same cores as the client
    wall_s: float = 0.0  # from starting the client process(es) to all joined (imports included)
    merge_s: float = 0.0  # with shards: merging their run folders into one

    @property
    def rate(self) -> float:
        return self.samples / self.seconds


def write_samples(root: Path, n: int, n_screens: int, images: list[str], size: tuple[int, int]) -> list:
    """``n`` ScreenSpot-Pro samples over ``n_screens`` synthetic (or given) screenshots saved as
    PNG under ``root``."""
    from regionfocus.screenspot_pro.dataset import Sample

    screens = load_screens(images, n_screens, size)
    paths = []
    for i, im in enumerate(screens):
        path = root / f"screen_{i}.png"
        im.save(path, compress_level=1)
        paths.append((path, im.size))
    samples = []
    for i in range(n):
        path, img_size = paths[i % len(paths)]
        samples.append(
            Sample(
                id=f"bench_{i}",
                task_filename="bench_windows",
                img_filename=path.name,
                image_path=path,
                bbox=(100.0, 100.0, 180.0, 130.0),
                img_size=img_size,
                instruction=f"open item {i}",
                language="en",
                application="bench",
                platform="windows",
                group="Dev",
                ui_type="text",
            )
        )
    return samples


def _level_child(conn, opts: dict[str, Any]) -> None:
    """Child process: run ``opts["samples"]`` samples at ``opts["in_flight"]``; send a Level."""
    from regionfocus import RegionFocusAgent
    from regionfocus.kit.runlog import RunFolder
    from regionfocus.kit.shards import Shard, select
    from regionfocus.screenspot_pro.runner import run_samples

    with tempfile.TemporaryDirectory(prefix="rf-bench-") as tmp:
        root = Path(tmp)
        samples = write_samples(root, opts["samples"], opts["screens"], opts["images"], opts["size"])
        shard = Shard(*opts["shard"]) if opts.get("shard") else None
        samples = select(samples, shard)
        adapter = make_adapter(
            opts["family"],
            opts["base_urls"],
            image_format=opts["format"],
            quality=opts["quality"],
            max_in_flight=max(64, 8 * opts["in_flight"]),
            max_pixels=opts["max_pixels"],
        )
        if opts.get("local"):
            adapter.backend.use_local_media(None, "bmp")
        agent = RegionFocusAgent(adapter)

        async def go():
            # Warm-up outside the clock: client pools, fonts, imports.
            await run_samples(
                samples[:1], agent, root / "warmup", concurrency=1, progress=False, tune_allocator=True
            )
            c0, t0 = time.process_time(), time.perf_counter()
            with RunFolder(
                opts.get("run_dir") or root / "run", {"shard": str(shard)} if shard else {}, {}
            ) as f:
                recs = await run_samples(
                    samples, agent, f, concurrency=opts["in_flight"], progress=False, tune_allocator=True
                )
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            await adapter.backend.aclose()
            return recs, seconds, cpu

        recs, seconds, cpu = asyncio.run(go())
    errors = sum(r["status"] != "ok" for r in recs)
    conn.send(
        {
            "samples": len(recs),
            "seconds": seconds,
            "errors": errors,
            "cpu_s": cpu,
            "peak_rss_mb": max(peak_rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    )


def run_level(
    *,
    family: str,
    latency: float,
    in_flight: int,
    samples: int,
    servers: int = 1,
    server_concurrency: int | None = 64,
    fmt: str = "png",
    quality: int = 90,
    max_pixels: int | None = None,
    screens: int = 3,
    images: list[str] | None = None,
    size: tuple[int, int] = (3840, 2160),
    local: bool = False,
    router: str | None = None,
    shards: int = 1,
) -> Level:
    """One run of ``samples`` samples with ``in_flight`` in flight against ``servers`` servers:
    given to the client as that many base URLs, or behind one vllm-router with policy ``router``. With
    ``shards``, that many client processes run ``--shard i/N`` of the samples at once (each
    ``in_flight / N`` in flight) and their run folders are merged; errors and CPU are summed."""
    from contextlib import ExitStack

    from regionfocus.kit.shards import merge_shards
    from tests.chat_server import Router

    with ExitStack() as stack:
        procs = [
            stack.enter_context(ServerProcess(family, latency, server_concurrency)) for _ in range(servers)
        ]
        keep = stack.enter_context(tempfile.TemporaryDirectory(prefix="rf-shards-"))
        urls = [s.base_url for s in procs]
        opts = {
            "family": family,
            "base_urls": [stack.enter_context(Router(urls, router)).base_url] if router else urls,
            "format": fmt,
            "quality": quality,
            "max_pixels": max_pixels,
            "in_flight": in_flight,
            "samples": samples,
            "screens": screens,
            "images": list(images or []),
            "size": tuple(size),
            "local": local,
        }
        ctx = mp.get_context("spawn")
        dirs = [Path(keep) / f"shard{i}" for i in range(shards)]
        t0 = time.perf_counter()
        children = []
        for i in range(shards):
            parent, child = ctx.Pipe()
            part = {"shard": (i, shards), "run_dir": dirs[i], "in_flight": max(1, in_flight // shards)}
            proc = ctx.Process(target=_level_child, args=(child, {**opts, **(part if shards > 1 else {})}))
            proc.start()
            children.append((proc, parent))
        results = []
        for proc, parent in children:
            proc.join()
            if not parent.poll(1):
                raise RuntimeError(f"benchmark level failed (exit code {proc.exitcode}); see stderr")
            results.append(parent.recv())
        wall = time.perf_counter() - t0
        m0 = time.perf_counter()
        if shards > 1:
            merge_shards(Path(keep) / "merged", dirs)
        merge_s = time.perf_counter() - m0
    return Level(
        in_flight=in_flight,
        servers=servers,
        samples=sum(r["samples"] for r in results),
        seconds=max(r["seconds"] for r in results),
        errors=sum(r["errors"] for r in results),
        cpu_s=sum(r["cpu_s"] for r in results),
        peak_rss_mb=max(r["peak_rss_mb"] for r in results),
        server_max_active=[s.stats.get("max_active", 0) for s in procs],
        server_cpu_s=sum(s.stats.get("cpu_s", 0.0) for s in procs),
        wall_s=wall,
        merge_s=merge_s,
    )


def ideal_rate(in_flight: int, latency: float, servers: int, server_concurrency: int | None) -> float:
    client = in_flight / (5 * latency)
    if not server_concurrency:
        return client
    return min(client, servers * server_concurrency / (8 * latency))


def client_bound(lv: Level, ideal: float) -> float:
    """min(ideal, cores the client had / its CPU s per sample): the most a client of this CPU
    cost could do here. The stand-in servers run on the same cores (a real one has its own
    machine), so their share is taken out."""
    cores = (os.cpu_count() or 1) - lv.server_cpu_s / lv.seconds
    return min(ideal, max(cores, 0.1) / (lv.cpu_s / lv.samples))


def level_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`run_level` options the common flags set (``add_common_flags``)."""
    return {
        "family": args.family,
        "latency": args.latency,
        "server_concurrency": args.server_concurrency,
        "fmt": args.format,
        "quality": args.quality,
        "max_pixels": args.max_pixels,
        "screens": args.screens,
        "images": args.image,
        "size": args.size,
        "local": args.local,
    }


def level_row(lv: Level, latency: float, server_concurrency: int | None) -> list:
    ideal = ideal_rate(lv.in_flight, latency, lv.servers, server_concurrency)
    bound = client_bound(lv, ideal)
    return [
        lv.in_flight,
        lv.servers,
        lv.samples,
        lv.errors,
        round(lv.seconds, 1),
        round(lv.rate, 2),
        round(ideal, 2),
        f"{100 * lv.rate / ideal:.0f} %",
        round(lv.cpu_s / lv.samples, 3),
        round(lv.server_cpu_s / lv.samples, 3),
        round(bound, 2),
        f"{100 * lv.rate / bound:.0f} %",
        round(lv.peak_rss_mb),
        ",".join(map(str, lv.server_max_active)),
    ]


HEADERS = [
    "in flight",
    "servers",
    "samples",
    "errors",
    "wall s",
    "samples/s",
    "ideal",
    "of ideal",
    "client CPU s/sample",
    "stand-in server CPU s/sample",
    "client bound",
    "of bound",
    "peak RSS MB",
    "server max active",
]


def samples_for(in_flight: int, per_slot: int, cap: int) -> int:
    """Enough samples that the pipeline is full most of the time, within ``cap``."""
    return max(4, min(cap, per_slot * in_flight))


def main(argv: list[str] | None = None) -> list[Level]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_flags(p)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--in-flight", type=int, nargs="+", default=[1, 8, 32, 64])
    p.add_argument("--server-concurrency", type=int, default=64)
    p.add_argument("--per-slot", type=int, default=4, help="samples per in-flight slot")
    p.add_argument("--max-samples", type=int, default=256)
    p.add_argument("--screens", type=int, default=3, help="distinct synthetic screens")
    args = p.parse_args(argv)

    print_machine()
    levels = []
    for c in args.in_flight:
        lv = run_level(
            in_flight=c, samples=samples_for(c, args.per_slot, args.max_samples), **level_options(args)
        )
        levels.append(lv)
        print(f"  in flight {c}: {lv.rate:.2f} samples/s", flush=True)
    title = (
        f"Throughput, {args.family} (max_pixels {args.max_pixels or 'default'}), "
        f"{'local file:// bmp' if args.local else args.format}, "
        f"L = {args.latency} s, server concurrency {args.server_concurrency}"
    )
    print_table(title, HEADERS, [level_row(lv, args.latency, args.server_concurrency) for lv in levels])
    return levels


if __name__ == "__main__":
    main()
