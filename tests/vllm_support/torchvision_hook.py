"""Import hook that lets ``import torchvision`` succeed when its compiled ops cannot load.

Test infrastructure for the vLLM venv only (never product code). It is copied into that venv's
site-packages as ``regionfocus_torchvision_hook`` and imported at start-up by a ``.pth`` file
(``scripts/vllm_venv.sh``).

Why: PyPI's torchvision is a CUDA build; beside the CPU torch its ``_C`` library fails to load.
torchvision tolerates that for most ops, but ``torchvision._meta_registrations`` registers fake
kernels for ``torchvision::nms`` and ``torchvision::qnms`` unconditionally, and registering a fake
kernel for an op that was never defined raises, so the import dies. vLLM's Qwen-VL processor
imports torchvision (transforms only). Defining the two op *schemas* is enough for the import;
calling them still fails loudly, which is what we want (nothing on the serving path uses them).

The hook does nothing until ``torchvision._meta_registrations`` is about to be imported, and
nothing at all when torchvision's own library loaded.
"""

from __future__ import annotations

import importlib.abc
import sys

_TARGET = "torchvision._meta_registrations"
# Schemas as torchvision declares them in its C++ (csrc/ops/nms.cpp, quantized/cpu/qnms_kernel).
_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
_libraries: list = []  # a torch.library.Library unregisters its definitions when collected


def _define_missing_ops() -> list[str]:
    import torch
    import torchvision.extension

    if torchvision.extension._has_ops():
        return []
    missing = [name for name in _SCHEMAS if not hasattr(torch.ops.torchvision, name)]
    if missing:
        lib = torch.library.Library("torchvision", "FRAGMENT")
        for name in missing:
            lib.define(_SCHEMAS[name])
        _libraries.append(lib)
    return missing


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == _TARGET:
            sys.meta_path.remove(self)  # one shot
            _define_missing_ops()
        return None  # let the normal finders import the module


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
