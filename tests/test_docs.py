"""The documentation is part of the product: its code runs, its links and symbols resolve.

Every ```python and ```bash block of README.md and docs/ runs as written, unless the comment
line right above it says ``<!-- test: skip REASON -->`` (a GPU server, a live site, an
hour-long run). ``<!-- test: server FAMILY -->`` runs a Python block against a scripted
OpenAI-compatible server that answers as that family does, in place of the
``http://127.0.0.1:8000/v1`` the block names. Python blocks of one page run in order in one
fresh interpreter (a later block may use what an earlier one registered), in a folder holding a
``screen.png``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from .chat_server import ChatServer, Reply, request_images

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
SERVED = "http://127.0.0.1:8000/v1"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
_DIRECTIVE = re.compile(r"<!-- test: (skip|server)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    code: str
    directive: str  # "", "skip", "server"
    argument: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            if m.group(1) not in ("python", "bash"):
                continue
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            d = _DIRECTIVE.search(before)
            line = text.count("\n", 0, m.start()) + 1
            out.append(Block(page, line, m.group(1), m.group(2), *(d.groups() if d else ("", ""))))
    return out


BLOCKS = blocks()


def test_every_skipped_block_says_why():
    unexplained = [b.name for b in BLOCKS if b.directive == "skip" and len(b.argument) < 8]
    assert not unexplained


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    return env


@pytest.mark.slow  # each starts the CLI in a process of its own (a few CPU seconds)
@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.lang == "bash" and b.directive != "skip"], ids=lambda b: b.name
)
def test_shell_block_runs_as_written(block: Block, tmp_path: Path):
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{block.name}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def _grounding_reply(body: dict) -> Reply:
    """Qwen2.5-VL's answer to any request: a left_click at the centre of the image it was sent,
    "Yes" to a judge, the first star to a choice."""
    text = json.dumps(body.get("messages", [])).lower()
    if "correct" in text and "star" in text or "judge" in text:
        return Reply.text("Yes, the star is on the target.")
    if "selected point" in text or "choose" in text:
        return Reply.text("Selected point: 1")
    images = request_images(body)
    w, h = images[0].size if images else (1000, 1000)
    call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [w // 2, h // 2]}}
    if body.get("continue_final_message"):
        return Reply.text(f"{w // 2}, {h // 2}]}}}}\n</tool_call>")
    return Reply.text(f"I'll click it.\n<tool_call>\n{json.dumps(call)}\n</tool_call>")


# Pages whose blocks run a real OCR model or a whole round: the slow tier's.
HEAVY_PAGES = {"docs/guides/wrap.md"}


def _pages_with_python() -> list:
    pages = sorted({b.page for b in BLOCKS if b.lang == "python" and b.directive != "skip"})
    return [
        pytest.param(p, marks=[pytest.mark.slow] if str(p.relative_to(ROOT)) in HEAVY_PAGES else [])
        for p in pages
    ]


@pytest.mark.parametrize("page", _pages_with_python(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run_as_written(page: Path, tmp_path: Path):
    mine = [b for b in BLOCKS if b.page == page and b.lang == "python" and b.directive != "skip"]
    Image.new("RGB", (1920, 1080), "white").save(tmp_path / "screen.png")
    with ChatServer(responder=_grounding_reply, model="doc-model") as srv:
        code = "\n\n".join(
            b.code.replace(SERVED, srv.base_url) if b.directive == "server" else b.code for b in mine
        )
        (tmp_path / "page.py").write_text(code)
        done = subprocess.run(
            [sys.executable, "page.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
        )
        served = srv.stats.chat_requests
    assert done.returncode == 0, f"{[b.name for b in mine]}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    if any(b.directive == "server" for b in mine):
        assert served > 0, "a block marked 'server' never reached the scripted server"


# ------------------------------------------------------------------------------ the site
_PATH = re.compile(
    r"`((?:regionfocus|adapters|screenspot_pro|webvoyager|aitz|plugins|benchmarks|scripts|tests)/[\w/.-]+)`"
)
_DOTTED = re.compile(r"`(regionfocus(?:\.\w+)+)`")
# Names that are not modules: the entry-point group of subcommands.
_NOT_MODULES = {"regionfocus.commands"}
_INSTALLED = {
    "regionfocus.adapters": "adapters",
    "regionfocus.screenspot_pro": "screenspot_pro",
    "regionfocus.webvoyager": "webvoyager",
    "regionfocus.aitz": "aitz",
    "regionfocus.plugins": "plugins",
}


def _dotted_exists(name: str) -> bool:
    """A module path, or a name defined or imported in one, as a reader would look for it in
    the checkout."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        mod = ".".join(parts[:cut])
        prefix = next((k for k in _INSTALLED if mod == k or mod.startswith(k + ".")), None)
        rel = (_INSTALLED[prefix] + mod[len(prefix) :]) if prefix else mod
        path = ROOT / rel.replace(".", "/")
        source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
        if source.is_file():
            rest = parts[cut:]
            return not rest or re.search(rf"\b{re.escape(rest[0])}\b", source.read_text()) is not None
    return False


def test_every_module_path_in_the_docs_exists():
    missing = []
    for page in [*PAGES, ROOT / "docs" / "ARCHITECTURE.md"]:
        text = page.read_text(encoding="utf-8")
        # A line citing another repository at a commit names that repository's paths.
        ours = "\n".join(line for line in text.splitlines() if " @ `" not in line)
        for m in _PATH.finditer(ours):
            path = m.group(1).rstrip(".")
            if "*" not in path and "{" not in path and not (ROOT / path).exists():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
        missing += [
            f"{page.relative_to(ROOT)}: {m.group(1)}"
            for m in _DOTTED.finditer(text)
            if m.group(1) not in _NOT_MODULES and not _dotted_exists(m.group(1))
        ]
    assert not missing


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    commands = [b for b in BLOCKS if b.page.name == "README.md" and "scripts/" in b.code]
    assert (
        len(commands) == 1
        and "bash scripts/setup.sh" in commands[0].code
        and "bash scripts/test.sh" in commands[0].code
    )
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test.sh" in ci  # CI calls the README's test command


def test_the_source_tree_does_not_hide_the_installed_package():
    # From the checkout's root, `regionfocus/` is found first; the editable install (what
    # scripts/setup.sh makes) maps the other folders under it, so every part still imports.
    done = subprocess.run(
        [sys.executable, "-c", "import regionfocus.screenspot_pro, regionfocus.webvoyager, regionfocus.aitz"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def _family_rows() -> list[str]:
    """The families table of docs/guides/models.md, from each family's class."""
    from regionfocus.adapters import registry

    rows = []
    for name in registry.agent_names():
        facts = registry.facts(name)
        if not facts.is_family:
            continue
        cls = registry.family_class(name)
        if getattr(facts, "provider", None):
            frame, resize = (
                "the provider's (see [Hosted models](hosted.md))",
                "the provider's documented downscaling",
            )
        else:
            frame = "0–1000 on each axis" if cls.frame == "relative" else "pixels of the resized image"
            passes, spec = [], cls.default_resize
            while spec is not None:
                passes.append(f"factor {spec.factor}, {spec.min_pixels:,}–{spec.max_pixels:,} px")
                spec = spec.then
            resize = "smart_resize, " + ", then ".join(passes)
        rows.append(f"| `{name}` | {frame} | {resize} |")
    return rows


def test_the_families_table_is_the_families_data():
    text = (ROOT / "docs" / "guides" / "models.md").read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("| `") and not line.startswith("| `--")]
    assert table == _family_rows()
