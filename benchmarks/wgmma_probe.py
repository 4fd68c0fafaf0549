"""Hopper's wgmma pieces on a GPU: the one-warpgroup kernel of xetile_dsl/codegen/nvptx/wgmma_probe.py
(C[64, 128] = A[64, 64] . Bt[128, 64]^T through 128B-swizzled shared memory, 4 K steps of
wgmma.mma_async m64n128k16) launched on torch CUDA tensors and checked against float64,
for f16 and bf16; with ptxas and cuobjdump on the PATH, ptxas's resources and the HGMMA
count of its sm_90a SASS.

    python benchmarks/wgmma_probe.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from xetile_dsl.codegen.nvptx.wgmma_probe import probe_ptx   # noqa: E402
from xetile_dsl.runtime import backend_cuda           # noqa: E402


def sass_line(ptx: str) -> str:
    ptxas, cuobjdump = shutil.which("ptxas"), shutil.which("cuobjdump")
    if not ptxas or not cuobjdump:
        return "sass: no ptxas/cuobjdump on PATH"
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run([ptxas, "-arch=sm_90a", "-v", src, "-o", cubin], capture_output=True, text=True)
        info = " ".join(" ".join(line.split()[2:]) for line in run.stderr.splitlines()
                        if "registers" in line or "spill" in line)
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True).stdout
    return f"{info or run.stderr.strip()}; SASS HGMMA {len(re.findall(r'HGMMA', sass))}, WARPGROUP " \
           f"{len(re.findall(r'WARPGROUP', sass))}"


def main() -> None:
    print("device:", torch.cuda.get_device_name(), " torch", torch.__version__)
    for a_type, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        ptx = probe_ptx(128, a_type)
        fn = backend_cuda.load_function(ptx, "wgmma_probe")
        a = torch.randn(64, 64, device="cuda").to(dtype)
        bt = torch.randn(128, 64, device="cuda").to(dtype)
        c = torch.full((64, 128), float("nan"), device="cuda")
        backend_cuda.launch(fn, (1, 1, 1), 128, [(a.data_ptr(), backend_cuda._CTYPES["i64"]),
                                                 (bt.data_ptr(), backend_cuda._CTYPES["i64"]),
                                                 (c.data_ptr(), backend_cuda._CTYPES["i64"])])
        torch.cuda.synchronize()
        ref = a.double() @ bt.double().T
        err = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"check wgmma m64n128k16 {a_type} 64x128x64  error {err:.3e}  max|d| "
              f"{(c.double() - ref).abs().max().item():.3e}")
        if not err < 1e-5:
            print("  c[0,:8]  ", c[0, :8].tolist(), "\n  ref[0,:8]", ref[0, :8].tolist())
            print("  c[9,16:20]", c[9, 16:20].tolist(), "\n  ref[9,16:20]", ref[9, 16:20].tolist())
        print("sass", a_type, sass_line(ptx))


if __name__ == "__main__":
    main()
