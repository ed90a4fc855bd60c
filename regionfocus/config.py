"""RegionFocus configuration: plain data, loadable from TOML, overridable, written with a run.

Defaults reproduce the paper's setting (one round per rejected static sample, fixed-ratio
boxes, image-as-map aggregation and history); everything beyond it is an opt-in switch.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .geometry import DEFAULT_RATIOS

PROPOSERS = ("fixed", "layout", "sam", "predict-region", "a11y")


@dataclass
class RegionFocusConfig:
    # Boxes around the focal point.
    proposer: Literal["fixed", "layout", "sam", "predict-region", "a11y"] = "fixed"
    ratios: tuple[tuple[float, float], ...] = DEFAULT_RATIOS
    min_box_size: float = 64.0  # px; SAM / layout / predict-region boxes never smaller
    sam_checkpoint: str | None = None  # path to a segment-anything checkpoint (user supplied)
    sam_model_type: str = "vit_b"
    sam_margin: float = 0.15  # fraction of the mask box added on every side
    # Views: upsample each box toward the size the model sees for a full screenshot.
    view_target: tuple[int, int] | None = None  # (W, H); None = model.input_size(screenshot)
    max_zoom: float = 4.0
    # Aggregation and history: "image" = numbered stars (image-as-map), "text" = the ablation.
    aggregation: Literal["image", "text"] = "image"
    history: Literal["image", "text"] = "image"
    merge_radius: float = 8.0  # px; candidates closer than this are one candidate
    choice_retries: int = 1  # an unreadable choice is asked again, in firmer words, this many times
    # An unparseable focal answer is asked again at these temperatures, in order (the released
    # reference code's UI-TARS ladder, tiangeluo/RegionFocus @ f69575db: the first request at the
    # model's own temperature, 0 by default, then 0.3, then 0.7; its Qwen2.5-VL code climbs
    # 0.3, 0.5, 0.7, 0.9).
    focal_retry_temperatures: tuple[float, ...] = (0.3, 0.7)
    star_scale: float = 1.0  # multiplies the default star and label size (about 20 px radius at 4K)
    # Which failures become history stars. The paper's stars record failed RegionFocus attempts
    # only: the rejected baseline point (static) and the base agent's own no-effect actions (live)
    # are not starred unless these opt-in switches say so.
    star_baseline: bool = False
    star_agent_failures: bool = False
    # Triggers.
    static_trigger: Literal["judge", "always", "never"] = "judge"
    judge_unknown: Literal["reject", "accept"] = "reject"  # what an unreadable verdict means
    # Live mode, opt-in: a predicted click that lands on no interactive element of the screen's
    # accessibility tree runs RegionFocus before the click is executed (needs a tree).
    no_target_trigger: bool = False
    repeat_k: int = 2  # the same action this many times in a row on one screen triggers
    repeat_radius: float = 12.0  # px
    # Rounds and caps.
    rounds_per_sample: int = 1  # static mode; >1 re-judges the chosen point and retries with stars
    # Live mode caps; None = no cap, so only the harness's step limit binds (the paper reports
    # about 6 triggers per WebVoyager trajectory under a 100-step limit).
    max_rounds_per_screen: int | None = None
    max_rounds_per_task: int | None = None

    def __post_init__(self) -> None:
        self.ratios = tuple(tuple(float(v) for v in r) for r in self.ratios)  # type: ignore[assignment]
        self.focal_retry_temperatures = tuple(float(t) for t in self.focal_retry_temperatures)  # type: ignore[assignment]
        if self.view_target is not None:
            self.view_target = tuple(int(v) for v in self.view_target)  # type: ignore[assignment]
        self.validate()

    def validate(self) -> None:
        hints = get_type_hints(type(self))
        for f in dataclasses.fields(self):
            allowed = _literal_values(hints[f.name])
            value = getattr(self, f.name)
            if allowed and value not in allowed:
                raise ValueError(f"config {f.name}={value!r}: expected one of {', '.join(map(str, allowed))}")
        for r in self.ratios:
            if len(r) != 2 or not all(0 < v <= 1 for v in r):
                raise ValueError(f"config ratios: each must be (w, h) in (0, 1], got {r}")
        for name in ("rounds_per_sample", "max_rounds_per_screen", "max_rounds_per_task", "repeat_k"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"config {name} must be >= 0 (or unset for no cap), got {value}")
        if self.max_zoom < 1:
            raise ValueError("config max_zoom must be >= 1")
        if self.star_scale <= 0:
            raise ValueError(f"config star_scale must be > 0, got {self.star_scale}")
        if any(not 0 <= t <= 2 for t in self.focal_retry_temperatures):
            raise ValueError(
                f"config focal_retry_temperatures must lie in [0, 2], got {self.focal_retry_temperatures}"
            )

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["ratios"] = [list(r) for r in self.ratios]
        d["focal_retry_temperatures"] = list(self.focal_retry_temperatures)
        if self.view_target is not None:
            d["view_target"] = list(self.view_target)
        return {k: v for k, v in d.items() if v is not None}

    def replace(self, **overrides: Any) -> RegionFocusConfig:
        """A copy with ``overrides`` applied; None values are ignored (unset CLI flags)."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RegionFocusConfig:
        return cls().replace(**data)

    @classmethod
    def from_toml(cls, path: str | Path) -> RegionFocusConfig:
        """Read ``[regionfocus]`` from a TOML file (or the whole file when it has no table)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"config file not found: {path}") from None
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"config file {path}: invalid TOML: {e}") from None
        section = data.get("regionfocus", data)
        try:
            return cls.from_dict(section)
        except (ValueError, TypeError) as e:
            raise ValueError(f"config file {path}: {e}") from None


def _literal_values(tp: Any) -> tuple:
    if get_origin(tp) is Literal:
        return get_args(tp)
    return ()
