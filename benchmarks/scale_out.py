"""Scale-out: the same ScreenSpot-Pro run against 1, 2 and 4 servers given as several base URLs.

Each server (tests/chat_server.py in its own process) answers after latency L and processes at
most ``--server-concurrency`` requests at once, so one server saturates; the client keeps
enough samples in flight to fill every server. OpenAIBackend sends each request to the server
with the fewest requests in flight. Near-linear scale-out means samples/s grows with the number
of servers until the client itself (CPU, here 2 cores) becomes the limit.

    .venv/bin/python -m benchmarks.scale_out [--servers 1 2 4] [--server-concurrency 2]
"""

from __future__ import annotations

import argparse

from ._common import add_common_flags, print_machine, print_table
from .throughput import HEADERS, level_options, level_row, run_level


def main(argv: list[str] | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_flags(p)
    p.add_argument("--latency", type=float, default=0.4)
    p.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--server-concurrency", type=int, default=2)
    p.add_argument("--samples-per-server", type=int, default=12)
    p.add_argument("--screens", type=int, default=3)
    args = p.parse_args(argv)

    print_machine()
    levels = []
    for n in args.servers:
        # Enough samples in flight to keep every server's slots busy (a sample has at most 4
        # calls in flight, 1 on most of its critical path).
        in_flight = 2 * n * args.server_concurrency
        lv = run_level(
            in_flight=in_flight, samples=args.samples_per_server * n, servers=n, **level_options(args)
        )
        levels.append(lv)
        print(f"  {n} server(s): {lv.rate:.2f} samples/s", flush=True)
    base = levels[0].rate / levels[0].servers
    rows = [
        [*level_row(lv, args.latency, args.server_concurrency), f"{lv.rate / base:.2f}x"] for lv in levels
    ]
    title = (
        f"Scale-out, {args.family} (max_pixels {args.max_pixels or 'default'}), {args.format}, "
        f"L = {args.latency} s, {args.server_concurrency} requests at a time per server"
    )
    print_table(title, [*HEADERS, "speed-up vs 1 server"], rows)
    return levels


if __name__ == "__main__":
    main()
