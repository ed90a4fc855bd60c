"""Run a RegionFocusAgent over ScreenSpot-Pro samples: async, bounded, resumable.

Each sample gets one :meth:`RegionFocusAgent.predict` call, whose initial prediction is the
baseline and whose final answer is "+ RegionFocus": both come out of the same pass. Finished
samples are appended to ``records.jsonl`` at once; rerunning skips every id already there, so a
crash or Ctrl-C costs only the samples in flight. A sample that raised or whose model calls all
failed is recorded with status "error" and scored wrong for both rows, never dropped; one that
lost some of its calls (a judge, a view, a choice, a peer strategy's call) is "partial": scored
as answered, with what it lost in ``lost``, and rerun by ``--retry-errors``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from regionfocus.actions import Action
from regionfocus.adapters.backends.openai_http import SESSION
from regionfocus.agent import RegionFocusAgent, StaticPrediction, is_click
from regionfocus.config import RegionFocusConfig
from regionfocus.kit.allocator import keep_freed_buffers
from regionfocus.kit.progress import Progress
from regionfocus.kit.runlog import RunFolder
from regionfocus.model import GroundingModel
from regionfocus.strategies.regionfocus import prediction_costs

from .dataset import Sample, data_pin
from .metrics import CORRECT, WRONG, judge
from .record_fields import RECORD_FIELDS
from .strategies import BASELINE, REGIONFOCUS, peer_rows, run_peers, totals


def action_point(action: Action | None) -> list[float] | None:
    """The point a ScreenSpot-Pro answer is scored by (screenshot pixels): a click's (any
    button). A scroll, hover or typing at a point is no grounding answer (:func:`non_click`)."""
    if not is_click(action):
        return None
    return [float(action.point.x), float(action.point.y)]


def non_click(action: Action | None) -> bool:
    """An answer that names a point with an action other than a click (a scroll, a hover,
    typing at the target): recorded as it is and scored wrong, never credited as a click."""
    return action is not None and action.point is not None and not is_click(action)


def _final_raw_response(pred: StaticPrediction, baseline_text: str) -> str:
    """The model text the final point came from: the chosen candidate's answer when a
    RegionFocus round produced the final action, else the initial answer."""
    for rnd in reversed(pred.rounds):
        if rnd.action is None or not rnd.choice:
            continue
        chosen = rnd.merged[rnd.choice - 1]
        kinds = {f"candidate[{i}]" for i in chosen.views[:1]}
        for call in rnd.calls:
            if call.kind in kinds:
                return call.text
    return baseline_text


def make_record(
    sample: Sample,
    pred: StaticPrediction | None,
    error: str | None,
    seconds: float,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON record of one finished sample (also everything the reports need); ``extra``:
    the cost rows and the peer strategies' results (:mod:`regionfocus.screenspot_pro.strategies`)."""
    meta = sample.meta()
    failed = pred is None or pred.failed
    status = "error" if (error is not None or failed) else "ok"
    if pred is not None and failed and error is None:
        errors = [c.error for c in pred.all_calls if c.error]
        error = f"all {len(errors)} model call(s) failed; first: {errors[0]}"
    lost = _lost(pred, (extra or {}).get("strategies") or {}) if status == "ok" else None
    if lost:
        status = "partial"
    calls = pred.all_calls if pred is not None else []
    baseline_text = next((c.text for c in calls if c.kind == "act"), "")
    rows = {}
    for row, action in (
        ("baseline", pred.baseline if pred else None),
        ("final", pred.final if pred else None),
    ):
        if action is None and pred is not None and non_click(pred.baseline_non_point):
            action = pred.baseline_non_point  # no click came of it: the answer as it was
        point = action_point(action)
        declined = point is None and pred is not None and pred.baseline_non_point is not None
        if status == "error" or non_click(action):
            verdict = WRONG
        else:
            verdict = judge(sample, point, declined)
        raw = baseline_text if row == "baseline" or pred is None else _final_raw_response(pred, baseline_text)
        rows[row] = {
            "point": point,
            "action": action.to_dict() if action else None,
            "correctness": verdict,
            "raw_response": raw,
            **({"non_click": True} if non_click(action) else {}),
        }
    return {
        "id": sample.id,
        "sample": meta,
        "status": status,
        "error": error,
        "lost": lost,
        "baseline": rows["baseline"],
        "final": rows["final"],
        "verdict": pred.verdict.value if pred and pred.verdict else None,
        "trigger": pred.trigger if pred else None,
        "rounds": len(pred.rounds) if pred else 0,
        "n_calls": len(calls),
        "n_failed_calls": sum(1 for c in calls if c.error),
        "prompt_tokens": sum(c.prompt_tokens or 0 for c in calls),
        "completion_tokens": sum(c.completion_tokens or 0 for c in calls),
        "model_seconds": round(sum(c.latency_s for c in calls), 4),
        "seconds": round(seconds, 4),
        "trace": pred.to_dict() if pred else None,
        **(extra or {}),
    }


