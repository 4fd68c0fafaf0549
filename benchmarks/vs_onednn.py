"""ops.matmul against oneDNN (``torch.matmul`` on XPU, as PyTorch uses it): median time of
device events, TFLOPS and % of the device's matrix peak, a CSV and a plot.

    python benchmarks/vs_onednn.py [--device gpu|cpu] [--dtype f16 bf16 int8 tf32]
                                   [--cases nn nt tn tt] [--shapes MxNxK ...] [--reps 10]
                                   [--csv FILE] [--plot FILE.png] [--backward [OP ...]]

* On an Intel GPU: every (dtype, case, shape) of the sweep (Triton-XPU's GEMM benchmark
  shapes, square sizes and small M) runs ``--reps`` times (>= 10) after a warm-up, each
  run after writing a buffer larger than the last-level cache (so A and B come from
  memory), timed by the launch's own profiling event; the median gives TFLOPS
  (2 M N K / t) and % of the peak in ``xetile_dsl/targets/peaks.py``.  oneDNN runs the
  same way through torch when torch has XPU (else its columns are empty, said once).
* Without an Intel GPU it says so in one line and prints the static ISA report of each
  benchmarked kernel (``CompiledKernel.report()``, needs ocloc) for pvc and arc instead:
  no timings are made up.
* ``--device cpu`` runs the sweep (small shapes) on the OpenCL CPU device as a smoke
  test of the whole path, CSV and plot included; its times say nothing about GPUs.
* ``--backward [OP ...]`` (all of BACKWARD_OPS when none is named) adds the backward ops,
  f16: each op's backward (``ops.matmul_backward`` with bias and gelu, softmax and
  log_softmax, layer_norm, cross_entropy, attention) against torch's autograd backward of
  the same forward on XPU.  A backward is several kernels, so both sides are timed from
  the host: the median of >= 10 runs of the call and a wait for the queue, caches flushed
  before each.  Without an Intel GPU: the ISA report of each backward kernel on pvc (or
  ``--isa-targets``).

The plot (TFLOPS per shape, one panel per dtype and case) needs matplotlib; without it
the script says so and writes the CSV only."""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

import numpy as np

import xetile_dsl as xd
from xetile_dsl.errors import DeviceError, XeTileError
from xetile_dsl.jit import default_target
from xetile_dsl.ops import configs, operands
from xetile_dsl.ops.attention import attention_kernel, attention_launch, attention_rows_kernel
from xetile_dsl.ops.attention_backward import (attention_bwd_dkdv_kernel, attention_bwd_dkdv_rows_kernel,
                                               attention_bwd_dq_kernel, attention_bwd_dq_rows_kernel)
from xetile_dsl.ops.losses import cross_entropy_backward_kernel
from xetile_dsl.ops.matmul import ACCUMULATION, ACTIVATIONS, XT_DTYPES, matmul_kernel, matmul_launch
from xetile_dsl.ops.matmul_backward import matmul_dz_kernel
from xetile_dsl.ops.rows_backward import column_sum_kernel, norm_backward_kernel, softmax_backward_kernel
from xetile_dsl.runtime.devices import get_device
from xetile_dsl.targets.peaks import peak_for

#: benchmark dtype -> numpy input dtype (tf32: f32 arrays on the tf32 DPAS)
DTYPES = {"f16": np.dtype(np.float16), "bf16": operands.BF16, "int8": np.dtype(np.int8),
          "tf32": np.dtype(np.float32)}
#: case -> (A stored transposed, B stored transposed)
CASES = {"nn": (False, False), "nt": (False, True), "tn": (True, False), "tt": (True, True)}
#: (M, N, K): Triton-XPU's GEMM benchmark shapes, squares and small M (decode-like)
GPU_SHAPES = [(1, 5120, 13824), (4, 4096, 12288), (512, 8192, 8192), (1024, 1024, 1024), (2048, 2048, 2048),
              (4096, 4096, 4096), (8192, 8192, 8192), (1, 1024, 1024), (8, 4096, 4096), (32, 4096, 4096),
              (3072, 4096, 3072), (8192, 1024, 16384)]
