"""benchmarks/image_paths.py runs end to end on a small screen and prints both tables (timings
are never checked here; BENCHMARKS.md holds them)."""

from __future__ import annotations

import pytest

from benchmarks import image_paths


@pytest.mark.slow  # a real model or engine end to end: seconds of CPU
def test_image_paths_prints_both_tables(capsys):
    out = image_paths.main(["--size", "640x360", "--rounds", "1", "--probe-crops", "0"])
    printed = capsys.readouterr().out
    assert "Resampling the 4 views of one sample" in printed
    assert "Encoding the 7 images of one sample" in printed
    assert "cv2 INTER_CUBIC" in out["resample"] and "Pillow LANCZOS" in out["resample"]
    assert "ours: ISA-L writer" in out["png"] and "Pillow PNG compress_level=1" in out["png"]
    # Every PNG candidate is lossless, so every one sends about the same bytes.
    sizes = [n for k, n in out["png_bytes"].items() if not k.startswith("BMP")]
    assert max(sizes) < 2 * min(sizes)
