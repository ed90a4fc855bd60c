"""The recommended ``vllm serve`` line per family (docs/ARCHITECTURE.md §5): the family's own
``checkpoint`` and ``serve_flags`` (class attributes, read through the registry).
"""

from __future__ import annotations

import os
import shlex
import tempfile

from regionfocus.adapters import registry

# The folder of the local transport: client files go in subfolders of it, and it is all the
# server may read. A dedicated folder, never /dev/shm itself: a server allowed to read
# /dev/shm reads every other program's shared memory files there too.
MEDIA_FOLDER_NAME = "regionfocus-media"


def default_local_media_dir() -> str:
    """``/dev/shm/regionfocus-media`` (memory, never a disk), or the same name in the temp
    folder on a system without /dev/shm."""
    parent = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(parent, MEDIA_FOLDER_NAME)


def serve_command(
    adapter_name: str,
    model_path: str | None = None,
    local_media_path: str | None = None,
    *,
    data_parallel: int | None = None,
    nodes: list[str] | None = None,
) -> str:
    """A shell line that starts vLLM's OpenAI-compatible server for ``adapter_name``.

    The adapter resizes images itself to a size the server's processor keeps as is, so no
    pixel flags are needed; send temperature 0 explicitly (the adapters do).

    ``local_media_path``: a folder the server may read images from
    (``--allowed-local-media-path``), for a client on the same machine that sends images as
    ``file://`` URLs (``regionfocus screenspot-pro --local-media-dir`` under that folder): no
    encoding and no base64 on either side. vLLM refuses file URLs outside that folder; the
    client then falls back to data URLs. The server is then bound to 127.0.0.1: one that reads
    local files must not take requests from the network, which could ask it for any file of
    that folder.

    ``data_parallel``: replicas of the model on this node's GPUs behind one port (vLLM's own
    ``--data-parallel-size``, balanced by vLLM). ``nodes``: the URLs of several such servers;
    adds the vllm-router line that fronts them: ``sticky_least_loaded`` puts each X-Session-ID
    the client sends (a sample) on the least-loaded replica and keeps it there, so one sample's
    requests meet their screenshot in one replica's caches (``consistent_hash``, by the id's
    hash, ignores load: 78 % of the throughput at 4 servers, BENCHMARKS.md)."""
    known = registry.served_families()
    facts = registry.facts(adapter_name) if adapter_name.strip().lower() in known else None
    if facts is None:
        raise ValueError(
            f"no server needed or known for adapter {adapter_name!r}; serve-command knows: {', '.join(known)}"
        )
    model = model_path or facts.checkpoint
    local = (
        ["--host", "127.0.0.1", "--allowed-local-media-path", local_media_path] if local_media_path else []
    )
    if local_media_path and nodes:
        raise ValueError(
            "--local-media-path serves a client on the same machine; a router fronts other nodes"
        )
    dp = ["--data-parallel-size", str(data_parallel)] if data_parallel and data_parallel > 1 else []
    line = shlex.join(["vllm", "serve", model, *facts.serve_flags, *dp, *local])
    if not nodes:
        return line
    router = ["vllm-router", "--host", "0.0.0.0", "--port", "30000", "--policy", "sticky_least_loaded"]
    return (
        f"# on each node ({', '.join(nodes)}):\n{line}\n# on the router's host (pip install vllm-router); "
        f"clients use --base-url http://ROUTER:30000/v1\n{shlex.join([*router, '--worker-urls', *nodes])}"
    )
