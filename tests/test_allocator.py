"""A run keeps freed image buffers for reuse, unless the user set the allocator up already."""

from __future__ import annotations

import pytest
from PIL import Image

from regionfocus import allocator


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
