"""What every parser does to a model's reply before and after reading it.

A reply is untrusted input: a server under load or a model off its rails can send hundreds of
KB, numbers no screen has (``nan``, ``Infinity``, ``1e999``) and text no file can hold (lone
surrogates, from a ``\\ud800`` escape in JSON). Parsers run on the event loop, so one reply's
cost is paid by every sample in flight; and a non-finite point would travel into geometry, a
browser click and the run log. So every parser entry reads :func:`bounded` text, decodes JSON
with :data:`STRICT_JSON`, and hands out only :func:`sound_action` actions.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from typing import Any

from regionfocus.actions import Action
from regionfocus.kit.runlog import valid_text

# Every answer format we parse puts its action in the first few hundred characters (a thought,
# then the call); 32 KB leaves room for a long chain of thought and bounds the worst case.
MAX_REPLY_CHARS = 32 * 1024


def bounded(text: Any) -> str:
    """The part of a reply parsers read: its first :data:`MAX_REPLY_CHARS` characters, as valid
    text ('' for anything that is not a string)."""
    if not isinstance(text, str):
        return ""
    return valid_text(text[:MAX_REPLY_CHARS])


# Where a number, or a list of them, may still go on: a digit; a point or exponent after one; a
# sign; a separator or opening bracket, maybe with spaces after it. A number followed by
# anything else (a closing bracket, a quote, a space) was written out whole.
_MID_NUMBER = re.compile(r"(?:\d|(?<=\d)[.eE]|[-+]|[,(\[]\s*)\Z")


def stops_mid_number(text: str) -> bool:
    """Whether ``text``, a reply or a value cut off at its end (an unclosed call, quote or
    JSON object), may have been cut inside a number or a list of numbers: ``[188, 6`` may have
    been ``[188, 64]``, ``(10, 20,`` a box. Lenient readers close what was left open only when
    this is False; the transport refuses cut replies (``finish_reason``), this guards the
    replies that arrive cut without saying so."""
    return bool(_MID_NUMBER.search(text))


def finite_number(value: Any) -> float | None:
    """``value`` (an int, a float or a numeric string) as a finite float, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's range
        return None
    return number if math.isfinite(number) else None


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a number", name, 0)


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e999
        raise json.JSONDecodeError(f"{text} is not a finite number", text, 0)
    return number


# JSON as the standard has it: NaN and Infinity are not numbers, and neither is 1e999 (which
# Python's own decoder reads as inf). A reply that holds one does not parse.
STRICT_JSON = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def sound_action(action: Action | None) -> Action | None:
    """``action`` if every number in it is finite (points, scroll amount), with its texts made
    valid; None otherwise (a parse failure, like any other unreadable answer)."""
    if action is None:
        return None
    numbers = [v for p in action.points for v in (p.x, p.y)]
    if action.amount is not None:
        numbers.append(action.amount)
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in numbers):
        return None
    extras = {k: valid_text(v) if isinstance(v, str) else v for k, v in action.extras.items()}
    text = valid_text(action.text)
    if text is action.text and extras == action.extras:
        return action
    return replace(action, text=text, extras=extras)


def json_objects(text: str):
    """Every JSON object (strict: :data:`STRICT_JSON`) that starts at some '{' of the bounded
    ``text``, outermost first: the one scanner for answers that wrap JSON in prose."""
    text = bounded(text)
    i = text.find("{")
    while i != -1:
        try:
            obj, end = STRICT_JSON.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: nesting past the stack
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            yield obj
        i = text.find("{", end)