#: (Z, H, N, D) flash attention shapes (causal and not); CPU smoke: one small head
GPU_ATTENTION = [(4, 32, 1024, 64), (4, 32, 1024, 128), (1, 32, 4096, 64), (1, 32, 4096, 128)]
CPU_ATTENTION = [(1, 2, 128, 64)]
#: smoke sizes for the CPU device (K, N multiples of 8: device rows need a 16-byte pitch)
CPU_SHAPES = [(1, 64, 64), (37, 40, 40), (128, 128, 128)]
#: bytes written between runs to evict A and B from the caches (PVC's L2 is 408 MB)
FLUSH_BYTES = 512 << 20
MIN_REPS = 10


def gemm_flops(m: int, n: int, k: int) -> int:
    """Operations of one GEMM: a multiply and an add per (m, n, k)."""
    return 2 * m * n * k


def attention_flops(z: int, h: int, n: int, d: int, causal: bool) -> float:
    """Operations of flash attention forward: Q K^T and P V, 2 N N D each per head;
    causal attention computes half of each product."""
    full = 4 * z * h * n * n * d
    return full / 2 if causal else full


def tflops(flops: int, seconds: float) -> float:
    return flops / seconds / 1e12


def percent_of_peak(achieved_tflops: float, peak_tflops: float | None) -> float | None:
    return None if not peak_tflops else 100.0 * achieved_tflops / peak_tflops


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r}: expected MxNxK, e.g. 512x512x512") from None
    return m, n, k


# --- timing -----------------------------------------------------------------------------------
class EventTimer:
    """Runs on one profiling dpctl queue: inputs live there, so each launch's event has
    the kernel's start and end times; a write of ``flush_bytes`` precedes each run."""

    def __init__(self, device, flush_bytes: int):
        import dpctl  # optional: the launcher's first-choice runtime
        import dpnp
        self.dpnp = dpnp
        self.queue = dpctl.SyclQueue(device.native, property="enable_profiling")
        self.flush = dpnp.zeros(flush_bytes // 4, dtype=np.float32, sycl_queue=self.queue)

    def device_array(self, host: np.ndarray):
        return self.dpnp.asarray(host, sycl_queue=self.queue)

    def median_seconds(self, launch, reps: int) -> float:
        """Median kernel time of ``reps`` runs of ``launch()`` (returns the event), after
        one warm-up (compile, cache load) run."""
        launch().wait()
        times = []
        for _ in range(max(reps, MIN_REPS)):
            self.flush.fill(1.0)
            event = launch()
            event.wait()
            times.append((event.profiling_info_end - event.profiling_info_start) * 1e-9)
        return statistics.median(times)


def _inputs(dtype: np.dtype, m: int, n: int, k: int, case: str, seed: int = 0):
    """Host A and B as stored for ``case`` (transposed operands stored row-major)."""
    rng = np.random.default_rng(seed)
    if dtype.kind == "i":
        a, b = rng.integers(-8, 8, (m, k)).astype(dtype), rng.integers(-8, 8, (k, n)).astype(dtype)
    else:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    ta, tb = CASES[case]
    return (np.ascontiguousarray(a.T) if ta else a), (np.ascontiguousarray(b.T) if tb else b)


def time_xetile(timer: EventTimer, dtype, shape, case, target, reps) -> float:
    a, b = (timer.device_array(x) for x in _inputs(dtype, *shape, case))
    ta, tb = CASES[case]
    return timer.median_seconds(lambda: matmul_launch(a, b, trans_a=ta, trans_b=tb, target=target)[1], reps)


def time_xetile_attention(timer: EventTimer, shape, causal: bool, reps) -> float:
    rng = np.random.default_rng(0)
    q, k, v = (timer.device_array(rng.standard_normal(shape).astype(np.float16)) for _ in range(3))
    return timer.median_seconds(lambda: attention_launch(q, k, v, causal=causal)[1], reps)


def time_onednn_attention(shape, causal: bool, reps) -> float | None:
    """torch's scaled_dot_product_attention on XPU (oneDNN), XPU events; None without it."""
    try:
        import torch
    except ImportError:
        return None
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        return None
    q, k, v = (torch.randn(shape, dtype=torch.float16, device="xpu") for _ in range(3))
    return _torch_median(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
                         torch, reps)


def _torch_median(run, torch, reps) -> float:
    """Median of XPU-event times of ``run()`` after a warm-up, caches flushed before each."""
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="xpu")
    run()
    times = []
    for _ in range(max(reps, MIN_REPS)):
        flush.fill_(1.0)
        start, end = torch.xpu.Event(enable_timing=True), torch.xpu.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