def _lost(pred: StaticPrediction | None, peers: dict[str, Any]) -> str | None:
    """What a sample lost: the failed calls of its prediction and the peer strategies that
    failed or lost calls, in one line; None when every call it needed answered."""
    parts = []
    lost = pred.lost_calls if pred is not None else []
    if lost:
        kinds = ", ".join(dict.fromkeys(c.kind for c in lost))
        parts.append(
            f"{len(lost)} of {len(pred.all_calls)} model call(s) failed ({kinds}); first: {lost[0].error}"
        )
    for name, row in peers.items():
        trace_calls = (row.get("trace") or {}).get("calls") or []
        failed_calls = [c for c in trace_calls if c.get("error")]
        if row.get("error"):
            parts.append(f"strategy {name} failed: {row['error']}")
        elif failed_calls:
            parts.append(
                f"strategy {name}: {len(failed_calls)} call(s) failed; first: {failed_calls[0]['error']}"
            )
    return "; ".join(parts) or None


def _load_rgb(path: Path, size: tuple[int, int]) -> Image.Image:
    """The screenshot, decoded only if its header still says the ``size`` the loader checked
    against the pixel limit (a file swapped since would otherwise be decoded whatever it claims)."""
    with Image.open(path) as im:
        if im.size != tuple(size):
            raise ValueError(
                f"image file {path} is {im.size[0]}x{im.size[1]} now, {size[0]}x{size[1]} when the "
                "data set was loaded; it changed during the run"
            )
        return im.convert("RGB")


