"""The local transport when things go wrong (problem 9): a write that fails (full /dev/shm, a
folder gone) sends that image as a data URL instead of failing the sample, and leaves no half
file; the client's media folder goes at exit and on SIGTERM, and the folders of processes that
died without a word are swept by the next one; ``serve-command`` binds the server to 127.0.0.1
and lets it read only the dedicated folder the client writes under by default."""

from __future__ import annotations

import errno
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from regionfocus.adapters.backends import encoding
from regionfocus.adapters.backends.encoding import LocalFiles
from regionfocus.adapters.backends.openai_http import OpenAIBackend
from regionfocus.adapters.cli import main as adapters_main
from regionfocus.adapters.serving import default_local_media_dir, serve_command
from tests.chat_server import ChatServer

from .test_local_transport import FileReadingServer, image_urls, msg, noise

ROOT = Path(__file__).resolve().parents[1]


def kinds(srv: ChatServer) -> list[list[str]]:
    return [[u.split(":", 1)[0] for u in image_urls(body)] for body in srv.stats.bodies]


# ------------------------------------------------------------------ writes that fail
async def test_a_full_folder_sends_data_urls_leaves_no_partial_file_and_warns_once(
    tmp_path, monkeypatch, caplog
):
    real_save = Image.Image.save

    def full_disk(self, fp, *args, **kwargs):
        Path(fp).write_bytes(b"BM partial")  # some bytes made it before the device filled up
        raise OSError(errno.ENOSPC, "No space left on device")

    reader = FileReadingServer(tmp_path)
    shot, other = noise(90, 60, 1), noise(40, 30, 2)
    with ChatServer(reader) as srv, caplog.at_level(logging.WARNING):
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        monkeypatch.setattr(Image.Image, "save", full_disk)
        first = await b.complete(msg("a", shot))
        second = await b.complete(msg("b", other))
        left = sorted(p.name for p in b.local.folder.iterdir())
        monkeypatch.setattr(Image.Image, "save", real_save)  # space is back: files again
        third = await b.complete(msg("c", noise(20, 20, 3)))
        await b.aclose()
    assert (first.text, second.text, third.text) == ("read 1", "read 2", "read 3")
    assert kinds(srv) == [["data"], ["data"], ["file"]]
    assert reader.read[0] == ("data", shot.size, shot.tobytes())  # lossless all the same
    assert left == []  # the half-written temporary file went with the failure
    warned = [r for r in caplog.records if "could not write an image" in r.getMessage()]
    assert len(warned) == 1 and "No space left" in warned[0].getMessage()


async def test_a_folder_that_became_a_file_still_gets_the_request_through(tmp_path):
    """A real OSError, no monkeypatching: the media folder is gone and a regular file sits at
    its path (ENOTDIR on every write)."""
    with ChatServer(FileReadingServer(tmp_path)) as srv:
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        shutil.rmtree(b.local.folder)
        b.local.folder.write_bytes(b"not a folder")
        out = await b.complete(msg("a", noise(30, 20)))
        await b.aclose()
    assert out.text == "read 1" and kinds(srv) == [["data"]]
    assert srv.stats.statuses == [200]  # no refused request on the way


def test_a_written_file_appears_under_its_name_only_whole(tmp_path):
    files = LocalFiles(tmp_path, "png")
    img = noise(33, 21)
    url, size = files.write(img)
    names = [p.name for p in files.folder.iterdir()]
    assert names == [url.rsplit("/", 1)[1]] and not names[0].startswith(".")
    assert (files.folder / names[0]).stat().st_size == size
    with Image.open(files.folder / names[0]) as back:
        assert back.convert("RGB").tobytes() == img.tobytes()
    files.close()
    assert not files.folder.exists()


