"""The NVIDIA backend against torch on a CUDA GPU: the same ``@jit`` sources as the Intel
path (a 2-D form of tutorial 1's vector add, ``ops.rows.softmax_kernel``, ``kernels.matmul.matmul_kernel``)
launched on torch CUDA tensors, checked against torch, then timed against torch (cuBLAS
for the GEMM) with CUDA events (median of repeats after warm-up), as ratios.

    python benchmarks/vs_cuda.py [--quick] [--checks-only] [--tma-probe]

A wgmma GEMM whose arrays a tensor map describes fills its ring by TMA (decision 051):
its check lines say ``[tma]``, and the 128x256x64 rows are timed on the cp.async ring too
(``XETILE_NV_TMA=0``) and with grouped program ids (``GROUP_M`` row blocks a group, as
Triton's tutorial orders them).  ``--tma-probe`` runs only the TMA checks, first, in a
process of its own: a hang there leaves the rest of a device call to the cp.async ring.

Prints one table; with ``$OUT`` set, writes it to ``$OUT/vs_cuda.txt`` too.  Where
``ptxas`` and ``cuobjdump`` are on the PATH it prints, for each timed GEMM, ptxas's
registers, stack frame and spills and the ``HMMA`` count of its SASS."""
from __future__ import annotations

import os
import re
import shutil
import contextlib
import subprocess
import sys
import tempfile

import torch

import sass_loop
from cuda_events import median_ms
import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.ops.rows import layer_norm_kernel, softmax_kernel


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


def timings(quick: bool, sass: list) -> list[tuple[str, float, float, str]]:
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


def main() -> None:
    quick = "--quick" in sys.argv
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"]
    if "--tma-probe" in sys.argv:
        for name, err, kernel in tma_checks():
            print(f"check {name:56s} error {err:.3e}", flush=True)
        print("tma probe done")
        return
    checks = [("add f32 n=1000003", *check_add(1000003)), ("softmax f32 1027x1000", *check_softmax(1027, 1000)),
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
            checks += group()
        except Exception as exc:  # noqa: BLE001 -- reported as a check line, the run goes on
            lines.append(f"check {group.__name__} FAILED: {type(exc).__name__}: {exc}")
    out_dir = os.environ.get("OUT")
    for name, err, kernel in checks:
        lines.append(f"check {name:48s} error {err:.3e}")
    if "--checks-only" not in sys.argv:
        lines.append(f"{'case':40s} {'xetile ms':>10s} {'torch ms':>10s} {'torch/xetile':>12s}  rate")
        sass: list = []
        for name, ours, ref, rate in timings(quick, sass):
            lines.append(f"{name:40s} {ours:10.4f} {ref:10.4f} {ref / ours:12.3f}  {rate}")
        lines += sass
    text = "\n".join(lines)
    print(text)
    if out_dir:
        with open(os.path.join(out_dir, "vs_cuda.txt"), "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