def time_onednn(dtype_name: str, shape, case, reps) -> float | None:
    """torch.matmul on XPU (oneDNN), timed with XPU events; None without torch XPU."""
    try:
        import torch
    except ImportError:
        return None
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()) or dtype_name == "int8":
        return None   # torch.matmul has no int8 x int8 -> int32 on XPU
    torch_dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[dtype_name]
    torch.backends.mkldnn.allow_tf32 = dtype_name == "tf32"
    m, n, k = shape
    ta, tb = CASES[case]
    a = torch.randn((k, m) if ta else (m, k), dtype=torch_dtype, device="xpu")
    b = torch.randn((n, k) if tb else (k, n), dtype=torch_dtype, device="xpu")
    return _torch_median(lambda: torch.matmul(a.t() if ta else a, b.t() if tb else b), torch, reps)


# --- the sweep --------------------------------------------------------------------------------
def sweep(device, args) -> list[dict]:
    timer = EventTimer(device, args.flush_mb << 20 if device.kind == "gpu" else 8 << 20)
    target = default_target(device)
    peak = peak_for(device.name)
    shapes = args.shapes or (GPU_SHAPES if device.kind == "gpu" else CPU_SHAPES)
    rows, said_no_torch = [], False
    for dtype_name in args.dtype:
        for case in args.cases:
            for shape in shapes:
                row = {"device": device.name, "dtype": dtype_name, "case": case, "M": shape[0], "N": shape[1],
                       "K": shape[2]}
                flops = gemm_flops(*shape)
                peak_tf = peak.tflops(dtype_name) if peak else None
                try:
                    seconds = time_xetile(timer, DTYPES[dtype_name], shape, case, target, args.reps)
                    row.update(_scores("xetile", seconds, flops, peak_tf))
                except XeTileError as exc:
                    row["xetile_error"] = str(exc).splitlines()[0]
                onednn = time_onednn(dtype_name, shape, case, args.reps) if device.kind == "gpu" else None
                if onednn is None and device.kind == "gpu" and not said_no_torch:
                    print("oneDNN: torch with XPU is not available here: its columns stay empty", file=sys.stderr)
                    said_no_torch = True
                if onednn is not None:
                    row.update(_scores("onednn", onednn, flops, peak_tf))
                rows.append(row)
                print(_row_text(row), flush=True)
    if args.attention:
        rows += attention_sweep(device, timer, peak, args)
    if args.backward:
        rows += backward_sweep(device, timer, peak, args)
    return rows


