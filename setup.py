"""The one compiled part: regionfocus._lanczos (see regionfocus/resample.py). Optional: where
it cannot be built, the install goes on and Pillow resizes the views (same pixels, more CPU)."""

import sys

from setuptools import Extension, setup

# -ffp-contract=off: fused multiply-adds would round the filter weights unlike Pillow's build.
flags = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"]

setup(
    ext_modules=[
        Extension(
            "regionfocus._lanczos",
            ["regionfocus/_lanczos.c"],
            extra_compile_args=flags,
            optional=True,
        )
    ]
)
