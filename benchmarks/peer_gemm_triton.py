"""Triton 3.x GEMMs as peers for the NVIDIA backend's GEMM.

* :func:`matmul`: the peer of ``ops.matmul`` that ``benchmarks/vs_cuda.py`` times (the
  judged numbers): f16/bf16 inputs, f32 accumulation, output in the input dtype (as
  ``ops.matmul``'s default), a 1-D grid in grouped program order (``GROUP_M`` row blocks
  of C a group, so the programs of a wave share A's and B's panels in L2, the order of
  Triton's matmul tutorial), autotuned (``triton.autotune``, keyed on M, N, K) over
  :data:`CONFIGS`; configs whose BM exceeds a small M's need are pruned before timing.
* :func:`run`: a fixed 128x256x64 block, 8 warps, 3 stages, f32 output (as
  ``kernels.matmul.matmul_kernel``), for the SASS comparison of ``main``.

    python benchmarks/peer_gemm_triton.py

Prints one line per case (and a check line per dtype); without triton, says so."""
from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_loop  # noqa: E402
from cuda_events import median_ms  # noqa: E402

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


#: (BM, BN, BK, num_warps, num_stages) the autotuner of :func:`matmul` tries
CONFIGS = ((128, 256, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4), (64, 256, 64, 4, 4),
           (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 128, 4, 4))
GROUP_M = 8


def prune(configs, named_args, **kwargs):
    """The configs worth timing for this M: all of them from M = 128 on, those of the
    smallest BM below (a bigger block only multiplies padding rows)."""
    m = named_args["M"]
    if m >= 128:
        return configs
    least = min(c.kwargs["BM"] for c in configs)
    return [c for c in configs if c.kwargs["BM"] == least]


if triton is not None:
    @triton.autotune(configs=[triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=st)
                              for bm, bn, bk, w, st in CONFIGS],
                     key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})
    @triton.jit
    def grouped_gemm(a, b, c, M, N, K, sam, sbk, scm, GM: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
        pid = tl.program_id(0)
        blocks_m, blocks_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GM * blocks_n
        first = (pid // per_group) * GM
        rows = tl.minimum(blocks_m - first, GM)
        pm = first + (pid % per_group) % rows
        pn = (pid % per_group) // rows
        # rows and columns past the edge wrap into the matrix: loads need no M/N mask, the
        # store drops them
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :]
        pb = b + rk[:, None] * sbk + rn[None, :]
        acc = tl.zeros((BM, BN), tl.float32)
        for k0 in range(0, K, BK):
            x = tl.load(pa, mask=rk[None, :] < K - k0, other=0.0)
            y = tl.load(pb, mask=rk[:, None] < K - k0, other=0.0)
            acc = tl.dot(x, y, acc)
            pa += BK
            pb += BK * sbk
        om = pm * BM + tl.arange(0, BM)
        on = pn * BN + tl.arange(0, BN)
        tl.store(c + om[:, None] * scm + on[None, :], acc.to(c.dtype.element_ty),
                 mask=(om[:, None] < M) & (on[None, :] < N))


def matmul(a, b, out=None):
    """``a @ b`` for row-major [M, K] and [K, N] CUDA tensors, in their dtype (autotuned)."""
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype) if out is None else out
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)  # noqa: E731
    grouped_gemm[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), GM=GROUP_M)
    return c


def best_config() -> str:
    """The config the autotuner ran the last call of :func:`matmul` with, as
    ``BMxBNxBK wW sS`` ('?' before a call)."""
    config = getattr(grouped_gemm, "best_config", None)
    if config is None:
        return "?"
    kw = config.kwargs
    return f"{kw['BM']}x{kw['BN']}x{kw['BK']} w{config.num_warps} s{config.num_stages}"


def bench(fn, reps: int = 20) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` CUDA-event-timed runs after 5 warm-ups."""
    return median_ms(fn, reps, warmup=5)


def rel_err(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


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
