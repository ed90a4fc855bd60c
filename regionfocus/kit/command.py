"""How a harness command ends: exit 0 when done, 2 on bad input (one message naming it, no
traceback), 130 when interrupted (the run folder stays resumable)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


class UsageError(Exception):
    """Bad flags: the message is already the whole line to print."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so :func:`run_command` owns the exit codes."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def run_command(prog: str, body: Callable[[], int], unit: str = "samples") -> int:
    """``body()``'s exit code, with bad input and Ctrl-C turned into the codes above. ``unit``:
    what a run saves as it goes ("samples", "episodes"), for the interrupt message."""
    try:
        return body()
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished {unit} are saved; rerun the same command to resume", file=sys.stderr)
        return 130
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return 2
    except SystemExit as e:  # --help and --version
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    except (ValueError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
