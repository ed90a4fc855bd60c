"""The Playwright environment: one Chromium per run, one context per task.

The environment owns the browser; the agent only sees screenshots and returns
:class:`~regionfocus.actions.Action` data. Screenshots are viewport CSS pixels at device scale 1,
so an action's point (screenshot px) is the mouse position unchanged.

Per step: :meth:`BrowserEnv.act` executes the action, lets the page settle, parks the mouse at
the rest point and takes the next screenshot, and reports the :class:`Effect` (see effects.py).
New tabs and popups are followed, JavaScript dialogs are accepted or dismissed and recorded,
navigation failures and renderer crashes become the step's error, never an exception.

What a page cannot do to the run: send a document that never ends or is larger than
``EnvConfig.max_page_bytes`` (page_fetch.py fetches pages and frames with that limit and the
navigation timeout; a page refused so ends the task, naming it and the limit), start a
download (the context accepts none: Chromium stops one started without a navigation, and a
navigation's is a document like any other), or keep the browser busy for ever: more than
``max_dialogs`` JavaScript dialogs or ``max_navigations`` navigations of a page in one step (an
``alert()`` loop, a page that refreshes itself) end the task with an error that says which.
A screenshot that cannot be taken is tried once more after the page settles, then ends the
step naming the page and what it was doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from PIL import Image
from playwright.async_api import Browser as PWBrowser
from playwright.async_api import (
    BrowserContext,
    Page,
    Playwright,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from regionfocus.actions import Action, ActionType
from regionfocus.environment import StepResult
from regionfocus.kit.chromium import choose_chromium, launch_options, launching, starting_driver
from regionfocus.triggers import Effect

from .actions_exec import ActionError, ExecOptions, execute
from .effects import (
    COUNT_SCRIPT,
    OBSERVER_SCRIPT,
    PROBE_SCRIPT,
    EffectThresholds,
    PageProbe,
    combine,
    expected_noise,
)
from .net_policy import NetPolicy, refusal, resolver_rules
from .page_fetch import DEFAULT_MAX_PAGE_BYTES, PageFetcher
from .page_watch import PageStopped, PageWatch, page_url, short_error
from .zoom import CdpZoom

log = logging.getLogger(__name__)

# How much longer a navigation waits than its document's fetch: the fetch's verdict ends it.
_NAV_GRACE_S = 5.0


@dataclass
class EnvConfig:
    """``viewport``: (W, H) CSS px = screenshot px. ``allow_domains``: when non-empty, pages and
    frames must come from one of these hosts or their subdomains. ``file_root``: file:// URLs
    under this folder are allowed (the built-in MiniWoB++ pages); other file URLs never are.
    ``deny_hosts``: hosts or host:port origins never requested (the run's model servers).
    Loopback, private and link-local addresses are the :class:`Browser`'s to allow
    (net_policy.py has the rules).
    ``rest``: where the mouse is parked for screenshots, (x, y) px; default the bottom-right
    corner, away from content. ``max_page_bytes``: the largest page or frame document let in
    (after decompression; ``--max-page-bytes``); one still arriving after ``nav_timeout_s`` is
    refused too. ``max_dialogs`` and ``max_navigations``: JavaScript dialogs and navigations of
    a page's main frame in one step (the start counts as one) beyond which the page is in a
    loop and the task ends."""

    viewport: tuple[int, int] = (1440, 1440)
    allow_domains: tuple[str, ...] = ()
    file_root: str | None = None
    deny_hosts: tuple[str, ...] = ()
    dialogs: Literal["accept", "dismiss"] = "accept"
    settle_s: float = 0.25
    settle_max_s: float = 3.0
    wait_s: float = 2.0
    nav_timeout_s: float = 30.0
    action_timeout_s: float = 20.0
    rest: tuple[float, float] | None = None
    thresholds: EffectThresholds = field(default_factory=EffectThresholds)
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    max_dialogs: int = 20
    max_navigations: int = 10

    @property
    def rest_point(self) -> tuple[float, float]:
        return self.rest or (self.viewport[0] - 2.0, self.viewport[1] - 2.0)


def policy_for(
    config: EnvConfig, allow_private: bool = False, private_hosts: tuple[str, ...] = ()
) -> NetPolicy:
    return NetPolicy(
        allow_domains=config.allow_domains,
        allow_private=allow_private,
        private_hosts=private_hosts,
        deny=config.deny_hosts,
        file_root=config.file_root,
    )


class Browser:
    """One Chromium for a run, shared by the tasks running in parallel (one context each).

    ``sandbox``: Chromium's sandbox (False: off, ``--no-browser-sandbox``; it is off anyway as
    root). ``allow_private``: pages may reach loopback, private and link-local addresses
    (``--allow-private-network``); ``private_hosts``: those of them that may be reached (a
    local test site, ``--allow-domain 127.0.0.1``). Both hold for every task of the run, since
    Chromium enforces them from its launch."""

    def __init__(
        self,
        executable: str | None = None,
        headless: bool = True,
        *,
        sandbox: bool = True,
        allow_private: bool = False,
        private_hosts: tuple[str, ...] = (),
    ):
        # A path that is not an executable file is refused here, before a run folder is opened.
        self.choice = choose_chromium(executable)
        self.executable = self.choice.executable
        self.headless = headless
        self.sandbox = sandbox
        self.allow_private = allow_private
        self.private_hosts = tuple(private_hosts)
        self._pw: Playwright | None = None
        self._browser: PWBrowser | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> Browser:
        """Start Playwright and launch Chromium. Either failing raises
        :class:`~regionfocus.kit.chromium.ChromiumLaunchError` (one line naming the executable,
        ``--browser`` and Chromium's own first error line), with nothing left running."""
        if self._pw is None:
            with starting_driver():
                self._pw = await async_playwright().start()
        try:
            await self._launch()
        except BaseException:
            await self.close()
            raise
        return self

    async def _launch(self) -> None:
        assert self._pw is not None
        rules = resolver_rules(NetPolicy(allow_private=self.allow_private, private_hosts=self.private_hosts))
        extra = (f"--host-resolver-rules={rules}",) if rules else ()
        options = launch_options(
            self.executable, headless=self.headless, sandbox=self.sandbox, extra_args=extra
        )
        with launching(self.choice):
            self._browser = await self._pw.chromium.launch(**options)

    @property
    def playwright_browser(self) -> PWBrowser | None:
        """The underlying Playwright browser (diagnostics and fault-injection tests)."""
        return self._browser

    async def new_env(self, config: EnvConfig) -> BrowserEnv:
        """A fresh context (cookies, storage, pages) for one task; relaunches a dead browser."""
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                if self._pw is None:
                    await self.start()
                else:
                    await self._launch()
            assert self._browser is not None
            context = await self._browser.new_context(
                viewport={"width": config.viewport[0], "height": config.viewport[1]},
                device_scale_factor=1,
                accept_downloads=False,
            )
        env = BrowserEnv(context, config, policy_for(config, self.allow_private, self.private_hosts))
        await env._init()
        return env

    async def close(self) -> None:
        if self._browser is not None:
            try:
                await self._browser.close()
            except PlaywrightError:
                pass
            self._browser = None
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None

    async def __aenter__(self) -> Browser:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()


class ScreenshotFailed(RuntimeError):
    """No screenshot could be taken, twice; the message names the page and what it was doing."""


class BrowserEnv(PageWatch):
    """One task's browser context. Use :meth:`goto`, then alternate :meth:`observe` /
    :meth:`act`; :attr:`zoom` is the true-zoom view source for RegionFocus. :attr:`stopped`:
    why the page stopped the task (see :class:`PageStopped`), None while it may go on."""

    def __init__(self, context: BrowserContext, config: EnvConfig, policy: NetPolicy | None = None):
        self.context = context
        self.config = config
        self.policy = policy or policy_for(config)
        self.page: Page | None = None
        self.events: list[dict] = []
        self.crashed = False
        self._pages: list[Page] = []
        self._shot: Image.Image | None = None
        self._probe: PageProbe | None = None
        self.zoom = CdpZoom(self._current_page, config.viewport, lambda: self._shot)
        self.fetcher = PageFetcher(config.max_page_bytes, config.nav_timeout_s)
        self.stopped: str | None = None
        self._stop = asyncio.Event()
        # This step's JavaScript dialogs and main-frame navigations (the loops' signs).
        self._dialogs = 0
        self._navigations = 0
        self._visited: deque[str] = deque(maxlen=3)

    # ------------------------------------------------------------------ setup
    async def _init(self) -> None:
        await self.context.add_init_script(OBSERVER_SCRIPT)
        await self.context.route("**/*", self._route)
        self.context.on("page", self._on_page)
        page = await self.context.new_page()
        # the "page" event also fires for this one; _on_page keeps the list unique
        self._adopt(page)

    def _current_page(self) -> Page:
        if self.page is None:
            raise RuntimeError("the environment has no page")
        return self.page

    # ------------------------------------------------------------------ navigation
    async def goto(self, url: str) -> str | None:
        """Open ``url`` in the current page; returns an error message or None."""
        reason = refusal(url, self.policy)
        if reason is not None:
            return f"navigation to {url!r} refused: {reason}"
        page = self._current_page()
        self._begin_step()
        # The document's own fetch gives up at nav_timeout_s, naming the page; the navigation
        # waits a little longer so that it is the fetch's verdict, not a bare timeout, that ends it.
        timeout_ms = (self.config.nav_timeout_s + _NAV_GRACE_S) * 1000
        try:
            await self._guard(page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms))
        except PageStopped as e:
            return f"navigation to {url!r} failed: {e}"
        except PlaywrightError as e:
            # A page refused by us fails in the browser as "blocked by client": say why.
            return f"navigation to {url!r} failed: {self.stopped or short_error(e)}"
        return None

    # ------------------------------------------------------------------ observation
    async def _probe_page(self) -> PageProbe:
        page = self.page
        if page is None or self.crashed:
            return PageProbe("", None, None, time.monotonic())
        try:
            m, fp = await asyncio.wait_for(page.evaluate(PROBE_SCRIPT), timeout=5)
        except (PlaywrightError, asyncio.TimeoutError):
            m, fp = None, None
        return PageProbe(page.url, m, fp, time.monotonic())

    async def _count(self) -> int | None:
        page = self.page
        if page is None or self.crashed:
            return None
        try:
            return await asyncio.wait_for(page.evaluate(COUNT_SCRIPT), timeout=5)
        except (PlaywrightError, asyncio.TimeoutError):
            return None

    async def _park(self) -> None:
        x, y = self.config.rest_point
        page = self.page
        if page is not None and not self.crashed:
            await page.mouse.move(x, y)

    async def _screenshot(self) -> Image.Image:
        """The viewport; :class:`ScreenshotFailed` when it cannot be taken twice (Chromium
        answers "Unable to capture screenshot" between two documents: the second try comes
        after the page settled), :class:`PageStopped` when the page stops the task."""
        for attempt in (1, 2):
            page = self._current_page()
            if self.crashed:
                raise RuntimeError("the page crashed")
            try:
                data = await self._guard(
                    page.screenshot(type="png", caret="hide", timeout=self.config.action_timeout_s * 1000)
                )
                return Image.open(io.BytesIO(data)).convert("RGB")
            except PlaywrightError as e:
                if attempt == 2:
                    raise ScreenshotFailed(self._screenshot_failure(page, e)) from None
            await self._settle()
        raise AssertionError("unreachable")

    def _screenshot_failure(self, page: Page, e: BaseException) -> str:
        doing = []
        if self._navigations > 1:  # one is the step's own page load
            doing.append(f"it navigated {self._navigations} times in this step")
        if self._dialogs:
            doing.append(f"it showed {self._dialogs} dialog(s) in this step")
        context = f" ({'; '.join(doing)})" if doing else ""
        return f"could not take a screenshot of {page_url(page)}{context}: {short_error(e)}"

    async def _settle(self) -> None:
        """Wait at least ``settle_s``, then until the DOM is quiet (two equal mutation counts
        100 ms apart) or ``settle_max_s`` has passed."""
        cfg = self.config
        deadline = time.monotonic() + cfg.settle_max_s
        await asyncio.sleep(cfg.settle_s)
        page = self.page
        if page is None or self.crashed:
            return
        try:
            await self._guard(
                page.wait_for_load_state(
                    "domcontentloaded", timeout=max(1.0, deadline - time.monotonic()) * 1000
                )
            )
        except PlaywrightError:
            pass
        last = None
        while time.monotonic() < deadline and not self.crashed and self.stopped is None:
            count = await self._count()  # None mid-navigation: the old document is gone
            if count is not None and count == last:
                return
            last = count
            await asyncio.sleep(0.1)

    async def observe(self) -> Image.Image:
        """The current screen with the mouse parked at the rest point (first step; later
        steps use :attr:`StepResult.screenshot`). Raises :class:`PageStopped` or
        :class:`ScreenshotFailed` when there is no screen to show."""
        if self.stopped is not None:
            raise PageStopped(self.stopped)
        await self._park()
        await self._settle()
        probe = await self._probe_page()
        self._shot = await self._screenshot()
        self._probe = PageProbe(probe.url, await self._count(), probe.fingerprint, time.monotonic())
        return self._shot

    # ------------------------------------------------------------------ acting
    async def act(self, action: Action) -> StepResult:
        """Execute ``action`` and report what it did. Never raises for page-side failures; a
        page that stopped the task (:attr:`stopped`) or left no screenshot gives a result
        without one, its error saying why."""
        n_events = len(self.events)
        if self._shot is None or self._probe is None:
            try:
                await self.observe()
            except (PageStopped, ScreenshotFailed) as e:
                return self._no_screen(n_events, str(e))
        shot_before, probe_obs = self._shot, self._probe
        assert shot_before is not None and probe_obs is not None
        self._begin_step()
        pages_before = list(self._pages)
        page_before = self.page
        start = await self._probe_page()  # the agent thought since the observation
        noise_rate_probe = probe_obs
        error: str | None = None
        opts = ExecOptions(self.config.viewport, self.config.wait_s, self.config.nav_timeout_s)
        t0 = time.monotonic()
        try:
            await self._guard(
                asyncio.wait_for(
                    execute(self._current_page(), action, opts),
                    timeout=self.config.action_timeout_s
                    + (opts.wait_s if action.type == ActionType.WAIT else 0),
                )
            )
        except PageStopped:
            pass  # the reason is self.stopped, reported below
        except ActionError as e:
            error = f"invalid action: {e}"
        except asyncio.TimeoutError:
            error = f"action timed out after {self.config.action_timeout_s:.0f} s"
        except (PlaywrightError, RuntimeError) as e:
            error = f"{type(e).__name__}: {short_error(e)}"

        if action.type != ActionType.HOVER:  # a hover's effect is the mouse staying there
            try:
                await self._park()
            except PlaywrightError:
                pass
        with contextlib.suppress(PageStopped):
            await self._settle()
        events = self.events[n_events:]
        if any(e["type"] == "crash" for e in events) or self.crashed:
            self.crashed = True
            error = error or "page crashed"
            effect = Effect(changed=True, error=error)
            return StepResult(effect, None, "", error, events, crashed=True)
        if self.stopped is not None:
            return self._no_screen(n_events, self.stopped)
        blocked = [e for e in events if e["type"] == "blocked"]
        if blocked and error is None:
            error = f"navigation blocked: {blocked[-1]['url']} ({blocked[-1]['reason']})"

        # Probe before the screenshot: Playwright's caret hiding touches each input's style
        # attribute, and those mutations are ours, not the action's.
        after = await self._probe_page()
        try:
            shot_after = await self._screenshot()
        except PageStopped as e:
            return self._no_screen(n_events, str(e))
        except (PlaywrightError, RuntimeError) as e:
            failed = str(e) if isinstance(e, ScreenshotFailed) else f"screenshot failed: {short_error(e)}"
            return self._no_screen(n_events, f"{error}; {failed}" if error else failed)
        window = after.t - t0
        noise = expected_noise(start, noise_rate_probe, window)
        new_page = self.page is not page_before or any(p not in pages_before for p in self._pages)
        dialogs = [e for e in events if e["type"] == "dialog"]
        mutations = (
            after.mutations - start.mutations
            if after.mutations is not None and start.mutations is not None and not new_page
            else None
        )
        effect = combine(
            url_before=probe_obs.url,
            url_after=after.url,
            mutations=mutations,
            noise=noise,
            fingerprint_before=probe_obs.fingerprint,
            fingerprint_after=after.fingerprint,
            shot_before=shot_before,
            shot_after=shot_after,
            new_page=new_page,
            dialog=dialogs[-1]["message"] if dialogs else None,
            error=error,
            thresholds=self.config.thresholds,
        )
        self._shot = shot_after
        # The next step's baseline: the counter after the screenshot, the state as probed.
        self._probe = PageProbe(after.url, await self._count(), after.fingerprint, time.monotonic())
        details = {"noise": round(noise, 3), "raw_mutations": mutations, "window_s": round(window, 3)}
        details.update(self._step_counts())
        return StepResult(effect, shot_after, after.url, error, events, False, details)

    def _step_counts(self) -> dict:
        return {"dialogs": self._dialogs, "navigations": self._navigations}

    def _no_screen(self, n_events: int, error: str) -> StepResult:
        """A step that leaves no screen to show: the episode ends with ``error``."""
        effect = Effect(changed=True, error=error)
        url = self.page.url if self.page else ""
        return StepResult(effect, None, url, error, self.events[n_events:], self.crashed, self._step_counts())

    async def evaluate(self, script: str, arg=None):
        """Run one of *our* scripts in the page (task setup and reward reading); never a string
        that a model or a page produced."""
        return await self._current_page().evaluate(script, arg)

    async def close(self) -> None:
        try:
            await self.context.close()
        except PlaywrightError:
            pass
        await self.fetcher.aclose()
