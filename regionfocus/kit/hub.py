"""Data sets from the Hugging Face Hub: ``--data hf:OWNER/NAME[@REVISION]``.

The set is fetched with ``huggingface_hub.snapshot_download`` into the Hub cache (``HF_HUB_CACHE``,
else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``), where every other Hub tool finds it too,
and read from its snapshot folder like a local ``--data DIR``. A run pins the commit the revision
resolved to (:attr:`HubData.pinned`, ``hf:OWNER/NAME@<40-hex sha>``) in its config.json; a rerun
into the same folder reads that commit again (:func:`pinned_revision`), so a branch that moved on
the Hub cannot mix two versions of the data in one run, and a snapshot already in the cache is
read without a request. ``HF_ENDPOINT`` (a mirror) and ``HF_TOKEN`` (gated sets) are read at the
call, as huggingface_hub reads them; the token is never printed.

Every failure is a ``ValueError`` naming the spec and what is wrong (the commands exit 2).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

PREFIX = "hf:"
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
INSTALL = "pip install huggingface_hub (or regionfocus[hub])"


@dataclass(frozen=True)
class HubSpec:
    """``repo_id``: OWNER/NAME; ``revision``: a branch, tag or commit (None: the default branch)."""

    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"{PREFIX}{self.repo_id}" + (f"@{self.revision}" if self.revision else "")


@dataclass(frozen=True)
class HubData:
    """A fetched set: ``path`` is its snapshot folder, ``commit`` the sha its revision resolved to."""

    path: Path
    repo_id: str
    commit: str

    @property
    def pinned(self) -> str:
        return f"{PREFIX}{self.repo_id}@{self.commit}"


def is_hub(text: str) -> bool:
    return text.startswith(PREFIX)


def parse_spec(text: str) -> HubSpec:
    """``hf:OWNER/NAME[@REVISION]`` as a :class:`HubSpec`. Raises ValueError naming the problem."""
    if not is_hub(text):
        raise ValueError(f"{text!r} is not a Hub data set (write hf:OWNER/NAME[@REVISION])")
    body = text[len(PREFIX) :].strip()
    repo_id, at, revision = body.partition("@")
    if not _REPO.fullmatch(repo_id) or "--" in repo_id or ".." in repo_id:
        raise ValueError(f"{text!r}: the data set must be named OWNER/NAME, e.g. hf:likaixin/ScreenSpot-Pro")
    if at and not revision.strip():
        raise ValueError(f"{text!r}: name a revision after '@' (a branch, tag or commit) or leave '@' out")
    return HubSpec(repo_id, revision.strip() or None)


def pinned_revision(spec: HubSpec, config_path: Path) -> HubSpec:
    """``spec`` at the commit a run folder's config.json pinned for the same set, when the spec
    names no revision of its own; else ``spec`` unchanged (a named revision that differs from the
    pinned one is for the run folder's own check to refuse)."""
    if spec.revision is not None or not config_path.is_file():
        return spec
    try:
        data = json.loads(config_path.read_text(encoding="utf-8")).get("identity", {}).get("data")
    except (OSError, ValueError, AttributeError):
        return spec  # the run folder reports a config it cannot read when it opens
    if isinstance(data, str) and is_hub(data):
        try:
            pinned = parse_spec(data)
        except ValueError:
            return spec
        if pinned.repo_id == spec.repo_id and pinned.revision and _SHA.fullmatch(pinned.revision):
            return pinned
    return spec


def _cache_dir() -> str | None:
    """The Hub cache as huggingface_hub would choose it, read now (it reads the variables once,
    at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    return None


def fetch(spec: HubSpec, *, progress: bool = True) -> HubData:
    """Download (or find in the cache) the data set ``spec`` names. Raises ValueError: the
    package missing, no such set, no such revision, a gated set without access, the Hub
    unreachable with no complete copy cached."""
    try:
        import huggingface_hub
        from huggingface_hub import errors
    except ModuleNotFoundError:
        raise ValueError(
            f"{spec}: reading a data set from the Hub needs huggingface_hub: {INSTALL}"
        ) from None
    endpoint = os.environ.get("HF_ENDPOINT") or None
    where = f" at {endpoint}" if endpoint else ""
    if not progress:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    try:
        path = huggingface_hub.snapshot_download(
            spec.repo_id,
            repo_type="dataset",
            revision=spec.revision,
            cache_dir=_cache_dir(),
            endpoint=endpoint,
        )
    except errors.RevisionNotFoundError:
        raise ValueError(
            f"{spec}: the Hub{where} has no revision {spec.revision!r} of this data set "
            "(name a branch, tag or commit it has)"
        ) from None
    except errors.GatedRepoError:
        raise ValueError(
            f"{spec}: the data set is gated: accept its terms on its Hub page, then set HF_TOKEN"
        ) from None
    except errors.RepositoryNotFoundError:
        raise ValueError(
            f"{spec}: no data set {spec.repo_id!r} on the Hub{where} (check OWNER/NAME; "
            "a private one needs HF_TOKEN)"
        ) from None
    except (errors.LocalEntryNotFoundError, getattr(errors, "IncompleteSnapshotError", OSError)) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(
            f"{spec}: could not reach the Hub{where} and no complete copy is in the cache ({first})"
        ) from None
    except errors.HfHubHTTPError as e:
        raise ValueError(f"{spec}: the Hub{where} refused the download ({str(e).splitlines()[0]})") from None
    folder = Path(path)
    commit = folder.name
    if not _SHA.fullmatch(commit):  # snapshot_download returns snapshots/<commit>
        raise ValueError(f"{spec}: the Hub returned {folder}, not a snapshot folder named by its commit")
    return HubData(folder, spec.repo_id, commit)
