"""The README's main job, timed: build the built-in ScreenSpot-Pro set, then run the OCR agent
alone and with RegionFocus over it, as `regionfocus screenspot-pro --data builtin --agent ocr`
does, in this process. Prints CPU seconds (this process and its children: Chromium for the
build) and wall seconds, split into the build, the OCR engine's reads, and the rest; the OCR
agent's reads against its cache hits; and the run's Table 1.

    .venv/bin/python -m benchmarks.main_job              # a fresh cache: what a fresh clone does
    .venv/bin/python -m benchmarks.main_job --cache-dir ~/.cache   # reuse the built set

CPU seconds are the measure on a shared machine; wall seconds are printed with the load.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._common import print_machine, print_table


def cpu_s() -> float:
    """User + system CPU of this process and of its waited-for children, in seconds."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class ReadDemand:
    """How many OCR reads were wanted (running or waiting for an engine) over time: the wall
    seconds the run spent with none, one, or at least as many as there are engines. A second
    with fewer reads wanted than cores is a core the run left idle (unless other work, a
    decode or a resize, filled it)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.wanted, self.since = 0, time.perf_counter()
        self.seconds: dict[int, float] = {}

    def _step(self, delta: int) -> None:
        with self._lock:
            now = time.perf_counter()
            self.seconds[self.wanted] = self.seconds.get(self.wanted, 0.0) + now - self.since
            self.wanted, self.since = self.wanted + delta, now

    def wrap(self, read):
        def counted(pool, rgb):
            self._step(+1)
            try:
                return read(pool, rgb)
            finally:
                self._step(-1)

        return counted

    def row(self, cores: int) -> list[float]:
        self._step(0)
        by = [self.seconds.get(0, 0.0), self.seconds.get(1, 0.0)]
        return [*by, sum(v for k, v in self.seconds.items() if k >= min(2, cores))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache-dir", help="XDG cache folder holding the built set (default: a fresh one)")
    ap.add_argument("--screens", type=int, default=None, help="screens to build (default: the built-in 12)")
    ap.add_argument("--limit", type=int, default=None, help="the first N samples only")
    ap.add_argument("--concurrency", type=int, default=None, help="samples in flight (default: the CLI's)")
    ap.add_argument("--out", help="run folder (default: a fresh temporary one)")
    args = ap.parse_args(argv)

    from regionfocus.adapters.agents.ocr import OcrAgent
    from regionfocus.adapters.perception.ocr_engine import EnginePool
    from regionfocus.screenspot_pro import builder
    from regionfocus.screenspot_pro.cli import main as ssp_main

    print_machine()
    with tempfile.TemporaryDirectory(prefix="rf-main-job-") as tmp:
        cache = Path(args.cache_dir).expanduser() if args.cache_dir else Path(tmp) / "cache"
        os.environ["XDG_CACHE_HOME"] = str(cache)  # --data builtin looks there
        c0, t0 = cpu_s(), time.perf_counter()
        if args.screens is None:
            data = builder.builtin_dataset_dir()
        else:  # a smaller set, built the same way (the smoke test)
            data = builder.build_sample(Path(tmp) / "data", n_screens=args.screens)
        c1, t1 = cpu_s(), time.perf_counter()

        agent = OcrAgent()
        # Counted around the engine pool's read, for this measurement only.
        demand = ReadDemand()
        EnginePool.read = demand.wrap(EnginePool.read)
        pools = EnginePool._pools.values()
        ocr0 = sum(p.cpu_s for p in pools), sum(p.calls for p in pools)
        argv_run = ["--data", "builtin" if args.screens is None else str(data), "--agent", "ocr"]
        argv_run += ["--out", args.out or str(Path(tmp) / "run"), "--no-progress"]
        if args.limit is not None:
            argv_run += ["--limit", str(args.limit)]
        if args.concurrency is not None:
            argv_run += ["--concurrency", str(args.concurrency)]
        code = ssp_main(argv_run, model=agent)
        c2, t2 = cpu_s(), time.perf_counter()
    pools = EnginePool._pools.values()
    ocr_cpu = sum(p.cpu_s for p in pools) - ocr0[0]
    ocr_calls = sum(p.calls for p in pools) - ocr0[1]
    print_table(
        "Main job: where the CPU goes (s)",
        ["part", "CPU s", "wall s", "count"],
        [
            ["build the data set", c1 - c0, t1 - t0, "-"],
            ["OCR engine reads", ocr_cpu, "-", ocr_calls],
            ["rest of the run", (c2 - c1) - ocr_cpu, "-", "-"],
            ["run", c2 - c1, t2 - t1, "-"],
            ["total", c2 - c0, t2 - t0, "-"],
        ],
    )
    print_table(
        "Wall s of the run by OCR reads wanted (running or waiting)",
        ["none", "one", "two or more"],
        [demand.row(2)],
    )
    print_table(
        "OCR agent cache",
        ["reads (engine calls)", "cache hits", "kept now", "bound"],
        [[agent.cache.reads, agent.cache.hits, len(agent.cache), agent.cache.size]],
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