def attention_sweep(device, timer, peak, args) -> list[dict]:
    """ops.attention (f16) against SDPA for each shape, causal and not ("case" holds which)."""
    rows = []
    peak_tf = peak.tflops("f16") if peak else None
    for z, h, n, d in (GPU_ATTENTION if device.kind == "gpu" else CPU_ATTENTION):
        for causal in (False, True):
            row = {"device": device.name, "dtype": "f16", "case": f"attn{'-causal' if causal else ''}",
                   "M": z * h, "N": n, "K": d}
            flops = attention_flops(z, h, n, d, causal)
            try:
                row.update(_scores("xetile", time_xetile_attention(timer, (z, h, n, d), causal, args.reps),
                                   flops, peak_tf))
            except XeTileError as exc:
                row["xetile_error"] = str(exc).splitlines()[0]
            onednn = time_onednn_attention((z, h, n, d), causal, args.reps) if device.kind == "gpu" else None
            if onednn is not None:
                row.update(_scores("onednn", onednn, flops, peak_tf))
            rows.append(row)
            print(_row_text(row), flush=True)
    return rows


def _scores(impl: str, seconds: float, flops: float | None, peak_tf: float | None) -> dict:
    """ms, TFLOPS and % of the peak (None without a FLOP count: the backward row ops)."""
    achieved = None if flops is None else tflops(flops, seconds)
    pct = None if achieved is None else percent_of_peak(achieved, peak_tf)
    return {f"{impl}_ms": seconds * 1e3, f"{impl}_tflops": achieved, f"{impl}_pct_peak": pct}


def _row_text(row: dict) -> str:
    head = f"{row['dtype']:>5} {row['case']} {row['M']:>6}x{row['N']:<6}x{row['K']:<6}"
    if "xetile_error" in row:
        return f"{head} xetile: {row['xetile_error']}"
    pct = row.get("xetile_pct_peak")
    text = f"{head} xetile {row['xetile_ms']:9.3f} ms" + _tflops_text(row["xetile_tflops"]) + \
        (f" ({pct:5.1f} % of peak)" if pct is not None else "")
    if "onednn_ms" in row:
        text += f" | {'torch' if row['case'].startswith('bwd-') else 'oneDNN'} {row['onednn_ms']:9.3f} ms" + \
            _tflops_text(row["onednn_tflops"])
    return text


def _tflops_text(value: float | None) -> str:
    return "" if value is None else f" {value:8.3f} TFLOPS"


COLUMNS = ("device", "dtype", "case", "M", "N", "K", "xetile_ms", "xetile_tflops", "xetile_pct_peak",
           "onednn_ms", "onednn_tflops", "onednn_pct_peak", "xetile_error")


def write_csv(rows: list[dict], path: str) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in COLUMNS})


