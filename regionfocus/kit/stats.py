"""How far a number can be trusted: a 95 % interval for an accuracy, and a paired test for a
difference between two rows scored on the same samples.

An accuracy over n samples gets the Wilson score interval (scipy's ``proportion_ci``): it stays
inside [0, 1] and behaves at 0 and n correct, where the normal approximation does not. Two
strategies run on the same samples are compared pairwise: only the samples one got right and
the other wrong (the discordant pairs) carry information about the difference, and the exact
McNemar test is a two-sided binomial test of those pairs at one half. The interval of the
difference is a percentile bootstrap over samples (each resample keeps a sample's two outcomes
together), seeded so a report rebuilt from the same records prints the same numbers.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, bootstrap

LEVEL = 0.95
RESAMPLES = 2000
SEED = 0


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` right out of ``n``, as fractions; None when n is 0."""
    if n <= 0:
        return None
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Paired:
    """Row A against row B on the same ``n`` samples. ``only_a``: samples A got right and B
    wrong; ``only_b`` the reverse. ``diff``: accuracy of A minus B, a fraction; ``diff_ci`` its
    bootstrap interval; ``p``: the exact McNemar p-value (1.0 with no discordant pair)."""

    n: int
    acc_a: float
    acc_b: float
    only_a: int
    only_b: int
    diff: float
    diff_ci: tuple[float, float]
    p: float


def paired(a: Sequence[bool], b: Sequence[bool], *, level: float = LEVEL, seed: int = SEED) -> Paired | None:
    """The paired comparison of two outcome vectors over the same samples, in the same order;
    None when there is no sample."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes differ in length: {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    only_a = int(np.sum((x == 1) & (y == 0)))
    only_b = int(np.sum((x == 0) & (y == 1)))
    discordant = only_a + only_b
    p = binomtest(min(only_a, only_b), discordant, 0.5).pvalue if discordant else 1.0
    d = x - y
    if discordant and n > 1:
        with warnings.catch_warnings():
            # A sample whose every resample gives the same difference is not an error here.
            warnings.simplefilter("ignore")
            ci = bootstrap(
                (d,),
                np.mean,
                confidence_level=level,
                n_resamples=RESAMPLES,
                method="percentile",
                rng=np.random.default_rng(seed),
            ).confidence_interval
        diff_ci = (float(ci.low), float(ci.high))
    else:  # every resample would be the sample itself
        diff_ci = (float(d.mean()), float(d.mean()))
    return Paired(n, float(x.mean()), float(y.mean()), only_a, only_b, float(d.mean()), diff_ci, float(p))


# ------------------------------------------------------------------------------ formatting
def pct_ci(k: int, n: int) -> str:
    """``"37.5 [21.2–56.1]"``: the accuracy in % with its interval; "–" for no sample."""
    ci = wilson(k, n)
    if ci is None:
        return "–"
    return f"{100 * k / n:.1f} [{100 * ci[0]:.1f}–{100 * ci[1]:.1f}]"


def p_value(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def diff_cell(t: Paired) -> str:
    """The difference in points with its interval: ``"+18.1 [+6.2, +31.2]"``."""
    return f"{100 * t.diff:+.1f} [{100 * t.diff_ci[0]:+.1f}, {100 * t.diff_ci[1]:+.1f}]"


PAIRED_HEAD = ("A", "B", "n", "A − B (points) [95 % CI]", "only A right", "only B right", "McNemar p")


def paired_cells(name_a: str, name_b: str, t: Paired) -> list[str]:
    """A row of :data:`PAIRED_HEAD`."""
    return [name_a, name_b, str(t.n), diff_cell(t), str(t.only_a), str(t.only_b), p_value(t.p)]


HOW_TO_READ = (
    "Intervals are 95 % Wilson score intervals over samples. A − B compares two rows on the same "
    "samples: its interval is a paired bootstrap, and the McNemar p-value (exact, two-sided) asks "
    "whether the samples only A got right outnumber those only B got right by more than chance; "
    "p < 0.05 with an interval that excludes 0 is a difference, anything else may be noise."
)
