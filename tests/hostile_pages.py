"""A hostile web site for the browser tests and benchmarks: a real HTTP server on loopback whose
pages misbehave the way pages on the open web do.

Paths (``HostilePages(...).url + path``):

* ``endless``: an HTML document that never ends (chunks as fast as the client reads them);
  ``endless?rate=N``: N bytes a second, so it is still arriving when a timeout comes;
* ``download``: the same endless stream as an attachment (a download a click starts);
* ``big?bytes=N``: a finished HTML document of N bytes;
* ``alerts``: a page whose script shows ``alert()`` dialogs in an endless loop;
* ``refresh``: a page that refreshes itself at once (``<meta http-equiv="refresh">``), for ever;
* ``busy``: a page whose script runs an endless loop a moment after it loaded (a hung renderer);
* ``framed``: an ordinary page holding a frame of ``endless``;
* ``links``: a plain page with a link to each of ``LINKS``, top to bottom, 40 px apart.

``bomb``: a gzip-encoded page of 48 KB that inflates to 48 MiB.

And the ordinary things a document fetch must keep: ``cookie`` sets two cookies (one
HttpOnly), ``gzip`` is a gzip-encoded page, ``echo`` (GET or POST) shows the method, the
Cookie header and the body it received, ``form`` posts a field to ``echo``.

``sent`` counts the body bytes written per path, so a test proves the page was cut off.
Run as a script it serves until killed and prints its URL (the benchmarks start it in its own
process, so its memory is not the client's).
"""

from __future__ import annotations

import functools
import gzip
import html
import http.server
import sys
import threading
import time
from collections import Counter
from urllib.parse import parse_qs, urlsplit

CHUNK = b"<p>" + b"endless " * 8186 + b"</p>\n"  # ~64 KB of markup
LINKS = ("endless", "download", "alerts", "refresh")

_ALERTS = b"""<!doctype html><title>alerts</title><p>Dialogs for ever.</p>
<script>setTimeout(() => { for (let i = 0; ; i++) alert('message ' + i); }, 0);</script>"""

_REFRESH = b"""<!doctype html><title>refresh</title>
<meta http-equiv="refresh" content="0"><p>Again and again.</p>"""

_BUSY = b"""<!doctype html><title>busy</title><p>Busy for ever.</p>
<script>setTimeout(() => { for (;;) {} }, 300);</script>"""

_FRAMED = b"""<!doctype html><title>framed</title><p>A frame that never ends:</p>
<iframe src="endless" width="300" height="100"></iframe>"""

_FORM = b"""<!doctype html><title>form</title><body style="margin:0">
<form method="post" action="echo"><input name="q" value="caf\xc3\xa9 & tea">
<button id="send" style="position:absolute;left:20px;top:60px;width:120px;height:40px">Send</button></form>"""


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"<!doctype html><p>" + b"\0" * (48 * 2**20), compresslevel=9)


def links_page() -> bytes:
    items = "".join(
        f'<a href="{p}" style="position:absolute;left:20px;top:{20 + 40 * k}px;font:20px sans-serif">{p}</a>'
        for k, p in enumerate(LINKS)
    )
    return f"<!doctype html><title>links</title><body style='margin:0'>{items}</body>".encode()


class HostilePages:
    """The server, started on a free port of ``host``; ``close()`` stops it."""

    def __init__(self, host: str = "127.0.0.1"):
        self.sent: Counter = Counter()
        self.requests: Counter = Counter()
        self._lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no length needed

            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                path, query = parts.path.strip("/"), parse_qs(parts.query)
                with site._lock:
                    site.requests[path] += 1
                if path in ("endless", "download"):
                    rate = int(query.get("rate", ["0"])[0])
                    kind = "application/octet-stream" if path == "download" else "text/html"
                    self.send_response(200)
                    self.send_header("Content-Type", kind)
                    if path == "download":
                        self.send_header("Content-Disposition", 'attachment; filename="endless.bin"')
                    self.end_headers()
                    site._stream(self.wfile, path, rate)
                    return
                pages = {
                    "alerts": _ALERTS,
                    "refresh": _REFRESH,
                    "busy": _BUSY,
                    "framed": _FRAMED,
                    "form": _FORM,
                }
                body = {**pages, "links": links_page()}.get(path)
                if path == "cookie":
                    self._send(
                        b"<p>cookies set</p>",
                        ("Set-Cookie", "plain=1; Path=/"),
                        ("Set-Cookie", "secret=2; Path=/; HttpOnly"),
                    )
                    return
                if path == "bomb":
                    self._send(_bomb(), ("Content-Encoding", "gzip"))
                    return
                if path == "gzip":
                    self._send(gzip.compress(b"<p>unzipped fine</p>" * 50), ("Content-Encoding", "gzip"))
                    return
                if path == "echo":
                    self._echo(b"")
                    return
                if path == "big":
                    n = int(query.get("bytes", ["0"])[0])
                    body = (b"<!doctype html><p>big</p>" + b"x" * n)[:n] if n >= 26 else b"<p>big</p>"
                if body is None:
                    self.send_error(404)
                    return
                self._send(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self._echo(self.rfile.read(length))

            def _echo(self, body: bytes):
                shown = f"{self.command} cookie=[{self.headers.get('Cookie', '')}] body=[{body.decode('latin-1')}]"
                self._send(f"<p id='echo'>{html.escape(shown)}</p>".encode())

            def _send(self, body: bytes, *headers: tuple[str, str]):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    return  # the client went away (a page that reloads itself)
                with site._lock:
                    site.sent[urlsplit(self.path).path.strip("/")] += len(body)

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://{host}:{self.server.server_port}/"

    def _stream(self, out, path: str, rate: int) -> None:
        """Write until the client goes away; ``rate``: bytes a second (0: as fast as read)."""
        piece = CHUNK if rate <= 0 else CHUNK[: max(1, rate // 10)]
        try:
            out.write(b"<!doctype html><title>endless</title>\n")
            while True:
                out.write(piece)
                with self._lock:
                    self.sent[path] += len(piece)
                if rate > 0:
                    out.flush()
                    time.sleep(0.1)
        except OSError:
            return  # the client closed the connection: what a cut-off page looks like here

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    pages = HostilePages(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1")
    print(pages.url, flush=True)
    threading.Event().wait()
