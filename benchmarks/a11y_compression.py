"""Linearized vs compressed accessibility observations (A11y-Compressor) on the offline corpus.

Per page and in total: characters and o200k_base tokens of the plain linearized tree (whole
page, and its on-screen rows only) and of the compressed observation, the ratio compressed /
linearized against the paper's 22 % (Takeshita et al., §6.1: OSWorld, Qwen3-VL tokens), and modal
detection precision and recall on the pages whose modal is known (element level: on-screen
elements that say something, predicted modal vs marked with ``data-a11y-modal``).

The corpus is benchmarks/a11y_corpus.py's: the project's own pages, MiniWoB++ task pages, and
Debian documentation under /usr/share/doc (skipped with a note when not installed). Real
Chromium, offline.

    .venv/bin/python -m benchmarks.a11y_compression [--kinds own,miniwob,doc] [--viewport 1440x1440]
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from regionfocus.webvoyager.tokens import TOKENIZER

from .a11y_corpus import PageResult, run_corpus

PAPER_RATIO = 0.22


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.1f} %" if b else "-"


def _prf(tp: int, fp: int, fn: int) -> tuple[str, str]:
    p = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
    r = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
    return p, r


def table(results: list[PageResult]) -> str:
    """The Markdown table: one row per page, then the total."""
    head = (
        "| page | kind | linear chars | linear tokens | on-screen linear tokens | compressed chars "
        "| compressed tokens | tokens vs linear | tokens vs on-screen | modal P | modal R | modal by |"
    )
    rows = [head, "|" + "---|" * 12]
    tot = [0] * 6
    tp = fp = fn = 0
    for r in results:
        p, rec = _prf(r.tp, r.fp, r.fn) if r.has_truth else ("n/a", "n/a")
        rows.append(
            f"| {r.name} | {r.kind} | {r.linear[0]} | {r.linear[1]} | {r.linear_view[1]} | {r.compressed[0]} "
            f"| {r.compressed[1]} | {_pct(r.compressed[1], r.linear[1])} "
            f"| {_pct(r.compressed[1], r.linear_view[1])} | {p} | {rec} | {'+'.join(r.methods) or '-'} |"
        )
        for i, v in enumerate((*r.linear, *r.linear_view, *r.compressed)):
            tot[i] += v
        if r.has_truth:
            tp, fp, fn = tp + r.tp, fp + r.fp, fn + r.fn
    p, rec = _prf(tp, fp, fn)
    rows.append(
        f"| **total** | | {tot[0]} | {tot[1]} | {tot[3]} | {tot[4]} | {tot[5]} | {_pct(tot[5], tot[1])} "
        f"| {_pct(tot[5], tot[3])} | {p} | {rec} | |"
    )
    return "\n".join(rows)


def ablation_table(results: list[PageResult]) -> str:
    """Total tokens with each phase alone (Table 2's variants) beside the baseline and the full
    pipeline."""
    lin = sum(r.linear[1] for r in results)
    rows = ["| observation | tokens | vs linear |", "|---|---|---|", f"| linearized tree | {lin} | 100.0 % |"]
    for phase in ("modal", "reduce", "structure"):
        t = sum(r.ablation.get(phase, 0) for r in results)
        rows.append(f"| {phase} only | {t} | {_pct(t, lin)} |")
    full = sum(r.compressed[1] for r in results)
    rows.append(f"| full pipeline | {full} | {_pct(full, lin)} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="own,miniwob,doc", help="corpus kinds, comma-separated")
    ap.add_argument("--viewport", default="1440x1440", help="W x H in CSS pixels (default 1440x1440)")
    args = ap.parse_args(argv)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    bad = [k for k in kinds if k not in ("own", "miniwob", "doc")]
    if bad:
        ap.error(f"--kinds: unknown kind(s) {bad}; known: own, miniwob, doc")
    try:
        w, h = (int(v) for v in args.viewport.lower().split("x"))
    except ValueError:
        ap.error(f"--viewport must look like 1440x1440, got {args.viewport!r}")
    results, notes = asyncio.run(run_corpus(kinds, (w, h)))
    print(
        f"### A11y-Compressor sizes ({TOKENIZER} tokens; paper: {PAPER_RATIO:.0%} of the linearized tree)\n"
    )
    print(table(results))
    print("\n### Phases alone (total over the pages above)\n")
    print(ablation_table(results))
    for n in notes:
        print(n, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
