"""ScreenSpot-Pro harness: the official data layout and scoring, one pass for baseline and
RegionFocus, resumable run folders and reports. Cite: Li et al. 2025, "ScreenSpot-Pro: GUI
Grounding for Professional High-Resolution Computer Use".

Python use::

    from regionfocus.screenspot_pro import Selection, load_dataset, run_screenspot
    samples = load_dataset("~/ScreenSpot-Pro", Selection(groups=("CAD",)))
    asyncio.run(run_screenspot(samples, model, RegionFocusConfig(), "runs/cad"))
"""

from regionfocus.kit.runlog import RunFolderError

from .dataset import DatasetError, Sample, Selection, load_dataset
from .metrics import correctness, evaluate, metric_block
from .report import compare_runs, write_reports
from .runner import run_samples, run_screenspot

__all__ = [
    "DatasetError",
    "RunFolderError",
    "Sample",
    "Selection",
    "compare_runs",
    "correctness",
    "evaluate",
    "load_dataset",
    "metric_block",
    "run_samples",
    "run_screenspot",
    "write_reports",
]
