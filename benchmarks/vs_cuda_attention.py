"""ops.attention and the memory-bound row ops on an NVIDIA GPU: checks against float64
references, then timings (CUDA events, median after warm-up).

    python benchmarks/vs_cuda_attention.py [--quick] [--checks-only | --no-checks] [--rows-only] [--sweep]
    python benchmarks/vs_cuda_attention.py --d128   # the attention checks, the D 128 row, the host path

* attention forward: ``ops.attention`` (the same ``@jit`` source as the Intel targets,
  the "rows" form with sm90's tiles) against the Triton flash attention of
  ``benchmarks/peer_attention_cuda_triton.py`` (its fastest config) and torch's
  ``scaled_dot_product_attention``, causal and not, D 64/128, in TFLOP/s (4 Z H N^2 D
  flops, half of that causal);
* softmax, layer_norm, rms_norm over 8192 x 8192 f16: GB/s counting the input read once
  and the output written once, against a device-to-device copy (``y.copy_(x)``) of the
  same bytes measured in the same run, as "% of copy", beside torch and the Triton
  row kernels of ``benchmarks/peer_rows_cuda_triton.py``; the whole-row kernels
  (``ops/rows.py``: each row read once) at other warp counts, the chunked ones at other
  (BM, BC) tiles than the target table's, and the whole-row programs' SASS counts (global
  loads and stores per thread, barriers, shared stores and loads, local memory); the row
  ops' checks against float64 (f16, bf16, f32; odd shapes, both forms) come first.
  ``--rows-only`` runs only the row ops' checks and timings.

Prints one table; with ``$OUT`` set, writes it to ``$OUT/vs_cuda_attention.txt`` too."""
from __future__ import annotations

import math
import os
import statistics
import sys

import torch

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import ops
from xetile_dsl.ops.rows import layer_norm_kernel, layer_norm_row_kernel, softmax_kernel, softmax_row_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_events import median_ms  # noqa: E402