# ------------------------------------------------------------------ folders left behind
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_start_sweeps_folders_of_dead_processes_only(tmp_path):
    dead = _dead_pid()
    prefix = encoding._folder_prefix
    stale = tmp_path / f"{prefix(dead)}abc"
    (stale / "sub").mkdir(parents=True)
    (stale / "sub" / "00000001.bmp").write_bytes(b"x" * 100)
    kept = [
        tmp_path / f"{prefix(os.getpid())}mine",  # this process: alive
        tmp_path / f"{prefix(1)}init",  # pid 1 is always alive
        tmp_path / f"regionfocus-media-{dead}-00000000-other",  # another host's or container's pids
        tmp_path / "regionfocus-media-legacy",  # no pid in the name: not ours to judge
        tmp_path / "unrelated",
    ]
    for folder in kept:
        folder.mkdir()
    link = tmp_path / f"{prefix(dead)}link"
    link.symlink_to(tmp_path / "unrelated")  # a link is never followed, nor removed
    if os.getuid() == 0:  # another user's folder (chown needs root, which the tests run as)
        foreign = tmp_path / f"{prefix(dead)}foreign"
        foreign.mkdir()
        os.chown(foreign, 12345, 12345)
        kept.append(foreign)
    files = LocalFiles(tmp_path)
    assert not stale.exists()
    assert all(folder.is_dir() for folder in kept) and link.is_symlink()
    assert files.folder.name.startswith(prefix(os.getpid()))
    files.close()


_CHILD = """
import signal, sys, time
from PIL import Image
from regionfocus.adapters.backends.encoding import LocalFiles
if sys.argv[2] == "app-handler":  # an application with its own SIGTERM handler keeps it
    def stop(signum, frame):
        raise SystemExit(3)
    signal.signal(signal.SIGTERM, stop)
files = LocalFiles(sys.argv[1])
image = Image.new("RGB", (64, 48))  # kept: its file lives as long as it does
files.write(image)
print(files.folder, signal.getsignal(signal.SIGTERM).__name__, flush=True)
if sys.argv[2] == "exit":
    sys.stdin.readline()  # until the test has seen the folder
    sys.exit(0)  # no close(): atexit removes the folder
time.sleep(60)
"""


def _child(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, Path, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path), mode],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    folder, handler = proc.stdout.readline().split()
    assert Path(folder).is_dir() and any(Path(folder).iterdir())
    return proc, Path(folder), handler


@pytest.mark.parametrize("mode", ["sigterm", "app-handler", "exit"])
def test_a_process_leaves_no_media_folder_on_sigterm_or_exit(tmp_path, mode):
    proc, folder, handler = _child(tmp_path, mode)
    try:
        if mode == "exit":
            proc.stdin.write("go\n")
            proc.stdin.flush()
        else:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate(timeout=30)  # reaped, pipes closed
    assert not folder.exists()
    if mode == "sigterm":  # ours, chained to the default: the process still dies of SIGTERM
        assert handler == "_on_sigterm" and code == -signal.SIGTERM
    elif mode == "app-handler":  # the application's handler stayed; its exit ran atexit
        assert handler == "stop" and code == 3
    else:
        assert code == 0


# ------------------------------------------------------------------ serve-command
def test_serve_command_binds_to_localhost_and_names_the_clients_default_folder(tmp_path, capsys):
    assert adapters_main(["serve-command", "--agent", "qwen2.5-vl", "--local-media-path"]) == 0
    argv = shlex.split(capsys.readouterr().out)
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    allowed = argv[argv.index("--allowed-local-media-path") + 1]
    assert allowed == default_local_media_dir() and Path(allowed).name == "regionfocus-media"
    assert allowed.rstrip("/") not in ("/dev/shm", "/tmp")
    files = LocalFiles()  # the client's default folder is the one the server is told
    try:
        assert files.folder.parent == Path(allowed).resolve()
    finally:
        files.close()
    explicit = shlex.split(serve_command("qwen2.5-vl", local_media_path=str(tmp_path)))
    assert explicit[explicit.index("--host") + 1] == "127.0.0.1"
