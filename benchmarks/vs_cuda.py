"""The H200 run the NVIDIA target is judged by: ``ops`` against Triton 3.6 and torch
(cuBLAS, SDPA) side by side in one process, after the correctness checks against torch.

    python benchmarks/vs_cuda.py [--quick] [--checks-only | --no-checks] [--gemm] [--attention] [--rows]
                                 [--cutile] [--experiments] [--budget SECONDS] [--tma-probe]

Sections (no section flag: all four; ``--experiments``: the per-tile GEMM rows of
``matmul_kernel`` too, outside the budget):

* ``--gemm``: ``ops.matmul`` f16 and bf16 (f16/bf16 out) on :func:`gemm_shapes` (squares
  1024 to 8192; tokens x 4096 x 4096 for tokens 1 to 16384; Llama-3-70B's MLP at 4096
  tokens: 4096 x 28672 x 8192 up/gate, 4096 x 8192 x 28672 down), against
  ``peer_gemm_triton.matmul`` (the same algorithm in Triton, grouped program order,
  autotuned over its CONFIGS, output in the input dtype) and ``torch.matmul`` (cuBLAS):
  TFLOP/s (2 M N K flops) and % of the device's dense peak (``targets/peaks.py``); each
  contender's first output against torch's (relative norm error).
* ``--attention``: ``ops.attention`` forward f16, causal and not, D 64/128, N 1024, 4096,
  16384, against the Triton flash attention (the fastest of its configs) and torch SDPA:
  TFLOP/s (``vs_cuda_attention.attention_timings``), and ours' output against SDPA's (relative
  norm error; ``WRONG`` past two f16 roundings, ``ATTENTION_TOL``).
* ``--rows``: softmax, layer_norm, rms_norm over 8192 x 8192 f16 by ``ops``, the Triton
  peer and torch: GB/s (input read once, output written once) and % of a
  device-to-device copy of the same bytes measured in the same run, as one call, back to
  back and the kernel's own time (``vs_cuda_attention.row_timings``).
* ``--cutile``: ``peer_cutile.lines``: cuTile's GEMM and vector add where ``cuda.tile``
  imports and compiles here, else its one line of why not.

Timing, the same for every contender: ``cuda_events.median_ms``: CUDA events around one
call on the current stream, the median of 10-20 timed calls (10 from 2e11 flops) after 5
untimed ones (the first call of a case, outside the timing, compiles or autotunes).  An
event pair around one call includes the host's launch cost where it exceeds the GPU's
work (tokens 1, 16).  The rows' ``stream`` and ``kernel`` measures are
``vs_cuda_attention.bench_stream`` (10 calls between two events) and ``kernel_ms`` (the
kernels' own durations, torch profiler).

``--budget`` (default 330 s from the start, checks included) caps the run's wall time:
each section gets a share of what is left (GEMM 50 %, attention 30 %, rows 15 %, cuTile
5 %, of the sections chosen), and the cases past its deadline are printed as skipped.

Prints the checks and one table a section; with ``$OUT`` set, writes them to
``$OUT/vs_cuda.txt`` and a plot to ``$OUT/vs_cuda.png`` (matplotlib, imported when
plotting; without it, a line says so).

A wgmma GEMM whose arrays a tensor map describes fills its ring by TMA (decision 051):
its check lines say ``[tma]``.  ``--tma-probe`` runs only the TMA checks, first, in a
process of its own: a hang there leaves the rest of a device call to the cp.async ring.
``--experiments`` times ``matmul_kernel`` at its tiles (cp.async ring, grouped ids, 10
launches a timing) and prints, where ``ptxas`` and ``cuobjdump`` are on the PATH,
ptxas's registers, stack frame and spills and the SASS counts of each 4096 GEMM."""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_loop  # noqa: E402
from cuda_events import median_ms  # noqa: E402
import xetile_dsl as xd  # noqa: E402
import xetile_dsl.language as xt  # noqa: E402
from xetile_dsl.kernels.matmul import matmul_kernel  # noqa: E402
from xetile_dsl.ops.rows import layer_norm_kernel, softmax_kernel  # noqa: E402
from xetile_dsl.targets.peaks import peak_for  # noqa: E402


@xd.jit
def add_kernel(x, y, out, BLOCK: xt.constexpr):
    """Tutorial 1's vector add over [1, n] arrays (the NVIDIA targets take 2-D tiles)."""
    col = xt.program_id(0) * BLOCK
    tx = xt.init_tile(x, [0, col], [1, BLOCK])
    ty = xt.init_tile(y, [0, col], [1, BLOCK])
    xt.store_tile(xt.load_tile(tx) + xt.load_tile(ty), xt.init_tile(out, [0, col], [1, BLOCK]))


