"""The offline page corpus for measuring accessibility observations, and the measurement.

Three kinds of pages, all made or installed locally:

- ``own``: pages this project writes (``benchmarks/pages/*.html``): cookie banners, a consent box,
  a native modal dialog, a popup that appears after a click (the temporal rule), and a page
  with no modal but full of modal words. The modal is marked with ``data-a11y-modal``.
- ``miniwob``: MiniWoB++ task pages (from the ``miniwob`` wheel) with and without jQuery UI
  dialogs; the measurement marks ``.ui-dialog`` itself before reading the tree.
- ``doc``: real documentation that Debian packages install under /usr/share/doc
  (``python3-doc``, ``sqlite3-doc``, ``git-doc``), served by a local HTTP server; skipped with a
  message when the folder is missing.

Sizes are characters and tokens of ``o200k_base`` (webvoyager/tokens.py says why
that tokenizer).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from regionfocus.a11y import PHASES, A11yElement, compress, in_viewport, linearize, says_something
from regionfocus.webvoyager import miniwob
from regionfocus.webvoyager.a11y_tree import A11ySnapshot, snapshot
from regionfocus.webvoyager.browser import Browser, EnvConfig
from regionfocus.webvoyager.tasks import WebTask
from regionfocus.webvoyager.tokens import count_tokens

PAGES_DIR = Path(__file__).resolve().parent / "pages"
DOC_ROOT = Path("/usr/share/doc")
MARK = "data-a11y-modal"


@dataclass(frozen=True)
class CorpusPage:
    """One page to measure. ``kind``: own | miniwob | doc. ``ref``: a file name under
    ``pages/``, a MiniWoB++ task name, or a path under /usr/share/doc. ``click``: a CSS selector
    clicked between two snapshots (the second is measured, with the first as ``previous``).
    ``instruction``: the task text given to phase 2's keyword filter."""

    name: str
    kind: str
    ref: str
    instruction: str = ""
    click: str = ""
    has_modal: bool | None = None  # None: no ground truth


OWN_PAGES = (
    CorpusPage(
        "cookie-banner", "own", "cookie-banner.html", "Open the story about ferry timetable", has_modal=True
    ),
    CorpusPage(
        "consent-center", "own", "consent-center.html", "Add the rain jacket to the cart", has_modal=True
    ),
    CorpusPage("modal-dialog", "own", "modal-dialog.html", "Share the Porto note", has_modal=True),
    CorpusPage(
        "newsletter-popup",
        "own",
        "newsletter-popup.html",
        "Read the post about birds",
        "#more",
        has_modal=True,
    ),
    CorpusPage("no-modal", "own", "no-modal.html", "Turn off analytics cookies and save", has_modal=False),
)
MINIWOB_PAGES = (
    CorpusPage("click-dialog", "miniwob", "click-dialog", has_modal=True),
    CorpusPage("click-dialog-2", "miniwob", "click-dialog-2", has_modal=True),
    CorpusPage("click-button", "miniwob", "click-button", has_modal=False),
    CorpusPage("click-tab", "miniwob", "click-tab", has_modal=False),
    CorpusPage("navigate-tree", "miniwob", "navigate-tree", has_modal=False),
    CorpusPage("login-user", "miniwob", "login-user", has_modal=False),
)
DOC_PAGES = (
    CorpusPage("python-sqlite3", "doc", "python3-doc/html/library/sqlite3.html", "How do I use executemany"),
    CorpusPage(
        "python-tutorial",
        "doc",
        "python3-doc/html/tutorial/controlflow.html",
        "What does the match statement do",
    ),
    CorpusPage("python-index", "doc", "python3-doc/html/index.html", "Find the library reference"),
    CorpusPage("sqlite-select", "doc", "sqlite3/lang_select.html", "What does the LIMIT clause do"),
    CorpusPage("git-commit", "doc", "git-doc/git-commit.html", "How do I amend the last commit"),
)


def doc_pages() -> tuple[list[CorpusPage], list[str]]:
    """The doc pages whose files exist, and a message per missing one."""
    found, missing = [], []
    for p in DOC_PAGES:
        if (DOC_ROOT / p.ref).is_file():
            found.append(p)
        else:
            missing.append(
                f"skipped {p.name}: {DOC_ROOT / p.ref} not found (apt-get install {p.ref.split('/')[0]})"
            )
    return found, missing


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the measurement prints its own table
        pass


class StaticServer:
    """A local HTTP server for one folder, on 127.0.0.1 and a free port, in a thread. Use as a
    context manager; ``url(path)`` is the address of a file under the folder."""

    def __init__(self, root: Path):
        self.root = Path(root)
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{path.lstrip('/')}"

    def __enter__(self) -> StaticServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()


@dataclass
class PageResult:
    """Sizes of one page's observations and its modal detection against the ground truth.
    ``linear``: the whole tree; ``linear_view``: its on-screen rows only; ``compressed``: the
    three phases. Counts: (chars, tokens). ``tp``/``fp``/``fn``: on-screen elements that say
    something, predicted modal vs marked."""

    name: str
    kind: str
    linear: tuple[int, int]
    linear_view: tuple[int, int]
    compressed: tuple[int, int]
    tp: int = 0
    fp: int = 0
    fn: int = 0
    has_truth: bool = False
    methods: tuple[str, ...] = ()
    ablation: dict[str, int] = field(default_factory=dict)  # tokens with one phase alone


