"""torch.library registration: refused with the reason where torch or its XPU is missing;
with torch + XPU, the registered op matches the numpy reference and CPU tensors are
refused (runs only there: PyTorch is not installed on the CPU-only CI machine)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ops_ref import assert_within, matmul_ref
from xetile_dsl.errors import UsageError
from xetile_dsl.ops import torch_ops

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _torch_xpu():
    if not HAVE_TORCH:
        pytest.skip("PyTorch is not installed here (no XPU build for this machine): the registered ops "
                    "cannot run; register() refusing without it is tested below")
    import torch
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        pytest.skip("torch has no XPU device here: the registered ops run on Intel GPUs only")
    return torch


@pytest.mark.skipif(HAVE_TORCH, reason="torch is installed: the refusal without torch cannot happen")
def test_register_without_torch_says_what_is_missing():
    with pytest.raises(UsageError, match="needs PyTorch with XPU"):
        torch_ops.register()


def test_registered_matmul_on_xpu():
    torch = _torch_xpu()
    ops = torch_ops.register()
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((37, 64)).astype(np.float16), rng.standard_normal((64, 48)).astype(np.float16)
    c = ops["matmul"](torch.from_numpy(a).to("xpu"), torch.from_numpy(b).to("xpu"))
    assert c.device.type == "xpu" and c.dtype == torch.float16
    assert_within(c.cpu().numpy(), *matmul_ref(a, b, out_dtype=np.float16), "torch xpu")


def test_registered_matmul_refuses_cpu_tensors():
    torch = _torch_xpu()
    ops = torch_ops.register()
    with pytest.raises((RuntimeError, NotImplementedError)):
        ops["matmul"](torch.ones((32, 32), dtype=torch.float16), torch.ones((32, 32), dtype=torch.float16))