def write_plot(rows: list[dict], path: str) -> bool:
    """TFLOPS per shape, a panel per (dtype, case); False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    panels = sorted({(r["dtype"], r["case"]) for r in rows})
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3 * len(panels)), squeeze=False)
    for ax, (dtype_name, case) in zip(axes[:, 0], panels):
        sel = [r for r in rows if (r["dtype"], r["case"]) == (dtype_name, case)]
        labels = [f"{r['M']}x{r['N']}x{r['K']}" for r in sel]
        for impl in ("xetile", "onednn"):
            ys = [r.get(f"{impl}_tflops") for r in sel]
            ys = [np.nan if y is None else y for y in ys]   # no value, or no FLOP count (row ops)
            if not all(np.isnan(ys)):
                ax.plot(labels, ys, marker="o", label=impl)
        ax.set_title(f"{dtype_name} {case}: {sel[0]['device']}")
        ax.set_ylabel("TFLOPS")
        ax.tick_params(axis="x", rotation=45)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True


# --- without a GPU: the static ISA report -----------------------------------------------------
def isa_reports(args) -> None:
    """Each benchmarked kernel (one per dtype, case and target: shapes do not change it)
    compiled for pvc and arc, its ISA report printed."""
    for target in args.isa_targets:
        for dtype_name in args.dtype:
            for case in args.cases:
                title = f"== ops.matmul {dtype_name} {case} on {target}"
                try:
                    print(title, "\n", compile_for_report(dtype_name, case, target).report(), sep="", flush=True)
                except XeTileError as exc:
                    print(f"{title}: not available: {str(exc).splitlines()[0]}", flush=True)


def attention_reports(args) -> None:
    """The attention kernel (f16, D = 64 and 128, causal and not) on pvc: its ISA report."""
    for d in (64, 128):
        for causal in (False, True):
            title = f"== ops.attention f16 D={d} causal={causal} on pvc"
            try:
                print(title, "\n", compile_attention_for_report(d, causal).report(), sep="", flush=True)
            except XeTileError as exc:
                print(f"{title}: not available: {str(exc).splitlines()[0]}", flush=True)


def compile_attention_for_report(d: int, causal: bool, target: str = "pvc"):
    BM, BN = configs.attention_tiles(target, d)
    sig = {"q": "f16[:,:]", "k": "f16[:,:]", "v": "f16[:,:]", "o": "f16[:,:]", "lse": "f32[:,:]", "N": "i32",
           "NP": "i32", "qk_scale": "f32", "with_lse": "i32"}
    kernel, extra = attention_kernel, {"SCALED": False}  # the default scale is positive
    if configs.attention_form(target) != "transposed":
        kernel, extra = attention_rows_kernel, {"LSE": False}
    consts = {"CAUSAL": causal, "OUT": XT_DTYPES["float16"], "D": d, "BM": BM, "BN": BN, **extra}
    return xd.compile(kernel, signature=sig, constants=consts, target=target)


def compile_for_report(dtype_name: str, case: str, target: str):
    """ops.matmul's kernel as the sweep launches it (default epilogue and output dtype)."""
    np_name = "bfloat16" if DTYPES[dtype_name] == operands.BF16 else DTYPES[dtype_name].name
    acc, out, _ = ACCUMULATION[np_name]
    BM, BN, BK = configs.gemm_tiles(target, np_name)
    elem = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "int8": "i8", "int32": "i32"}
    ta, tb = CASES[case]
    sig = {"a": f"{elem[np_name]}[:,:]", "b": f"{elem[np_name]}[:,:]", "bias": "f32[:,:]",
           "c": f"{elem[out]}[:,:]", "K": "i32"}
    consts = {"TA": ta, "TB": tb, "HAS_BIAS": False, "ACT": 0, "ACC": XT_DTYPES[acc], "OUT": XT_DTYPES[out],
              "BM": BM, "BN": BN, "BK": BK}
    return xd.compile(matmul_kernel, signature=sig, constants=consts, target=target)


# --- backward ops (--backward) ----------------------------------------------------------------
#: backward op -> its GPU shape and its CPU-device smoke shape: matmul (M, N, K), the row ops
#: (rows, N), cross_entropy (rows, classes), attention (Z, H, N, D), causal
BACKWARD_OPS = {"matmul": ((4096, 4096, 4096), (64, 64, 64)), "softmax": ((4096, 4096), (64, 256)),
                "log_softmax": ((4096, 4096), (64, 256)), "layer_norm": ((8192, 4096), (64, 256)),
                "cross_entropy": ((4096, 50257), (64, 256)), "attention": ((4, 32, 1024, 64), (1, 2, 128, 64))}


def backward_flops(op: str, shape) -> float | None:
    """Operations of a backward where they are GEMMs: matmul's dA and dB (2 M N K each)
    and its gelu recompute of Z (2 M N K); attention's five N N D products per head (QK^T,
    dP = dO V^T, dV, dK, dQ: 2 N N D each), half of them causal.  None for the row ops
    (memory-bound: their milliseconds are the measure)."""
    if op == "matmul":
        return 3 * gemm_flops(*shape)
    if op == "attention":
        z, h, n, d = shape
        return 10 * z * h * n * n * d / 2
    return None