def modal_counts(
    elements: list[A11yElement], modal_ids: set[str], viewport: tuple[int, int]
) -> tuple[int, int, int]:
    """(tp, fp, fn) over the elements a reader of the screen could judge: visible, on screen,
    saying something."""
    tp = fp = fn = 0
    for e in elements:
        if not (e.visible and e.box is not None and in_viewport(e.box, viewport) and says_something(e)):
            continue
        pred = e.node_id in modal_ids
        tp += pred and e.marked
        fp += pred and not e.marked
        fn += (not pred) and e.marked
    return tp, fp, fn


def measure(
    snap: A11ySnapshot,
    instruction: str,
    previous: A11ySnapshot | None = None,
    has_truth: bool = False,
    name: str = "",
    kind: str = "",
    count: Callable[[str], int] = count_tokens,
) -> PageResult:
    """Sizes and modal scores of one snapshot (``previous``: the step before, for the
    temporal rule)."""
    state = None
    if previous is not None:
        state = compress(previous.elements, instruction, viewport=previous.viewport).state
    c = compress(snap.elements, instruction, state, viewport=snap.viewport)
    lin = linearize(snap.elements)
    lin_view = linearize(snap.elements, viewport=snap.viewport)
    ids = {e.node_id for e in (c.detection.modal if c.detection else [])}
    tp, fp, fn = modal_counts(snap.elements, ids, snap.viewport)

    def size(t: str) -> tuple[int, int]:
        return len(t), count(t)

    ablation = {
        phase: count(compress(snap.elements, instruction, state, [phase], viewport=snap.viewport).text)
        for phase in PHASES
    }

    return PageResult(
        name,
        kind,
        size(lin),
        size(lin_view),
        size(c.text),
        tp,
        fp,
        fn,
        has_truth,
        tuple(c.detection.methods if c.detection else ()),
        ablation,
    )


_MARK_DIALOGS = (
    """(mark) => { document.querySelectorAll('.ui-dialog').forEach(e => e.setAttribute(mark, '')); }"""
)


async def snapshot_page(
    browser: Browser, page: CorpusPage, server: StaticServer | None, viewport=(1440, 1440)
):
    """Load ``page`` in a fresh context and return (snapshot, previous snapshot or None,
    instruction). ``server``: serves /usr/share/doc for doc pages and ``pages/`` for own pages
    (they are loaded over HTTP as a site would be)."""
    if page.kind == "miniwob":
        env = await browser.new_env(EnvConfig(viewport=viewport, file_root=miniwob.file_root()))
        try:
            task = WebTask(
                id=page.name,
                web_name=page.name,
                ques="",
                web=(miniwob.html_root() / f"{page.ref}.html").as_uri(),
                kind="miniwob",
                seed=0,
            )
            instruction = await miniwob.start_episode(env, task)
            await env.evaluate(_MARK_DIALOGS, MARK)
            return await snapshot(env.page, mark_attribute=MARK), None, instruction
        finally:
            await env.close()
    if server is None:
        raise ValueError(f"{page.name}: a server is needed for {page.kind} pages")
    env = await browser.new_env(EnvConfig(viewport=viewport))
    try:
        error = await env.goto(server.url(page.ref))
        if error:
            raise RuntimeError(error)
        await env.observe()  # settle like a browsing step does
        previous = None
        if page.click:
            previous = await snapshot(env.page, mark_attribute=MARK)
            await env.page.click(page.click)
            await env.page.wait_for_function(
                "(m) => [...document.querySelectorAll('[' + m + ']')].some(e => e.checkVisibility())",
                arg=MARK,
            )
        return await snapshot(env.page, mark_attribute=MARK), previous, page.instruction
    finally:
        await env.close()


async def run_corpus(
    include: tuple[str, ...] = ("own", "miniwob", "doc"), viewport=(1440, 1440)
) -> tuple[list[PageResult], list[str]]:
    """Measure every page of the corpus kinds in ``include``; returns results and skip notes."""
    notes: list[str] = []
    pages: list[CorpusPage] = []
    if "own" in include:
        pages += OWN_PAGES
    if "miniwob" in include:
        pages += MINIWOB_PAGES
    if "doc" in include:
        found, missing = doc_pages()
        pages += found
        notes += missing
    results = []
    async with Browser(private_hosts=("127.0.0.1",)) as browser:  # LocalSite serves there
        with StaticServer(PAGES_DIR) as own, StaticServer(DOC_ROOT) if DOC_ROOT.is_dir() else _Null() as docs:
            for p in pages:
                server = own if p.kind == "own" else docs
                snap, prev, instruction = await snapshot_page(browser, p, server, viewport)
                results.append(measure(snap, instruction, prev, p.has_modal is not None, p.name, p.kind))
    return results, notes


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        pass
