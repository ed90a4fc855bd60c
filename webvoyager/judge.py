"""The WebVoyager auto-evaluation protocol with any OpenAI-compatible VLM (He et al., 2024;
the protocol of the official ``evaluation/auto_eval.py``, docs/ARCHITECTURE.md §7).

The judge gets the official system and user texts verbatim, the task, the agent's final answer
and the last ``k`` screenshots (k = 15 in the official script), at temperature 0 with seed 42 as
upstream sends them, and must say SUCCESS or NOT SUCCESS. A task without an answer is
NOT SUCCESS without a call, as in the official script. Each task is judged ``repeats`` times (the
paper uses three) and success is reported as mean ± std over repeats, per site and overall.
Verdicts are written to ``RUN_DIR/judge.json`` after each task, so an interrupted judge resumes.
"""

from __future__ import annotations

import asyncio
import re
from importlib import resources
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

from PIL import Image

from .rundir import read_json, read_results, write_json

# The official auto-evaluation's texts, verbatim (MinorJerry/WebVoyager, evaluation/auto_eval.py,
# commit 0915445; prompts/official/SOURCES.md): a judge's prompt is part of the protocol.
_OFFICIAL = resources.files("regionfocus.webvoyager") / "prompts" / "official"
SYSTEM_PROMPT = (_OFFICIAL / "webvoyager_judge_system.txt").read_text("utf-8")
USER_PROMPT = (_OFFICIAL / "webvoyager_judge_user.txt").read_text("utf-8")
_PLACEHOLDER = re.compile(r"<(task|answer|num)>")

_VERDICT = re.compile(r"\bNOT\s+SUCCESS\b|\bSUCCESS\b")
_SHOT = re.compile(r"^screenshot(\d+)\.png$")


def parse_verdict(text: str) -> int | None:
    """1 for SUCCESS, 0 for NOT SUCCESS, None when neither is said.

    The *last* verdict word decides (the protocol asks for it at the end, and the explanation
    may mention either). Matching is on whole upper-case words: "NOT SUCCESS" is not read as
    SUCCESS, and "UNSUCCESSFUL" or "SUCCESSFULLY" are not verdicts at all (the official
    substring test reads both as SUCCESS).
    """
    found = _VERDICT.findall(text or "")
    if not found:
        return None
    return 0 if found[-1].startswith("NOT") else 1


def last_screenshots(folder: Path, k: int) -> list[Path]:
    """The last ``k`` ``screenshot{n}.png`` files of a task folder, in step order."""
    shots = []
    for p in folder.iterdir() if folder.is_dir() else []:
        m = _SHOT.match(p.name)
        if m:
            shots.append((int(m.group(1)), p))
    shots.sort()
    return [p for _, p in shots[-k:]] if k > 0 else []


def judge_messages(task: str, answer: str, images: list[Image.Image], num: int | None = None) -> list[dict]:
    """The official request in the backend's message shape (PIL images, encoded by the backend).
    ``num``: the count the text announces; upstream says its ``--max_attached_imgs`` there, not
    the number attached (default: the number attached)."""
    values = {"task": task, "answer": answer, "num": str(len(images) if num is None else num)}
    text = _PLACEHOLDER.sub(lambda m: values[m.group(1)], USER_PROMPT)
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [{"type": "image", "image": im} for im in images]
    content.append({"type": "text", "text": "Your verdict:\n"})
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def _rate(values: list[int | None]) -> float:
    """Success rate of one repeat; unknown verdicts count as not successful."""
    return sum(1 for v in values if v == 1) / len(values) if values else 0.0


