"""A task in the browser as a :class:`regionfocus.environment.Environment`.

:class:`BrowserEnv` is the browser (pages, actions, effects, true zoom); a :class:`TaskEnv`
adds what one task means: where it starts, what its instruction is, and when it is over by the
environment's own judgement (a MiniWoB++ page hands out its reward; an open-web task has none).
"""

from __future__ import annotations

from typing import Any

from PIL import Image

from regionfocus.actions import Action
from regionfocus.environment import EpisodeStatus, StepResult

from . import miniwob
from .browser import BrowserEnv
from .tasks import WebTask


class TaskEnv:
    """One task on ``browser_env``. ``task_zoom``/``episode_ms``/``hide_instruction`` apply to
    MiniWoB++ episodes."""

    def __init__(
        self,
        browser_env: BrowserEnv,
        task: WebTask,
        *,
        task_zoom: float = miniwob.DEFAULT_ZOOM,
        episode_ms: int = miniwob.DEFAULT_EPISODE_MS,
        a11y: bool = False,
        hide_instruction: bool = False,
    ):
        self.browser = browser_env
        self.task = task
        self.task_zoom = task_zoom
        self.episode_ms = episode_ms
        self.views = browser_env.zoom
        self.a11y = a11y  # read the page's accessibility tree at every step
        self.hide_instruction = hide_instruction

    async def start(self) -> str:
        if self.task.kind == "miniwob":
            return await miniwob.start_episode(
                self.browser, self.task, self.task_zoom, self.episode_ms, self.hide_instruction
            )
        error = await self.browser.goto(self.task.web)
        if error:
            raise RuntimeError(error)
        return self.task.ques

    async def observe(self) -> Image.Image:
        return await self.browser.observe()

    async def act(self, action: Action) -> StepResult:
        return await self.browser.act(action)

    async def status(self) -> EpisodeStatus | None:
        if self.task.kind != "miniwob":
            return None
        return await miniwob.episode_status(self.browser)

    @property
    def url(self) -> str:
        page = self.browser.page
        return page.url if page is not None else ""

    async def info(self) -> dict[str, Any]:
        page = self.browser.page
        if not self.a11y or page is None:
            return {}
        from .a11y_tree import snapshot  # CDP; only runs that read the tree pay for it

        snap = await snapshot(page)
        return {"elements": snap.elements, "viewport": snap.viewport}