def _backward_inputs(op: str, shape, rng):
    """Host inputs of the op's forward: f16 activations, f32 norm weights, int targets."""
    f16 = np.float16
    if op == "matmul":
        m, n, k = shape
        return {"a": rng.standard_normal((m, k)).astype(f16), "b": rng.standard_normal((n, k)).astype(f16),
                "bias": rng.standard_normal(n).astype(np.float32), "dc": rng.standard_normal((m, n)).astype(f16)}
    if op == "attention":
        z, h, n, d = shape
        return {name: rng.standard_normal((z, h, n, d)).astype(f16) for name in ("q", "k", "v", "do")}
    rows, n = shape
    x = {"x": (rng.standard_normal((rows, n)) * 2).astype(f16), "dy": rng.standard_normal((rows, n)).astype(f16)}
    if op == "layer_norm":
        x |= {"w": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32)}
    if op == "cross_entropy":
        x = {"x": x["x"], "t": rng.integers(0, n, rows).astype(np.int64), "dloss": np.full(rows, 1 / rows, np.float32)}
    return x


def xetile_backward_call(op: str, host: dict, device_array):
    """A no-argument call running ``op``'s backward on device arrays (its forward's saved
    results computed once here, as training keeps them)."""
    from xetile_dsl import ops

    t = {name: device_array(a) for name, a in host.items()}
    if op == "matmul":
        return lambda: ops.matmul_backward(t["a"], t["b"], t["dc"], trans_b=True, bias=t["bias"], activation="gelu")
    if op in ("softmax", "log_softmax"):
        y = getattr(ops, op)(t["x"])
        backward = getattr(ops, f"{op}_backward")
        return lambda: backward(y, t["dy"])
    if op == "layer_norm":
        _, mean, rstd = ops.layer_norm(t["x"], t["w"], t["b"], return_stats=True)
        return lambda: ops.layer_norm_backward(t["dy"], t["x"], t["w"], mean, rstd)
    if op == "cross_entropy":
        _, lse = ops.cross_entropy_forward(t["x"], t["t"])
        return lambda: ops.cross_entropy_backward(t["x"], t["t"], lse, t["dloss"])
    o, lse = ops.attention(t["q"], t["k"], t["v"], causal=True, return_lse=True)
    return lambda: ops.attention_backward(t["q"], t["k"], t["v"], o, t["do"], lse, causal=True)


def torch_backward_call(op: str, host: dict, torch):
    """The same backward through torch's autograd on XPU (oneDNN and torch's kernels)."""
    t = {name: torch.from_numpy(a).to("xpu") for name, a in host.items()}
    F = torch.nn.functional
    leaf = {"matmul": ("a", "b", "bias"), "attention": ("q", "k", "v"), "layer_norm": ("x", "w", "b")}.get(op, ("x",))
    for name in leaf:
        t[name].requires_grad_()
    if op == "matmul":
        out, grad = F.gelu(F.linear(t["a"], t["b"], t["bias"].half())), t["dc"]
    elif op in ("softmax", "log_softmax"):
        out, grad = getattr(torch, op)(t["x"], -1), t["dy"]
    elif op == "layer_norm":
        out, grad = F.layer_norm(t["x"], t["x"].shape[-1:], t["w"].half(), t["b"].half()), t["dy"]
    elif op == "cross_entropy":
        out, grad = F.cross_entropy(t["x"], t["t"]), None
    else:
        out, grad = F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=True), t["do"]
    inputs = [t[name] for name in leaf]
    return lambda: torch.autograd.grad(out, inputs, grad, retain_graph=True)


