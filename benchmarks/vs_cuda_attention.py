"""ops.attention and the memory-bound row ops on an NVIDIA GPU: checks against float64
references, then timings (CUDA events, median after warm-up).

    python benchmarks/vs_cuda_attention.py [--quick] [--checks-only | --no-checks] [--sweep]

* attention forward: ``ops.attention`` (the same ``@jit`` source as the Intel targets,
  the "rows" form with sm90's tiles) against the Triton flash attention of
  ``benchmarks/peer_attention_cuda_triton.py`` (its fastest config) and torch's
  ``scaled_dot_product_attention``, causal and not, D 64/128, in TFLOP/s (4 Z H N^2 D
  flops, half of that causal);
* softmax, layer_norm, rms_norm over 8192 x 8192 f16: GB/s counting the input read once
  and the output written once, against a device-to-device copy (``y.copy_(x)``) of the
  same bytes measured in the same run, as "% of copy"; also the rows kernels at other
  (BM, BC) tiles than the target table's.

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
from xetile_dsl.ops.rows import layer_norm_kernel, softmax_kernel

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
            config, tri = peer.best_config(q, k, v, causal, bench, peer.CONFIGS)
            sdpa = bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
            rate = [flops / ms / 1e9 for ms in (ours, tri, sdpa)]
            lines.append(f"{f'Z{Z} H{H} N{N} D{D} ' + ('causal' if causal else 'full'):42} "
                         f"{rate[0]:9.1f} {rate[1]:9.1f} {rate[2]:9.1f}            {ours and tri / ours:6.3f}"
                         f"       {config}")
    return lines


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
    for D, BM, BN, warps, stages, split in SASS_TILES:
        kernel = xd.compile(attention_rows_split_nd_kernel if split else attention_rows_nd_kernel,
                            {"q": "f16[:,:,:,:]", "k": "f16[:,:,:,:]", "v": "f16[:,:,:,:]", "o": "f16[:,:,:,:]",
                             "lse": "f32[:,:,:]", "N": "i32", "H": "i32", "G": "i32", "qk_scale": "f32",
                             "with_lse": "i32"},
                            dict(CAUSAL=True, OUT=xt.float16, D=D, BM=BM, BN=BN, LSE=False,
                                 **({"SCALED": False} if split else {})),
                            target="sm90", num_warps=warps, num_stages=stages)
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
    for name, ours, theirs in cases:
        ms, tms = bench(ours), bench(theirs)
        lines.append(f"{name + f' f16 {ROWS}x{COLS} ops':42} {ms:8.4f} ms  {gbs(ms):7.0f} GB/s  "
                     f"{100 * copy / ms:5.1f}% of copy   torch {tms:8.4f} ms {100 * copy / tms:5.1f}%")
    tiles = [(4, 256), (1, 1024)] if quick else [(1, 256), (2, 256), (4, 256), (8, 256), (1, 512), (2, 512),
                                                  (4, 512), (1, 1024), (2, 1024), (1, 2048)]
    w2, b2 = w[None], b[None]
    for BM, BC in tiles:
        grid = (ROWS // BM,)
        ms = bench(lambda: softmax_kernel[grid](x, y, COLS, OUT=xt.float16, BM=BM, BC=BC))
        ln = bench(lambda: layer_norm_kernel[grid](x, w2, b2, y, COLS, 1e-5, RMS=False, OUT=xt.float16, BM=BM, BC=BC))
        lines.append(f"{f'tiles BM {BM} BC {BC}':42} softmax {100 * copy / ms:5.1f}%  layer_norm {100 * copy / ln:5.1f}%"
                     f" of copy")
    return lines


def main() -> None:
    """--quick: fewer sizes; --checks-only; --no-checks; --sweep: the tile sweep, the SASS
    and the attention table (no row ops)."""
    quick, checks_only, sweep = "--quick" in sys.argv, "--checks-only" in sys.argv, "--sweep" in sys.argv
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"]
    checks = [] if "--no-checks" in sys.argv else check_attention()
    try:
        checks += [check_peer()] if checks else []
    except ImportError as exc:
        lines.append(f"triton peer: {exc}")
    for name, err, ok in checks:
        lines.append(f"check {name:52} error {err:.3e} {'ok' if ok else 'FAIL'}")
    print("\n".join(lines), flush=True)
    sections = ((sweep_attention, False), (sass_attention, False), (time_attention, True)) if sweep else \
        ((time_rows, quick), (sweep_attention, quick), (time_attention, quick))
    if not checks_only:
        for section, short in sections:
            try:
                part = section(short)
            except Exception as exc:  # noqa: BLE001 - print what failed, keep the other section
                part = [f"{section.__name__}: {type(exc).__name__}: {exc}"]
            print("\n".join(part), flush=True)
            lines += part
    if os.environ.get("OUT"):
        name = "vs_cuda_attention_sweep.txt" if sweep else "vs_cuda_attention.txt"
        with open(os.path.join(os.environ["OUT"], name), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
