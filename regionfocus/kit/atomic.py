"""Files a reader never sees half of, in strict JSON and valid UTF-8.

Every file a harness writes beside its record log (configuration, results, summaries, reports,
screenshots) goes through :func:`atomic_write_bytes`: written beside its final name, fsynced,
then renamed over it, so a reader sees the old file or the new one. A model or a page wrote most
of what goes into them, so :func:`json_safe` makes any value strict JSON in valid UTF-8 first.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import secrets
from pathlib import Path
from typing import Any

# What a write fails with when the disk has no room: full, over quota, past a file-size limit.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, fsync it, then rename over ``path``:
    readers see the old file or the new one, never half of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # Created 0666 so the kernel applies the process's umask itself (results are meant to be
    # shared; mkstemp's 0600 would need the umask, and reading it means setting it, a race
    # with other threads). A file being replaced keeps its own mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if path.exists():
                os.chmod(tmp, path.stat().st_mode & 0o777)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError) and e.errno in NO_ROOM and e.filename is None:
            raise OSError(e.errno, e.strerror, str(path)) from None  # a failed write names no file
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, data: Any, *, ascii: bool = False) -> None:
    """Indented JSON. ``ascii=True`` escapes every non-ASCII character as ``\\uXXXX``
    (json.dump's default, which the official WebVoyager runner keeps in its message files).
    Strict JSON in valid UTF-8 whatever the data holds (:func:`json_safe`)."""
    atomic_write_text(path, json.dumps(json_safe(data), indent=2, ensure_ascii=ascii, allow_nan=False) + "\n")


def atomic_save_png(path: str | Path, image: Any) -> None:
    """A PIL image as PNG, atomically (screenshots and views)."""
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    atomic_write_bytes(path, buf.getvalue())


def json_safe(value: Any) -> Any:
    """``value`` with what strict JSON and UTF-8 cannot hold made harmless: non-finite floats
    become None, lone surrogates in strings (and keys) become U+FFFD. A model or a page wrote
    most of a record, so either can turn up anywhere in it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        return {(valid_text(k) if isinstance(k, str) else k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate (what a ``\\ud800`` escape in JSON decodes to) replaced
    by U+FFFD, so it encodes as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # surrogates: the only code points UTF-8 refuses; one U+FFFD each
        return _SURROGATE.sub("\ufffd", text)


def lone_surrogate(text: str) -> str | None:
    """Where ``text`` holds a lone surrogate, described for an error message ("\\ud800 at
    character 12"), or None. Valid JSON (``"\\ud800"``) decodes to one; no request can carry it
    (UTF-8 has no form for it), so a data set's text that holds one is refused at load."""
    m = _SURROGATE.search(text)
    return None if m is None else f"\\u{ord(m.group()):04x} at character {m.start()}"
