"""How a harness command ends.

Exit codes (every harness's ``--help`` lists them):

- 0: done; the last lines name the errors and partial samples or tasks, if any;
- 2: bad input (one message naming it, no traceback): flags, data, a run folder with other
  settings, a record of ``records.jsonl`` that breaks the log's contract (file, line, field),
  a disk with no room left (the folder named; rerunning the command resumes);
- 3: the run finished but every sample or task in it failed: nothing was measured (the
  errors are recorded; fix the cause, then rerun with ``--retry-errors``);
- 130: interrupted (the run folder stays resumable).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .runlog import NO_ROOM

ALL_FAILED = 3

EXIT_CODES = """\
exit codes:
  0    done (the last lines count the errors and partial {unit}, if any)
  2    bad input, named in one line: flags, data, a run folder with other settings, a line of
       records.jsonl that breaks the log's contract, a disk with no room left (rerun to resume)
  3    every {one} failed: nothing was measured (fix the cause, rerun with --retry-errors)
  130  interrupted: finished {unit} are saved; rerun the same command to resume
"""


def exit_codes(unit: str = "samples") -> str:
    """The exit-code paragraph of a harness's ``--help`` (its epilog)."""
    return EXIT_CODES.format(unit=unit, one=unit.rstrip("s"))


class UsageError(Exception):
    """Bad flags: the message is already the whole line to print."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so :func:`run_command` owns the exit codes."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def ending(
    records: Sequence[dict[str, Any]], unit: str = "samples", n_selected: int | None = None
) -> tuple[str, int]:
    """The last line of a run (or of a ``report``) and the exit code it earns: how many of the
    selected ``unit`` finished, the errors (scored wrong, kept in the denominator) and partial
    ones, and whether every one failed (:data:`ALL_FAILED`)."""
    n = len(records)
    errors = [r for r in records if r.get("status") == "error"]
    partial = sum(r.get("status") == "partial" for r in records)
    of = f" of {n_selected} selected" if n_selected is not None and n_selected != n else ""
    rest = (
        " (rerunning the run's command finishes the rest)"
        if n_selected is not None and n_selected > n
        else ""
    )
    head = f"{n}{of} {unit if n != 1 or of else unit.rstrip('s')} finished{rest}"
    if n and len(errors) == n:
        first = f"{errors[0].get('id')}: {errors[0].get('error') or 'no message'}"
        return (
            f"{head}: every one failed, nothing was measured (first: {first}). "
            "Fix the cause, then rerun with --retry-errors",
            ALL_FAILED,
        )
    text = f"{head}: {len(errors)} error(s) (scored wrong, kept in the denominator), {partial} partial"
    if errors or partial:
        text += "; --retry-errors reruns them"
    return text, 0


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
    except OSError as e:
        print(f"{prog}: error: {no_room_message(e, unit) if e.errno in NO_ROOM else e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2


def no_room_message(e: OSError, unit: str = "samples") -> str:
    """A write the disk refused for lack of room, with where and what to do."""
    where = f"writing {e.filename}" if e.filename else "writing the run folder"
    return (
        f"no room left on the disk {where} ({e.strerror}); finished {unit} are saved: free some "
        "space, then rerun the same command to resume"
    )
