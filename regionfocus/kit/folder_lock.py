"""One writer per run folder: an advisory lock on ``RUN_DIR/.lock`` held for a run's lifetime."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from .atomic import json_safe
from .records import RunFolderError

LOCK = ".lock"


class RunFolderBusy(RunFolderError):
    """Another process holds the run folder's lock."""


class FolderLock:
    """An exclusive advisory lock on ``root/.lock`` (``flock``), held until :meth:`release` or
    the process ends (the kernel drops it even on SIGKILL, so a stale lock cannot block a
    resume). The file names the holder (pid, host, start time) for the message a second
    process gets; not its command line, which may carry a credential. Where ``fcntl`` does not
    exist (Windows) nothing is locked."""

    def __init__(self, root: Path, fresh_hint: str = "--out"):
        self.path = root / LOCK
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunFolderBusy(
                f"{root} is in use by another run ({holder}); two writers would corrupt its "
                f"records. Wait for that run to finish or stop it, then rerun to resume, or choose "
                f"another folder with {fresh_hint} DIR"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.write(fd, (json.dumps(json_safe(info)) + "\n").encode("utf-8"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            # Closing drops the flock; the file stays (unlinking it would race a process that
            # has opened it and is about to lock it).
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "holder unknown"
    if info["pid"] == os.getpid() and info.get("host") == socket.gethostname():
        return f"pid {info['pid']}, this process: close the folder it opened first"
    where = f" on {info['host']}" if info.get("host") and info["host"] != socket.gethostname() else ""
    since = f", since {info['started']}" if info.get("started") else ""
    return f"pid {info['pid']}{where}{since}"
