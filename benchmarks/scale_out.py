"""Scale-out: the same ScreenSpot-Pro run against 1, 2 and 4 servers, given to the client as
several base URLs (its least-loaded balancer) and behind vllm-router (one base URL,
each sample's X-Session-ID kept on one replica by ``--router-policy``), interleaved level by level; then sharded
clients: N processes running ``--shard i/N`` against the same servers, merged, beside one process.

Each server (tests/chat_server.py in its own process) answers after latency L and processes at
most ``--server-concurrency`` requests at once, so one server saturates; the client keeps
enough samples in flight to fill every server. Near-linear scale-out means samples/s grows with
the number of servers until the client itself (CPU, here 2 cores) becomes the limit.

    .venv/bin/python -m benchmarks.scale_out [--servers 1 2 4] [--server-concurrency 2] [--shards 1 2 4]
"""

from __future__ import annotations

import argparse

from ._common import add_common_flags, print_machine, print_table
from .throughput import HEADERS, ideal_rate, level_options, level_row, run_level


def main(argv: list[str] | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_flags(p)
    p.add_argument("--latency", type=float, default=0.4)
    p.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--server-concurrency", type=int, default=2)
    p.add_argument("--samples-per-server", type=int, default=12)
    p.add_argument("--screens", type=int, default=3)
    p.add_argument("--no-router", action="store_true", help="the client-side balancer only")
    p.add_argument(
        "--router-policy",
        nargs="+",
        default=["sticky_least_loaded", "consistent_hash"],
        help="vllm-router policies to measure (consistent_hash, sticky_least_loaded, round_robin, ...)",
    )
    p.add_argument(
        "--shards", type=int, nargs="*", default=[1, 2], help="client processes (at the most servers)"
    )
    args = p.parse_args(argv)

    print_machine()
    levels, rows = [], []
    base = None  # samples/s per server of the client-side balancer at the fewest servers
    for n in args.servers:
        # Enough samples in flight to keep every server's slots busy (a sample has at most 4
        # calls in flight, 1 on most of its critical path).
        in_flight = 2 * n * args.server_concurrency
        pair = []
        for router in [None, *([] if args.no_router else args.router_policy)]:
            lv = run_level(
                in_flight=in_flight,
                samples=args.samples_per_server * n,
                servers=n,
                router=router,
                **level_options(args),
            )
            pair.append(lv)
            print(
                f"  {n} server(s), {router or 'client-side'}: {lv.rate:.2f} samples/s",
                flush=True,
            )
        levels += pair
        base = base or pair[0].rate / n
        paths = ["client-side", *(f"vllm-router {p}" for p in args.router_policy)]
        for lv, path in zip(pair, paths, strict=False):
            ratio = f"{100 * lv.rate / pair[0].rate:.0f} %"
            speedup = f"{lv.rate / base:.2f}x"
            rows.append([path, *level_row(lv, args.latency, args.server_concurrency), speedup, ratio])
    title = (
        f"Scale-out, {args.family} (max_pixels {args.max_pixels or 'default'}), {args.format}, "
        f"L = {args.latency} s, {args.server_concurrency} requests at a time per server"
    )
    print_table(title, ["path", *HEADERS, "speed-up vs 1 server", "of client-side"], rows)

    n = max(args.servers)
    in_flight = 2 * n * args.server_concurrency
    shard_rows = []
    for k in args.shards:
        lv = run_level(
            in_flight=in_flight,
            samples=args.samples_per_server * n,
            servers=n,
            shards=k,
            **level_options(args),
        )
        ideal = ideal_rate(in_flight, args.latency, n, args.server_concurrency)
        rate = lv.samples / lv.wall_s
        shard_rows.append([k, lv.samples, lv.errors, round(lv.wall_s, 1), round(rate, 2), f"{100 * rate / ideal:.0f} %",
                           round(lv.cpu_s, 1), round(lv.cpu_s / lv.samples, 3), round(lv.merge_s, 3)])  # fmt: skip
        print(f"  {k} shard(s): {rate:.2f} samples/s over the whole wall", flush=True)
    if shard_rows:
        print_table(
            f"Shards: N client processes (--shard i/N, {in_flight} in flight in all) against {n} servers, merged",
            [
                "shards",
                "samples",
                "errors",
                "wall s (process start to all joined)",
                "samples/s",
                "of ideal",
                "client CPU s (all)",
                "CPU s/sample",
                "merge s",
            ],  # fmt: skip
            shard_rows,
        )
    return levels


if __name__ == "__main__":
    main()
