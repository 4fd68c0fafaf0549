"""The register-file mode is the compiler's choice, not the user's: a kernel whose
default-mode (128-GRF) build spills is rebuilt in the large (256-GRF) mode, and keeps
that mode when it spills less (its build options then ask for it at every program build).

The instrument is the offline compiler's own spill report (zeinfo ``spill_size``). A
32x64 f32 row softmax holds its 8 KiB tile, a same-sized exp tile and the row results:
more than the 128 x 64 B = 8 KiB default file, within the 16 KiB large one (measured
with IGC 2.40: 11328 B spilled at 128 GRFs on pvc, 4544 B on bmg; 0 at 256).  A 16x64
tile (4 KiB) fits the default file and keeps it."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.fused import row_softmax
from xetile_dsl.targets import get_target
from xetile_dsl.tools import ocloc

SIG = {"x": "f32[:,:]", "y": "f32[:,:]"}


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_spilling_build_is_retried_in_the_large_register_file(target, ocloc_path):
    gpu = get_target(target)
    kernel = xd.compile(row_softmax, SIG, {"BM": 32, "BN": 64}, target=target)
    env = kernel.asm["zebin"].execution_env("row_softmax")
    assert env["grf_count"] == gpu.large_grf_count and env.get("spill_size", 0) == 0
    assert gpu.large_grf_option in kernel.abi.extra["build_options"].split()
    retry = kernel.abi.extra["grf_retry"]
    assert retry["default_spill_bytes"] > 0 and retry["large_spill_bytes"] == 0
    # the default-mode build it replaced really spills (the retry was needed)
    default = ocloc.compile_spirv(kernel.spirv, gpu.ocloc_device, gpu.build_options_for(False))
    assert default.spill_size("row_softmax") == retry["default_spill_bytes"]


def test_fitting_build_keeps_the_default_register_file(ocloc_path):
    kernel = xd.compile(row_softmax, SIG, {"BM": 16, "BN": 64}, target="pvc")
    env = kernel.asm["zebin"].execution_env("row_softmax")
    assert env["grf_count"] == get_target("pvc").grf_count and env.get("spill_size", 0) == 0
    assert "grf_retry" not in kernel.abi.extra
    assert get_target("pvc").large_grf_option not in kernel.abi.extra["build_options"].split()
