"""Our retry loop, the one every backend runs (the SDKs' own retries are off): a failed attempt
worth another is tried again after the wait the server asked for (``retry-after-ms``,
``Retry-After``, Gemini's ``RetryInfo``), else exponential backoff with jitter; a wait longer
than the cap (``--max-retry-wait``, 120 s as OpenAI's SDK has it) fails the call at once, naming
the wait: an hour-long hint is a quota, and holding the request's slot through it stalls the run.

Each wait is announced while it lasts ("waiting 37 s: anthropic 429, retrying (retry 2 of 4)", a
WARNING log line) and counted: the call's usage records its attempts and the seconds it waited.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

log = logging.getLogger("regionfocus.adapters.backends")

# The longest wait a server may ask for before the call fails instead (OpenAI's SDK: 60 s for a
# hint it honours, then it gives up on the hint; Anthropic's and Gemini's have no cap).
MAX_WAIT_S = 120.0

Sleep = Callable[[float], Awaitable[Any]]


@dataclass(frozen=True)
class Failure:
    """What a failed attempt was: worth another try, its HTTP status, and the seconds the
    server asked to wait (``hint``) with where it said so (``hint_from``)."""

    retry: bool
    status: int | None = None
    hint: float | None = None
    hint_from: str = ""
    label: str = ""  # how the wait line names it ("429", "529", "connection error")


def hint_from_headers(headers: Any) -> tuple[float | None, str]:
    """(seconds, header name) from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP
    date); (None, "") when neither says a usable number."""
    if headers is None:
        return None, ""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            ms = float(value)
            if ms == ms and ms >= 0:  # NaN and negatives say nothing
                return ms / 1000.0, "retry-after-ms"
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None, ""
    try:
        s = float(value)
        return (s, "retry-after") if s == s and s >= 0 else (None, "")
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None, ""
    return max(0.0, parsed.timestamp() - time.time()), "retry-after"


@dataclass
class Ledger:
    """One call's attempts and the seconds it spent waiting between them."""

    attempts: int = 0
    waited_s: float = 0.0
    waits: list[float] = field(default_factory=list)
    too_long: tuple[float, str] | None = None  # the refused wait and where it was asked

    def usage_fields(self) -> dict[str, Any]:
        """What a call record keeps (nothing for a call answered at its first attempt)."""
        if self.attempts <= 1 and not self.waits:
            return {}
        return {"attempts": self.attempts, "waited_s": round(self.waited_s, 3)}

    def describe(self) -> str:
        """ "after 3 attempt(s), 2.5 s of waits" for a failure message."""
        waited = f", {self.waited_s:.3g} s of waits" if self.waits else ""
        return f"after {self.attempts} attempt(s){waited}"


@dataclass
class RetryPolicy:
    """How one backend retries. ``max_retries``: further attempts after the first;
    ``max_wait``: the longest server-asked wait honoured (a longer one fails the call);
    ``backoff``/``max_backoff``: the exponential wait without a hint; ``sleep``: how a wait is
    spent (``asyncio.sleep``; tests pass a recorder so nothing really sleeps)."""

    max_retries: int = 4
    max_wait: float = MAX_WAIT_S
    backoff: float = 0.5
    max_backoff: float = 30.0
    sleep: Sleep = asyncio.sleep

    def __post_init__(self) -> None:
        if self.max_retries < 0 or not self.max_wait >= 0 or self.backoff < 0:
            raise ValueError(
                f"need max_retries >= 0, max_wait >= 0, backoff >= 0; got max_retries={self.max_retries}, "
                f"max_wait={self.max_wait}, backoff={self.backoff}"
            )

    def backoff_for(self, attempt: int) -> float:
        # "Equal jitter": half fixed, half random, so the failures of a concurrent round do not
        # retry in lockstep.
        base = min(self.backoff * (2 ** (attempt - 1)), self.max_backoff)
        return base / 2 + random.uniform(0, base / 2)

    def loop(
        self,
        provider: str,
        classify: Callable[[BaseException], Failure],
        ledger: Ledger,
        delay: Callable[[int, float | None], float] | None = None,
    ) -> AsyncRetrying:
        """A tenacity loop over attempts (``async for attempt in loop: with attempt: ...``) that
        retries what ``classify`` says is worth it, waits as asked (a wait past the cap ends
        the loop: the last failure is raised, ``ledger.too_long`` says why), announces and
        counts each wait in ``ledger``. ``delay(attempt, hint)``: the wait instead of the
        policy's own (the hint, else its backoff)."""
        total = self.max_retries + 1

        def worth(exc: BaseException) -> bool:
            f = classify(exc)
            if not f.retry:
                return False
            if f.hint is not None and f.hint > self.max_wait:
                ledger.too_long = (f.hint, f.hint_from)
                return False
            return True

        def wait(state: RetryCallState) -> float:
            f = classify(state.outcome.exception())
            if delay is not None:
                return delay(state.attempt_number, f.hint)
            return max(f.hint, 0.0) if f.hint is not None else self.backoff_for(state.attempt_number)

        def announce(state: RetryCallState) -> None:
            seconds = state.next_action.sleep if state.next_action else 0.0
            f = classify(state.outcome.exception())
            what = f.label or (str(f.status) if f.status else type(state.outcome.exception()).__name__)
            asked = f" ({f.hint_from})" if f.hint is not None and f.hint_from else ""
            log.warning(
                "waiting %s s: %s %s%s, retrying (retry %d of %d)",
                f"{seconds:.3g}",
                provider,
                what,
                asked,
                state.attempt_number,
                total - 1,
            )
            ledger.waits.append(seconds)
            ledger.waited_s += seconds

        return AsyncRetrying(
            stop=stop_after_attempt(total),
            retry=retry_if_exception(worth),
            wait=wait,
            sleep=self.sleep,
            before_sleep=announce,
            reraise=True,
        )

    def refused_wait(self, ledger: Ledger) -> str:
        """The sentence a failure message gets when the server asked for too long a wait."""
        if ledger.too_long is None:
            return ""
        seconds, where = ledger.too_long
        said = f" ({where})" if where else ""
        return (
            f"; the server asked to wait {seconds:.6g} s{said}, past the {self.max_wait:g}-s cap "
            "(--max-retry-wait), so the call failed at once"
        )