def aggregate(tasks: dict[str, dict], sites: dict[str, str], repeats: int) -> dict:
    """Mean ± std (population, over repeats) of the success rate, per site and overall."""

    def block(ids: list[str]) -> dict:
        rates = [_rate([tasks[i]["verdicts"][r] for i in ids]) for r in range(repeats)]
        unknown = sum(1 for i in ids for v in tasks[i]["verdicts"] if v is None)
        return {
            "tasks": len(ids),
            "mean": round(mean(rates), 4) if rates else 0.0,
            "std": round(pstdev(rates), 4) if len(rates) > 1 else 0.0,
            "rates": [round(r, 4) for r in rates],
            "unknown": unknown,
        }

    done = [i for i, t in tasks.items() if len(t["verdicts"]) >= repeats]
    by_site: dict[str, list[str]] = {}
    for i in done:
        by_site.setdefault(sites.get(i, "?"), []).append(i)
    return {"sites": {s: block(ids) for s, ids in sorted(by_site.items())}, "overall": block(done)}


async def judge_run(
    run_dir: str | Path,
    backend,
    *,
    model_name: str,
    repeats: int = 3,
    last_k: int = 15,
    temperature: float = 0.0,
    max_tokens: int = 1000,
    concurrency: int = 4,
) -> dict:
    """Judge every answered-or-not WebVoyager task in ``run_dir`` (MiniWoB++ episodes are
    scored by reward and skipped). ``backend``: an :class:`regionfocus.adapters.backends.base.ChatBackend`."""
    if repeats < 1 or last_k < 1:
        raise ValueError(f"--repeats and --last-k must be >= 1, got {repeats} and {last_k}")
    root = Path(run_dir)
    records = read_results(root) or None
    if records is None:
        raise FileNotFoundError(f"{root}/results.json not found: run the tasks first")
    records = [r for r in records if r.get("kind", "web") != "miniwob"]
    path = root / "judge.json"
    state = read_json(path, default={}) or {}
    if state and (state.get("model") != model_name or state.get("last_k") != last_k):
        state = {}  # another judge's verdicts: start over rather than mix them
    tasks: dict[str, dict] = state.get("tasks", {})
    lock = asyncio.Lock()
    sem = asyncio.Semaphore(max(1, concurrency))

    def save() -> None:
        summary = aggregate(tasks, {r["id"]: r.get("web_name", "?") for r in records}, repeats)
        summary.update(model=model_name, repeats=repeats, last_k=last_k)
        write_json(path, {"model": model_name, "last_k": last_k, "tasks": tasks, "summary": summary})

    async def one(rec: dict) -> None:
        entry = tasks.setdefault(rec["id"], {"verdicts": [], "texts": []})
        if len(entry["verdicts"]) >= repeats:
            return
        answer = rec.get("answer")
        if not answer:
            # the official script scores a task without an answer as 0 without asking
            while len(entry["verdicts"]) < repeats:
                entry["verdicts"].append(0)
                entry["texts"].append("(no answer: not judged)")
        else:
            shots = last_screenshots(root / (rec.get("folder") or "task" + rec["id"]), last_k)
            images = [Image.open(p).convert("RGB") for p in shots]
            messages = judge_messages(rec.get("ques", ""), answer, images, num=last_k)
            while len(entry["verdicts"]) < repeats:
                async with sem:
                    try:
                        reply = await backend.complete(
                            messages, max_tokens=max_tokens, temperature=temperature, seed=42
                        )
                        text = reply.text
                    except Exception as e:  # noqa: BLE001 - a failed call is an unknown verdict
                        text = f"(judge call failed: {type(e).__name__}: {e})"
                entry["verdicts"].append(parse_verdict(text))
                entry["texts"].append(text)
        async with lock:
            save()

    await asyncio.gather(*(one(r) for r in records))
    save()
    return read_json(path)["summary"]


def format_summary(summary: dict) -> str:
    lines = [
        f"judge {summary.get('model')}: {summary.get('repeats')} repeats, last {summary.get('last_k')} screenshots"
    ]
    for site, s in list(summary["sites"].items()) + [("overall", summary["overall"])]:
        lines.append(
            f"  {site:<24} {s['mean'] * 100:5.1f} ± {s['std'] * 100:4.1f} %  ({s['tasks']} tasks, {s['unknown']} unknown)"
        )
    return "\n".join(lines)
