"""Constructor checks of the proposers and strategies: the rules in one line, one error naming
every rule broken and the values that broke it."""

from __future__ import annotations

import operator
import re
from typing import Any

_COMPARE = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt, ">": operator.gt}
_SPLIT = re.compile(r"\s*(<=|>=|==|<|>)\s*")


def require(owner: Any, rules: str) -> None:
    """Raise a ValueError unless ``owner``'s attributes keep every rule of ``rules``:
    comparisons separated by commas, each a chain of attribute names and numbers
    ("n >= 1, 0 < trim < 1"). A sequence attribute (a (w, h) pair) keeps a rule when each of
    its elements does; a value that cannot be compared breaks it."""
    broken, got = [], {}
    for rule in (r.strip() for r in rules.split(",") if r.strip()):
        parts = _SPLIT.split(rule)
        named = {t: getattr(owner, t) for t in parts[0::2] if _number(t) is None}
        if not _holds([named[t] if t in named else _number(t) for t in parts[0::2]], parts[1::2]):
            broken.append(rule)
            got.update(named)
    if broken:
        values = ", ".join(f"{k}={v!r}" for k, v in got.items())
        raise ValueError(
            f"{getattr(owner, 'name', type(owner).__name__)}: need {', '.join(broken)}; got {values}"
        )


def _number(term: str) -> float | None:
    try:
        return float(term)
    except ValueError:
        return None


def _holds(values: list[Any], ops: list[str]) -> bool:
    for i, v in enumerate(values):
        if isinstance(v, (tuple, list)):
            return all(_holds([*values[:i], x, *values[i + 1 :]], ops) for x in v)
    try:
        return all(_COMPARE[op](a, b) for op, a, b in zip(ops, values[:-1], values[1:], strict=True))
    except TypeError:
        return False
