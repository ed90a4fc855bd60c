"""What a run cost in money: a price table (USD per million tokens, per model) applied to the
tokens each strategy's calls reported.

The table is data (``data/prices.toml``, each entry with its source), replaceable with
``--prices FILE``. Tokens come from the strategy ledger's ``by_model`` totals (prompt tokens
with the cached part inside them, completion tokens, the largest prompt), so a report rebuilt
with another table re-prices the same run. A model no entry matches has no price: its cost is
unknown ("–"), never zero.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PER = 1_000_000


@dataclass(frozen=True)
class Rates:
    input: float
    output: float
    cached_input: float | None = None  # None: cached input is billed as input


@dataclass(frozen=True)
class Price:
    """The rates of the models ``match`` fits (an fnmatch glob, case-insensitive)."""

    match: str
    rates: Rates
    source: str = ""
    # Past this prompt size the provider bills the whole request at higher rates (``above``).
    above_prompt_tokens: int | None = None
    above: Rates | None = None


@dataclass
class PriceTable:
    prices: list[Price] = field(default_factory=list)
    origin: str = "built-in"

    def lookup(self, model: str | None) -> Price | None:
        if not model:
            return None
        name = model.lower().rsplit("/", 1)[-1]  # "models/gemini-3.1-pro" as google-genai names it
        return next((p for p in self.prices if fnmatch.fnmatchcase(name, p.match.lower())), None)

    def cost(self, by_model: Mapping[str, Mapping[str, Any]], default_model: str | None) -> float | None:
        """USD of the tokens in ``by_model`` (model id -> token sums; "" is a call whose
        backend named no model, priced as ``default_model``); None when a model has no price
        or a request passed a long-context size (its tokens cannot be split per request here)."""
        total = 0.0
        for model, t in by_model.items():
            price = self.lookup(model or default_model)
            if price is None:
                return None
            rates = price.rates
            if (
                price.above_prompt_tokens is not None
                and (t.get("max_prompt_tokens") or 0) > price.above_prompt_tokens
            ):
                return None
            prompt = t.get("prompt_tokens") or 0
            cached = min(t.get("cached_tokens") or 0, prompt)
            cached_rate = rates.input if rates.cached_input is None else rates.cached_input
            total += ((prompt - cached) * rates.input + cached * cached_rate) / PER
            total += (t.get("completion_tokens") or 0) * rates.output / PER
        return total

    def describe(self, models: set[str]) -> list[str]:
        """One line per price used for ``models``: what each was charged and where the rate is from."""
        out = []
        for m in sorted(models):
            p = self.lookup(m)
            if p is None:
                out.append(f"{m}: no price in {self.origin} (cost unknown)")
                continue
            cached = "" if p.rates.cached_input is None else f", cached input ${p.rates.cached_input:g}"
            tier = ""
            if p.above_prompt_tokens is not None:
                tier = f"; above {p.above_prompt_tokens} prompt tokens " + (
                    f"${p.above.input:g} input, ${p.above.output:g} output" if p.above else "other rates"
                )
            out.append(
                f"{m}: ${p.rates.input:g} input{cached}, ${p.rates.output:g} output per million tokens{tier}"
                + (f" ({p.source})" if p.source else "")
            )
        return out


def _rates(entry: Mapping[str, Any], where: str) -> Rates:
    try:
        return Rates(
            input=float(entry["input"]),
            output=float(entry["output"]),
            cached_input=None if entry.get("cached_input") is None else float(entry["cached_input"]),
        )
    except KeyError as e:
        raise ValueError(f"{where}: missing {e.args[0]!r} (USD per million tokens)") from None
    except (TypeError, ValueError):
        raise ValueError(f"{where}: input, output and cached_input must be numbers") from None


def parse(data: Mapping[str, Any], origin: str) -> PriceTable:
    """A table from the TOML document's ``[[model]]`` entries; raises ValueError naming the entry."""
    entries = data.get("model")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{origin}: expected [[model]] entries (match, input, output, ...)")
    prices = []
    for i, e in enumerate(entries, 1):
        where = f"{origin}: [[model]] #{i}"
        if not isinstance(e, dict) or not isinstance(e.get("match"), str):
            raise ValueError(f"{where}: needs a 'match' glob of model ids")
        above = e.get("above_prompt_tokens")
        if above is not None and not isinstance(above, int):
            raise ValueError(f"{where}: above_prompt_tokens must be an integer (tokens)")
        tier = {k.removesuffix("_above"): v for k, v in e.items() if k.endswith("_above")}
        prices.append(
            Price(
                match=e["match"],
                rates=_rates(e, where),
                source=str(e.get("source", "")),
                above_prompt_tokens=above,
                above=_rates(tier, f"{where} (the *_above rates)") if tier else None,
            )
        )
    return PriceTable(prices, origin)


def load(path: str | Path | None = None) -> PriceTable:
    """The table in ``path``, or the built-in one. Raises ValueError naming the file."""
    if path is None:
        text = resources.files(__package__).joinpath("data/prices.toml").read_text(encoding="utf-8")
        return parse(tomllib.loads(text), "the built-in price table")
    p = Path(path)
    try:
        return parse(tomllib.loads(p.read_text(encoding="utf-8")), str(p))
    except OSError as e:
        raise ValueError(f"--prices {p}: cannot read it ({e.strerror or e})") from None
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"--prices {p}: not TOML ({e})") from None
