"""The local transport (issue 16): images written once to a shared folder and sent as file://
URLs, against a real HTTP server that reads the file it is sent; the fallback to data URLs
when the server refuses local files; per-request encoder cost; images released once encoded."""

from __future__ import annotations

import gc
import logging
import weakref
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
from PIL import Image

from regionfocus.adapters.backends.openai_http import BackendError, OpenAIBackend
from tests.chat_server import ChatServer, Reply, request_images

REFUSAL = "Cannot load local files without `--allowed-local-media-path`."


def image_urls(body) -> list[str]:
    return [
        p["image_url"]["url"]
        for m in body["messages"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


class FileReadingServer:
    """Answers like vLLM started with ``--allowed-local-media-path root``: reads each file://
    image from disk (refusing paths outside ``root`` or, with ``root=None``, any file URL, with
    vLLM's HTTP 400), decodes data URLs, and answers with what it read."""

    def __init__(self, root: Path | None):
        self.root = root
        self.read: list[tuple[str, tuple[int, int], bytes]] = []

    def __call__(self, body):
        for url in image_urls(body):
            if url.startswith("file://"):
                path = Path(unquote(urlparse(url).path))
                if self.root is None or self.root.resolve() not in path.resolve().parents:
                    return Reply.client_error(400, REFUSAL)
                with Image.open(path) as im:
                    im = im.convert("RGB")
                self.read.append(("file", im.size, im.tobytes()))
        if not any(u.startswith("file://") for u in image_urls(body)):
            for im in request_images(body):
                im = im.convert("RGB")
                self.read.append(("data", im.size, im.tobytes()))
        return f"read {len(self.read)}"


def msg(text: str, *images: Image.Image) -> list[dict]:
    parts = [{"type": "image", "image": im} for im in images] + [{"type": "text", "text": text}]
    return [{"role": "user", "content": parts}]


def noise(w: int, h: int, seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["bmp", "png"])
async def test_server_reads_the_file_it_is_sent_pixel_for_pixel(tmp_path, fmt):
    reader = FileReadingServer(tmp_path)
    shot, view = noise(301, 177, 1), noise(64, 48, 2)
    with ChatServer(reader) as srv:
        b = OpenAIBackend(
            [srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path), local_format=fmt
        )
        first = await b.complete(msg("a", shot))
        second = await b.complete(msg("b", shot, view))
        assert b.local.live >= 1  # the screenshot's file stays while the screenshot lives
        folder = b.local.folder
        urls = [image_urls(body) for body in srv.stats.bodies]
        await b.aclose()
    assert [k for k, _, _ in reader.read] == ["file", "file", "file"]
    assert reader.read[0][1:] == (shot.size, shot.tobytes())
    assert reader.read[2][1:] == (view.size, view.tobytes())
    assert urls[0][0] == urls[1][0], "the screenshot is written once and sent twice"
    assert first.usage.image_bytes > 0 and first.usage.encode_s is not None
    assert second.usage.encode_s is not None
    assert not folder.exists() or not any(folder.iterdir())  # aclose removed what was left


@pytest.mark.slow
async def test_files_go_when_their_image_and_requests_are_gone(tmp_path):
    with ChatServer(FileReadingServer(tmp_path)) as srv:
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        img = noise(50, 40)
        messages = msg("a", img)
        await b.complete(messages)
        # The message now carries the file's URL instead of the image: the image can go.
        assert messages[0]["content"][0]["type"] == "image_url"
        ref = weakref.ref(img)
        del img
        gc.collect()
        assert ref() is None
        assert b.local.live == 1  # the message still holds its file (it may be sent again)
        await b.complete(messages)  # resent: the same file, still there
        del messages
        gc.collect()
        assert b.local.live == 0
        await b.aclose()


@pytest.mark.slow
async def test_refused_file_urls_fall_back_to_data_urls_once_and_for_all(tmp_path, caplog):
    reader = FileReadingServer(None)  # a server started without --allowed-local-media-path
    shot = noise(120, 90, 3)
    with ChatServer(reader) as srv, caplog.at_level(logging.WARNING):
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        out = await b.complete(msg("a", shot))
        again = await b.complete(msg("b", noise(30, 30, 4)))
        statuses = list(srv.stats.statuses)
        kinds = [[u.split(":", 1)[0] for u in image_urls(body)] for body in srv.stats.bodies]
        await b.aclose()
    assert out.text == "read 1" and again.text == "read 2"
    assert statuses == [400, 200, 200]
    assert kinds == [["file"], ["data"], ["data"]]  # after the refusal, data URLs directly
    assert reader.read[0] == ("data", shot.size, shot.tobytes())  # PNG: lossless
    warnings = [r for r in caplog.records if "file://" in r.getMessage()]
    assert len(warnings) == 1 and "--allowed-local-media-path" in warnings[0].getMessage()


@pytest.mark.slow
async def test_a_400_that_data_urls_also_get_is_an_error_and_keeps_local_on(tmp_path):
    with ChatServer(Reply.client_error(400, "prompt too long")) as srv:
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        with pytest.raises(BackendError, match="prompt too long"):
            await b.complete(msg("a", noise(20, 20)))
        assert b._local_ok  # the refusal was not about file:// URLs
        assert len(srv.stats.bodies) == 2
        await b.aclose()


def test_bad_local_settings_are_named(tmp_path):
    with pytest.raises(ValueError, match="local image format"):
        OpenAIBackend(["http://x/v1"], model="m", local_media_dir=str(tmp_path), local_format="gif")
    with pytest.raises(ValueError, match="does not exist"):
        OpenAIBackend(["http://x/v1"], model="m", local_media_dir=str(tmp_path / "missing"))


@pytest.mark.slow
async def test_data_url_requests_report_encoder_cost_and_release_the_image():
    with ChatServer("ok") as srv:
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, image_format="png")
        img = noise(200, 100)
        messages = msg("a", img)
        out = await b.complete(messages)
        cached = await b.complete(msg("b", img))
        await b.aclose()
    assert out.usage.image_bytes == len(messages[0]["content"][0]["image_url"]["url"])
    assert out.usage.encode_s > 0
    assert cached.usage.image_bytes == out.usage.image_bytes  # same image, same bytes sent
    assert messages[0]["content"][0]["type"] == "image_url"  # the PIL image was let go


@pytest.mark.slow
async def test_a_static_predict_runs_in_full_over_file_urls(tmp_path):
    """The real adapter and agent over the local transport: 8 requests, every image a file
    the server reads; the round's images are freed and their files removed at the end."""
    from benchmarks._common import family_reply
    from regionfocus import RegionFocusAgent
    from regionfocus.adapters.registry import get_adapter

    reader = FileReadingServer(tmp_path)

    def respond(body):
        reader(body)  # reads (and checks) every file it is sent
        return family_reply("qwen2.5-vl", body)

    with ChatServer(respond) as srv:
        b = OpenAIBackend([srv.base_url], model="m", max_retries=0, local_media_dir=str(tmp_path))
        adapter = get_adapter("qwen2.5-vl", backend=b, max_pixels=1003520)
        shot = noise(1600, 900, 5)
        pred = await RegionFocusAgent(adapter).predict(shot, "open it")
        kinds = {u.split(":", 1)[0] for body in srv.stats.bodies for u in image_urls(body)}
        folder = b.local.folder
        await b.aclose()
    assert len(srv.stats.bodies) == 8 and kinds == {"file"}
    assert pred.rounds and pred.rounds[0].choice_method == "model"
    assert len(reader.read) == 8  # the focal request re-sent the screenshot's file
    assert reader.read[0][1] == adapter.input_size(shot.size)
    assert not folder.exists()
