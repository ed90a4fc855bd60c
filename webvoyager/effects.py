"""Did an action take effect? The in-page observer script and the signals it feeds.

No single signal suffices (docs/ARCHITECTURE.md §8), so :func:`combine` ORs four of them into a
:class:`regionfocus.triggers.Effect`:

- the URL changed;
- a new page (tab, popup) opened or a JavaScript dialog appeared;
- the DOM changed: the page's MutationObserver counted more mutations during the action than
  the page's own background rate predicts, *and* the page's state fingerprint differs (a hover
  handler that adds a tooltip and removes it again leaves no net change); ``data-*`` attribute
  changes are not counted (bookkeeping, not rendering);
- the pixels changed between two screenshots taken with the mouse parked at the same spot (a
  ``:hover`` style would otherwise make a click on blank space look effective).

Screenshots are (W, H) RGB images in CSS pixels at device scale 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from regionfocus.screen import pixel_change  # the wrapper reads effects with the same rule
from regionfocus.triggers import Effect

# Installed in every page and frame with ``BrowserContext.add_init_script`` so it runs before
# the page's own scripts. It observes ``document`` (which exists before documentElement does)
# and exposes a counter and a state fingerprint under one rarely-used global name.
OBSERVER_SCRIPT = r"""
(() => {
  if (window.__regionfocus) return;
  const state = { mutations: 0 };
  // data-* attributes are bookkeeping (MiniWoB++ stamps every clicked element with
  // data-tampered); when they matter visually, the pixel signal sees it.
  const observer = new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === 'attributes' && r.attributeName && r.attributeName.startsWith('data-')) continue;
      state.mutations += 1;
    }
  });
  observer.observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
  // A cheap 32-bit FNV-1a hash of the markup plus what markup does not show: form values,
  // checked states, the focused element and the scroll offsets.
  const hash = (s, h) => {
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  };
  const fingerprint = () => {
    let h = 2166136261;
    const root = document.documentElement;
    h = hash(root ? root.outerHTML : '', h);
    for (const el of document.querySelectorAll('input, textarea, select')) {
      h = hash(String(el.value) + '|' + (el.checked ? 1 : 0) + '|' + (el.selectedIndex ?? ''), h);
    }
    const a = document.activeElement;
    h = hash((a && a.tagName) + '#' + (a && a.id) + '@' + window.scrollX + ',' + window.scrollY, h);
    return h;
  };
  Object.defineProperty(window, '__regionfocus', {
    value: Object.freeze({
      mutations: () => state.mutations,
      fingerprint: fingerprint,
    }),
    enumerable: false,
  });
})();
"""

# Reads (mutation count, fingerprint) from the page; None parts when the script is missing
# (a page that failed to load, a chrome error page).
PROBE_SCRIPT = """() => {
  const r = window.__regionfocus;
  return r ? [r.mutations(), r.fingerprint()] : [null, null];
}"""


# Only the counter: cheap enough to poll while waiting for the page to settle.
COUNT_SCRIPT = "() => (window.__regionfocus ? window.__regionfocus.mutations() : null)"


@dataclass(frozen=True)
class PageProbe:
    """What the page said at one moment: its URL, mutation counter, fingerprint, and when
    (seconds on the loop's monotonic clock)."""

    url: str
    mutations: int | None
    fingerprint: int | None
    t: float


@dataclass(frozen=True)
class EffectThresholds:
    """``channel_delta``: a pixel counts as changed when a channel moves by more than this
    (0-255); ``min_pixels``: how many changed pixels make a visible change (a checkbox tick
    at 1x is about 30 px); ``noise_margin``: background mutations tolerated, as a multiple of
    the expected count."""

    channel_delta: int = 16
    min_pixels: int = 20
    noise_margin: float = 2.0


def expected_noise(before: PageProbe, previous: PageProbe | None, window_s: float) -> float:
    """Mutations the page would make on its own during ``window_s`` seconds, from its rate
    between ``previous`` and ``before`` (the time the agent spent thinking)."""
    if previous is None or previous.mutations is None or before.mutations is None:
        return 0.0
    if previous.url != before.url or before.mutations < previous.mutations:
        return 0.0  # another document: its counter restarted
    dt = before.t - previous.t
    return (before.mutations - previous.mutations) / dt * window_s if dt > 0 else 0.0


def combine(
    *,
    url_before: str,
    url_after: str,
    mutations: int | None,
    noise: float,
    fingerprint_before: int | None,
    fingerprint_after: int | None,
    shot_before: Image.Image,
    shot_after: Image.Image,
    new_page: bool = False,
    dialog: str | None = None,
    error: str | None = None,
    thresholds: EffectThresholds = EffectThresholds(),
) -> Effect:
    """The OR of all signals.

    ``mutations``: records the observer counted during the action (None when the document was
    replaced or unreadable: the URL and pixels then tell the story); ``noise``: mutations the
    page would have made anyway; fingerprints: page state at the observation and after.
    """
    url_changed = url_after != url_before
    excess = max(0, (mutations or 0) - int(np.ceil(noise * thresholds.noise_margin)))
    state_changed = fingerprint_before != fingerprint_after
    dom_mutations = excess if state_changed else 0
    count, fraction = pixel_change(shot_before, shot_after, thresholds.channel_delta)
    visible = count >= thresholds.min_pixels
    changed = url_changed or new_page or dialog is not None or dom_mutations > 0 or visible
    return Effect(
        changed=changed,
        url_changed=url_changed,
        dom_mutations=dom_mutations,
        new_page=new_page,
        dialog=dialog,
        pixel_diff=round(fraction, 6) if visible else 0.0,
        error=error,
    )
