"""ops.attention and the memory-bound row ops on an NVIDIA GPU: checks against float64
references, then timings (CUDA events, median after warm-up).

    python benchmarks/vs_cuda_attention.py [--quick] [--checks-only] [--rows-only]

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

import xetile_dsl.language as xt
from xetile_dsl import ops
import xetile_dsl as xd
from xetile_dsl.ops.rows import layer_norm_kernel, layer_norm_row_kernel, softmax_kernel, softmax_row_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def bench(fn, reps: int = 20) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` CUDA-event-timed runs after 3 warm-ups."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


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
        out = ops.attention(q, k, v, causal=causal)
        torch.cuda.synchronize()
        err = rel_err(out, reference_attention(q, k, v, causal))
        u = 2.0 ** -11 if dtype == torch.float16 else 2.0 ** -8
        name = (f"attention {str(dtype)[6:]} D{D} {'causal' if causal else 'full'} Z{Z} H{H}/{Hkv} N{N}"
                f"{' strided' if strided else ''}")
        rows.append((name, err, err <= 4 * u))
    return rows


def attention_flops(Z, H, N, D, causal) -> float:
    return 4.0 * Z * H * N * N * D * (0.5 if causal else 1.0)


def time_attention(quick: bool) -> list[str]:
    import peer_attention_cuda_triton as peer
    sizes = [(64, 4096), (128, 4096)] if quick else [(64, 1024), (64, 4096), (128, 1024), (128, 4096),
                                                      (128, 16384), (64, 16384)]
    lines = [f"{'attention f16':42} {'ours':>9} {'triton':>9} {'sdpa':>9}  TFLOP/s   ours/triton  triton config"]
    for D, N in sizes:
        Z, H = (4, 32) if N <= 4096 else (1, 32)
        for causal in (True, False):
            q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
            flops = attention_flops(Z, H, N, D, causal)
            ours = bench(lambda: ops.attention(q, k, v, causal=causal))
            config, tri = peer.best_config(q, k, v, causal, bench)
            sdpa = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
            rate = [flops / ms / 1e9 for ms in (ours, tri, sdpa)]
            lines.append(f"{f'Z{Z} H{H} N{N} D{D} ' + ('causal' if causal else 'full'):42} "
                         f"{rate[0]:9.1f} {rate[1]:9.1f} {rate[2]:9.1f}            {ours and tri / ours:6.3f}"
                         f"       {config}")
    return lines


#: (D, BM, BN, num_stages) of the tile sweep (BM / 16 warps); the table's are in targets/nvidia.py
ATTENTION_TILES = [(128, 64, 32, 4), (128, 64, 32, 2), (128, 128, 32, 2), (128, 128, 32, 3), (128, 64, 64, 2),
                   (64, 64, 64, 4), (64, 64, 64, 2), (64, 128, 64, 2), (64, 128, 64, 3), (64, 64, 32, 3)]


def sweep_attention(quick: bool) -> list[str]:
    """ops.attention's kernel at other tiles, Z 4, H 32, N 4096, causal, f16."""
    from xetile_dsl.ops.attention import attention_rows_nd_kernel
    lines = []
    Z, H, N = 4, 32, 4096
    for D, BM, BN, stages in ATTENTION_TILES[:2] if quick else ATTENTION_TILES:
        q, k, v = (torch.randn(Z, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(1, 1, 1, device="cuda")
        scale = 1.4426950408889634 / math.sqrt(D)

        def run():
            attention_rows_nd_kernel[(N // BM, Z * H)](q, k, v, o, lse, N, H, 1, scale, 0, CAUSAL=True,
                                                        OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False,
                                                        num_warps=BM // 16, num_stages=stages)
        try:
            ms = bench(run)
            err = rel_err(o[:1, :1], reference_attention(q[:1, :1], k[:1, :1], v[:1, :1], True))
            lines.append(f"{f'tiles D{D} BM {BM} BN {BN} stages {stages} causal N{N}':52} "
                         f"{attention_flops(Z, H, N, D, True) / ms / 1e9:7.1f} TFLOP/s  error {err:.2e}")
        except Exception as exc:  # noqa: BLE001
            lines.append(f"tiles D{D} BM {BM} BN {BN} stages {stages}: {type(exc).__name__}: {exc}")
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
            cases = [("softmax", lambda: ops.softmax(x), lambda: torch.softmax(xd64, -1)),
                     ("log_softmax", lambda: ops.log_softmax(x), lambda: torch.log_softmax(xd64, -1)),
                     ("layer_norm", lambda: ops.layer_norm(x, w, b),
                      lambda: torch.nn.functional.layer_norm(xd64, (n,), wd, bd)),
                     ("rms_norm", lambda: ops.rms_norm(x, w, 1e-6),
                      lambda: torch.nn.functional.rms_norm(xd64, (n,), wd, 1e-6))]
            for name, ours, theirs in cases:
                label = f"ops.{name} {str(dtype).split('.')[-1]} {'x'.join(map(str, shape))}"
                try:
                    ref = theirs()
                    err = float((ours().double() - ref).abs().max() / ref.abs().max())
                except Exception as exc:  # noqa: BLE001 - print what failed, keep checking the others
                    label, err = f"{label} {type(exc).__name__}: {exc}"[:200], float("nan")
                out.append((label, err, err <= 8 * UNIT[dtype] + 2.0 ** -18))
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


def time_rows(quick: bool) -> list[str]:
    """The row ops on ROWS x COLS f16 against a copy of the same bytes, same run."""
    x = torch.randn(ROWS, COLS, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    w, b = (torch.randn(COLS, device="cuda", dtype=torch.float16) for _ in range(2))
    nbytes = 2 * x.numel() * x.element_size()            # read once + write once
    copy = bench(lambda: y.copy_(x))
    gbs = lambda ms: nbytes / ms / 1e6   # noqa: E731
    lines = [f"copy f16 {ROWS}x{COLS} (y.copy_(x))            {copy:8.4f} ms  {gbs(copy):7.0f} GB/s  100.0% of copy"]
    cases = [("softmax", lambda: ops.softmax(x, out=y), lambda: torch.softmax(x, -1)),
             ("layer_norm", lambda: ops.layer_norm(x, w, b, out=y),
              lambda: torch.nn.functional.layer_norm(x, (COLS,), w, b)),
             ("rms_norm", lambda: ops.rms_norm(x, w, out=y), lambda: torch.nn.functional.rms_norm(x, (COLS,), w))]
    try:
        import peer_rows_cuda_triton as peer
        peers = {"softmax": lambda: peer.softmax(x, y), "layer_norm": lambda: peer.layer_norm(x, w, b, out=y)}
    except ImportError as exc:
        peer, peers = None, {}
        lines.append(f"triton rows peer: {exc}")
    for name, ours, theirs in cases:
        ms, tms = bench(ours), bench(theirs)
        line = (f"{name + f' f16 {ROWS}x{COLS} ops':42} {ms:8.4f} ms  {gbs(ms):7.0f} GB/s  "
                f"{100 * copy / ms:5.1f}% of copy   torch {tms:8.4f} ms {100 * copy / tms:5.1f}%")
        if name in peers:
            pms = bench(peers[name])
            kernel = peer._softmax_rows if name == "softmax" else peer._layer_norm_rows
            line += f"   triton {pms:8.4f} ms {100 * copy / pms:5.1f}% (num_warps {peer.best_warps(kernel)})"
        lines.append(line)
    w2, b2 = w[None], b[None]
    for warps in (4, 8, 16, 32):
        opts = {"num_warps": warps}
        ms = bench(lambda: softmax_row_kernel[(ROWS,)](x, y, COLS, OUT=xt.float16, BM=1, BN=COLS, LOG=False, **opts))
        ln = bench(lambda: layer_norm_row_kernel[(ROWS,)](x, w2, b2, y, COLS, 1e-5, RMS=False, OUT=xt.float16, BM=1,
                                                          BN=COLS, **opts))
        rms = bench(lambda: layer_norm_row_kernel[(ROWS,)](x, w2, b2, y, COLS, 1e-6, RMS=True, OUT=xt.float16, BM=1,
                                                           BN=COLS, **opts))
        lines.append(f"{f'whole rows BN {COLS} num_warps {warps}':42} softmax {100 * copy / ms:5.1f}%  layer_norm "
                     f"{100 * copy / ln:5.1f}%  rms_norm {100 * copy / rms:5.1f}% of copy")
    sig = {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"}
    norm_sig = {"x": "f16[:,:]", "w": "f16[:,:]", "b": "f16[:,:]", "y": "f16[:,:]", "N": "i32", "eps": "f32"}
    for warps in (8, 16):
        k = xd.compile(softmax_row_kernel, sig, {"OUT": xt.float16, "BM": 1, "BN": COLS, "LOG": False}, target="sm90",
                       num_warps=warps)
        lines.append(f"sass softmax whole row {COLS} w{warps}: {sass_counts(k)}")
        k = xd.compile(layer_norm_row_kernel, norm_sig, {"RMS": False, "OUT": xt.float16, "BM": 1, "BN": COLS},
                       target="sm90", num_warps=warps)
        lines.append(f"sass layer_norm whole row {COLS} w{warps}: {sass_counts(k)}")
    tiles = [(4, 256), (1, 1024)] if quick else [(1, 256), (4, 256), (1, 1024), (1, 2048)]
    for BM, BC in tiles:
        grid = (ROWS // BM,)
        ms = bench(lambda: softmax_kernel[grid](x, y, COLS, OUT=xt.float16, BM=BM, BC=BC))
        ln = bench(lambda: layer_norm_kernel[grid](x, w2, b2, y, COLS, 1e-5, RMS=False, OUT=xt.float16, BM=BM, BC=BC))
        lines.append(f"{f'tiles BM {BM} BC {BC}':42} softmax {100 * copy / ms:5.1f}%  layer_norm {100 * copy / ln:5.1f}%"
                     f" of copy")
    return lines


def main() -> None:
    quick, checks_only = "--quick" in sys.argv, "--checks-only" in sys.argv
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"]
    rows_only = "--rows-only" in sys.argv
    checks = check_rows()
    if not rows_only:
        checks += check_attention()
        try:
            checks.append(check_peer())
        except ImportError as exc:
            lines.append(f"triton peer: {exc}")
    for name, err, ok in checks:
        lines.append(f"check {name:52} error {err:.3e} {'ok' if ok else 'FAIL'}")
    print("\n".join(lines), flush=True)
    if not checks_only:
        for section in (time_rows,) if rows_only else (time_rows, sweep_attention, time_attention):
            try:
                part = section(quick)
            except Exception as exc:  # noqa: BLE001 - print what failed, keep the other section
                part = [f"{section.__name__}: {type(exc).__name__}: {exc}"]
            print("\n".join(part), flush=True)
            lines += part
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "vs_cuda_attention.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
