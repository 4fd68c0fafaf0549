"""ops.matmul against oneDNN (``torch.matmul`` on XPU, as PyTorch uses it): median time of
device events, TFLOPS and % of the device's matrix peak, a CSV and a plot.

    python benchmarks/vs_onednn.py [--device gpu|cpu] [--dtype f16 bf16 int8 tf32]
                                   [--cases nn nt tn tt] [--shapes MxNxK ...] [--reps 10]
                                   [--csv FILE] [--plot FILE.png]

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
from xetile_dsl.ops.matmul import ACCUMULATION, XT_DTYPES, matmul_kernel, matmul_launch
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


def _scores(impl: str, seconds: float, flops: int, peak_tf: float | None) -> dict:
    achieved = tflops(flops, seconds)
    pct = percent_of_peak(achieved, peak_tf)
    return {f"{impl}_ms": seconds * 1e3, f"{impl}_tflops": achieved, f"{impl}_pct_peak": pct}


def _row_text(row: dict) -> str:
    head = f"{row['dtype']:>5} {row['case']} {row['M']:>6}x{row['N']:<6}x{row['K']:<6}"
    if "xetile_error" in row:
        return f"{head} xetile: {row['xetile_error']}"
    pct = row.get("xetile_pct_peak")
    text = f"{head} xetile {row['xetile_ms']:9.3f} ms {row['xetile_tflops']:8.3f} TFLOPS" + \
        (f" ({pct:5.1f} % of peak)" if pct is not None else "")
    if "onednn_ms" in row:
        text += f" | oneDNN {row['onednn_ms']:9.3f} ms {row['onednn_tflops']:8.3f} TFLOPS"
    return text


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
            ys = [r.get(f"{impl}_tflops", np.nan) for r in sel]
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
    ap.add_argument("--csv", default="vs_onednn.csv")
    ap.add_argument("--plot", default="vs_onednn.png")
    args = ap.parse_args(argv)
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
