"""What checking the record log's contract costs: CPU seconds to read a ScreenSpot-Pro-sized log
(one record per sample, 1,581 by default, as a full ScreenSpot-Pro run leaves it) with and
without the check, and the check alone with fastjsonschema's compiled code against jsonschema's
interpreter (the library the schemas would otherwise go through).

The records are a real run's: `regionfocus screenspot-pro` over the test data set with the
colour double (tests/test_screenspot_helpers.py), copied under new ids until there are N.

    .venv/bin/python -m benchmarks.record_contract [--records 1581]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from ._common import print_machine, print_table


def _cpu(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=1581)
    args = p.parse_args(argv)

    from jsonschema import Draft7Validator

    from regionfocus.kit.runlog import SHARED_FIELDS, _check_of, _scan, read_records
    from regionfocus.screenspot_pro.cli import main as screenspot
    from regionfocus.screenspot_pro.record_fields import RECORD_FIELDS
    from tests.test_screenspot_helpers import ColourModel, fresh_dataset

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = fresh_dataset(root / "data")
        run = root / "run"
        argv = ["--data", str(data), "--out", str(run), "--agent", "ocr", "--no-progress"]
        with contextlib.redirect_stdout(io.StringIO()):  # the run's own table is not this one
            screenspot(argv, model=ColourModel())
        seed = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
        records = []
        for i in range(args.records):
            rec = json.loads(json.dumps(seed[i % len(seed)]))
            rec["id"] = rec["sample"]["id"] = f"s{i}"
            records.append(rec)
        log = root / "records.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in records))
        ids = [r["id"] for r in records]
        parsed = [r for _, r in _scan(log)[0]]
        compiled = _check_of(RECORD_FIELDS)
        interpreted = Draft7Validator({"allOf": [SHARED_FIELDS, RECORD_FIELDS]})
        rows = [
            ("parse only (json.loads per line)", _cpu(lambda: _scan(log))),
            ("read_records, shared fields", _cpu(lambda: read_records(log))),
            ("read_records, screenspot schema + ids", _cpu(lambda: read_records(log, RECORD_FIELDS, ids))),
            ("check alone: fastjsonschema (compiled)", _cpu(lambda: [compiled(r) for r in parsed])),
            (
                "check alone: jsonschema (interpreted)",
                _cpu(lambda: [interpreted.is_valid(r) for r in parsed], 1),
            ),
        ]
        size = log.stat().st_size / 1e6
    print_machine()
    print_table(
        f"{args.records} records, {size:.1f} MB",
        ["what", "CPU s"],
        [(what, f"{s:.3f}") for what, s in rows],
    )


if __name__ == "__main__":
    main()
