"""Critical path of a RegionFocus round through the real HTTP stack.

The real adapter and OpenAIBackend talk to the local chat-completions server
(tests/chat_server.py, in its own process) that waits a fixed latency L per call and answers in
the family's own format, so every parse succeeds and the round runs in full: focal point ->
4 candidates in parallel -> choice. Ideal wall time 3·L; the sequential reference code takes
6·L. The static predict path (act, self-judge "no", then the round) is ideally 5·L (8·L
sequentially); "round in predict" is the round as it runs there, after the act and judge calls
have sized and encoded the screenshot (the round alone pays for that before its first call).
Each repeat uses a fresh copy of the screenshot, so no cache carries over between samples.

    .venv/bin/python -m benchmarks.critical_path [--latency 0.5 --latency 1.0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from regionfocus import Query, RegionFocus, RegionFocusAgent

from ._common import ServerProcess, add_common_flags, load_screens, make_adapter, print_machine, print_table


async def _measure(adapter, screens, repeats: int) -> dict[str, list[float]]:
    rf = RegionFocus(adapter)
    agent = RegionFocusAgent(adapter)
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "round",
            "predict",
            "inner",
            "round_calls",
            "predict_calls",
            "round_cpu",
            "predict_cpu",
            "inner_cpu",
        )
    }
    refine = agent.regionfocus.refine

    async def timed_refine(*args, **kwargs):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            return await refine(*args, **kwargs)
        finally:
            out["inner"].append(time.perf_counter() - t0)
            out["inner_cpu"].append(time.process_time() - c0)

    agent.regionfocus.refine = timed_refine
    for i in range(repeats):
        shot = screens[i % len(screens)].copy()
        t0, c0 = time.perf_counter(), time.process_time()
        res = await rf.refine(shot, Query("open the export settings"))
        out["round"].append(time.perf_counter() - t0)
        out["round_cpu"].append(time.process_time() - c0)
        out["round_calls"].append(len(res.calls))
        if res.choice_method != "model" or any(c.error for c in res.calls):
            raise RuntimeError(
                f"round did not run in full: {res.choice_method}, {[c.error for c in res.calls]}"
            )
        shot = screens[i % len(screens)].copy()
        t0, c0 = time.perf_counter(), time.process_time()
        pred = await agent.predict(shot, "open the export settings")
        out["predict"].append(time.perf_counter() - t0)
        out["predict_cpu"].append(time.process_time() - c0)
        out["predict_calls"].append(len(pred.all_calls))
        if pred.trigger != "self-judge" or not pred.rounds:
            raise RuntimeError(f"predict did not refine: trigger={pred.trigger}")
    return out


def main(argv: list[str] | None = None) -> list[list]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_flags(p)
    p.add_argument("--latency", type=float, action="append", help="server latency L in s (repeatable)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--screens", type=int, default=2, help="synthetic screens to cycle through")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (imports, fonts, pools)")
    args = p.parse_args(argv)
    latencies = args.latency or [0.5, 1.0]

    print_machine()
    screens = load_screens(args.image, args.screens, args.size)
    rows = []
    for lat in latencies:
        with ServerProcess(args.family, lat) as srv:
            adapter = make_adapter(
                args.family,
                [srv.base_url],
                image_format=args.format,
                quality=args.quality,
                max_pixels=args.max_pixels,
            )
            if args.local:
                adapter.backend.use_local_media(None, "bmp")

            async def run(adapter=adapter):
                if args.warmup:
                    await _measure(adapter, screens, args.warmup)
                res = await _measure(adapter, screens, args.repeats)
                await adapter.backend.aclose()
                return res

            res = asyncio.run(run())
        ms = adapter.input_size(screens[0].size)
        label = f"{args.family} {ms[0]}x{ms[1]} {'local' if args.local else args.format}"
        # (path, wall key, CPU key, calls key, ideal and sequential wall in units of L)
        for path, wall, cpu, calls, ideal, sequential in (
            ("round", "round", "round_cpu", "round_calls", 3, 6),
            ("round in predict", "inner", "inner_cpu", "round_calls", 3, 6),
            ("predict", "predict", "predict_cpu", "predict_calls", 5, 8),
        ):
            w = statistics.median(res[wall])
            rows.append(
                [
                    label,
                    path,
                    lat,
                    res[calls][0],
                    round(w, 3),
                    round(w / (ideal * lat), 3),
                    round(w / (sequential * lat), 3),
                    round(1000 * (w - ideal * lat)),
                    round(statistics.median(res[cpu]), 3),
                ]
            )
    print_table(
        f"Critical path through HTTP (median of {args.repeats}; ideal = 3·L round, 5·L predict; "
        "sequential = 6·L, 8·L)",
        ["setup", "path", "L s", "calls", "wall s", "/ ideal", "/ sequential", "overhead ms", "client CPU s"],
        rows,
    )
    return rows


if __name__ == "__main__":
    main()