def host_median_seconds(run, wait, reps: int, flush=None) -> float:
    """Median wall time of ``run(); wait()`` over ``reps`` (>= 10) runs after a warm-up."""
    run()
    wait()
    times = []
    for _ in range(max(reps, MIN_REPS)):
        if flush is not None:
            flush()
            wait()
        start = time.perf_counter()
        run()
        wait()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def backward_sweep(device, timer, peak, args) -> list[dict]:
    """Each ``--backward`` op (f16): ours and torch's backward, host-timed ("case": bwd-<op>)."""
    torch = None
    if device.kind == "gpu":
        try:
            import torch  # optional: the XPU build
            torch = torch if hasattr(torch, "xpu") and torch.xpu.is_available() else None
        except ImportError:
            pass
    peak_tf = peak.tflops("f16") if peak else None
    rows = []
    for op in args.backward:
        shape = BACKWARD_OPS[op][0 if device.kind == "gpu" else 1]
        dims = (*shape, 1, 1)[:3] if len(shape) < 4 else (shape[0] * shape[1], shape[2], shape[3])
        row = {"device": device.name, "dtype": "f16", "case": f"bwd-{op}", "M": dims[0], "N": dims[1], "K": dims[2]}
        host = _backward_inputs(op, shape, np.random.default_rng(0))
        flops = backward_flops(op, shape)
        try:
            seconds = host_median_seconds(xetile_backward_call(op, host, timer.device_array), timer.queue.wait,
                                          args.reps, lambda: timer.flush.fill(1.0))
            row.update(_scores("xetile", seconds, flops, peak_tf))
        except XeTileError as exc:
            row["xetile_error"] = str(exc).splitlines()[0]
        if torch is not None:
            flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="xpu")
            seconds = host_median_seconds(torch_backward_call(op, host, torch), torch.xpu.synchronize, args.reps,
                                          lambda: flush.fill_(1.0))
            row.update(_scores("onednn", seconds, flops, peak_tf))
        rows.append(row)
        print(_row_text(row), flush=True)
    return rows


def backward_kernels(op: str, target: str) -> dict:
    """{kernel name: (kernel, signature, constants)} of ``op``'s backward as it launches
    them for f16 (matmul: the gelu recompute; its dA and dB are matmul's own kernel,
    reported above as the nn/nt/tn cases)."""
    f16, f32 = XT_DTYPES["float16"], XT_DTYPES["float32"]
    A2, A4, L3 = "f16[:,:]", "f16[:,:,:,:]", "f32[:,:,:]"
    if op == "matmul":
        BM, BN, BK = configs.gemm_tiles(target, "float16")
        sig = {"a": A2, "b": A2, "bias": "f32[:,:]", "dc": A2, "dz": A2, "K": "i32"}
        consts = {"TA": False, "TB": True, "HAS_BIAS": True, "ACT": ACTIVATIONS["gelu"], "ACC": f32, "OUT": f16,
                  "BM": BM, "BN": BN, "BK": BK}
        return {"matmul_dz_kernel (gelu)": (matmul_dz_kernel, sig, consts)}
    BM, BC = configs.row_tiles(target)
    if op in ("softmax", "log_softmax"):
        return {"softmax_backward_kernel": (softmax_backward_kernel, {"y": A2, "dy": A2, "dx": A2, "N": "i32"},
                                            {"LOG": op == "log_softmax", "OUT": f16, "BM": BM, "BC": BC})}
    if op == "layer_norm":
        NBM, NBC = configs.norm_backward_tiles(target)
        sig = {"dy": A2, "x": A2, "w": "f32[:]", "mean": "f32[:]", "rstd": "f32[:]", "dx": A2, "pw": "f32[:,:]",
               "pb": "f32[:,:]", "rows": "i32", "N": "i32"}
        return {"norm_backward_kernel": (norm_backward_kernel, sig, {"RMS": False, "OUT": f16, "BM": NBM, "BC": NBC}),
                "column_sum_kernel": (column_sum_kernel, {"partial": "f32[:,:]", "out": "f32[:]", "P": "i32"},
                                      {"OUT": f32, "BM": NBM, "BC": NBC})}
    if op == "cross_entropy":
        sig = {"x": A2, "t": "i64[:]", "lse": "f32[:]", "dloss": "f32[:]", "dx": A2, "N": "i32", "ignore_index": "i32"}
        return {"cross_entropy_backward_kernel": (cross_entropy_backward_kernel, sig, {"OUT": f16, "BM": BM, "BC": BC})}
    BM, BN, BK = configs.attention_backward_tiles(target, 64)
    common = {"CAUSAL": True, "OUT": f16, "D": 64, "BM": BM}
    dq = {"q": A4, "k": A4, "v": A4, "o": A4, "do": A4, "lse": L3, "delta": L3, "dq": A4, "N": "i32", "H": "i32",
          "G": "i32", "qk_scale": "f32", "sm_scale": "f32"}
    dkdv = {"q": A4, "k": A4, "v": A4, "do": A4, "lse": L3, "delta": L3, "dk_out": A4, "dv_out": A4, "N": "i32",
            "HKV": "i32", "qk_scale": "f32", "sm_scale": "f32"}
    if configs.attention_form(target) == "rows":   # arc: the rows form's dq kernel and the dk/dv one's two builds
        rows = {**common, "BM": configs.attention_backward_dq_queries(target, 64), "BN": BK}
        return {"attention_bwd_dq_rows_kernel (D=64, causal)": (attention_bwd_dq_rows_kernel, dq, rows),
                **{f"attention_bwd_dkdv_rows_kernel {name} (D=64, causal)":
                   (attention_bwd_dkdv_rows_kernel, dkdv, {**common, "BN": BN, "G": 1, "DK": name == "dK"})
                   for name in ("dK", "dV")}}
    return {"attention_bwd_dq_kernel (D=64, causal)": (attention_bwd_dq_kernel, dq, {**common, "BN": BK}),
            "attention_bwd_dkdv_kernel (D=64, causal)": (attention_bwd_dkdv_kernel, dkdv,
                                                         {**common, "BN": BN, "G": 1})}


