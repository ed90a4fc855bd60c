"""Everything derived from a run folder's records: official results, summary.md, report.html,
strategies.png/.svg/.pdf, the table printed at the end of a run, and the side-by-side
comparison of two runs.

Nothing here needs the dataset or the model: ``write_reports(run_dir)`` rebuilds every file from
``records.jsonl`` (and ``config.json`` when present). The screenshots are read from the paths the
records name, only for the HTML report, which says so when one is missing.

The parts, by job: :mod:`.rows` (the records and the strategy rows every report shows),
:mod:`.tables`, :mod:`.summary` (summary.md and its sections), :mod:`.report_html`,
:mod:`.figure` (the strategies figure), :mod:`.compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from regionfocus.kit.runlog import (
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    read_config,
    selected_count,
)

from . import strategies
from .compare import compare_runs
from .report_html import html_report
from .rows import benchmark, details_for, enabled_in, load_run, peer_names, strategy_rows
from .summary import price_table, pricing, summary_markdown
from .tables import markdown_table, split_table, table1_text

__all__ = ["compare_runs", "load_run", "table_for_run", "write_reports"]


def write_reports(
    run_dir: str | Path,
    *,
    n_selected: int | None = None,
    thumb_width: int = 1200,
    max_images: int | None = 400,
    prices_file: str | Path | None = None,
) -> list[dict[str, Any]]:
    """(Re)write results.json, results_baseline.json (and results_<name>.json per peer
    strategy), summary.md, the strategies figure (with peers) and report.html from the folder
    alone, each atomically. Returns the records in dataset order. ``prices_file``: another price
    table than the run's (``report --prices``). ``n_selected``: the samples the run selected
    (default: as its config.json says)."""
    run_dir = Path(run_dir)
    records = load_run(run_dir)
    config = read_config(run_dir)
    n_selected = selected_count(config) if n_selected is None else n_selected
    table = price_table(config, prices_file)
    fmt = benchmark(config)
    atomic_write_json(run_dir / "results.json", fmt.evaluate(details_for(records, "final")))
    atomic_write_json(run_dir / "results_baseline.json", fmt.evaluate(details_for(records, "baseline")))
    for name in peer_names(records):
        atomic_write_json(run_dir / f"results_{name}.json", fmt.evaluate(details_for(records, name)))
    atomic_write_text(run_dir / "summary.md", summary_markdown(records, config, n_selected, table))
    png = None
    if peer_names(records):
        png = _write_figure(
            run_dir, strategies.comparison(records, pricing(config, table)), config, fmt.title, len(records)
        )
    atomic_write_text(
        run_dir / "report.html",
        html_report(
            records, config, thumb_width=thumb_width, max_images=max_images, table=table, figure_png=png
        ),
    )
    return records


def _write_figure(
    run_dir: Path, rows: list[dict[str, Any]], config: dict[str, Any], title: str, n: int
) -> bytes | None:
    """strategies.png, .svg and .pdf (matplotlib is imported here, on the first figure); the PNG's
    bytes for the page, None when no row has a point to draw."""
    from regionfocus.kit import figures

    from .figure import STEM, strategies_figure

    fig = strategies_figure(rows, config, title, n)
    if fig is None:
        return None
    return figures.save(fig, run_dir / STEM, atomic_write_bytes)["png"]


def table_for_run(run_dir: str | Path) -> str:
    """The table printed at the end of a run: Table 1 (or the benchmark's per-split table) with a
    row for every strategy the run has."""
    records = load_run(run_dir)
    config = read_config(run_dir)
    rows = strategy_rows(records, enabled_in(config))
    fmt = benchmark(config)
    return table1_text(rows) if fmt.parser is None else markdown_table(*split_table(rows, fmt))
