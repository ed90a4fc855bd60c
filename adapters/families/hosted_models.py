"""What a hosted model sees and accepts, as data: ``prompts/hosted/models.json``, one list of rules
per provider, the first whose model-name pattern matches wins (its last rule matches every name).
Each rule cites its source there and in ``prompts/hosted/SOURCES.md``.

A rule says how the provider shrinks an image before its model sees it (``image``, per detail
level for OpenAI), which computer-use tool the model takes (``computer_tool``), and whether the
API accepts a temperature. The adapters resize on the client to exactly :meth:`ImageRule.seen`:
an image inside every limit is not resized again by the provider (Anthropic: "if your input image
is larger than this native resolution, it is first resized"), so the answer's frame is the image
sent.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal


@dataclass(frozen=True)
class ImageRule:
    """How a provider shrinks an image of (W, H) before the model sees it.

    ``fit``: the largest aspect-preserving size whose long edge is at most ``max_long_edge`` and
    which costs at most ``max_patches`` patches of ``patch`` px, ceil(W/patch) x ceil(H/patch)
    (Anthropic's visual tokens, OpenAI's patch models); an image inside both limits is kept.
    ``tile``: OpenAI's tile models: fit inside a ``square`` x ``square`` box, then shrink until the
    short side is at most ``short_side``. ``as_sent``: no documented downscale (Gemini answers
    in a normalised frame, so the size does not enter the answer's map)."""

    kind: Literal["fit", "tile", "as_sent"]
    patch: int = 0
    max_long_edge: int | None = None
    max_patches: int | None = None
    square: int | None = None
    short_side: int | None = None

    def seen(self, size: tuple[int, int]) -> tuple[int, int]:
        """(W, H) the model sees for an image of ``size``."""
        w, h = int(size[0]), int(size[1])
        if w < 1 or h < 1:
            raise ValueError(f"image size must be positive, got {w}x{h}")
        if self.kind == "fit":
            return fit_patches(w, h, self.patch, self.max_long_edge, self.max_patches)
        if self.kind == "tile":
            return fit_tiles(w, h, self.square or w, self.short_side or min(w, h))
        return w, h

    def patches(self, size: tuple[int, int]) -> int | None:
        """Patches (visual tokens) of the seen image, where the rule counts them."""
        if self.kind != "fit":
            return None
        w, h = self.seen(size)
        return -(-w // self.patch) * -(-h // self.patch)


def _scaled(short: int, long: int, n: int) -> int:
    # floor, not round: the short side of the largest size whose patch count we checked.
    return max(1, short * n // long)


def fit_patches(
    w: int, h: int, patch: int, max_long_edge: int | None, max_patches: int | None
) -> tuple[int, int]:
    """The largest aspect-preserving (W, H) with long edge <= ``max_long_edge`` and
    ceil(W/patch) * ceil(H/patch) <= ``max_patches``; (w, h) when already inside both."""

    def cost(a: int, b: int) -> int:
        return -(-a // patch) * -(-b // patch)

    long, short = max(w, h), min(w, h)
    edge_ok = max_long_edge is None or long <= max_long_edge
    if edge_ok and (max_patches is None or cost(w, h) <= max_patches):
        return w, h
    hi = min(long, max_long_edge) if max_long_edge is not None else long
    lo = 1
    # The patch count never falls as the long side grows: bisect for the largest that fits.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if max_patches is None or cost(mid, _scaled(short, long, mid)) <= max_patches:
            lo = mid
        else:
            hi = mid - 1
    n, m = lo, _scaled(short, long, lo)
    return (n, m) if w >= h else (m, n)


def fit_tiles(w: int, h: int, square: int, short_side: int) -> tuple[int, int]:
    """OpenAI's tile rule: inside ``square`` x ``square``, then the short side at most
    ``short_side``, aspect kept (each scale only shrinks)."""
    s = min(1.0, square / max(w, h))
    if min(w, h) * s > short_side:
        s = short_side / min(w, h)
    return max(1, round(w * s)), max(1, round(h * s))


# How a reasoning word becomes request arguments, per provider API (``reasoning.kind`` in the
# table): OpenAI's ``reasoning.effort``; Anthropic's adaptive thinking with ``output_config.effort``
# or manual thinking with a ``budget_tokens``; Gemini 3's ``thinking_level``, Gemini 2.5's
# ``thinking_budget``. "off" turns thinking off where the API can.
REASONING_KINDS = ("openai-effort", "anthropic-adaptive", "anthropic-budget", "gemini-level", "gemini-budget")


@dataclass(frozen=True)
class Reasoning:
    """A model's reasoning setting: the API parameter (``kind``), the word sent when the user
    names none (``default``), and the words it takes (``choices``; a budget kind takes a
    number of tokens too)."""

    kind: str
    default: str
    choices: tuple[str, ...] = ()

    def check(self, word: str | None, model: str) -> str:
        word = self.default if word is None else str(word).strip().lower()
        if word in self.choices or (self.kind.endswith("budget") and word.isdigit()):
            return word
        takes = ", ".join(self.choices) + (" or a number of tokens" if self.kind.endswith("budget") else "")
        raise ValueError(f"--reasoning-effort {word!r}: model {model!r} takes {takes}")


@dataclass(frozen=True)
class ModelRule:
    """One row of the table: the facts for the models ``patterns`` name.

    ``max_tokens``: the default output budget (thinking included where the provider counts it
    there); ``reasoning``: the reasoning setting, None for a model that takes none;
    ``temperature``: whether the request carries the run's temperature (False: none is sent, the
    provider's default applies, as its guidance for the model says); ``media_resolution``:
    Gemini's image resolution setting; ``fallback``: the catch-all rule (no pattern names the
    model)."""

    provider: str
    patterns: tuple[str, ...]
    images: dict[str, ImageRule]  # by detail level ("default" when the provider has none)
    default_detail: str = "default"
    computer_tool: dict[str, Any] | None = None
    temperature: bool = True
    sources: tuple[str, ...] = field(default=())
    max_tokens: int = 1024
    reasoning: Reasoning | None = None
    media_resolution: str | None = None
    image_tokens: dict[str, int] | None = None
    sampling: str = ""

    def pattern_for(self, model: str) -> str:
        """The pattern of this rule that names ``model`` (the first one when none does)."""
        name = (model or "").strip().lower().rsplit("/", 1)[-1]
        return next((p for p in self.patterns if fnmatch.fnmatchcase(name, p.lower())), self.patterns[0])

    @property
    def fallback(self) -> bool:
        return self.patterns == ("*",)

    def reasoning_setting(self, word: str | None) -> str | None:
        """The reasoning word a request carries: ``word`` checked against the model's, or its
        default; None for a model with no reasoning setting (a word then fails, naming it)."""
        if self.reasoning is None:
            if word is not None:
                raise ValueError(
                    f"--reasoning-effort {word!r}: model rule {self.patterns[0]!r} takes no reasoning setting"
                )
            return None
        return self.reasoning.check(word, self.patterns[0])

    def check_budget(self, word: str | None, max_tokens: int) -> None:
        """ValueError naming the flags when a reasoning word cannot go with ``max_tokens``."""
        self.thinking_kwargs(word, max_tokens)

    def thinking_kwargs(self, word: str | None, max_tokens: int) -> dict[str, Any]:
        """The request arguments (top level, or Gemini's config) that set reasoning to ``word``."""
        if self.reasoning is None or word is None or word == "default":
            return {}  # "default": the provider's own setting for the model, nothing sent
        kind = self.reasoning.kind
        if kind == "openai-effort":
            return {"reasoning": {"effort": word}}
        if kind == "anthropic-adaptive":
            if word == "off":
                return {"thinking": {"type": "disabled"}}
            return {"thinking": {"type": "adaptive"}, "output_config": {"effort": word}}
        if kind == "anthropic-budget":
            if word == "off":
                return {}  # thinking is off unless the request asks for it (the API's default)
            budget = int(word)
            if not 1024 <= budget < max_tokens:
                raise ValueError(
                    f"thinking budget {budget} must be at least 1024 and below the output budget "
                    f"{max_tokens} (--max-tokens)"
                )
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if kind == "gemini-level":
            return {"thinking_config": {"thinking_level": word}}
        if kind == "gemini-budget":
            return {
                "thinking_config": {
                    "thinking_budget": 0 if word == "off" else -1 if word == "dynamic" else int(word)
                }
            }
        raise AssertionError(kind)  # pragma: no cover - checked when the table loads

    def image(self, detail: str | None = None) -> ImageRule:
        key = detail or self.default_detail
        if key not in self.images:
            raise ValueError(
                f"image detail {key!r} is not one {self.patterns[0]} takes; known: {', '.join(sorted(self.images))}"
            )
        return self.images[key]


@lru_cache(maxsize=1)
def _table() -> dict[str, list[ModelRule]]:
    text = resources.files("regionfocus.adapters.families").joinpath("prompts", "hosted", "models.json")
    raw = json.loads(text.read_text(encoding="utf-8"))
    out: dict[str, list[ModelRule]] = {}
    for provider in (k for k in raw if not k.startswith("_")):
        rows = []
        for row in raw[provider]:
            images = {k: ImageRule(**v) for k, v in row["image"].items()}
            reasoning = row.get("reasoning")
            if reasoning is not None:
                if reasoning.get("kind") not in REASONING_KINDS:
                    raise ValueError(
                        f"models.json: {row['models'][0]}: unknown reasoning kind {reasoning.get('kind')!r}"
                    )
                reasoning = Reasoning(
                    reasoning["kind"], reasoning["default"], tuple(reasoning.get("choices", ()))
                )
            rows.append(
                ModelRule(
                    provider=provider,
                    patterns=tuple(row["models"]),
                    images=images,
                    default_detail=row.get("default_detail", "default"),
                    computer_tool=row.get("computer_tool"),
                    temperature=bool(row.get("temperature", True)),
                    sources=tuple(row.get("sources", ())),
                    max_tokens=int(row.get("max_tokens", 1024)),
                    reasoning=reasoning,
                    media_resolution=row.get("media_resolution"),
                    image_tokens=row.get("image_tokens"),
                    sampling=row.get("sampling", ""),
                )
            )
        if not rows or "*" not in rows[-1].patterns:
            raise ValueError(f"models.json: the last {provider} rule must match every model ('*')")
        out[provider] = rows
    return out


def model_rule(provider: str, model: str) -> ModelRule:
    """The first rule of ``provider`` whose pattern matches ``model`` (case-insensitive; a
    provider prefix such as ``models/`` is ignored)."""
    if provider not in _table():
        raise ValueError(f"unknown provider {provider!r}; known: {', '.join(_table())}")
    name = (model or "").strip().lower().rsplit("/", 1)[-1]
    for rule in _table()[provider]:
        if any(fnmatch.fnmatchcase(name, p.lower()) for p in rule.patterns):
            return rule
    raise AssertionError("unreachable: the last rule matches '*'")  # pragma: no cover


_WARNED: set[tuple[str, str]] = set()
log = logging.getLogger(__name__)


def describe_rule(rule: ModelRule, detail: str | None = None) -> str:
    """What a rule does to a request, in words."""
    image = rule.image(detail)
    if image.kind == "fit":
        size = f"images fit in {image.max_long_edge or 'any'} px and {image.max_patches} patches of {image.patch} px"
    elif image.kind == "tile":
        size = f"images fit in {image.square} px, short side {image.short_side} px"
    else:
        size = "images sent as captured"
    tool = (rule.computer_tool or {}).get("type") or "no computer-use tool"
    reasoning = rule.reasoning_setting(None) or "none"
    return f"{size}, {tool}, output budget {rule.max_tokens} tokens, reasoning {reasoning}"


def warn_if_unnamed(provider: str, model: str, rule: ModelRule, flag_used: bool = False) -> None:
    """Say once per model that no rule names ``model`` and what the catch-all gives it (the
    oldest behaviour), and how to choose another."""
    if not rule.fallback or flag_used or (provider, model) in _WARNED:
        return
    _WARNED.add((provider, model))
    named = next((r.patterns[0].rstrip("*") for r in _table()[provider] if not r.fallback), "")
    log.warning(
        "%s: no rule in models.json names model %r; it gets the catch-all rule (%s). For a newer model, "
        "apply a known model's rule with --model-rule MODEL (e.g. --model-rule %s)",
        provider,
        model,
        describe_rule(rule),
        named,
    )


def seen_size(provider: str, model: str, size: tuple[int, int], detail: str | None = None) -> tuple[int, int]:
    """(W, H) the provider's ``model`` sees for an image of ``size`` (at ``detail``)."""
    return model_rule(provider, model).image(detail).seen(size)