def backward_reports(args) -> None:
    """Each ``--backward`` op's backward kernels compiled for the ISA targets: their reports."""
    for target in args.isa_targets:
        for op in args.backward:
            for name, (kernel, sig, consts) in backward_kernels(op, target).items():
                title = f"== {op} backward: {name} f16 on {target}"
                try:
                    print(title, "\n", xd.compile(kernel, signature=sig, constants=consts, target=target).report(),
                          sep="", flush=True)
                except XeTileError as exc:
                    print(f"{title}: not available: {str(exc).splitlines()[0]}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--dtype", nargs="+", choices=list(DTYPES), default=["f16"])
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--shapes", nargs="+", type=parse_shape, default=None)
    ap.add_argument("--reps", type=int, default=MIN_REPS, help=f"timed runs per point (at least {MIN_REPS})")
    ap.add_argument("--flush-mb", type=int, default=FLUSH_BYTES >> 20)
    ap.add_argument("--isa-targets", nargs="+", default=["pvc", "arc"])
    ap.add_argument("--attention", action="store_true",
                    help="also the flash attention kernel (rows: M = Z * H, N, K = D; case attn / attn-causal)")
    ap.add_argument("--backward", nargs="*", choices=list(BACKWARD_OPS), default=None, metavar="OP",
                    help=f"also the backward ops (all, or those named: {', '.join(BACKWARD_OPS)})")
    ap.add_argument("--csv", default="vs_onednn.csv")
    ap.add_argument("--plot", default="vs_onednn.png")
    args = ap.parse_args(argv)
    if args.backward == []:
        args.backward = list(BACKWARD_OPS)
    try:
        device = get_device(args.device)
    except DeviceError as exc:
        if args.device == "cpu":
            raise
        print(f"no Intel GPU here ({str(exc).splitlines()[0][:120]}...): printing the static ISA report "
              "of each benchmarked kernel instead of timings")
        isa_reports(args)
        if args.attention:
            attention_reports(args)
        if args.backward:
            backward_reports(args)
        return 0
    started = time.perf_counter()
    rows = sweep(device, args)
    write_csv(rows, args.csv)
    print(f"wrote {args.csv} ({len(rows)} rows, {time.perf_counter() - started:.0f} s)")
    if write_plot(rows, args.plot):
        print(f"wrote {args.plot}")
    else:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
