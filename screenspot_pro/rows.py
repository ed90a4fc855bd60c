"""A run folder's records and the rows every report shows of them: the baseline, RegionFocus
(when it ran) and each peer strategy (``--strategy``), each as official detail entries.

The terminal table, summary.md, report.html and ``compare`` all take their rows from here, so
a strategy that ran is on every one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from regionfocus.kit.runlog import RECORDS, read_config, read_records, selected_ids

from . import strategies
from .dataset import sample_order_key
from .formats import Format, by_name
from .metrics import detail
from .record_fields import RECORD_FIELDS

ROWS = (("baseline", "baseline"), ("final", "+ RegionFocus"))


def load_run(run_dir: str | Path) -> list[dict[str, Any]]:
    """The run's records in dataset order (annotation file, then id), each checked against the
    record contract (:mod:`.record_fields`; ids among those the run selected, when its config
    says): a line that breaks it raises, naming file, line and field."""
    path = Path(run_dir) / RECORDS
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder: no {RECORDS} in it")
    records = read_records(path, RECORD_FIELDS, selected_ids(read_config(run_dir)))
    records.sort(key=lambda r: sample_order_key(r["sample"]["task_filename"], r["id"]))
    return records


def benchmark(config: dict[str, Any]) -> Format:
    """The benchmark a run folder's config pinned (none: ScreenSpot-Pro)."""
    return by_name(config.get("identity", {}).get("format"))


def enabled_in(config: dict[str, Any]) -> bool:
    """Whether the run had RegionFocus (``--no-regionfocus`` turns it off)."""
    return bool(config.get("identity", {}).get("regionfocus_enabled", True))


def regionfocus_enabled(run_dir: str | Path) -> bool:
    return enabled_in(read_config(run_dir))


def peer_names(records: Sequence[dict[str, Any]]) -> list[str]:
    """The peer strategies a run compared (``--strategy``), as first met."""
    return [n for n in strategies.rows_of(records) if n not in (strategies.BASELINE, strategies.REGIONFOCUS)]


def details_for(records: Sequence[dict[str, Any]], row: str) -> list[dict[str, Any]]:
    """Official detail entries for ``row`` ("baseline", "final", or a peer strategy's name).
    Error samples stay in, scored wrong, and carry our ``status``/``error`` beside the
    official keys; partial samples are scored as answered and carry what they lost as ``error``."""
    out = []
    for r in records:
        res = r[row] if row in ("baseline", "final") else strategies.row_result(r, row)
        if res is None:  # the strategy has no result for this sample (an error record)
            res = {"point": None, "raw_response": "", "correctness": "wrong"}
        d = detail(r["sample"], res["point"], res["raw_response"], res["correctness"])
        if r["status"] != "ok":
            d.update(status=r["status"], error=r.get("error") or r.get("lost"))
        out.append(d)
    return out


def row_label(name: str) -> str:
    """A strategy row's label in the tables: "baseline", "+ RegionFocus", a peer's name."""
    return dict(ROWS).get("final" if name == strategies.REGIONFOCUS else name, name)


def shown_rows(records: Sequence[dict[str, Any]], enabled: bool) -> list[str]:
    """The strategy rows a run reports: the baseline, RegionFocus when it ran, the peers."""
    return [n for n in strategies.rows_of(records) if enabled or n != strategies.REGIONFOCUS]


def strategy_rows(records: Sequence[dict[str, Any]], enabled: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, detail entries) of every row :func:`shown_rows` names, in its order."""
    return [
        (row_label(name), details_for(records, "final" if name == strategies.REGIONFOCUS else name))
        for name in shown_rows(records, enabled)
    ]
