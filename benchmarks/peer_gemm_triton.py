"""A Triton 3.x GEMM as a peer for the NVIDIA backend's staged GEMM: f16/bf16 inputs,
f32 accumulation and output (as ``matmul_kernel``), a 128x256x64 block, 8 warps,
3 pipeline stages; timed with CUDA events against torch (cuBLAS), beside
benchmarks/vs_cuda.py's rows.

    python benchmarks/peer_gemm_triton.py

Prints one line per case (and a check line per dtype); without triton, says so."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import sass_loop  # noqa: E402
from vs_cuda import bench, rel_err  # noqa: E402

try:
    import triton
    import triton.language as tl
except ImportError:   # the peer is optional
    triton = None

if triton is not None:
    @triton.jit
    def gemm(a, b, c, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + rk
            x = tl.load(a + rm[:, None] * sam + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            y = tl.load(b + ka[:, None] * sbk + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, y, acc)
        tl.store(c + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def run(a, b, c, BM=128, BN=256, BK=64, warps=8, stages=3):
    M, K = a.shape
    N = b.shape[1]
    return gemm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                                                          BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages)


def sass_line(compiled, dump: str) -> str:
    """The SASS counts of Triton's kernel (cuobjdump on its cubin; the whole SASS to
    ``$OUT/dump``): HGMMA, barriers, copies, local memory, registers."""
    import re
    import shutil
    import subprocess
    import tempfile
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        return "sass: no cuobjdump on PATH"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        sass = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, check=False).stdout
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], dump), "w") as out:
            out.write(sass)
    count = lambda pat: len(re.findall(pat, sass))  # noqa: E731
    return (f"registers {compiled.n_regs}, spills {compiled.n_spills}, smem {compiled.metadata.shared} B; SASS HGMMA "
            f"{count('HGMMA')}, BAR {count('BAR.SYNC')}, SYNCS {count('SYNCS')}, LDGSTS {count('LDGSTS')}, UTMALDG "
            f"{count('UTMALDG')}, LDL/STL {count('LDL|STL')}, WARPGROUP {count('WARPGROUP')}; {sass_loop.line(sass)}")


def main() -> None:
    if triton is None:
        print("triton peer: triton is not installed")
        return
    print(f"triton {triton.__version__}: block 128x256x64, 8 warps, 3 stages")
    for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        a, b = torch.randn(1000, 1000, device="cuda", dtype=dtype), torch.randn(1000, 1000, device="cuda", dtype=dtype)
        c = torch.full((1000, 1000), float("nan"), device="cuda")
        run(a, b, c)
        torch.cuda.synchronize()
        print(f"check triton gemm {name} 1000^3 error {rel_err(c, a.double() @ b.double()):.3e}")
    for s in (4096, 8192):
        for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            a, b = torch.randn(s, s, device="cuda", dtype=dtype), torch.randn(s, s, device="cuda", dtype=dtype)
            c = torch.empty(s, s, device="cuda")
            if s == 4096:
                print(f"sass triton gemm {name}: {sass_line(run(a, b, c), f'triton_sass_{name}.txt')}")
            ours = bench(lambda: run(a, b, c), reps=20)
            ref = bench(lambda: torch.matmul(a, b), reps=20)
            print(f"{'triton gemm ' + name + f' {s}^3':40s} {ours:10.4f} {ref:10.4f} {ref / ours:12.3f}  "
                  f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s")
            ours = bench(lambda: [run(a, b, c) for _ in range(10)], reps=10) / 10
            ref = bench(lambda: [torch.matmul(a, b) for _ in range(10)], reps=10) / 10
            print(f"{'triton gemm ' + name + f' {s}^3 x10':40s} {ours:10.4f} {ref:10.4f} {ref / ours:12.3f}  "
                  f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s (10 launches a timing)")


if __name__ == "__main__":
    main()
