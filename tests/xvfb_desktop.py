"""A real X desktop for the OSWorld-style wrapper: Xvfb, the test application (tests/xvfb_app.py),
screenshots and execution as OSWorld's server does them, and the demo agent that clicks beside its
target. Used by tests/test_plugin_osworld.py and benchmarks/osworld_beside.py.

OSWorld's conventions, read in xlang-ai/OSWorld's fork pkueecszc/OSWorld @
be0b6285d58df9e12bc3d67238642ec177c6fd40: the controller runs every action as
``python -c "import pyautogui; import time; pyautogui.FAILSAFE = False; CODE"``
(desktop_env/controllers/python.py), and the server's screenshot is the screen with the pointer's
image pasted with its top-left corner at the pointer (desktop_env/server/main.py,
``capture_screen_with_cursor``). Here the cursor image is the X server's own, through XFixes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

APP = Path(__file__).resolve().parent / "xvfb_app.py"
SCREEN = (1024, 768)
PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
SIDES = ("right", "below", "left", "above")


class DesktopError(RuntimeError):
    """Xvfb or the application could not start (the message says what to install)."""


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


class Desktop:
    """One Xvfb display: OSWorld's screenshot and execution, done as its server does them."""

    def __init__(self, display: str, env: dict[str, str]):
        self.display, self.env = display, env

    def screenshot(self) -> Image.Image:
        from PIL import ImageGrab
        from Xlib import display as xdisplay

        shot = ImageGrab.grab(xdisplay=self.display).convert("RGB")
        d = xdisplay.Display(self.display)
        try:
            d.xfixes_query_version()
            root = d.screen().root
            cur = d.xfixes_get_cursor_image(root)
            rgba = bytearray()
            for v in cur.cursor_image:  # 0xAARRGGBB
                rgba += bytes(((v >> 16) & 255, (v >> 8) & 255, v & 255, (v >> 24) & 255))
            sprite = Image.frombytes("RGBA", (cur.width, cur.height), bytes(rgba))
            p = root.query_pointer()
        finally:
            d.close()
        shot.paste(sprite, (p.root_x, p.root_y), sprite)
        return shot

    def observe(self, scale: int = 1) -> dict:
        """OSWorld's observation dict. ``scale``: a HiDPI screenshot, more pixels than the screen's
        logical ones."""
        shot = self.screenshot()
        if scale != 1:
            shot = shot.resize((shot.width * scale, shot.height * scale), Image.Resampling.NEAREST)
        return {
            "screenshot": png_bytes(shot),
            "accessibility_tree": None,
            "terminal": None,
            "instruction": None,
        }

    def execute(self, action: str) -> None:
        if action in ("WAIT", "DONE", "FAIL"):
            return
        subprocess.run(
            [sys.executable, "-c", PREFIX + action], env=self.env, check=True, timeout=60, capture_output=True
        )
        time.sleep(0.3)  # the app's redraw (OSWorld sleeps after every action too)

    def move(self, x: int, y: int) -> None:
        self.execute(f"pyautogui.moveTo({x}, {y})")


@contextlib.contextmanager
def xvfb(size: tuple[int, int] = SCREEN) -> Iterator[Desktop]:
    """An Xvfb server on a display number it picks itself (``-displayfd``), stopped after."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise DesktopError("Xvfb is missing: bash scripts/setup.sh installs it (Debian package xvfb)")
    try:
        from Xlib.ext import xfixes  # noqa: F401
    except ImportError:
        raise DesktopError(
            "Xlib has no XFixes: python-xlib>=0.33 (the dev extra) must be installed over python3-xlib"
        ) from None
    with tempfile.TemporaryDirectory(prefix="rf-x11-") as tmp:
        auth = Path(tmp) / "Xauthority"
        auth.write_bytes(b"")  # no cookie: Xvfb listens on its own socket only, without access control
        read, write = os.pipe()
        proc = subprocess.Popen(
            [exe, "-displayfd", str(write), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        try:
            with os.fdopen(read) as f:
                number = f.readline().strip()
            if not number:
                raise DesktopError("Xvfb did not start")
            display = f":{number}"
            yield Desktop(display, {**os.environ, "DISPLAY": display, "XAUTHORITY": str(auth)})
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # a wedged server does not answer SIGTERM
        proc.kill()
        proc.wait(timeout=30)


@contextlib.contextmanager
def application(desktop: Desktop, folder: Path) -> Iterator[tuple[Path, dict[str, list[int]]]]:
    """The test application on ``desktop``: its output file and its buttons' boxes."""
    out, layout = folder / "clicked.txt", folder / "layout.json"
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(out), str(layout)],
        env=desktop.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            if layout.exists() or proc.poll() is not None:
                break
            time.sleep(0.05)
        if not layout.exists():
            raise DesktopError(f"the test app did not start: {proc.stderr.read().decode()[-500:]}")
        yield out, json.loads(layout.read_text())
    finally:
        _stop(proc)


class Beside:
    """The demo agent: it knows where the button is and clicks ``gap`` px beyond its ``side``, on
    the empty window, every step (a stubborn agent); with ``drift`` each new try lands that many
    px further out (an agent that misses differently each time)."""

    def __init__(self, box, side: str, gap: int = 30, drift: int = 0):
        left, top, right, bottom = box
        cx, cy = (left + right) // 2, (top + bottom) // 2
        self.point, self.out = {
            "right": ((right + gap, cy), (1, 0)),
            "left": ((left - gap, cy), (-1, 0)),
            "below": ((cx, bottom + gap), (0, 1)),
            "above": ((cx, top - gap), (0, -1)),
        }[side]
        self.drift, self.tries = drift, 0

    def predict(self, instruction, obs):
        k = self.drift * self.tries
        self.tries += 1
        x, y = self.point[0] + k * self.out[0], self.point[1] + k * self.out[1]
        return f"```python\npyautogui.click({x}, {y})\n```", [f"pyautogui.click({x}, {y})"]


def episode(
    desktop: Desktop, agent, instruction: str, out: Path, steps: int = 3, scale: int = 1
) -> list[str]:
    """lib_run_single.py's loop: predict, execute each action, observe; stops once the app wrote.
    Returns the labels the app reports clicked."""
    for _ in range(steps):
        _, actions = agent.predict(instruction, desktop.observe(scale))
        for a in actions:
            desktop.execute(a)
        if out.exists():
            break
    return out.read_text().split() if out.exists() else []
