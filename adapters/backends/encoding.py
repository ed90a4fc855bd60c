"""Encode PIL images for transport as ``data:`` URLs (base64), without resizing them.

The adapter has already resized each image to exactly the size its model sees, so encoding must
keep every pixel: PNG (lossless, the default) keeps the answer's frame and content exact; JPEG and
WebP trade fidelity for smaller requests.

One RegionFocus round sends the same screenshot in many requests (the shared prefix that lets a
server's prefix cache work); :class:`ImageEncoder` encodes it once. Its cache is keyed by the image
object's identity and size, and each entry holds a weak reference to its image, so a new image
that happens to reuse a freed object's id never gets a stale encoding. Images must not be drawn
on in place after they were first sent (adapters draw stars on copies).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import hashlib
import io
import itertools
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from PIL import Image

from regionfocus.adapters.backends import png
from regionfocus.adapters.serving import MEDIA_FOLDER_NAME, default_local_media_dir

_FORMATS = {"png": ("PNG", "image/png"), "jpeg": ("JPEG", "image/jpeg"), "webp": ("WEBP", "image/webp")}
_ALIASES = {"jpg": "jpeg"}


def normalize_format(image_format: str) -> str:
    """``"png"``, ``"jpeg"`` (alias ``"jpg"``) or ``"webp"``; raises ValueError naming the input."""
    name = _ALIASES.get(image_format.lower(), image_format.lower())
    if name not in _FORMATS:
        raise ValueError(f"image_format must be one of png, jpeg, webp; got {image_format!r}")
    return name


class DataUrl(str):
    """A data URL this module made: ASCII base64 that JSON never escapes, so a request body can
    splice it in without scanning it (:mod:`.body_json`)."""

    __slots__ = ()


def _data_url(mime: str, data: bytes) -> DataUrl:
    return DataUrl(b"".join((b"data:", mime.encode(), b";base64,", base64.b64encode(data))).decode("ascii"))


def encode_data_url(image: Image.Image, image_format: str = "png", quality: int = 90) -> DataUrl:
    """``data:image/<fmt>;base64,...`` for ``image`` at its own size (W, H unchanged).

    ``quality`` (1-100) applies to JPEG and WebP only. Modes a format cannot store are converted
    (RGBA/P to RGB for JPEG), never the size.
    """
    name = normalize_format(image_format)
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be in 1..100; got {quality}")
    pil_format, mime = _FORMATS[name]
    img = image
    if name == "jpeg" and img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    elif name == "png" and img.mode not in ("RGB", "RGBA", "L", "LA", "P", "1", "I", "I;16"):
        img = img.convert("RGB")
    elif name == "webp" and img.mode not in ("RGB", "RGBA"):
        img = img.convert("RGBA" if "A" in img.mode else "RGB")
    if name == "png":
        data = png.encode(img)  # ISA-L deflate; None for a mode it does not take
        if data is not None:
            return _data_url(mime, data)
    if name == "jpeg" and img.mode == "RGB":
        data = _jpeg_without_gil(img, quality)
        if data is not None:
            return _data_url(mime, data)
    buf = io.BytesIO()
    if name == "png":
        # compress_level 1: screenshots compress well already; level 6 costs several times the CPU
        # for a few percent of bytes on a local link.
        img.save(buf, format=pil_format, compress_level=1)
    else:
        img.save(buf, format=pil_format, quality=quality)
    return _data_url(mime, buf.getvalue())


def _jpeg_without_gil(img: Image.Image, quality: int) -> bytes | None:
    """The JPEG Pillow writes (same libjpeg-turbo settings: baseline, 4:2:0, no optimisation;
    the same bytes, tests/test_backend_http.py), from OpenCV, which lets go of the GIL while it
    encodes: Pillow holds it for the whole ~30 ms of a 4K image, so concurrent requests could
    not encode on more than one core (benchmarks/throughput.py)."""
    try:
        import cv2
        import numpy as np
    except ImportError:  # pragma: no cover - opencv-python-headless is a dependency
        return None
    bgr = cv2.cvtColor(np.asarray(img), cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    return buf.tobytes() if ok else None


@dataclass
class _Entry:
    ref: weakref.ref
    url: str


class ImageEncoder:
    """Data-URL encoder with a small LRU cache (``cache_size`` images) shared across requests.

    Thread-safe; ``hits``/``misses`` count cache use (the tests and benchmarks read them).
    """

    def __init__(self, image_format: str = "png", quality: int = 90, cache_size: int = 8) -> None:
        self.image_format = normalize_format(image_format)
        if not 1 <= quality <= 100:
            raise ValueError(f"quality must be in 1..100; got {quality}")
        self.quality = quality
        self.cache_size = max(0, int(cache_size))
        self._cache: OrderedDict[tuple[int, tuple[int, int], str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[tuple[int, tuple[int, int], str], threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def data_url(self, image: Image.Image) -> str:
        key = (id(image), image.size, image.mode)
        with self._lock:
            url = self._lookup(key, image)
            if url is not None:
                return url
            # Concurrent requests of one round all carry the same new screenshot: the first
            # encodes it while the others wait on the same key instead of encoding it again.
            key_lock = self._pending.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                url = self._lookup(key, image)
            if url is None:
                url = encode_data_url(image, self.image_format, self.quality)
                with self._lock:
                    self.misses += 1
                    if self.cache_size:
                        self._cache[key] = _Entry(weakref.ref(image), url)
                        self._cache.move_to_end(key)
                        while len(self._cache) > self.cache_size:
                            self._cache.popitem(last=False)
        with self._lock:
            if self._pending.get(key) is key_lock and not key_lock.locked():
                del self._pending[key]
        return url

    def _lookup(self, key: tuple[int, tuple[int, int], str], image: Image.Image) -> str | None:
        entry = self._cache.get(key)
        if entry is None or entry.ref() is not image:
            return None
        self._cache.move_to_end(key)
        self.hits += 1
        return entry.url

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


# ------------------------------------------------------------------ local transport (file:// URLs)
_LOCAL_FORMATS = {"bmp": ("BMP", ".bmp"), "png": ("PNG", ".png")}


@dataclass
class _LocalFile:
    path: Path
    refs: int


class _Hold:
    """See :meth:`LocalFiles.hold`."""


class LocalFiles:
    """Images written once to a folder the server reads, sent as ``file://`` URLs.

    For a client on the same machine as the server: vLLM reads such URLs when started with
    ``--allowed-local-media-path`` naming a folder that holds ``folder`` (see
    ``regionfocus serve-command``). ``image_format``: ``bmp`` (uncompressed: a memory copy to
    write, a memory copy to read; the default) or ``png`` (the fast lossless encoder, ~4x fewer
    bytes on disk). Both are lossless. Each file is written in a fresh subfolder of ``folder``
    (``/dev/shm/regionfocus-media`` by default, created if missing: memory, never a disk) and
    removed when nothing needs it any more: the image it was written from is gone and no
    request that carries it is in flight (reference counts: the image holds one until it is
    collected, each request one until its answer). :meth:`close` removes whatever is left.

    Files are written under a temporary name and renamed, so the server never reads half a
    file and a failed write leaves nothing. The subfolder goes at interpreter exit and on
    SIGTERM too, and the subfolders of processes that died without a word (SIGKILL, OOM) are
    swept when the next one starts (see :func:`_sweep_stale`).
    """

    def __init__(self, folder: str | os.PathLike | None = None, image_format: str = "bmp") -> None:
        fmt = image_format.lower()
        if fmt not in _LOCAL_FORMATS:
            raise ValueError(
                f"local image format must be one of {', '.join(_LOCAL_FORMATS)}; got {image_format!r}"
            )
        base = Path(folder if folder is not None else default_local_media_dir())
        if base.name == MEDIA_FOLDER_NAME and not base.exists():
            # The default (serve-command's too): ours to create. Any other folder is the
            # user's, and a missing one is more likely a typo than a wish.
            try:
                base.mkdir(exist_ok=True)
            except OSError as e:
                raise ValueError(
                    f"could not create the local media folder {str(base)!r}: {e.strerror}"
                ) from None
        if not base.is_dir():
            raise ValueError(f"local media folder {str(base)!r} does not exist or is not a folder")
        _sweep_stale(base)
        self.folder = Path(tempfile.mkdtemp(prefix=_folder_prefix(os.getpid()), dir=base)).resolve()
        _track(self.folder)
        self.image_format = fmt
        self._files: dict[str, _LocalFile] = {}
        self._lock = threading.Lock()
        self._names = itertools.count()

    def write(self, image: Image.Image) -> tuple[str, int]:
        """Write ``image`` once; returns (file URL, bytes written). The image holds a reference
        until it is collected. Raises OSError (a full or read-only folder) with nothing left
        behind; the caller sends the image another way."""
        pil_format, suffix = _LOCAL_FORMATS[self.image_format]
        name = f"{next(self._names):08d}{suffix}"
        path, tmp = self.folder / name, self.folder / f".{name}.tmp"
        img = image if image.mode in ("RGB", "RGBA", "L") else image.convert("RGB")
        # A temporary name first: a write cut short (a full /dev/shm) must leave no half file,
        # least of all under a name a request could carry.
        try:
            if self.image_format == "png":
                tmp.write_bytes(png.encode(img))  # img is L, RGB or RGBA: the writer takes each
            else:
                img.save(tmp, format=pil_format)
            size = tmp.stat().st_size
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise
        url = path.as_uri()
        with self._lock:
            self._files[url] = _LocalFile(path, 1)
        weakref.finalize(image, self.release, url)
        return url, size

    def owns(self, url: str) -> bool:
        with self._lock:
            return url in self._files

    def acquire(self, url: str) -> bool:
        """A request carrying ``url`` holds it until :meth:`release`; False if unknown/gone."""
        with self._lock:
            f = self._files.get(url)
            if f is None:
                return False
            f.refs += 1
            return True

    def release(self, url: str) -> None:
        with self._lock:
            f = self._files.get(url)
            if f is None:
                return
            f.refs -= 1
            if f.refs > 0:
                return
            del self._files[url]
        f.path.unlink(missing_ok=True)

    def hold(self, url: str) -> object | None:
        """A token that keeps ``url``'s file until the token is collected (put in a message
        part that stands in for the image, so a resent message still finds its file)."""
        if not self.acquire(url):
            return None
        token = _Hold()
        weakref.finalize(token, self.release, url)
        return token

    def read(self, url: str) -> Image.Image:
        """The image behind one of our file URLs (for the data-URL fallback)."""
        path = Path(unquote(urlparse(url).path))
        with Image.open(path) as im:
            return im.convert("RGB") if im.mode not in ("RGB", "RGBA", "L") else im.copy()

    @property
    def live(self) -> int:
        """Files still on disk (tests and benchmarks read it)."""
        with self._lock:
            return len(self._files)

    def close(self) -> None:
        with self._lock:
            self._files = {}
        _untrack(self.folder)
        # The whole subfolder: it is ours alone, and a write cut short may have left a file.
        shutil.rmtree(self.folder, ignore_errors=True)


# ------------------------------------------------------------------ media folders a process leaves
# A 4K screenshot is ~25 MB as BMP and a sample in flight holds several: folders left behind
# fill /dev/shm (memory) until reboot. Each process names its subfolders after its pid and
# removes them at exit and on SIGTERM; the next process sweeps those of processes that are gone.
_NAME = re.compile(r"regionfocus-media-(\d+)-([0-9a-f]{8})-")
_live: dict[Path, int] = {}  # folder -> pid of the process that made it (a fork inherits the dict)
_atexit_installed = False
_sigterm_installed = False
_hooks_lock = threading.Lock()


def _folder_prefix(pid: int) -> str:
    return f"regionfocus-media-{pid}-{_pid_space()}-"


def _pid_space() -> str:
    """Which pids a folder name's pid is one of: this boot of this host and this pid namespace.
    A folder left by another container or host sharing the parent folder carries another
    tag, and is never swept on the strength of a pid that means nothing here."""
    parts = []
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    except OSError:
        parts.append("")
    try:
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        parts.append("")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    """False only when no process has ``pid`` (someone else's process is alive too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, another user's; anything else: keep its folder
        return True
    return True


def _sweep_stale(base: Path) -> None:
    """Remove the subfolders of ``base`` that processes of this pid space left behind: named
    after a pid no process has, owned by us, real folders (not links)."""
    space, me = _pid_space(), os.getpid()
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        m = _NAME.match(entry.name)
        if m is None or m.group(2) != space or int(m.group(1)) == me or _pid_alive(int(m.group(1))):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            shutil.rmtree(entry.path, ignore_errors=True)


def _track(folder: Path) -> None:
    """Remove ``folder`` at exit and on SIGTERM unless :meth:`LocalFiles.close` did first."""
    global _atexit_installed
    with _hooks_lock:
        _live[folder] = os.getpid()
        if not _atexit_installed:
            atexit.register(_remove_live)
            _atexit_installed = True
        _install_sigterm()


def _untrack(folder: Path) -> None:
    with _hooks_lock:
        _live.pop(folder, None)


def _remove_live() -> None:
    """Remove this process's folders. No lock: it also runs from the SIGTERM handler, which may
    interrupt a thread holding it; ``list`` of a dict is one step under the GIL."""
    me = os.getpid()
    for folder, pid in list(_live.items()):
        if pid == me:  # a forked child inherits the dict, not the folders
            shutil.rmtree(folder, ignore_errors=True)
            _live.pop(folder, None)


def _install_sigterm() -> None:
    """Our SIGTERM handler, only where SIGTERM still kills without a word (the default): an
    application that handles or ignores SIGTERM keeps its own, and its exit runs atexit. Signal
    handlers can only be set from the main thread; elsewhere a later LocalFiles tries again."""
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError, AttributeError):  # no SIGTERM, or an embedded interpreter
        return
    _sigterm_installed = True


def _on_sigterm(signum: int, frame: object) -> None:
    """Remove our folders, then die of the signal as the default disposition would (exit
    status and all), so whoever sent it sees what it expects."""
    _remove_live()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
