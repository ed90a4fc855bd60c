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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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
        raise UsageError(f"{self.prog}: error: {message}")


def compare_parser(prog: str, description: str) -> Parser:
    """Every harness's ``compare``: two run folders, RUN_A and RUN_B."""
    p = Parser(prog=prog, description=description)
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    return p


def merge_parser(prog: str, description: str) -> Parser:
    """Every harness's ``merge``: the folder to write, OUT, and the shards' folders."""
    p = Parser(prog=prog, description=description)
    p.add_argument("out", metavar="OUT")
    p.add_argument("shards", nargs="+", metavar="SHARD_DIR")
    return p


@dataclass(frozen=True)
class Subcommand:
    """``PROG NAME ARGS``: ``run(argv)`` returns its exit code; the first line of ``run``'s
    docstring is its summary in PROG's ``--help``, after ``args``, its arguments as typed."""

    run: Callable[[list[str]], int]
    args: str = ""

    @property
    def summary(self) -> str:
        doc = (self.run.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


def subcommand_help(prog: str, table: Mapping[str, Subcommand]) -> str:
    """One aligned line per subcommand: how it is typed, then its summary."""
    typed = {name: f"{prog} {name} {sub.args}".rstrip() for name, sub in table.items()}
    width = max(map(len, typed.values()), default=0)
    return "\n".join(f"  {typed[name]:<{width}}  {sub.summary}" for name, sub in table.items())


def dispatch(
    prog: str,
    argv: Sequence[str],
    table: Mapping[str, Subcommand],
    default: Callable[[list[str]], int],
    unit: str = "samples",
) -> int:
    """The exit code of ``argv`` run through :func:`run_command`: a first word naming a
    subcommand of ``table`` runs it on the rest (its errors named ``PROG NAME``), anything else
    goes whole to ``default``."""
    argv = list(argv)
    if argv and argv[0] in table:
        name, rest = argv[0], argv[1:]
        return run_command(f"{prog} {name}", lambda: table[name].run(rest), unit)
    return run_command(prog, lambda: default(argv), unit)


def default_out(harness: str, agent: str) -> str:
    """Every harness's run folder when ``--out`` is not given."""
    return f"runs/{harness}-{agent}"


def at_least_one(flag: str, value: int | None) -> None:
    """Bad input unless ``value`` (when given) is a positive count."""
    if value is not None and value < 1:
        raise ValueError(f"{flag} must be >= 1, got {value}")


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
