"""A run keeps freed image buffers for reuse, unless the user set the allocator up already."""

from __future__ import annotations

import os

import pytest
from PIL import Image

from regionfocus.kit import allocator


@pytest.fixture
def fresh(monkeypatch):
    before = Image.core.get_blocks_max()
    monkeypatch.setattr(allocator, "_done", False)
    monkeypatch.delenv("PILLOW_BLOCKS_MAX", raising=False)
    Image.core.set_blocks_max(0)
    yield
    Image.core.set_blocks_max(before)


def test_pillow_keeps_up_to_the_cap_of_freed_blocks(fresh):
    allocator.keep_freed_buffers(cap_mb=64)
    assert Image.core.get_blocks_max() == (64 << 20) // Image.core.get_block_size()
    allocator.keep_freed_buffers(cap_mb=1024)  # once per process
    assert Image.core.get_blocks_max() == (64 << 20) // Image.core.get_block_size()


def test_the_users_own_setting_wins(fresh, monkeypatch):
    monkeypatch.setenv("PILLOW_BLOCKS_MAX", "3")
    allocator.keep_freed_buffers()
    assert Image.core.get_blocks_max() == 0  # left as the process had it


@pytest.mark.parametrize(
    ("environ", "tuned"),
    [
        ({}, False),
        ({"MALLOC_ARENA_MAX": "2"}, True),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}, True),
        ({"GLIBC_TUNABLES": "glibc.rtld.nns=4:glibc.malloc.mmap_threshold=1"}, True),
        ({"GLIBC_TUNABLES": "glibc.rtld.nns=4"}, False),  # tunables of other parts: ours to set
    ],
)
def test_malloc_settings_of_the_user_are_recognised(environ, tuned):
    assert allocator.malloc_tuned_by_user(environ) is tuned


def test_glibc_tunables_leave_mallopt_uncalled(fresh, monkeypatch):
    """With the allocator tuned through GLIBC_TUNABLES, libc is never asked to change it."""
    opened = []
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda *a, **k: opened.append(a))
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072")
    for key in [k for k in os.environ if k.startswith("MALLOC_")]:
        monkeypatch.delenv(key)
    allocator.keep_freed_buffers()
    assert opened == []


def test_run_samples_leaves_the_process_allocator_alone_unless_asked(tmp_path, monkeypatch):
    """The library entry point changes no process-wide setting; the command opts in."""
    import asyncio

    import regionfocus.screenspot_pro.runner as runner
    from regionfocus import RegionFocusConfig
    from regionfocus.agent import RegionFocusAgent
    from regionfocus.screenspot_pro.dataset import load_dataset
    from regionfocus.screenspot_pro.runner import run_samples

    from .test_screenspot_helpers import ColourModel, fresh_dataset

    calls = []
    monkeypatch.setattr(runner, "keep_freed_buffers", lambda *a, **k: calls.append(a))
    samples = load_dataset(fresh_dataset(tmp_path / "data"))[:1]

    def run(out, **kwargs):
        agent = RegionFocusAgent(ColourModel(), RegionFocusConfig())
        asyncio.run(run_samples(samples, agent, tmp_path / out, progress=False, **kwargs))

    run("a")
    assert calls == []
    run("b", tune_allocator=True)
    assert len(calls) == 1