class Screenshots:
    """Decoded screenshots shared by the samples in flight: the samples of one screen (12 targets
    a screen in the built-in set, contiguous in dataset order) decode its file once, not once
    each (~0.12 CPU s per 4K PNG). A screenshot is kept while a sample holds it; ``slots``
    bounds the decodes under way at once. Every holder only reads the image (crops, resized
    and annotated copies), so one object serves them all."""

    def __init__(self, slots: asyncio.Semaphore | None = None):
        self.slots = slots
        self._live: dict[tuple[Path, tuple[int, int]], tuple[asyncio.Task, int]] = {}
        self.decodes = 0

    async def hold(self, path: Path, size: tuple[int, int]) -> Image.Image:
        """The decoded ``path``; pair with :meth:`release` once the sample is done with it."""
        key = (Path(path), tuple(size))
        task, holders = self._live.get(key, (None, 0))
        if task is None:
            task = asyncio.ensure_future(self._decode(path, size))
            self.decodes += 1
        self._live[key] = (task, holders + 1)
        try:
            # Shielded: one holder cancelled does not cancel the decode the others wait for.
            return await asyncio.shield(task)
        except BaseException:
            self.release(path, size)
            raise

    def release(self, path: Path, size: tuple[int, int]) -> None:
        key = (Path(path), tuple(size))
        task, holders = self._live[key]
        if holders > 1:
            self._live[key] = (task, holders - 1)
            return
        del self._live[key]
        if not task.done():
            task.cancel()
        elif not task.cancelled():
            task.exception()  # retrieved: a failed decode was reported to its holders

    async def _decode(self, path: Path, size: tuple[int, int]) -> Image.Image:
        if self.slots is None:
            return await asyncio.to_thread(_load_rgb, path, size)
        async with self.slots:
            return await asyncio.to_thread(_load_rgb, path, size)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_one(
    agent: RegionFocusAgent,
    sample: Sample,
    strategies: Sequence[str] = (REGIONFOCUS,),
    screenshots: Screenshots | None = None,
    options: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Predict one sample (baseline and, when enabled, RegionFocus in one pass), then run the
    peer ``strategies`` (built with their ``options``, by name) from that baseline; any
    exception of the pass becomes an error record (cancellation propagates). ``screenshots``:
    the decoded screenshots shared with the other samples in flight."""
    t0 = time.perf_counter()
    screenshots = screenshots or Screenshots()
    image = None
    try:
        image = await screenshots.hold(sample.image_path, sample.img_size)
        pred = await agent.predict(image, sample.instruction)
        costs = prediction_costs(pred, image.size, agent.model)
        extra: dict[str, Any] = {"cost": {BASELINE: totals([c for c in costs if c.kind == "act"])}}
        if agent.enabled:
            extra["cost"][REGIONFOCUS] = totals(costs)
        if any(n != REGIONFOCUS for n in strategies):
            peers = await run_peers(strategies, agent.model, image, sample.instruction, pred, options)
            extra["strategies"] = peer_rows(sample, peers, [c for c in costs if c.kind == "act"])
        extra["peak_rss_mb"] = round(peak_rss_mb())  # the process's peak so far: the summary's max
        # Scoring reads what the model wrote too: inside the try, like the prediction.
        return make_record(sample, pred, None, time.perf_counter() - t0, extra)
    except asyncio.CancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - a failed sample is data, not the end of the run
        tb = traceback.format_exception_only(type(e), e)[-1].strip()
        return error_record(sample, tb, time.perf_counter() - t0)
    finally:
        if image is not None:  # held (a failed hold let go itself)
            screenshots.release(sample.image_path, sample.img_size)


def error_record(sample: Sample, error: str, seconds: float = 0.0) -> dict[str, Any]:
    """A failed sample's record: scored wrong in both rows, kept in the denominator."""
    return make_record(sample, None, error, seconds, {"peak_rss_mb": round(peak_rss_mb())})


class _Progress:
    """The run's progress (a bar on a terminal, lines in a log) with the running accuracy of both
    rows over every finished sample of the run."""

    def __init__(self, total: int, done: Sequence[dict[str, Any]], enabled: bool | None):
        self.n = len(done)
        self.base = sum(r["baseline"]["correctness"] == CORRECT for r in done)
        self.final = sum(r["final"]["correctness"] == CORRECT for r in done)
        self.bar = Progress(total, desc="screenspot-pro", unit="sample", initial=self.n, enabled=enabled)

    def _note(self) -> str:
        if not self.n:
            return ""
        return f"baseline {100 * self.base / self.n:.1f}%  +RegionFocus {100 * self.final / self.n:.1f}%"

    def update(self, rec: dict[str, Any]) -> None:
        self.n += 1
        self.base += (rec.get("baseline") or {}).get("correctness") == CORRECT
        self.final += (rec.get("final") or {}).get("correctness") == CORRECT
        self.bar.update(error=rec.get("status") == "error", note=self._note())

    def close(self) -> None:
        self.bar.close()


async def run_samples(
    samples: Sequence[Sample],
    agent: RegionFocusAgent,
    folder: RunFolder | str | Path,
    *,
    concurrency: int = 4,
    progress: bool | None = None,
    strategies: Sequence[str] = (REGIONFOCUS,),
    image_workers: int | None = None,
    tune_allocator: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Run every sample not yet finished in ``folder`` with at most ``concurrency`` in flight;
    return the records of ``samples`` (old and new) in dataset order. ``folder``: an open
    :class:`RunFolder`, or a path (opened with no pinned settings, for scripts and tests). Which finished samples are
    kept (errors only without ``--retry-errors``) the folder decided when it was opened; a
    retried sample's new record supersedes the old one. Cancellation (Ctrl-C) cancels the
    samples in flight and leaves the log consistent.

    ``image_workers``: samples decoding their screenshot at once (default: the CPU count),
    apart from ``concurrency``. Without it every sample of a full pipeline decodes at the
    start (64 decoded 4K screenshots at once at ``--concurrency 64``, each ~0.1 s of CPU and
    25 MB); with it samples enter one core's worth at a time and the next sample's decode
    overlaps the others' model calls.

    ``tune_allocator``: keep freed image buffers for reuse (process-wide malloc and Pillow
    settings, :mod:`regionfocus.kit.allocator`); the command line turns it on, a library caller
    decides for its own process.
    """
    if concurrency < 1:
        raise ValueError(f"--concurrency must be >= 1, got {concurrency}")
    if image_workers is not None and image_workers < 1:
        raise ValueError(f"--image-workers must be >= 1, got {image_workers}")
    if tune_allocator:
        keep_freed_buffers()
    if not isinstance(folder, RunFolder):  # a bare folder: nothing pinned beyond "no settings"
        with RunFolder(folder, {}, {}, schema=RECORD_FIELDS) as opened:
            return await run_samples(
                samples,
                agent,
                opened,
                concurrency=concurrency,
                progress=progress,
                strategies=strategies,
                image_workers=image_workers,
                options=options,
            )
    wanted = {s.id for s in samples}
    pending = [s for s in samples if s.id not in folder.done]
    sem = asyncio.Semaphore(concurrency)
    screenshots = Screenshots(asyncio.Semaphore(image_workers or os.cpu_count() or 1))
    bar = _Progress(len(samples), [r for i, r in folder.done.items() if i in wanted], progress)

    async def worker(sample: Sample) -> None:
        SESSION.set(sample.id)  # this task's context: its requests route together
        async with sem:
            rec = await run_one(agent, sample, strategies, screenshots, options)
        # No await between finishing and appending: cancellation cannot split them. A record
        # the log cannot take is replaced by an error record of the same shape.
        bar.update(folder.add(rec, fallback=lambda message: error_record(sample, message, rec["seconds"])))

    tasks = [asyncio.create_task(worker(s)) for s in pending]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        bar.close()
    return [folder.done[s.id] for s in samples if s.id in folder.done]


async def run_screenspot(
    samples: Sequence[Sample],
    model: GroundingModel,
    config: RegionFocusConfig,
    run_dir: str | Path,
    *,
    enabled: bool = True,
    concurrency: int = 4,
    identity: dict[str, Any] | None = None,
    invocation: dict[str, Any] | None = None,
    progress: bool | None = None,
    retry_errors: bool = False,
    strategies: Sequence[str] | None = None,
    image_workers: int | None = None,
    tune_allocator: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Pin the run's config to ``run_dir`` (refusing a different one), run what is missing and
    write results.json, results_baseline.json, summary.md and report.html atomically.
    ``strategies``: the strategies to compare (names of :mod:`regionfocus.strategies`); None:
    RegionFocus alone when ``enabled``. RegionFocus runs when ``enabled`` and named.
    ``options``: each strategy's constructor keywords, by name (a second model:
    :func:`~regionfocus.screenspot_pro.strategies.second_options`)."""
    from .report import write_reports

    run_dir = Path(run_dir)
    names = tuple(strategies) if strategies is not None else ((REGIONFOCUS,) if enabled else ())
    enabled = enabled and REGIONFOCUS in names
    ident = {"regionfocus": config.to_dict(), "regionfocus_enabled": enabled, **(identity or {})}
    if any(n != REGIONFOCUS for n in names):  # pinned only when used: earlier folders resume
        ident["strategies"] = list(names)
    agent = RegionFocusAgent(model, config, enabled=enabled)
    inv = {"concurrency": concurrency, **(invocation or {})}
    selected = [s.id for s in samples]
    with RunFolder(
        run_dir,
        ident,
        inv,
        retry_errors=retry_errors,
        schema=RECORD_FIELDS,
        selected=selected,
        data=data_pin(samples),  # by content: changed data is refused, moved data resumes
    ) as folder:
        records = await run_samples(
            samples,
            agent,
            folder,
            concurrency=concurrency,
            progress=progress,
            strategies=names,
            image_workers=image_workers,
            tune_allocator=tune_allocator,
            options=options,
        )
    write_reports(run_dir, n_selected=len(samples))
    return records
