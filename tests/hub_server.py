"""A real local HTTP server answering the Hugging Face Hub endpoints that
``huggingface_hub.snapshot_download`` calls for a dataset repo, so the client under test is the
real one (pointed here by ``HF_ENDPOINT`` or ``endpoint=``).

Endpoints, as huggingface_hub 2.x calls them (``hf_api.dataset_info``, ``_iter_repo_tree_pages``,
``file_download.get_hf_file_metadata`` and ``http_get``):

- ``GET /api/datasets/{owner}/{name}/revision/{revision}``: the repo's info (``id``, ``sha``:
  the commit the revision resolves to, ``siblings``);
- ``GET /api/datasets/{owner}/{name}/tree/{revision}?recursive=..&expand=..``: files and folders
  as JSON, ``pages`` entries a page, the next page in a ``Link: <...>; rel="next"`` header (the
  Hub's cursor pagination);
- ``HEAD|GET /datasets/{owner}/{name}/resolve/{revision}/{path}``: a file, with ``X-Repo-Commit``,
  ``ETag`` (the git blob id) and ``Content-Length``.

Errors are the Hub's: an unknown repo is 401 with ``X-Error-Code: RepoNotFound`` (what the Hub
answers an anonymous client), an unknown revision 404 ``RevisionNotFound``, an unknown file 404
``EntryNotFound``. ``requests`` lists every (method, path) served, for tests that count them.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class HubRepo:
    """``commits``: sha -> {path: bytes}; ``refs``: branch or tag -> sha."""

    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def add_commit(self, files: dict[str, bytes], *, ref: str = "main") -> str:
        digest = hashlib.sha1(json.dumps(sorted((p, git_blob_id(b)) for p, b in files.items())).encode())
        sha = hashlib.sha1(f"{len(self.commits)}:{digest.hexdigest()}".encode()).hexdigest()
        self.commits[sha] = dict(files)
        self.refs[ref] = sha
        return sha

    def resolve(self, revision: str) -> str | None:
        if revision in self.commits:
            return revision
        return self.refs.get(revision)


class HubServer:
    """``repos``: repo id -> :class:`HubRepo`. Use as a context manager; ``endpoint`` is its URL."""

    def __init__(self, repos: dict[str, HubRepo] | None = None, *, page_size: int = 1000):
        self.repos: dict[str, HubRepo] = dict(repos or {})
        self.page_size = page_size
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def file_requests(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if "/resolve/" in r[1]]

    def __enter__(self) -> HubServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                server._serve(self, head=False)

            def do_HEAD(self):
                server._serve(self, head=True)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    # ------------------------------------------------------------------ routing
    def _serve(self, h: BaseHTTPRequestHandler, head: bool) -> None:
        url = urlsplit(h.path)
        with self._lock:
            self.requests.append((h.command, url.path))
        parts = [unquote(p) for p in url.path.split("/")]
        # ['', 'api', 'datasets', owner, name, 'revision'|'tree', revision, *path]
        if len(parts) >= 7 and parts[1:3] == ["api", "datasets"] and parts[5] in ("revision", "tree"):
            repo_id, kind, revision, rest = f"{parts[3]}/{parts[4]}", parts[5], parts[6], parts[7:]
            repo, sha = self._find(h, repo_id, revision)
            if sha is None:
                return
            if kind == "revision":
                files = sorted(repo.commits[sha])
                self._json(
                    h,
                    {
                        "id": repo_id,
                        "sha": sha,
                        "private": False,
                        "siblings": [{"rfilename": p} for p in files],
                    },
                )
            else:
                cursor = int(parse_qs(url.query).get("cursor", ["0"])[0])
                self._tree(h, repo_id, revision, repo.commits[sha], "/".join(rest), cursor)
            return
        # ['', 'datasets', owner, name, 'resolve', revision, *path]
        if len(parts) >= 7 and parts[1] == "datasets" and parts[4] == "resolve":
            repo_id, revision, path = f"{parts[2]}/{parts[3]}", parts[5], "/".join(parts[6:])
            repo, sha = self._find(h, repo_id, revision)
            if sha is None:
                return
            data = repo.commits[sha].get(path)
            if data is None:
                self._error(
                    h, 404, "EntryNotFound", f"{path} does not exist at {sha}", {"X-Repo-Commit": sha}
                )
                return
            h.send_response(200)
            h.send_header("X-Repo-Commit", sha)
            h.send_header("ETag", f'"{git_blob_id(data)}"')
            h.send_header("Content-Length", str(len(data)))
            h.send_header("Content-Type", "application/octet-stream")
            h.end_headers()
            if not head:
                h.wfile.write(data)
            return
        self._error(h, 404, "", "no such endpoint")

    def _find(self, h, repo_id: str, revision: str) -> tuple[HubRepo | None, str | None]:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._error(h, 401, "RepoNotFound", "Repository not found")
            return None, None
        sha = repo.resolve(revision)
        if sha is None:
            self._error(h, 404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return repo, None
        return repo, sha

    def _tree(self, h, repo_id: str, revision: str, files: dict[str, bytes], under: str, cursor: int) -> None:
        prefix = f"{under}/" if under else ""
        folders = sorted({p.rsplit("/", 1)[0] for p in files if "/" in p})
        entries = [
            {"type": "directory", "oid": git_blob_id(d.encode()), "size": 0, "path": d}
            for d in _all_parents(folders)
            if d.startswith(prefix)
        ]
        entries += [
            {"type": "file", "oid": git_blob_id(b), "size": len(b), "path": p}
            for p, b in sorted(files.items())
            if p.startswith(prefix)
        ]
        page = entries[cursor : cursor + self.page_size]
        headers = {}
        if cursor + self.page_size < len(entries):
            nxt = f"{self.endpoint}/api/datasets/{repo_id}/tree/{quote(revision, safe='')}"
            nxt += f"{'/' + quote(under, safe='') if under else ''}?recursive=True&cursor={cursor + self.page_size}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._json(h, page, headers)

    @staticmethod
    def _json(h, obj, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)

    @staticmethod
    def _error(h, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        h.send_response(status)
        if code:
            h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)


def _all_parents(folders: list[str]) -> list[str]:
    out: set[str] = set()
    for f in folders:
        parts = f.split("/")
        out.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return sorted(out)