@xd.jit
def grouped_matmul_kernel(a, b, c, K, GM: xt.constexpr, NN: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr,
                          BK: xt.constexpr):
    """matmul_kernel over a 1-D grid whose program ids run down ``GM`` row blocks of C
    before moving to the next column block (row blocks a multiple of GM: the timed
    squares), so the programs of one wave share A's and B's panels in L2."""
    pid = xt.program_id(0)
    width = GM * NN
    pid_m = (pid // width) * GM + (pid % width) % GM
    pid_n = (pid % width) // GM
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@contextlib.contextmanager
def cp_async_ring():
    """Launches inside take the cp.async ring, not TMA (``XETILE_NV_TMA=0``)."""
    old = os.environ.get("XETILE_NV_TMA")
    os.environ["XETILE_NV_TMA"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["XETILE_NV_TMA"]
        else:
            os.environ["XETILE_NV_TMA"] = old


def path_of(kernel) -> str:
    return " [tma]" if getattr(kernel, "tensor_maps", None) else ""


def tma_checks() -> list[tuple[str, float, object]]:
    """The TMA fill against float64 (ragged M, N and K, and the squares), and the same
    shapes on the cp.async ring; 257x129x300 (600-byte rows) cannot take TMA."""
    out = []
    for (m, n, k), dtype, tile in (((1000, 1000, 1000), torch.float16, (128, 256, 64)),
                                   ((333, 520, 264), torch.bfloat16, (128, 256, 64)),
                                   ((1000, 1000, 1000), torch.bfloat16, (128, 128, 64)),
                                   ((200, 304, 1000), torch.float16, (64, 256, 64)),
                                   ((257, 129, 300), torch.float16, (128, 256, 64)),
                                   ((4096, 4096, 4096), torch.float16, (128, 256, 64)),
                                   ((4096, 4096, 4096), torch.bfloat16, (128, 256, 64)),
                                   ((8192, 8192, 8192), torch.float16, (128, 256, 64))):
        name = "f16" if dtype == torch.float16 else "bf16"
        label = f"gemm {name} {m}x{n}x{k} {'x'.join(map(str, tile))}"
        err, kernel = check_gemm(m, n, k, tile, dtype)
        out.append((label + path_of(kernel), err, kernel))
        if m * n * k <= 1 << 30:
            with cp_async_ring():
                err, kernel = check_gemm(m, n, k, tile, dtype)
            out.append((label + " cp.async" + path_of(kernel), err, kernel))
    from xetile_dsl import ops
    for (m, n, k), dtype, kw in (((1000, 1000, 1000), torch.float16, {}),
                                 ((1000, 904, 704), torch.bfloat16, {"activation": "gelu"}),
                                 ((4096, 4096, 4096), torch.float16, {})):
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        ref = a.double() @ b.double()
        ref = torch.nn.functional.gelu(ref) if kw else ref
        out.append((f"ops.matmul {dtype} {m}x{n}x{k} {kw.get('activation', '')} (f32 out)",
                    rel_err(ops.matmul(a, b, out_dtype=torch.float32, **kw), ref), None))
    s = 4096
    a, b = torch.randn(s, s, device="cuda", dtype=torch.float16), torch.randn(s, s, device="cuda", dtype=torch.float16)
    c = torch.full((s, s), float("nan"), device="cuda")
    kernel = grouped_matmul_kernel[((s // 128) * (s // 256),)](a, b, c, s, GM=8, NN=s // 256, BM=128, BN=256, BK=64)
    torch.cuda.synchronize()
    out.append((f"gemm f16 {s}^3 128x256x64 grouped 8" + path_of(kernel), rel_err(c, a.double() @ b.double()), kernel))
    torch.cuda.synchronize()
    return out


def bench(fn, reps: int = 50) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` CUDA-event-timed runs after 5 warm-ups."""
    return median_ms(fn, reps, warmup=5)


def rel_err(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def check_add(n: int) -> tuple[float, object]:
    x, y = (torch.randn(1, n, device="cuda") for _ in range(2))
    out = torch.full_like(x, float("nan"))        # poisoned: every element must be written
    kernel = add_kernel[(-(-n // 256),)](x, y, out, BLOCK=256)
    torch.cuda.synchronize()
    return float((out - (x + y)).abs().max()), kernel


def check_softmax(rows: int, n: int) -> tuple[float, object]:
    x = torch.randn(rows, n, device="cuda")
    y = torch.full_like(x, float("nan"))
    kernel = softmax_kernel[(-(-rows // 4),)](x, y, n, OUT=xt.float32, BM=4, BC=256)
    torch.cuda.synchronize()
    return rel_err(y, torch.softmax(x.double(), -1)), kernel


def check_gemm(m: int, n: int, k: int, tile=(32, 32, 32), dtype=torch.float16) -> tuple[float, object]:
    a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
    c = torch.full((m, n), float("nan"), device="cuda")
    BM, BN, BK = tile
    kernel = matmul_kernel[(-(-m // BM), -(-n // BN))](a, b, c, k, BM=BM, BN=BN, BK=BK)
    torch.cuda.synchronize()
    return rel_err(c, a.double() @ b.double()), kernel


def check_softmax_on(target: str, rows: int, n: int, dtype=torch.bfloat16) -> tuple[float, object]:
    """softmax with 16-bit input and output, compiled for a named target (sm80 code runs
    on sm90 too)."""
    x = torch.randn(rows, n, device="cuda", dtype=dtype)
    y = torch.full_like(x, float("nan"))
    out = xt.bfloat16 if dtype == torch.bfloat16 else xt.float16
    kernel = softmax_kernel.on(target)[(-(-rows // 4),)](x, y, n, OUT=out, BM=4, BC=256)
    torch.cuda.synchronize()
    return rel_err(y, torch.softmax(x.double(), -1)), kernel


def check_norm(rows: int, n: int, rms: bool) -> tuple[float, object]:
    x = torch.randn(rows, n, device="cuda", dtype=torch.float16)
    w, b = (torch.randn(1, n, device="cuda", dtype=torch.float16) for _ in range(2))
    y = torch.full_like(x, float("nan"))
    kernel = layer_norm_kernel[(-(-rows // 4),)](x, w, b, y, n, 1e-5, RMS=rms, OUT=xt.float16, BM=4, BC=256)
    torch.cuda.synchronize()
    xd_ = x.double()
    if rms:
        ref = xd_ * torch.rsqrt((xd_ * xd_).mean(-1, keepdim=True) + 1e-5) * w.double()
    else:
        ref = torch.nn.functional.layer_norm(xd_, (n,), w.double()[0], b.double()[0], 1e-5)
    return rel_err(y, ref), kernel


def check_gemm_on(target: str, m: int, n: int, k: int, tile=(32, 32, 32)) -> tuple[float, object]:
    a, b = torch.randn(m, k, device="cuda", dtype=torch.float16), torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda")
    BM, BN, BK = tile
    kernel = matmul_kernel.on(target)[(-(-m // BM), -(-n // BN))](a, b, c, k, BM=BM, BN=BN, BK=BK)
    torch.cuda.synchronize()
    return rel_err(c, a.double() @ b.double()), kernel


def check_ops() -> list[tuple[str, float, None]]:
    """``xetile_dsl.ops`` and ``torch.ops.xetile`` on CUDA tensors (the NVIDIA targets'
    ops tiles), each against torch in float64."""
    from xetile_dsl import ops
    from xetile_dsl.ops import torch_ops
    torch_ops.register()
    out = []
    for (m, n, k), dtype in (((257, 129, 300), torch.float16), ((1000, 1000, 1000), torch.bfloat16),
                             ((4096, 4096, 4096), torch.float16)):
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        out.append((f"ops.matmul {dtype} {m}x{n}x{k} (f32 out)",
                    rel_err(ops.matmul(a, b, out_dtype=torch.float32), a.double() @ b.double()), None))
    for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        a, b = torch.randn(1000, 700, device="cuda", dtype=dtype), torch.randn(700, 900, device="cuda", dtype=dtype)
        ref = a.double() @ b.double()
        out.append((f"ops.matmul {name} 1000x900x700", rel_err(ops.matmul(a, b), ref), None))
        out.append((f"ops.matmul {name} relu f32 out", rel_err(ops.matmul(a, b, activation="relu",
                                                                        out_dtype=torch.float32), ref.relu()), None))
        out.append((f"torch.ops.xetile.matmul {name}", rel_err(torch.ops.xetile.matmul(a, b), ref), None))
        x = torch.randn(37, 3, 1000, device="cuda", dtype=dtype)
        w, bb = torch.randn(1000, device="cuda", dtype=dtype), torch.randn(1000, device="cuda", dtype=dtype)
        xd_, wd, bd = x.double(), w.double(), bb.double()
        out.append((f"ops.softmax {name} 37x3x1000", rel_err(ops.softmax(x), torch.softmax(xd_, -1)), None))
        out.append((f"torch.ops.xetile.softmax {name}", rel_err(torch.ops.xetile.softmax(x), torch.softmax(xd_, -1)),
                    None))
        ln = torch.nn.functional.layer_norm(xd_, (1000,), wd, bd, 1e-5)
        out.append((f"ops.layer_norm {name}", rel_err(ops.layer_norm(x, w, bb), ln), None))
        rms = xd_ * torch.rsqrt((xd_ * xd_).mean(-1, keepdim=True) + 1e-6) * wd
        out.append((f"ops.rms_norm {name}", rel_err(ops.rms_norm(x, w), rms), None))
        out.append((f"torch.ops.xetile.rms_norm {name}", rel_err(torch.ops.xetile.rms_norm(x, w), rms), None))
    torch.cuda.synchronize()
    return out


def check_epilogues() -> list[tuple[str, float, None]]:
    """``ops.matmul``'s fused bias row and activations on CUDA tensors against torch's
    (float64 product, then ``torch.nn.functional``), f32 out so that the epilogue's own
    error shows; 1000x900x700 has a partial last column block (guarded bias loads),
    512^3 none."""
    from xetile_dsl import ops
    F = torch.nn.functional
    acts = {None: lambda x: x, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
            "silu": F.silu}
    out = []
    for (m, n, k), dtype, name, bias_dtype in (((1000, 900, 700), torch.float16, "f16", torch.float16),
                                              ((512, 512, 512), torch.bfloat16, "bf16", torch.float32),
                                              ((257, 129, 300), torch.float16, "f16", torch.float32),
                                              ((1000, 1000, 1000), torch.bfloat16, "bf16", torch.bfloat16)):
        a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
        bias = torch.randn(n, device="cuda", dtype=bias_dtype)
        ref = a.double() @ b.double()
        for act, fn in acts.items():
            for with_bias in (True, False):
                if act is None and not with_bias:
                    continue
                got = ops.matmul(a, b, bias=bias if with_bias else None, activation=act, out_dtype=torch.float32)
                want = fn(ref + bias.double() if with_bias else ref)
                label = f"ops.matmul {name} {m}x{n}x{k} {'bias ' if with_bias else ''}{act or ''}"
                out.append((label.strip(), rel_err(got, want), None))
    torch.cuda.synchronize()
    return out


def sass_line(kernel, dump: str = "") -> str:
    """ptxas's resource line and the HGMMA / HMMA counts of ``kernel``'s SASS (needs ptxas,
    cuobjdump); ``dump`` names a file under ``$OUT`` for the whole SASS."""
    ptxas, cuobjdump = shutil.which("ptxas"), shutil.which("cuobjdump")
    if not ptxas or not cuobjdump:
        return "sass: no ptxas/cuobjdump on PATH"
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(kernel.ptx)
        run = subprocess.run([ptxas, f"-arch={kernel.ptx_arch or kernel.target.ptx_arch}", "-v", src, "-o", cubin],
                             capture_output=True, text=True, check=False)
        info = " ".join(" ".join(line.split()[2:]) for line in run.stderr.splitlines()
                        if "registers" in line or "spill" in line or "warning" in line)
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=False).stdout
    if dump and os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], dump), "w") as f:
            f.write(sass)
    return f"{info}; SASS HGMMA {len(re.findall(r'HGMMA', sass))}, HMMA {len(re.findall(r'HMMA', sass))}, " \
           f"LDSM {len(re.findall(r'LDSM', sass))}, LDGSTS {len(re.findall(r'LDGSTS', sass))}, " \
           f"BAR {len(re.findall(r'BAR.SYNC', sass))}, WARPSYNC/WGWAIT {len(re.findall(r'WARPGROUP', sass))}, " \
           f"LDL/STL {len(re.findall(r'LDL|STL', sass))}, threads {kernel.threads}, smem {kernel.smem_bytes} B; " \
           f"{sass_loop.line(sass)}"


#: the GEMM tiles timed (BM, BN, BK, num_warps; None: the compiler's count): the mma.sync
#: program of 4 warps (BK 32) and the wgmma programs (BK 64: 2 warpgroups of 128 or 256
#: columns, 1 of 256)
GEMM_TILES = ((128, 128, 32, None), (128, 128, 64, None), (128, 256, 64, None))

#: LLM-sized GEMMs (M tokens, N, K): a 8B model's MLP up and down projections, f16
LLM_SHAPES = ((8192, 14336, 4096), (8192, 4096, 14336))


class _Rows(list):
    """The timed rows, each also printed to stderr as it comes (a device call cut short
    keeps the rows it reached)."""

    def append(self, row) -> None:
        super().append(row)
        name, ours, ref, rate = row
        print(f"{name:40s} {ours:10.4f} {ref:10.4f} {ref / ours:12.3f}  {rate}", file=sys.stderr, flush=True)


def experiments(quick: bool, sass: list) -> list[tuple[str, float, float, str]]:
    """``matmul_kernel`` (f32 out) at :data:`GEMM_TILES` on the squares, the cp.async ring,
    grouped ids, 10 launches a timing, ``ops.matmul`` with a fused bias and gelu, the add
    and f32 softmax: (case, ours ms, torch ms, rate) rows."""
    from xetile_dsl import ops
    rows = _Rows()
    n = 1 << (24 if quick else 27)
    x, y = (torch.randn(1, n, device="cuda") for _ in range(2))
    out = torch.empty_like(x)
    ours = bench(lambda: add_kernel[(n // 256,)](x, y, out, BLOCK=256))
    ref = bench(lambda: torch.add(x, y, out=out))
    rows.append((f"add f32 n={n}", ours, ref, f"{3 * 4 * n / ours / 1e6:.0f} GB/s"))
    r, c = (4096, 4096) if quick else (16384, 8192)
    xs = torch.randn(r, c, device="cuda")
    ys = torch.empty_like(xs)
    ours = bench(lambda: softmax_kernel[(r // 4,)](xs, ys, c, OUT=xt.float32, BM=4, BC=256))
    ref = bench(lambda: torch.softmax(xs, -1))
    rows.append((f"softmax f32 {r}x{c}", ours, ref, f"{3 * 4 * r * c / ours / 1e6:.0f} GB/s (3 passes)"))
    for s in ((2048,) if quick else (4096, 8192)):
        for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            a, b = torch.randn(s, s, device="cuda", dtype=dtype), torch.randn(s, s, device="cuda", dtype=dtype)
            cc = torch.empty(s, s, device="cuda")
            ref = bench(lambda: torch.matmul(a, b), reps=20)
            for BM, BN, BK, warps in GEMM_TILES:
                if BM * BN <= 64 * 32 and s > 4096:
                    continue
                opts = {"num_warps": warps} if warps else {}
                launch = lambda: matmul_kernel[(s // BM, s // BN)](a, b, cc, s, BM=BM, BN=BN, BK=BK, **opts)  # noqa: E731
                kernel = launch()
                ours = bench(launch, reps=20)
                label = f"tile {BM}x{BN}x{BK}" + (f" w{warps}" if warps else "") + path_of(kernel)
                rows.append((f"gemm {name} {s}^3 {label}", ours, ref, f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s"))
                if (BM, BN) == (128, 256):
                    ours = bench(lambda: [launch() for _ in range(10)], reps=10) / 10
                    ref10 = bench(lambda: [torch.matmul(a, b) for _ in range(10)], reps=10) / 10
                    rows.append((f"gemm {name} {s}^3 {label} x10", ours, ref10,
                                 f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s (10 launches a timing)"))
                    with cp_async_ring():
                        ring = launch()
                        ours = bench(launch, reps=20)
                    rows.append((f"gemm {name} {s}^3 tile 128x256x64 cp.async", ours, ref,
                                 f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s"))
                    if s == 4096:
                        sass.append(f"sass gemm {name} tile 128x256x64 cp.async: {sass_line(ring)}")
                    grid = ((s // BM) * (s // BN),)
                    grouped = lambda: grouped_matmul_kernel[grid](a, b, cc, s, GM=8, NN=s // BN, BM=BM, BN=BN, BK=BK)  # noqa: E731,E501
                    try:
                        gk = grouped()
                        ours = bench(grouped, reps=20)
                        rows.append((f"gemm {name} {s}^3 tile 128x256x64 grouped 8{path_of(gk)}", ours, ref,
                                     f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s"))
                    except Exception as exc:  # noqa: BLE001 -- an experiment's failure is a line
                        sass.append(f"grouped gemm FAILED: {type(exc).__name__}: {exc}")
                if s == 4096:
                    dump = f"xetile_sass_{name}_{BM}x{BN}x{BK}.txt" if (name, BM, BN) == ("f16", 128, 256) else ""
                    sass.append(f"sass gemm {name} {label}: {sass_line(kernel, dump)}")
            ours = bench(lambda: ops.matmul(a, b), reps=20)
            rows.append((f"ops.matmul {name} {s}^3 ({name} out)", ours, ref, f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s"))
            ours = bench(lambda: [ops.matmul(a, b) for _ in range(10)], reps=10) / 10
            rows.append((f"ops.matmul {name} {s}^3 ({name} out) x10", ours, ref,
                         f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s (10 calls a timing)"))
            bias = torch.randn(s, device="cuda", dtype=dtype)
            ours = bench(lambda: ops.matmul(a, b, bias=bias, activation="gelu"), reps=20)
            ref_e = bench(lambda: torch.nn.functional.gelu(torch.addmm(bias, a, b)), reps=20)
            rows.append((f"ops.matmul {name} {s}^3 bias gelu", ours, ref_e, f"{2 * s ** 3 / ours / 1e9:.1f} TFLOP/s"))
    if not quick:
        for m, n, k in LLM_SHAPES:
            a = torch.randn(m, k, device="cuda", dtype=torch.float16)
            b = torch.randn(k, n, device="cuda", dtype=torch.float16)
            ref = bench(lambda: torch.matmul(a, b), reps=10)
            ours = bench(lambda: ops.matmul(a, b), reps=10)
            rows.append((f"ops.matmul f16 {m}x{n}x{k}", ours, ref, f"{2 * m * n * k / ours / 1e9:.1f} TFLOP/s"))
    return rows



def checks() -> list[str]:
    """The correctness checks against torch (float64 references, outputs poisoned with NaN)."""
    out = []
    found = [("add f32 n=1000003", *check_add(1000003)), ("softmax f32 1027x1000", *check_softmax(1027, 1000)),
             ("gemm f16 1000x1000x1000", *check_gemm(1000, 1000, 1000)),
             ("gemm bf16 257x129x300", *check_gemm(257, 129, 300, dtype=torch.bfloat16)),
             ("gemm f16 512x512x512 tile 64x32", *check_gemm(512, 512, 512, (64, 32, 32))),
             ("softmax bf16 sm80 code 333x777", *check_softmax_on("sm80", 333, 777)),
             ("layer_norm f16 301x1000", *check_norm(301, 1000, False)),
             ("rms_norm f16 301x1000", *check_norm(301, 1000, True)),
             ("gemm f16 sm80 code 300x200x100", *check_gemm_on("sm80", 300, 200, 100)),
             ("gemm f16 1000x1000x1000 tile 128x128", *check_gemm(1000, 1000, 1000, (128, 128, 32))),
             ("gemm bf16 257x129x300 tile 128x128", *check_gemm(257, 129, 300, (128, 128, 32), torch.bfloat16)),
             ("gemm f16 1024x1024x1000 tile 128x256", *check_gemm(1024, 1024, 1000, (128, 256, 32))),
             ("gemm bf16 333x520x264 tile 128x256", *check_gemm(333, 520, 264, (128, 256, 32), torch.bfloat16)),
             ("gemm f16 sm80 code 1000x1000x1000 128x128", *check_gemm_on("sm80", 1000, 1000, 1000, (128, 128, 32))),
             ("gemm f16 1000x1000x1000 wgmma 128x256x64", *check_gemm(1000, 1000, 1000, (128, 256, 64))),
             ("gemm bf16 257x129x300 wgmma 128x256x64", *check_gemm(257, 129, 300, (128, 256, 64), torch.bfloat16)),
             ("gemm f16 333x520x264 wgmma 128x128x64", *check_gemm(333, 520, 264, (128, 128, 64))),
             ("gemm bf16 1024x1024x1024 wgmma 128x128x64", *check_gemm(1024, 1024, 1024, (128, 128, 64),
                                                                        torch.bfloat16)),
             ("gemm f16 200x300x1000 wgmma 64x256x64", *check_gemm(200, 300, 1000, (64, 256, 64))),
             ("gemm f16 257x129x300 wgmma 128x256x64", *check_gemm(257, 129, 300, (128, 256, 64))),
             ("gemm f16 1000x1000x1000 wgmma 128x128x64", *check_gemm(1000, 1000, 1000, (128, 128, 64))),
             ("gemm f16 4096x4096x4096 wgmma 128x256x64", *check_gemm(4096, 4096, 4096, (128, 256, 64))),
             ("gemm f16 1024x2048x512 wgmma 128x256x64", *check_gemm(1024, 2048, 512, (128, 256, 64))),
             ("gemm bf16 4096x4096x4096 wgmma 128x256x64", *check_gemm(4096, 4096, 4096, (128, 256, 64),
                                                                        torch.bfloat16))]
    for group in (check_epilogues, check_ops):   # one failing group leaves the others' lines
        try:
            found += group()
        except Exception as exc:  # noqa: BLE001 -- reported as a check line, the run goes on
            out.append(f"check {group.__name__} FAILED: {type(exc).__name__}: {exc}")
    return [f"check {name:48s} error {err:.3e}" for name, err, _ in found] + out


# ---------------------------------------------------------------- the judged tables

#: square GEMMs (M = N = K)
GEMM_SQUARES = (1024, 2048, 4096, 8192)
#: tokens x 4096 x 4096: a 4096-wide model's projections, decode (1, 16) to prefill
LLM_TOKENS = (1, 16, 128, 512, 2048, 4096, 16384)
#: Llama-3-70B's MLP (hidden 8192, intermediate 28672) at 4096 tokens: up/gate, down
MLP_SHAPES = ((4096, 28672, 8192), (4096, 8192, 28672))
#: the section shares of the time budget
SHARES = {"gemm": 0.5, "attention": 0.3, "rows": 0.15, "cutile": 0.05}
#: untimed calls before the timed ones; timed calls (fewer from BIG_FLOPS)
WARMUP, REPS, BIG_REPS, BIG_FLOPS = 5, 20, 10, 2e11


def gemm_shapes(quick: bool = False) -> list[tuple[str, int, int, int]]:
    """(kind, M, N, K) of the GEMM table: "square", "tokens" (x 4096 x 4096; 4096 tokens
    is the 4096 square, listed once), "mlp"."""
    squares, tokens, mlp = ((1024, 4096), (1, 128, 4096), MLP_SHAPES[:1]) if quick else \
        (GEMM_SQUARES, LLM_TOKENS, MLP_SHAPES)
    return ([("square", s, s, s) for s in squares] + [("tokens", t, 4096, 4096) for t in tokens
                                                      if not (t == 4096 and 4096 in squares)] +
            [("mlp", m, n, k) for m, n, k in mlp])


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def tflops(flops: float, ms: float) -> float:
    """TFLOP/s of ``flops`` in ``ms`` milliseconds (nan for a missing time)."""
    return flops / ms / 1e9 if ms and ms == ms else float("nan")


def percent(value: float, peak: float | None) -> str:
    return f"{100 * value / peak:.1f}%" if peak and value == value else "-"


def reps_for(flops: float) -> int:
    return BIG_REPS if flops >= BIG_FLOPS else REPS


class Budget:
    """The run's wall-time budget from ``start`` (``time.monotonic()``): a section's
    deadline is its share of what is left, over the shares of the sections still to come."""

    def __init__(self, seconds: float, sections, start: float | None = None, clock=time.monotonic):
        self.clock = clock
        self.end = (clock() if start is None else start) + seconds
        self.todo = [s for s in SHARES if s in sections]

    def section(self, name: str) -> float:
        """The deadline of section ``name`` (then no longer to come)."""
        now = self.clock()
        total = sum(SHARES[s] for s in self.todo) or 1.0
        share = SHARES.get(name, 0.0) / total
        if name in self.todo:
            self.todo.remove(name)
        return now + max(0.0, self.end - now) * share


def _timed(fn, flops: float, ref) -> tuple[float, float, str]:
    """(ms, error against ``ref``, failure text) of one contender: its first call checked,
    then :func:`median_ms`."""
    try:
        out = fn()
        torch.cuda.synchronize()
        err = rel_err(out, ref) if ref is not None else float("nan")
        return median_ms(fn, reps_for(flops), warmup=WARMUP), err, ""
    except Exception as exc:  # noqa: BLE001 - a contender's failure is its row's note
        return float("nan"), float("nan"), f"{type(exc).__name__}: {exc}"[:200]


def time_gemm(quick: bool, deadline: float | None = None) -> list[dict]:
    """The GEMM table's rows: per dtype and shape, TFLOP/s of ours, Triton's, cuBLAS's."""
    from xetile_dsl import ops
    try:
        import peer_gemm_triton as peer
        if peer.triton is None:
            raise ImportError("triton is not installed")
    except ImportError as exc:
        peer, missing = None, f"{exc}"
    rows = []
    for kind, m, n, k in gemm_shapes(quick):
        for dtype, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            row = {"dtype": name, "kind": kind, "M": m, "N": n, "K": k, "shape": f"{m}x{n}x{k}"}
            rows.append(row)
            if deadline is not None and time.monotonic() > deadline:
                row["skipped"] = True
                continue
            a, b = torch.randn(m, k, device="cuda", dtype=dtype), torch.randn(k, n, device="cuda", dtype=dtype)
            outs = [torch.empty(m, n, device="cuda", dtype=dtype) for _ in range(3)]
            flops = gemm_flops(m, n, k)
            ref = torch.matmul(a, b)
            contenders = {"ours": lambda: ops.matmul(a, b, out=outs[0]),
                          "cublas": lambda: torch.matmul(a, b, out=outs[2])}
            if peer is not None:
                contenders["triton"] = lambda: peer.matmul(a, b, out=outs[1])
            else:
                row["triton_note"] = missing
            for who, fn in contenders.items():
                ms, err, note = _timed(fn, flops, ref)
                row[who], row[who + "_err"] = tflops(flops, ms), err
                if note:
                    row[who + "_note"] = note
            if peer is not None:
                row["triton_config"] = peer.best_config()
    return rows


#: the most ours' GEMM output may differ from cuBLAS's (relative norm), by dtype: both
#: accumulate in f32 and round to the output dtype (2^-11 relative f16, 2^-8 bf16), 4 units each
GEMM_TOL = {"f16": 2 * 4 * 2.0 ** -11, "bf16": 2 * 4 * 2.0 ** -8}


def gemm_lines(rows: list[dict], peak: dict) -> list[str]:
    """The GEMM table: TFLOP/s and % of ``peak[dtype]`` (TFLOP/s or None) of each
    contender, ours over each peer, ours' and Triton's relative error against torch's output
    (a row whose ours' error passes its dtype's :data:`GEMM_TOL` is marked WRONG)."""
    lines = [f"{'gemm TFLOP/s (M x N x K)':28} {'ours':>7} {'triton':>7} {'cublas':>7}  {'%peak:':>7} {'ours':>6} "
             f"{'triton':>6} {'cublas':>6}  {'/triton':>7} {'/cublas':>7}  {'err ours':>9} {'triton':>9}  triton config"]
    said = set()
    for r in rows:
        label = f"{r['dtype']} {r['shape']}"
        if r.get("skipped"):
            lines.append(f"{label:28} skipped (time budget)")
            continue
        ours, tri, cub = (r.get(w, float("nan")) for w in ("ours", "triton", "cublas"))
        p = peak.get(r["dtype"])
        ratio = lambda x, y: f"{x / y:7.3f}" if x == x and y == y and y else f"{'-':>7}"  # noqa: E731
        lines.append(f"{label:28} {ours:7.1f} {tri:7.1f} {cub:7.1f}  {'':7} {percent(ours, p):>6} {percent(tri, p):>6} "
                     f"{percent(cub, p):>6}  {ratio(ours, tri)} {ratio(ours, cub)}  "
                     f"{r.get('ours_err', float('nan')):9.2e} {r.get('triton_err', float('nan')):9.2e}  "
                     f"{r.get('triton_config', '')}" + ("  WRONG" if r.get("ours_err", 0.0) > GEMM_TOL[r["dtype"]] else ""))
        for who in ("ours", "triton", "cublas"):
            note = r.get(who + "_note")
            if note and (who, note) not in said:     # a failure said once, at its first row
                said.add((who, note))
                lines.append(f"  {who} failed: {note}")
    return lines


def rows_table(timed: dict) -> tuple[list[dict], list[str]]:
    """The rows section from ``vs_cuda_attention.row_timings``: per op and contender, GB/s
    of the kernel time and % of the copy's same measure (one call, stream, kernel)."""
    from vs_cuda_attention import COLS, ROWS
    copy, nbytes = timed["copy"], timed["nbytes"]
    out = []
    lines = [f"copy f16 {ROWS}x{COLS} (y.copy_(x), {nbytes / 1e6:.0f} MB moved): one call {copy[0]:.4f} ms, stream "
             f"{copy[1]:.4f} ms, kernel {copy[2]:.4f} ms = {nbytes / copy[2] / 1e6:.0f} GB/s",
             f"{f'rows f16 {ROWS}x{COLS}':28} {'GB/s (kernel)':>13}   % of copy: one call  stream  kernel   "
             f"host us/call"]
    for op, who, t, host in timed["cases"]:
        shares = [100 * c / m if m == m and m else float("nan") for c, m in zip(copy, t)]
        out.append({"op": op, "who": who, "gbs": nbytes / t[2] / 1e6 if t[2] == t[2] else float("nan"),
                    "copy_pct": shares[2], "copy_pct_one": shares[0], "copy_pct_stream": shares[1]})
        lines.append(f"{op + ' ' + who:28} {out[-1]['gbs']:13.0f}              {shares[0]:5.1f}%  {shares[1]:5.1f}% "
                     f"{shares[2]:5.1f}%   {host:8.1f}")
    return out, lines + timed["lines"]


def write_plot(results: dict, path: str, peak: dict | None = None) -> str:
    """One figure: GEMM TFLOP/s per shape (a panel per dtype: ours, Triton, cuBLAS, the
    dense peak dashed), attention TFLOP/s per case, the row ops' % of the copy (kernel
    time); panels without rows are left out.  Returns the line to print: where it wrote,
    or why not."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return f"plot: not written ({exc}; pip install matplotlib)"
    peak = peak or {}
    gemm = [r for r in results.get("gemm", []) if not r.get("skipped")]
    panels = [("gemm", d) for d in ("f16", "bf16") if any(r["dtype"] == d for r in gemm)]
    panels += [(name, None) for name in ("attention", "rows") if any(not r.get("skipped")
                                                                    for r in results.get(name, []))]
    if not panels:
        return "plot: not written (no timed rows)"
    cols = 2 if len(panels) > 1 else 1
    fig, axes = plt.subplots(-(-len(panels) // cols), cols, figsize=(8 * cols, 4.6 * -(-len(panels) // cols)),
                             squeeze=False)
    styles = {"ours": ("xetile_dsl ops", "o-"), "triton": ("Triton 3.6 (autotuned)", "s--"),
              "cublas": ("torch.matmul (cuBLAS)", "^:"), "sdpa": ("torch SDPA", "^:")}
    for ax, (name, dtype) in zip(axes.flat, panels):
        if name == "gemm":
            rs = [r for r in gemm if r["dtype"] == dtype]
            x = range(len(rs))
            for who in ("ours", "triton", "cublas"):
                ax.plot(x, [r.get(who, math.nan) for r in rs], styles[who][1], label=styles[who][0])
            if peak.get(dtype):
                ax.axhline(peak[dtype], color="grey", linestyle="--", linewidth=0.8,
                           label=f"dense peak {peak[dtype]:.0f}")
            ax.set_xticks(list(x), [r["shape"] for r in rs], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("TFLOP/s")
            ax.set_ylim(bottom=0)
            ax.set_title(f"ops.matmul {dtype} (M x N x K)")
        elif name == "attention":
            rs = [r for r in results["attention"] if not r.get("skipped")]
            x = range(len(rs))
            for who in ("ours", "triton", "sdpa"):
                ax.plot(x, [r.get(who, math.nan) for r in rs], styles[who][1],
                        label="xetile_dsl ops.attention" if who == "ours" else
                        ("Triton flash attention (best config)" if who == "triton" else styles[who][0]))
            ax.set_xticks(list(x), [r["case"] for r in rs], rotation=60, ha="right", fontsize=7)
            ax.set_ylabel("TFLOP/s")
            ax.set_ylim(bottom=0)
            ax.set_title("attention forward f16 (Z H N D, causal or full)")
        else:
            rs = results["rows"]
            ops_ = list(dict.fromkeys(r["op"] for r in rs))
            whos = list(dict.fromkeys(r["who"] for r in rs))
            width = 0.8 / max(1, len(whos))
            for i, who in enumerate(whos):
                vals = [next((r["copy_pct"] for r in rs if r["op"] == op and r["who"] == who), math.nan)
                        for op in ops_]
                ax.bar([j + i * width for j in range(len(ops_))], vals, width,
                       label={"ops": "xetile_dsl ops", "triton": "Triton 3.6"}.get(who, who))
            ax.set_xticks([j + width * (len(whos) - 1) / 2 for j in range(len(ops_))], ops_)
            ax.axhline(100, color="grey", linestyle="--", linewidth=0.8, label="copy")
            ax.set_ylabel("% of a copy's bandwidth (kernel time)")
            ax.set_title("row ops, 8192 x 8192 f16")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(results.get("title", "xetile_dsl on NVIDIA"), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot: wrote {path}"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="ops on an NVIDIA GPU against Triton and torch (the judged run)")
    parser.add_argument("--quick", action="store_true", help="fewer shapes")
    parser.add_argument("--checks-only", action="store_true", help="the correctness checks, no timings")
    parser.add_argument("--no-checks", action="store_true", help="the timings only")
    parser.add_argument("--tma-probe", action="store_true", help="only the TMA checks")
    for name in SHARES:
        parser.add_argument(f"--{name}", action="store_true", help=f"the {name} section (none given: all)")
    parser.add_argument("--experiments", action="store_true", help="the per-tile matmul_kernel rows too")
    parser.add_argument("--budget", type=float, default=330.0, help="wall-time budget in seconds (default 330)")
    args = parser.parse_args(argv)
    args.sections = [s for s in SHARES if getattr(args, s)] or list(SHARES)
    return args


def main(argv=None) -> None:
    start = time.monotonic()
    args = parse_args(argv)
    name = torch.cuda.get_device_name()
    lines = [f"device: {name}  torch {torch.__version__}"]
    if args.tma_probe:
        for label, err, _ in tma_checks():
            print(f"check {label:56s} error {err:.3e}", flush=True)
        print("tma probe done")
        return
    try:
        import triton
        lines[0] += f"  triton {triton.__version__}"
    except ImportError:
        pass
    entry = peak_for(name)
    peak = {d: entry.tflops(d) for d in ("f16", "bf16")} if entry else {}
    lines.append(f"dense peak (targets/peaks.py): {peak.get('f16') or 0:.1f} TFLOP/s f16" if entry else
                 "dense peak: this device is not in targets/peaks.py (no % of peak)")

    def emit(part):
        print("\n".join(part), flush=True)
        lines.extend(part)

    print("\n".join(lines), flush=True)
    if not args.no_checks:
        emit(checks() + [f"checks: {time.monotonic() - start:.0f} s"])
    results = {"title": f"{name}: xetile_dsl vs Triton / torch (benchmarks/vs_cuda.py)"}
    if not args.checks_only:
        budget = Budget(args.budget, args.sections, start)
        for section in args.sections:
            deadline, t0 = budget.section(section), time.monotonic()
            try:
                if section == "gemm":
                    results["gemm"] = time_gemm(args.quick, deadline)
                    part = gemm_lines(results["gemm"], peak)
                elif section == "attention":
                    import vs_cuda_attention as va
                    results["attention"] = va.attention_timings(va.ATTENTION_SIZES_QUICK if args.quick else
                                                                va.ATTENTION_SIZES, deadline)
                    part = va.attention_lines(results["attention"])
                elif section == "rows":
                    import vs_cuda_attention as va
                    results["rows"], part = rows_table(va.row_timings(with_rms_peer=True, deadline=deadline))
                else:
                    import peer_cutile
                    part = peer_cutile.lines(args.quick)
            except Exception as exc:  # noqa: BLE001 - print what failed, keep the other sections
                part = [f"{section}: FAILED: {type(exc).__name__}: {exc}"]
            emit(part + [f"{section}: {time.monotonic() - t0:.0f} s"])
        if args.experiments:
            emit([f"{'case':40s} {'xetile ms':>10s} {'torch ms':>10s} {'torch/xetile':>12s}  rate"])
            sass: list = []
            emit([f"{n:40s} {ours:10.4f} {ref:10.4f} {ref / ours:12.3f}  {rate}"
                  for n, ours, ref, rate in experiments(args.quick, sass)] + sass)
    out_dir = os.environ.get("OUT")
    if out_dir and not args.checks_only:
        emit([write_plot(results, os.path.join(out_dir, "vs_cuda.png"), peak)])
    emit([f"total: {time.monotonic() - start:.0f} s"])
    if out_dir:
        with open(os.path.join(out_dir, "vs_cuda.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
