"""The intervals and paired tests every report prints, against their textbook formulas."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regionfocus.kit import stats


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


def _mcnemar_exact(b: int, c: int) -> float:
    m = b + c
    tail = sum(math.comb(m, i) for i in range(min(b, c) + 1)) / 2**m
    return min(1.0, 2 * tail)


@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=200, deadline=None)
def test_wilson_is_the_score_interval(kn):
    k, n = kn
    lo, hi = stats.wilson(k, n)
    exp = _wilson(k, n)
    assert lo == pytest.approx(exp[0], abs=1e-9) and hi == pytest.approx(exp[1], abs=1e-9)
    assert 0 <= lo <= k / n <= hi <= 1


def test_no_sample_has_no_interval():
    assert stats.wilson(0, 0) is None and stats.pct_ci(0, 0) == "–"
    assert stats.paired([], []) is None


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300))
@settings(max_examples=60, deadline=None)
def test_paired_counts_discordant_pairs_and_tests_them_exactly(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    t = stats.paired(a, b)
    only_a = sum(x and not y for x, y in pairs)
    only_b = sum(y and not x for x, y in pairs)
    assert (t.only_a, t.only_b, t.n) == (only_a, only_b, len(pairs))
    assert t.diff == pytest.approx((only_a - only_b) / len(pairs))
    assert t.p == pytest.approx(_mcnemar_exact(only_a, only_b) if only_a + only_b else 1.0)
    assert -1 <= t.diff_ci[0] <= t.diff_ci[1] <= 1
    if only_a + only_b == 0:
        assert t.diff_ci == (0.0, 0.0)


def test_a_clear_gain_is_significant_and_a_small_one_is_not():
    # 1,581 samples (ScreenSpot-Pro's size): 120 gained, 20 lost is a difference ...
    n = 1581
    base = [i < 500 for i in range(n)]
    better = [(i < 480) or (500 <= i < 620) for i in range(n)]
    t = stats.paired(better, base)
    assert t.p < 0.001 and t.diff_ci[0] > 0
    # ... 14 gained, 10 lost (+0.25 points) is not.
    close = [(i < 490) or (500 <= i < 514) for i in range(n)]
    t = stats.paired(close, base)
    assert t.p > 0.05 and t.diff_ci[0] < 0 < t.diff_ci[1]


def test_the_same_records_give_the_same_interval():
    a = [i % 3 == 0 for i in range(200)]
    b = [i % 4 == 0 for i in range(200)]
    assert stats.paired(a, b) == stats.paired(a, b)


def test_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match="length"):
        stats.paired([True], [True, False])


def test_webvoyager_compare_pairs_tasks_by_id(tmp_path, capsys):
    import json

    from regionfocus.webvoyager.cli import main

    # A solves tasks 0-5, B solves 0-1 and 6: A alone 4 (2-5), B alone 1 (6); task 9 unscored in B.
    for name, solved in (("a", {0, 1, 2, 3, 4, 5}), ("b", {0, 1, 6})):
        d = tmp_path / name
        d.mkdir()
        recs = [{"id": f"t--{i}", "web_name": "t", "success": i in solved} for i in range(10)]
        if name == "b":
            recs[9]["success"] = None
        (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "Paired on the 9 tasks both runs scored" in out
    row = out.splitlines()[out.splitlines().index("  ".join(stats.PAIRED_HEAD)) + 1]
    assert row.split()[-3:] == ["4", "1", f"{_mcnemar_exact(4, 1):.3f}"]
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "nothing")]) == 2