def bench(fn, reps: int = 20) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` CUDA-event-timed runs after 3 warm-ups."""
    return median_ms(fn, reps, warmup=3)


def reference_attention(q, k, v, causal: bool):
    """float64 softmax(q k^T / sqrt(D)) v, GQA by repeating k, v's heads."""
    qd, kd, vd = (x.double() for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    kd, vd = kd.repeat_interleave(group, 1), vd.repeat_interleave(group, 1)
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ vd


def rel_err(out, ref) -> float:
    return float((out.double() - ref).norm() / ref.norm())


#: (dtype, D, causal, Z, H, H_kv, N, strided q)
ATTENTION_CHECKS = [
    (torch.float16, 64, False, 2, 3, 3, 1000, False),
    (torch.float16, 128, True, 2, 2, 2, 1000, False),
    (torch.bfloat16, 64, True, 1, 2, 2, 257, False),
    (torch.bfloat16, 128, False, 1, 2, 2, 333, False),
    (torch.float16, 64, True, 1, 4, 2, 512, True),
    (torch.float16, 128, True, 1, 2, 1, 4096, False),
    (torch.float16, 32, True, 1, 2, 2, 333, False),
    (torch.bfloat16, 128, True, 1, 4, 1, 1000, True),
    (torch.float16, 64, False, 1, 2, 2, 4096, False),
]


def check_attention() -> list[tuple[str, float, bool]]:
    """ops.attention on CUDA tensors against float64: the output's relative (norm) error;
    bound: the output's rounding (2^-11 f16, 2^-8 bf16) plus P rounded to the input type
    before P V (the same again), times 2 for the f32 sums: 4 u."""
    rows = []
    for dtype, D, causal, Z, H, Hkv, N, strided in ATTENTION_CHECKS:
        g = torch.Generator(device="cuda").manual_seed(N + D)
        q = torch.randn(Z, N, H, D, device="cuda", dtype=dtype, generator=g).transpose(1, 2) if strided else \
            torch.randn(Z, H, N, D, device="cuda", dtype=dtype, generator=g)
        k, v = (torch.randn(Z, Hkv, N, D, device="cuda", dtype=dtype, generator=g) for _ in range(2))
        name = (f"attention {str(dtype)[6:]} D{D} {'causal' if causal else 'full'} Z{Z} H{H}/{Hkv} N{N}"
                f"{' strided' if strided else ''}")
        try:
            out = ops.attention(q, k, v, causal=causal)
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - print it, keep the other checks
            print(f"check {name}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            rows.append((name, float("nan"), False))
            continue
        err = rel_err(out, reference_attention(q, k, v, causal))
        u = 2.0 ** -11 if dtype == torch.float16 else 2.0 ** -8
        rows.append((name, err, err <= 4 * u))
    return rows


def attention_flops(Z, H, N, D, causal) -> float:
    return 4.0 * Z * H * N * N * D * (0.5 if causal else 1.0)


#: the (D, N) of the attention timings (each causal and not); Z 4, H 32 up to N 4096, Z 1 beyond
ATTENTION_SIZES = [(64, 1024), (64, 4096), (128, 1024), (128, 4096), (128, 16384), (64, 16384)]
ATTENTION_SIZES_QUICK = [(64, 4096), (128, 4096)]


def _guarded(fn):
    """(ms, "") of ``fn()`` timed by :func:`bench`, or (nan, the failure's text)."""
    try:
        return bench(fn), ""
    except Exception as exc:  # noqa: BLE001 - one contender's failure is its cell's note
        return float("nan"), f"{type(exc).__name__}: {exc}"[:200]


#: the most ``ops.attention``'s f16 output may differ from SDPA's (relative norm): both are
#: rounded to f16 (2^-11 relative each) from f32 accumulations, 4 units of each
ATTENTION_TOL = 2 * 4 * 2.0 ** -11


def output_error(out, ref) -> float:
    """||out - ref|| / ||ref|| in float64 (nan where ``out`` is None)."""
    if out is None:
        return float("nan")
    out, ref = out.double(), ref.double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def attention_timings(sizes, deadline: float | None = None) -> list[dict]:
    """TFLOP/s of ``ops.attention``, the Triton peer (the fastest of its CONFIGS) and torch
    SDPA, f16, causal and not, each case one event-timed call (:func:`bench`); cases past
    ``deadline`` (``time.monotonic()``) are left out, a row with ``skipped`` says so; a
    contender that fails is nan with a ``note``.  ``err``: ours' output against SDPA's
    (:func:`output_error`; a row past :data:`ATTENTION_TOL` is marked WRONG)."""
    import time
    try:
        import peer_attention_cuda_triton as peer
    except ImportError as exc:
        peer, missing = None, f"triton peer: {exc}"
    rows = []
    for D, N in sizes:
        Z, H = (4, 32) if N <= 4096 else (1, 32)
        for causal in (True, False):
            label = f"Z{Z} H{H} N{N} D{D} " + ("causal" if causal else "full")
            if deadline is not None and time.monotonic() > deadline:
                rows.append({"case": label, "skipped": True})
                continue
            q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
            flops = attention_flops(Z, H, N, D, causal)
            ours, note = _guarded(lambda: ops.attention(q, k, v, causal=causal))
            notes = [f"ours: {note}"] if note else []
            best = peer.best_config(q, k, v, causal, bench, peer.CONFIGS) if peer is not None else None
            if best is None:
                notes.append(missing if peer is None else "triton: no config ran")
                best = ("-", float("nan"))
            sdpa, note = _guarded(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
            notes += [f"sdpa: {note}"] if note else []
            err = float("nan")
            if ours == ours:        # (not nan: it ran)
                err = output_error(ops.attention(q, k, v, causal=causal),
                                   torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
            rows.append({"case": label, "D": D, "N": N, "causal": causal, "ours": flops / ours / 1e9,
                         "triton": flops / best[1] / 1e9, "sdpa": flops / sdpa / 1e9, "triton_config": best[0],
                         "err": err, "note": "; ".join(notes)})
    return rows


def attention_lines(rows: list[dict]) -> list[str]:
    """The table of :func:`attention_timings`' rows."""
    lines = [f"{'attention f16':42} {'ours':>9} {'triton':>9} {'sdpa':>9}  TFLOP/s   ours/triton  triton config"
             f"       err vs sdpa"]
    for r in rows:
        if r.get("skipped"):
            lines.append(f"{r['case']:42} skipped (time budget)")
            continue
        err = r.get("err", float("nan"))
        mark = "  WRONG" if err > ATTENTION_TOL else ""
        lines.append(f"{r['case']:42} {r['ours']:9.1f} {r['triton']:9.1f} {r['sdpa']:9.1f}            "
                     f"{r['ours'] / r['triton']:6.3f}       {str(r['triton_config']):18} {err:.2e}{mark}")
        if r.get("note"):
            lines.append(f"  {r['note']}")
    return lines


def time_attention(quick: bool) -> list[str]:
    return attention_lines(attention_timings(ATTENTION_SIZES_QUICK if quick else ATTENTION_SIZES))


#: (D, BM, BN, num_warps, num_stages, SPLIT) of the tile sweep; the table's are in targets/nvidia.py
#: (on sm90, D >= 64: wgmma key loops, codegen/nvptx/wgmma_attention.py)
ATTENTION_TILES = [(128, 128, 128, 8, 3, True), (128, 128, 128, 8, 3, False), (128, 128, 64, 8, 4, True),
                   (128, 64, 128, 4, 3, True), (128, 64, 64, 4, 4, True), (64, 128, 64, 8, 4, True),
                   (64, 128, 128, 8, 3, True), (64, 64, 64, 4, 4, True), (64, 128, 64, 8, 4, False)]
#: the tiles whose SASS ``sass_attention`` prints beside Triton's
SASS_TILES = [(128, 128, 128, 8, 3, True), (64, 128, 64, 8, 4, True)]


def sweep_attention(quick: bool) -> list[str]:
    """ops.attention's kernel at other tiles, Z 4, H 32, N 4096, causal, f16."""
    from xetile_dsl.ops.attention import attention_rows_nd_kernel, attention_rows_split_nd_kernel
    lines = []
    Z, H, N = 4, 32, 4096
    for D, BM, BN, warps, stages, split in ATTENTION_TILES[:2] if quick else ATTENTION_TILES:
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(1, 1, 1, device="cuda")
        scale = 1.4426950408889634 / math.sqrt(D)
        label = f"tiles D{D} BM {BM} BN {BN} warps {warps} stages {stages}{' split' if split else ''}"

        kernel, options = (attention_rows_split_nd_kernel, {"SCALED": False}) if split else \
            (attention_rows_nd_kernel, {})

        def run():
            kernel[(N // BM, Z * H)](q, k, v, o, lse, N, H, 1, scale, 0, CAUSAL=True, OUT=xt.float16, D=D, BM=BM,
                                     BN=BN, LSE=False, num_warps=warps, num_stages=stages, **options)
        try:
            ms = bench(run)
            err = rel_err(o[:1, :1], reference_attention(q[:1, :1], k[:1, :1], v[:1, :1], True))
            lines.append(f"{label + f' causal N{N}':62} {attention_flops(Z, H, N, D, True) / ms / 1e9:7.1f} TFLOP/s"
                         f"  error {err:.2e}")
        except Exception as exc:  # noqa: BLE001
            lines.append(f"{label}: {type(exc).__name__}: {str(exc)[:300]}")
    return lines


def focus_attention(quick: bool = False) -> list[str]:
    """The goal's row alone (``--d128``): Z 4, H 32, N 4096, D 128, f16, causal (and full):
    ``ops.attention``; its kernel launched directly with K and V by TMA (the launch's
    default where the arrays allow it, decision 056) and by the cp.async ring
    (``XETILE_NV_TMA=0``), each with its error against float64 on one head; the Triton
    peer's best config.  Then the host path alone: microseconds a call at Z 1 H 1 N 128
    (a kernel of a few microseconds) over 200 back-to-back calls, for ``ops.attention``,
    the kernel launched directly and the Triton peer."""
    import time
    import peer_attention_cuda_triton as peer
    from xetile_dsl.ops.attention import attention_rows_split_nd_kernel
    Z, H, N, D, BM, BN = 4, 32, 4096, 128, 128, 128
    q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(1, 1, 1, device="cuda")
    scale = 1.4426950408889634 / math.sqrt(D)

    def direct(qq, kk, vv, oo, causal):
        n = qq.shape[2]
        attention_rows_split_nd_kernel[(-(-n // BM), qq.shape[0] * qq.shape[1])](
            qq, kk, vv, oo, lse, n, qq.shape[1], 1, scale, 0, CAUSAL=causal, OUT=xt.float16, D=D, BM=BM, BN=BN,
            LSE=False, SCALED=False)
    lines = [f"{'attention f16 Z4 H32 N4096 D128':44} {'TFLOP/s':>8}  error vs float64 (one head)"]
    for causal in (True, False):
        flops = attention_flops(Z, H, N, D, causal)
        ref = reference_attention(q[:1, :1], k[:1, :1], v[:1, :1], causal)
        kind = "causal" if causal else "full"
        ms = bench(lambda: ops.attention(q, k, v, causal=causal))
        err = rel_err(ops.attention(q, k, v, causal=causal)[:1, :1], ref)
        lines.append(f"{f'ops.attention {kind}':44} {flops / ms / 1e9:8.1f}  {err:.2e}")
        for label, tma in (("kernel direct, K/V by TMA", "1"), ("kernel direct, cp.async ring", "0")):
            saved = os.environ.get("XETILE_NV_TMA")
            os.environ["XETILE_NV_TMA"] = tma
            try:
                ms = bench(lambda: direct(q, k, v, o, causal))
                err = rel_err(o[:1, :1], ref)
                lines.append(f"{f'{label} {kind}':44} {flops / ms / 1e9:8.1f}  {err:.2e}")
            except Exception as exc:  # noqa: BLE001
                lines.append(f"{label} {kind}: {type(exc).__name__}: {str(exc)[:300]}")
            finally:
                if saved is None:
                    os.environ.pop("XETILE_NV_TMA", None)
                else:
                    os.environ["XETILE_NV_TMA"] = saved
        config, tri = peer.best_config(q, k, v, causal, bench, peer.CONFIGS)
        lines.append(f"{f'triton peer {kind} {config}':44} {flops / tri / 1e9:8.1f}")
    small = [torch.randn(1, 1, 128, D, device="cuda", dtype=torch.float16) for _ in range(3)]
    o_small = torch.empty_like(small[0])
    calls = {"ops.attention": lambda: ops.attention(*small, causal=True),
             "kernel direct": lambda: direct(*small, o_small, True),
             "triton peer (128, 128, 8, 3)": lambda: peer.attention(*small, True, (128, 128, 8, 3))}
    for label, fn in calls.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        lines.append(f"{f'host path: {label}, Z1 H1 N128 causal':44} {(time.perf_counter() - start) / 200 * 1e6:8.1f} us a call")
    return lines


def loop_opcodes(sass: str, mma: str) -> str:
    """The opcodes of each SASS loop holding ``mma`` (HMMA or HGMMA), most frequent first:
    a loop is the instructions from a back branch's target to the branch."""
    import collections
    import sass_loop
    instrs, labels = sass_loop._parse(sass)
    out = []
    for i, text in enumerate(instrs):
        m = sass_loop._BRANCH.search(text)
        start = labels.get(m.group(1), 1 << 30) if m else 1 << 30
        if start <= i and any(mma in t for t in instrs[start:i + 1]):
            body = instrs[start:i + 1]
            hist = collections.Counter(sass_loop._opcode(t) for t in body)
            out.append(f"loop [{start}, {i}] {len(body)} instructions: " +
                       ", ".join(f"{k} {v}" for k, v in hist.most_common(24)))
    return "\n".join(out) or f"no loop with {mma}"


def sass_attention(quick: bool = False) -> list[str]:
    """SASS of ours (the table's tiles and the sweep's) and of the Triton peer at D 128
    causal (its (128, 128, 8, 3)): ptxas's line, the loops' opcode counts; the whole
    SASS under $OUT."""
    import shutil
    import subprocess
    import tempfile
    import peer_attention_cuda_triton as peer
    from xetile_dsl.ops.attention import attention_rows_nd_kernel, attention_rows_split_nd_kernel
    cuobjdump = shutil.which("cuobjdump")
    lines = []

    def disasm(cubin: bytes, name: str) -> str:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(cubin)
            f.flush()
            sass = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True, check=False).stdout
        if os.environ.get("OUT"):
            with open(os.path.join(os.environ["OUT"], name), "w") as f:
                f.write(sass)
        return sass
    q, k, v = (torch.randn(1, 2, 1024, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    compiled = peer._attention_fwd[(8, 2)](q, k, v, o, 0.1, 1024, 2, *q.stride()[:3], *k.stride()[:3],
                                           *v.stride()[:3], *o.stride()[:3], D=128, BM=128, BN=128, CAUSAL=True,
                                           num_warps=8, num_stages=3)
    sass = disasm(compiled.asm["cubin"], "triton_attention_sass_d128.txt")
    lines.append(f"sass triton D128 causal (128, 128, 8, 3): registers {compiled.n_regs}, spills {compiled.n_spills}, "
                 f"smem {compiled.metadata.shared} B")
    lines.append(loop_opcodes(sass, "HGMMA"))
    ptxas = shutil.which("ptxas")
    from xetile_dsl.compiler import parse_signature
    from xetile_dsl.nv_compiler import compile_nv
    for D, BM, BN, warps, stages, split in SASS_TILES:
        # as a launch on contiguous [Z, H, N, D] f16 arrays compiles it: K and V by TMA
        kernel = compile_nv((attention_rows_split_nd_kernel if split else attention_rows_nd_kernel).fn,
                            parse_signature({"q": "f16[:,:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]",
                                             "o": "f16[:,:,:,:]", "lse": "f32[:,:,:]", "N": "i32", "H": "i32",
                                             "G": "i32", "qk_scale": "f32", "with_lse": "i32"}),
                            dict(CAUSAL=True, OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False,
                                 **({"SCALED": False} if split else {})),
                            "sm90", warps, stages, tma_arrays=("q", "k", "v", "o"))
        with tempfile.TemporaryDirectory() as tmp:
            src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
            with open(src, "w") as f:
                f.write(kernel.ptx)
            arch = kernel.ptx.split(".target ")[1].split()[0]
            run = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", cubin], capture_output=True, text=True)
            info = " ".join(" ".join(x.split()[2:]) for x in run.stderr.splitlines() if "registers" in x or "spill" in x)
            with open(cubin, "rb") as f:
                sass = disasm(f.read(), f"xetile_attention_sass_d{D}_{BM}x{BN}_w{warps}{'_split' if split else ''}.txt")
        lines.append(f"sass ours D{D} BM {BM} BN {BN} warps {warps}{' split' if split else ''}: {info}")
        lines.append(loop_opcodes(sass, "HGMMA" if "HGMMA" in sass else "HMMA"))
    return lines


def check_peer() -> tuple[str, float, bool]:
    import peer_attention_cuda_triton as peer
    q, k, v = (torch.randn(1, 2, 1000, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    err = rel_err(peer.attention(q, k, v, True), reference_attention(q, k, v, True))
    return "triton peer f16 D128 causal N1000", err, err <= 4 * 2.0 ** -11


ROWS, COLS = 8192, 8192

#: unit roundoff of each output dtype
UNIT = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8, torch.float32: 2.0 ** -24}


def check_rows() -> list[tuple[str, float, bool]]:
    """ops.softmax, log_softmax, layer_norm, rms_norm on CUDA tensors against float64 torch:
    the largest error over the largest reference magnitude, within 8 units of the output
    dtype's rounding plus 2^-18 (f32 statistics over up to 2^14 columns, ex2.approx)."""
    torch.manual_seed(0)
    out = []
    shapes = [(301, 1000), (37, 3, 1000), (333, 777), (64, 100), (17, 33), (8192, 8192), (19, 8193), (7, 16384)]
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for shape in shapes:
            if shape == (8192, 8192) and dtype != torch.float16:
                shape = (2048, 8192)
            x = (3 * torch.randn(*shape, device="cuda")).to(dtype)
            n = shape[-1]
            w, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
            xd64, wd, bd = x.double(), w.double(), b.double()
            cases = [("softmax", lambda t: ops.softmax(t), lambda: torch.softmax(xd64, -1)),
                     ("log_softmax", lambda t: ops.log_softmax(t), lambda: torch.log_softmax(xd64, -1)),
                     ("layer_norm", lambda t: ops.layer_norm(t, w, b),
                      lambda: torch.nn.functional.layer_norm(xd64, (n,), wd, bd)),
                     ("rms_norm", lambda t: ops.rms_norm(t, w, 1e-6),
                      lambda: torch.nn.functional.rms_norm(xd64, (n,), wd, 1e-6))]
            for name, ours, theirs in cases:
                label = f"ops.{name} {str(dtype).split('.')[-1]} {'x'.join(map(str, shape))}"
                try:
                    ref = theirs()
                    # the second call, on a copy (same layout, another address), replays the
                    # first's launch (ops/rows.py's host path): both are checked
                    err = max(float((ours(t).double() - ref).abs().max() / ref.abs().max()) for t in (x, x.clone()))
                except Exception as exc:  # noqa: BLE001 - print what failed, keep checking the others
                    label, err = f"{label} {type(exc).__name__}: {exc}"[:200], float("nan")
                out.append((label, err, err <= 8 * UNIT[dtype] + 2.0 ** -18))
    x = torch.randn(301, 1000, device="cuda")
    y = torch.empty_like(x)
    try:   # the chunked form split over 2 warps a program (cross-warp reductions inside its loop)
        softmax_kernel[(-(-301 // 4),)](x, y, 1000, OUT=xt.float32, BM=4, BC=256, num_warps=2)
        err = float((y.double() - torch.softmax(x.double(), -1)).abs().max())
    except Exception as exc:  # noqa: BLE001
        err = float("nan")
        out.append((f"chunked softmax 2 warps {type(exc).__name__}: {exc}"[:200], err, False))
    out.append(("softmax_kernel f32 301x1000 BC 256 num_warps 2", err, err <= 8 * UNIT[torch.float32] + 2.0 ** -18))
    return out


def sass_counts(kernel) -> str:
    """ptxas's resource line and, per thread of the program, the SASS's global loads and
    stores, barriers, shared stores and loads, local-memory accesses (needs ptxas, cuobjdump
    on the PATH)."""
    import re
    import shutil
    import subprocess
    import tempfile
    ptxas, cuobjdump = shutil.which("ptxas"), shutil.which("cuobjdump")
    if not ptxas or not cuobjdump:
        return "sass: no ptxas/cuobjdump on PATH"
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(src, "w") as f:
            f.write(kernel.ptx)
        run = subprocess.run([ptxas, f"-arch={kernel.target.ptx_arch}", "-v", src, "-o", cubin],
                             capture_output=True, text=True, check=False)
        info = " ".join(" ".join(line.split()[2:]) for line in run.stderr.splitlines()
                        if "registers" in line or "spill" in line)
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, check=False).stdout
    ops_ = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)
    count = lambda *names: sum(1 for o in ops_ if o.split(".")[0] in names)   # noqa: E731
    wide = sum(1 for o in ops_ if o.startswith("LDG") and ".128" in o)
    return (f"{info}; SASS LDG {count('LDG')} ({wide} of 128 bits), STG {count('STG')}, BAR {count('BAR')}, "
            f"STS {count('STS')}, LDS {count('LDS')}, LDL/STL {count('LDL', 'STL')}, threads {kernel.threads}")


def bench_stream(fn, inner: int = 10, reps: int = 10) -> float:
    """Median milliseconds a call of ``fn()`` over ``reps`` CUDA-event-timed runs of
    ``inner`` calls back to back (the GPU's time per call once the host launches ahead of
    it: a launch's host cost shows only where it exceeds the kernel's)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
    return statistics.median(times)


def kernel_ms(fn, reps: int = 10) -> float:
    """Milliseconds of GPU work a call of ``fn()`` runs (the kernels' own durations, torch
    profiler / CUPTI), nan where the profiler records none."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    cuda = torch.autograd.DeviceType.CUDA
    total = sum(e.time_range.elapsed_us() for e in prof.events() if e.device_type == cuda)
    return total / reps / 1e3 if total else float("nan")


def host_us(fn, calls: int = 100) -> float:
    """Host microseconds a call of ``fn()`` takes to return (launches queue on the GPU)."""
    import time
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t) / calls * 1e6
    torch.cuda.synchronize()
    return host


def _patched_launch(kernel, min_blocks: int, grid: int, args: list):
    """A launcher of ``kernel``'s PTX with ``.minnctapersm min_blocks`` added (ptxas then
    fits that many programs a multiprocessor in registers): a sweep point, not a product
    path."""
    import re
    from xetile_dsl.runtime import backend_cuda
    ptx = re.sub(r"(\.maxntid \d+)", rf"\1\n.minnctapersm {min_blocks}", kernel.ptx)
    function = backend_cuda.load_function(ptx, kernel.name)
    params = []
    for (name, kind), value in zip(kernel.params, args):
        params += backend_cuda.array_params(value, name) if kind == "array" else \
            [backend_cuda.scalar_param(value, kind, name)]
    return lambda: backend_cuda.launch(function, (grid, 1, 1), kernel.threads, params)


def row_timings(with_rms_peer: bool = False, deadline: float | None = None) -> dict:
    """softmax, layer_norm and rms_norm over ROWS x COLS f16 by ``ops``, torch and the
    Triton peer, and a copy of the same bytes (``y.copy_(x)``), same run: each measured
    three ways (milliseconds): one event-timed call (host cost included), back to back
    (``stream``), the kernels' own time (``kernel``).  Returns ``{"copy": (one, stream,
    kernel), "cases": [(op, contender, (one, stream, kernel), host_us)], "nbytes": int,
    "lines": [...]}``; the Triton rms_norm only ``with_rms_peer`` (vs_cuda.py's table);
    cases past ``deadline`` are left out."""
    import time
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    w, b = (torch.randn(COLS, device="cuda", dtype=torch.float16) for _ in range(2))

    def measure(fn):
        return bench(fn), bench_stream(fn), kernel_ms(fn)

    out = {"copy": measure(lambda: y.copy_(x)), "cases": [], "lines": [],
           "nbytes": 2 * x.numel() * x.element_size()}       # read once + write once
    cases = [("softmax", "ops", lambda: ops.softmax(x, out=y)), ("softmax", "torch", lambda: torch.softmax(x, -1)),
             ("layer_norm", "ops", lambda: ops.layer_norm(x, w, b, out=y)),
             ("layer_norm", "torch", lambda: torch.nn.functional.layer_norm(x, (COLS,), w, b)),
             ("rms_norm", "ops", lambda: ops.rms_norm(x, w, out=y)),
             ("rms_norm", "torch", lambda: torch.nn.functional.rms_norm(x, (COLS,), w))]
    try:
        import peer_rows_cuda_triton as peer
        cases += [("softmax", "triton", lambda: peer.softmax(x, y)),
                  ("layer_norm", "triton", lambda: peer.layer_norm(x, w, b, out=y))]
        if with_rms_peer:
            cases.append(("rms_norm", "triton", lambda: peer.rms_norm(x, w, out=y)))
    except ImportError as exc:
        peer = None
        out["lines"].append(f"triton rows peer: {exc}")
    for op, who, fn in cases:
        if deadline is not None and time.monotonic() > deadline:
            out["lines"].append(f"{op} {who}: skipped (time budget)")
            continue
        try:
            out["cases"].append((op, who, measure(fn), host_us(fn)))
        except Exception as exc:  # noqa: BLE001 - print what failed, keep the other cases
            out["lines"].append(f"{op} {who}: FAILED: {type(exc).__name__}: {exc}"[:300])
    if peer is not None:
        out["lines"].append(f"triton num_warps: softmax {peer.best_warps(peer._softmax_rows)}, layer_norm "
                            f"{peer.best_warps(peer._layer_norm_rows)}" +
                            (f", rms_norm {peer.best_warps(peer._rms_norm_rows)}" if with_rms_peer else ""))
    out["tensors"] = (x, y, w, b)
    return out


def row_lines(timed: dict) -> list[str]:
    """The table of :func:`row_timings`: kernel milliseconds, GB/s, % of the copy's same
    measure (one call, stream, kernel), host microseconds a call."""
    copy, nbytes = timed["copy"], timed["nbytes"]
    gbs = lambda ms: nbytes / ms / 1e6   # noqa: E731
    lines = [f"copy f16 {ROWS}x{COLS} (y.copy_(x)): 1 call {copy[0]:.4f} ms, stream {copy[1]:.4f} ms, kernel "
             f"{copy[2]:.4f} ms = {gbs(copy[2]):.0f} GB/s",
             f"{'case':44} {'ms (kernel)':>11}   GB/s   % of copy: 1 call  stream  kernel   host us/call"]
    for op, who, t, host in timed["cases"]:
        share = "  ".join(f"{100 * c / m:5.1f}%" for c, m in zip(copy, t))
        lines.append(f"{f'{op} {who} f16 {ROWS}x{COLS}':44} {t[2]:11.4f} {gbs(t[2]):6.0f}   {share}   {host:8.1f}")
    goal = []
    for op, who, t, _ in timed["cases"]:
        if who == "ops":
            kernel, stream = 100 * copy[2] / t[2], 100 * copy[1] / t[1]
            goal.append(f"{op} kernel {kernel:.1f}% stream {stream:.1f}% {'MET' if min(kernel, stream) >= 90 else 'not met'}")
    if goal:
        lines.append("goal (ops.* >= 90% of copy by kernel time and back to back): " + "; ".join(goal))
    return lines + timed["lines"]


def time_rows(quick: bool) -> list[str]:
    """:func:`row_timings`' table, then the whole-row kernels at other shapes and the
    chunked ones at other tiles (% of the copy's kernel time)."""
    timed = row_timings()
    x, y, w, b = timed["tensors"]
    whole = lambda: softmax_row_kernel[(ROWS,)](x, y, COLS, OUT=xt.float16, BM=1, BN=COLS, LOG=False,  # noqa: E731
                                                num_warps=16)
    timed["cases"].append(("softmax", "kernel launch (whole rows)",
                           (bench(whole), bench_stream(whole), kernel_ms(whole)), host_us(whole)))
    lines = row_lines(timed)
    copy = timed["copy"]
    w2, b2 = w[None], b[None]
    sig = {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"}
    norm_sig = {"x": "f16[:,:]", "w": "f16[:,:]", "b": "f16[:,:]", "y": "f16[:,:]", "N": "i32", "eps": "f32",
                "mean_out": "i32", "rstd_out": "i32"}     # (no statistics: STATS=False, unused scalars)
    # the whole-row programs at other shapes: (rows a program, warps, .minnctapersm or 0)
    variants = [(1, 4, 0), (1, 8, 0), (1, 16, 0), (1, 32, 0), (1, 8, 5), (1, 16, 4), (1, 32, 2), (2, 16, 0),
                (2, 32, 0), (4, 32, 0)]
    for bm, warps, min_blocks in variants:
        grid = ROWS // bm
        try:
            ks = [xd.compile(softmax_row_kernel, sig, {"OUT": xt.float16, "BM": bm, "BN": COLS, "LOG": False},
                             target="sm90", num_warps=warps)]
            ks += [xd.compile(layer_norm_row_kernel, norm_sig, {"RMS": rms, "OUT": xt.float16, "BM": bm, "BN": COLS,
                                                                "STATS": False},
                              target="sm90", num_warps=warps) for rms in (False, True)]
            argv = [[x, y, COLS], [x, w2, b2, y, COLS, 1e-5, 0, 0], [x, w2, b2, y, COLS, 1e-6, 0, 0]]
            if min_blocks:
                fns = [_patched_launch(k, min_blocks, grid, a) for k, a in zip(ks, argv)]
            else:
                fns = [lambda: softmax_row_kernel[(grid,)](x, y, COLS, OUT=xt.float16, BM=bm, BN=COLS, LOG=False,
                                                           num_warps=warps),
                       lambda: layer_norm_row_kernel[(grid,)](x, w2, b2, y, COLS, 1e-5, RMS=False, OUT=xt.float16,
                                                              BM=bm, BN=COLS, num_warps=warps),
                       lambda: layer_norm_row_kernel[(grid,)](x, w2, b2, y, COLS, 1e-6, RMS=True, OUT=xt.float16,
                                                              BM=bm, BN=COLS, num_warps=warps)]
            parts = []
            for name, fn in zip(("softmax", "layer_norm", "rms_norm"), fns):
                ms = kernel_ms(fn)
                parts.append(f"{name} {100 * copy[2] / ms:5.1f}% ({100 * copy[1] / bench_stream(fn):5.1f}%)")
            label = f"whole rows BM {bm} w{warps}" + (f" minnctapersm {min_blocks}" if min_blocks else "")
            lines.append(f"{label:42} {'  '.join(parts)}  kernel (stream) % of copy")
            if (bm, warps) in ((1, 4), (1, 16), (1, 32), (2, 32)) and min_blocks in (0, 2, 4, 5):
                for n, k in zip(("softmax", "layer_norm"), ks):
                    if min_blocks:
                        import re
                        k = type("K", (), {"ptx": re.sub(r"(\.maxntid \d+)", rf"\1\n.minnctapersm {min_blocks}",
                                                          k.ptx), "target": k.target, "threads": k.threads})()
                    lines.append(f"  sass {n}: {sass_counts(k)}")
        except Exception as exc:  # noqa: BLE001 - print what failed, keep the other variants
            lines.append(f"whole rows BM {bm} w{warps} min {min_blocks}: {type(exc).__name__}: {exc}"[:300])
    tiles = [(4, 256)] if quick else [(4, 256), (1, 2048)]
    for BM, BC in tiles:
        grid = (ROWS // BM,)
        ms = kernel_ms(lambda: softmax_kernel[grid](x, y, COLS, OUT=xt.float16, BM=BM, BC=BC))
        ln = kernel_ms(lambda: layer_norm_kernel[grid](x, w2, b2, y, COLS, 1e-5, RMS=False, OUT=xt.float16, BM=BM,
                                                       BC=BC))
        lines.append(f"{f'chunked tiles BM {BM} BC {BC}':42} softmax {100 * copy[2] / ms:5.1f}%  layer_norm "
                     f"{100 * copy[2] / ln:5.1f}% of copy (kernel)")
    return lines


def main() -> None:
    """--quick: fewer sizes; --checks-only; --no-checks; --sweep: the tile sweep, the SASS
    and the attention table (no row ops); --d128: the attention checks, then only
    :func:`focus_attention` (the D 128 row, TMA against cp.async, the host path)."""
    quick, checks_only, sweep = "--quick" in sys.argv, "--checks-only" in sys.argv, "--sweep" in sys.argv
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"]
    rows_only, d128 = "--rows-only" in sys.argv, "--d128" in sys.argv
    checks = []
    if "--no-checks" not in sys.argv:
        checks = [] if d128 else check_rows()
        if not rows_only:
            checks += check_attention()
            try:
                checks.append(check_peer())
            except ImportError as exc:
                lines.append(f"triton peer: {exc}")
    for name, err, ok in checks:
        lines.append(f"check {name:52} error {err:.3e} {'ok' if ok else 'FAIL'}")
    print("\n".join(lines), flush=True)
    sections = ((sweep_attention, False), (sass_attention, False), (time_attention, True)) if sweep else \
        ((time_rows, quick), (sweep_attention, quick), (time_attention, quick))
    if d128:
        sections = ((focus_attention, True),)
    if not checks_only:
        for section, short in ((time_rows, quick),) if rows_only else sections:
            try:
                part = section(short)
            except Exception as exc:  # noqa: BLE001 - print what failed, keep the other section
                part = [f"{section.__name__}: {type(exc).__name__}: {exc}"]
            print("\n".join(part), flush=True)
            lines += part
    if os.environ.get("OUT"):
        name = "vs_cuda_attention_d128.txt" if d128 else "vs_cuda_attention_sweep.txt" if sweep else \
            "vs_cuda_attention.txt"
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
