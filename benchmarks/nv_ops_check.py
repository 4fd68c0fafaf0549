"""Every ``xetile_dsl.ops`` op on CUDA tensors against torch eager, on an NVIDIA GPU:
forward results, and gradients through ``torch.ops.xetile`` autograd where it is
registered, one line a case:

    check <case>  error <relative error>  tol <tolerance>  ok|FAIL|refused

The error is ||out - ref|| / ||ref|| over the whole tensor (float64 reference: torch
eager on the same inputs in float64).  Tolerances come from the output dtype's rounding:
``4 * 2^-p`` for p = 11 (f16), 8 (bf16), 22 (f32 results of f32 math with approximate
``ex2`` / ``lg2`` / ``sin`` / ``cos``, relative errors near 2^-22; gradients and GEMMs add
one rounding of their f16/bf16 inputs' products, hence the factor 4).  ``refused`` is a
UsageError the op raises on every target (inputs it does not take).  The tutorials and examples that take
CUDA tensors run after the ops (their own checks).

    python benchmarks/nv_ops_check.py [[-k] SUBSTRING]

(only the cases whose name holds SUBSTRING; ``NV_CHECK_DEVICE=cpu XETILE_INTERPRET=1``
runs the same script on CPU tensors in the interpreter, a check of the script itself)

Each case draws its inputs from a generator seeded by its name (the same data alone,
under ``-k``, or after other cases).  A case whose failure leaves the CUDA context
unusable (an illegal address, a launch failure: ``torch.cuda.synchronize`` raises after
it) does not take the rest down: the script starts itself again in a fresh process and
goes on after that case (``NV_CHECK_AFTER``, ``NV_CHECK_COUNTS``), the summary counting
both processes' cases.
"""
from __future__ import annotations

import importlib.util
import math
import os
import sys
import tempfile
import traceback
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from xetile_dsl import ops  # noqa: E402
from xetile_dsl.errors import UsageError  # noqa: E402
from xetile_dsl.ops import torch_ops  # noqa: E402

DEV = os.environ.get("NV_CHECK_DEVICE", "cuda")
_ARGS = [a for a in sys.argv[1:] if a != "-k"]      # `-k SUBSTRING` and `SUBSTRING` alike
ONLY = _ARGS[0] if _ARGS else ""
BITS = {torch.float16: 11, torch.bfloat16: 8, torch.float32: 22}
RESULTS = {"ok": 0, "FAIL": 0, "refused": 0}
#: a restarted run: the case after which it goes on, and the counts so far
_AFTER = [os.environ.get("NV_CHECK_AFTER")]
if os.environ.get("NV_CHECK_COUNTS"):
    RESULTS.update(zip(RESULTS, (int(n) for n in os.environ["NV_CHECK_COUNTS"].split(","))))


def tol(dtype, factor: float = 4.0) -> float:
    return factor * 2.0 ** -BITS[dtype]


def rel(out, ref) -> float:
    out, ref = out.detach().double(), ref.detach().double()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def report(name: str, err: float, bound: float) -> None:
    status = "ok" if err <= bound else "FAIL"
    RESULTS[status] += 1
    print(f"check {name:<46} error {err:.3e}  tol {bound:.1e}  {status}", flush=True)


def case(name: str):
    def wrap(fn):
        if ONLY not in name:
            return fn
        if _AFTER[0] is not None:       # a restarted run: this case ran in the process before
            if _AFTER[0] == name:
                _AFTER[0] = None
            return fn
        torch.manual_seed(zlib.crc32(name.encode()))
        try:
            fn(name)
        except UsageError as exc:
            RESULTS["refused"] += 1
            print(f"check {name:<46} refused: {str(exc).splitlines()[0][:150]}", flush=True)
        except Exception as exc:   # noqa: BLE001 - every case prints its line
            RESULTS["FAIL"] += 1
            print(f"check {name:<46} FAIL {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}",
                  flush=True)
            traceback.print_exc(limit=3)
            if DEV == "cuda" and not _context_usable():
                _restart_after(name)
        return fn
    return wrap


def _context_usable() -> bool:
    try:
        torch.cuda.synchronize()
        return True
    except Exception:   # noqa: BLE001 - a sticky CUDA error: every later call would fail
        return False


def _restart_after(name: str) -> None:
    """This script again in a fresh process (a fresh CUDA context), going on after ``name``."""
    print(f"restart: the CUDA context is unusable after {name!r}; the remaining cases in a new process",
          flush=True)
    env = dict(os.environ, NV_CHECK_AFTER=name, NV_CHECK_COUNTS=",".join(str(n) for n in RESULTS.values()))
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)


def rnd(*shape, dtype=torch.float16, scale=1.0):
    return (torch.randn(*shape, device=DEV, dtype=torch.float32) * scale).to(dtype)


def main() -> int:
    torch.manual_seed(0)
    torch_ops.register()
    x_ops = torch.ops.xetile
    print(f"device: {torch.cuda.get_device_name() if DEV == 'cuda' else DEV}  torch {torch.__version__}", flush=True)
    for dt in (torch.float16, torch.bfloat16):
        tag = str(dt).replace("torch.", "")

        @case(f"matmul {tag} trans_b 300x200x160")
        def _(name, dt=dt):
            a, b = rnd(300, 160, dtype=dt), rnd(200, 160, dtype=dt)
            report(name, rel(ops.matmul(a, b, trans_b=True), a.double() @ b.double().T), tol(dt))

        @case(f"matmul_backward {tag} bias relu 257x136x96")
        def _(name, dt=dt):
            a = rnd(257, 96, dtype=dt).requires_grad_()
            b = rnd(96, 136, dtype=dt).requires_grad_()
            bias = rnd(136, dtype=torch.float32).requires_grad_()
            c = x_ops.matmul(a, b, bias=bias, activation="relu", out_dtype=torch.float32)
            dc = rnd(257, 136, dtype=torch.float32)
            c.backward(dc)
            a64, b64, bias64 = (t.detach().double().requires_grad_() for t in (a, b, bias))
            torch.relu(a64 @ b64 + bias64).backward(dc.double())
            report(name + " c", rel(c, torch.relu(a64 @ b64 + bias64)), tol(dt))
            report(name + " da", rel(a.grad, a64.grad), tol(dt))
            report(name + " db", rel(b.grad, b64.grad), tol(dt))
            # dbias sums dZ rounded to the input dtype (ops.matmul_backward's dz): its rounding
            report(name + " dbias", rel(bias.grad, bias64.grad), tol(dt))

    for dt in (torch.float32, torch.float16, torch.bfloat16):
        tag = str(dt).replace("torch.", "")

        @case(f"cross_entropy {tag} 37x1000 fwd+bwd")
        def _(name, dt=dt):
            logits = rnd(37, 1000, dtype=dt, scale=3.0).requires_grad_()
            t = torch.randint(0, 1000, (37,), device=DEV)
            t[3] = -100
            loss = x_ops.cross_entropy(logits, t)
            loss.backward()
            l64 = logits.detach().double().requires_grad_()
            ref = F.cross_entropy(l64, t)
            ref.backward()
            report(name + " loss", rel(loss, ref), tol(torch.float32, 64))
            report(name + " dlogits", rel(logits.grad, l64.grad), tol(dt))

        @case(f"layer_norm {tag} 301x1000 fwd+bwd")
        def _(name, dt=dt):
            x = rnd(301, 1000, dtype=dt).requires_grad_()
            w = rnd(1000, dtype=torch.float32).requires_grad_()
            bb = rnd(1000, dtype=torch.float32).requires_grad_()
            y = x_ops.layer_norm(x, w, bb, 1e-5)
            dy = rnd(301, 1000, dtype=dt)
            y.backward(dy)
            x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, bb))
            ref = F.layer_norm(x64, (1000,), w64, b64, 1e-5)
            ref.backward(dy.double())
            report(name + " y", rel(y, ref), tol(dt))
            report(name + " dx", rel(x.grad, x64.grad), tol(dt, 8))
            report(name + " dw", rel(w.grad, w64.grad), tol(dt, 8))
            report(name + " db", rel(bb.grad, b64.grad), tol(dt, 8))

        @case(f"rms_norm {tag} 301x1000 fwd+bwd")
        def _(name, dt=dt):
            x = rnd(301, 1000, dtype=dt).requires_grad_()
            w = rnd(1000, dtype=torch.float32).requires_grad_()
            y = x_ops.rms_norm(x, w, 1e-6)
            dy = rnd(301, 1000, dtype=dt)
            y.backward(dy)
            x64, w64 = (t.detach().double().requires_grad_() for t in (x, w))
            ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * w64
            ref.backward(dy.double())
            report(name + " y", rel(y, ref), tol(dt))
            report(name + " dx", rel(x.grad, x64.grad), tol(dt, 8))
            report(name + " dw", rel(w.grad, w64.grad), tol(dt, 8))

        @case(f"softmax/log_softmax {tag} 37x3x1000 fwd+bwd")
        def _(name, dt=dt):
            for fn, ref_fn, what in ((x_ops.softmax, torch.softmax, "softmax"),
                                     (x_ops.log_softmax, torch.log_softmax, "log_softmax")):
                x = rnd(37, 3, 1000, dtype=dt, scale=2.0).requires_grad_()
                y = fn(x, -1)
                dy = rnd(37, 3, 1000, dtype=dt)
                y.backward(dy)
                x64 = x.detach().double().requires_grad_()
                ref = ref_fn(x64, -1)
                ref.backward(dy.double())
                report(f"{what} {tag} y", rel(y, ref), tol(dt))
                report(f"{what} {tag} dx", rel(x.grad, x64.grad), tol(dt, 8))

        @case(f"silu_mul / add_rms_norm {tag} 37x512")
        def _(name, dt=dt):
            x = rnd(37, 1024, dtype=dt)
            x64 = x.double()
            report(f"silu_mul {tag}", rel(ops.silu_mul(x), F.silu(x64[:, :512]) * x64[:, 512:]), tol(dt))
            h, res, w = rnd(37, 512, dtype=dt), rnd(37, 512, dtype=dt), rnd(512, dtype=dt)
            s64 = (h.double() + res.double()).to(dt).double()
            ref = s64 * torch.rsqrt(s64.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
            y, r2 = ops.add_rms_norm(h, res.clone(), w, 1e-6)
            report(f"add_rms_norm {tag} y", rel(y, ref), tol(dt, 8))
            report(f"add_rms_norm {tag} residual", rel(r2, s64), tol(dt))

        @case(f"rope {tag} neox+gptj 17x4x64")
        def _(name, dt=dt):
            pos = torch.arange(100, 117, device=DEV, dtype=torch.int32)
            inv = 10000.0 ** (-torch.arange(0, 32, device=DEV, dtype=torch.float64) / 32)
            ang = pos.double()[:, None] * inv[None, :]
            c, s = ang.cos()[:, None, :], ang.sin()[:, None, :]
            for style in ("neox", "gptj"):
                q, k = rnd(17, 4, 64, dtype=dt), rnd(17, 2, 64, dtype=dt)
                refs = []
                for t in (q, k):
                    t64 = t.double()
                    if style == "neox":
                        x1, x2 = t64[..., :32], t64[..., 32:]
                        refs.append(torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1))
                    else:
                        x1, x2 = t64[..., 0::2], t64[..., 1::2]
                        refs.append(torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], -1).flatten(-2))
                ops.rope(q, k, pos, style=style)
                report(f"rope {style} {tag} q", rel(q, refs[0]), tol(dt))
                report(f"rope {style} {tag} k", rel(k, refs[1]), tol(dt))

        @case(f"attention {tag} causal, lse, backward (GQA 4/2, N=200, D=64)")
        def _(name, dt=dt):
            q = rnd(1, 4, 200, 64, dtype=dt).requires_grad_()
            k = rnd(1, 2, 200, 64, dtype=dt).requires_grad_()
            v = rnd(1, 2, 200, 64, dtype=dt).requires_grad_()
            o = x_ops.attention(q, k, v, causal=True)
            do = rnd(1, 4, 200, 64, dtype=dt)
            o.backward(do)
            q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
            kk, vv = k64.repeat_interleave(2, 1), v64.repeat_interleave(2, 1)
            ref = F.scaled_dot_product_attention(q64, kk, vv, is_causal=True)
            ref.backward(do.double())
            report(f"attention {tag} causal o", rel(o, ref), tol(dt))
            for what, got, want in (("dq", q.grad, q64.grad), ("dk", k.grad, k64.grad), ("dv", v.grad, v64.grad)):
                report(f"attention_backward {tag} {what}", rel(got, want), tol(dt, 16))
            _, lse = x_ops.attention_lse(q.detach(), k.detach(), v.detach(), causal=True)
            s = (q64 @ kk.transpose(-1, -2)) / 8.0
            s = s.masked_fill(torch.ones(200, 200, device=DEV, dtype=torch.bool).triu(1), float("-inf"))
            report(f"attention {tag} lse", rel(lse, torch.logsumexp(s, -1)), tol(torch.float32, 64))

        for D, causal in ((64, True), (128, False), (32, True)) if dt != torch.float32 else ():
            @case(f"attention {tag} varlen cu_seqlens D{D} {'causal' if causal else 'full'}")
            def _(name, dt=dt, D=D, causal=causal):
                # packed ragged sequences (one shorter than a block, one over several), GQA
                # 4 / 2; the rows after the last sequence must stay as they were (NaN here)
                cu = torch.tensor([0, 5, 300, 333, 1000], device=DEV, dtype=torch.int32)
                q, k, v = rnd(1001, 4, D, dtype=dt), rnd(1001, 2, D, dtype=dt), rnd(1001, 2, D, dtype=dt)
                o, lse = x_ops.attention_lse(q[:1000], k[:1000], v[:1000], causal=causal, cu_seqlens=cu)
                ref_o, ref_lse = torch.empty_like(o, dtype=torch.float64), torch.empty_like(lse, dtype=torch.float64)
                for s0, s1 in zip(cu[:-1].tolist(), cu[1:].tolist()):
                    qs, ks, vs = (x[s0:s1].double().transpose(0, 1) for x in (q, k, v))
                    ks, vs = ks.repeat_interleave(2, 0), vs.repeat_interleave(2, 0)
                    sc = qs @ ks.transpose(-1, -2) / math.sqrt(D)
                    if causal:
                        sc = sc.masked_fill(torch.ones(s1 - s0, s1 - s0, device=DEV, dtype=torch.bool).triu(1),
                                            float("-inf"))
                    ref_o[s0:s1] = (torch.softmax(sc, -1) @ vs).transpose(0, 1)
                    ref_lse[:, s0:s1] = torch.logsumexp(sc, -1)
                report(name + " o", rel(o, ref_o), tol(dt))
                report(name + " lse", rel(lse, ref_lse), tol(torch.float32, 64))
                if DEV != "cuda":   # (ops.attention takes CPU tensors through torch.ops.xetile only)
                    return
                out = torch.full((1001, 4, D), float("nan"), device=DEV, dtype=dt)
                ops.attention(q[:1000], k[:1000], v[:1000], causal=causal, cu_seqlens=cu, out=out[:1000])
                report(name + " out= rows kept", rel(out[:1000], ref_o) + float(not out[1000].isnan().all()), tol(dt))

        @case(f"matmul_wq {tag} int4/int8/e4m3 5x256x128")
        def _(name, dt=dt):
            import ml_dtypes
            import numpy as np
            from xetile_dsl.ops.matmul_wq import dequantize
            w = np.random.default_rng(1).standard_normal((256, 128)).astype(np.float32)
            x = rnd(5, 256, dtype=dt)
            for bits, fmt in ((4, "int"), (8, "int"), (8, "e4m3")):
                packed = ops.quantize_weights(w, bits=bits, format=fmt)
                # the weights the kernel multiplies by (rounded as it rounds them, in x's dtype)
                wd = dequantize(*packed, bits, 256, dtype=np.float16 if dt == torch.float16 else ml_dtypes.bfloat16,
                                format=fmt).astype(np.float32)
                dev = [torch.from_numpy(np.ascontiguousarray(a)).to(DEV) if a is not None else None for a in packed]
                got = x_ops.matmul_wq(x, *dev, bits=bits, format=fmt)
                report(f"matmul_wq {tag} {fmt}{bits if fmt == 'int' else ''}", rel(got, x.double() @ torch.from_numpy(wd).to(DEV).double()),
                       tol(dt, 8))

        @case(f"decode_attention {tag} 2 seqs, 4/2 heads, blocks of 16")
        def _(name, dt=dt):
            kc, vc = rnd(48, 16, 2, 64, dtype=dt), rnd(48, 16, 2, 64, dtype=dt)
            q = rnd(2, 4, 64, dtype=dt)
            table = torch.randperm(48, device=DEV, dtype=torch.int64).to(torch.int32).reshape(2, 24)
            lens = torch.tensor([300, 37], device=DEV, dtype=torch.int32)
            got = x_ops.decode_attention(q, kc, vc, table, lens)
            for b in range(2):
                n = int(lens[b])
                keys = kc[table[b].long()].reshape(-1, 2, 64)[:n].double().repeat_interleave(2, 1)
                vals = vc[table[b].long()].reshape(-1, 2, 64)[:n].double().repeat_interleave(2, 1)
                p = torch.softmax(torch.einsum("hd,nhd->hn", q[b].double(), keys) / 8.0, -1)
                report(f"decode_attention {tag} seq {b}", rel(got[b], torch.einsum("hn,nhd->hd", p, vals)), tol(dt))

    for dt in (torch.int8, torch.uint8):
        @case(f"matmul {str(dt).replace('torch.', '')} 200x136x96 (i32 out)")
        def _(name, dt=dt):
            # mma.sync s8/u8 with s32 accumulators: exact
            lo, hi = (-128, 128) if dt == torch.int8 else (0, 256)
            a = torch.randint(lo, hi, (200, 96), device=DEV).to(dt)
            b = torch.randint(lo, hi, (96, 136), device=DEV).to(dt)
            c = x_ops.matmul(a, b)
            report(f"{name} {str(c.dtype).replace('torch.', '')}", rel(c, a.double() @ b.double()), 0.0)

    @case("matmul f32 (tf32) 200x136x96")
    def _(name):
        # inputs rounded to tf32 (11 significant bits, 4 units each), f32 accumulation
        a, b = rnd(200, 96, dtype=torch.float32), rnd(96, 136, dtype=torch.float32)
        report(name, rel(x_ops.matmul(a, b), a.double() @ b.double()), 8 * 2.0 ** -11)

    for fmt in ("float8_e4m3fn", "float8_e5m2"):
        @case(f"matmul fp8 {fmt} 200x136x96")
        def _(name, fmt=fmt):
            # fp8 operands widened to f16 (exact), f32 accumulation: the products are exact,
            # K = 96 f32 additions; the result rounded to its dtype
            dt = getattr(torch, fmt)
            a, b = rnd(200, 96, dtype=torch.float32).to(dt), rnd(96, 136, dtype=torch.float32).to(dt)
            c = x_ops.matmul(a, b)
            bound = tol(c.dtype) if c.dtype in (torch.float16, torch.bfloat16) else tol(torch.float32, 4 * 96)
            report(f"{name} ({str(c.dtype).replace('torch.', '')} out)", rel(c, a.double() @ b.double()), bound)

    run_examples()
    run_workgroup()
    run_atomics()
    run_padding()
    run_fp8_conversions()
    run_small_mma()
    run_unsigned_reductions()
    run_libdevice_math()
    run_narrow_tiles()
    run_column_reductions()
    run_exchanges()
    run_fuzz_seeds()
    print(f"summary: {RESULTS['ok']} ok, {RESULTS['FAIL']} FAIL, {RESULTS['refused']} refused", flush=True)
    return 1 if RESULTS["FAIL"] else 0


def run_workgroup() -> None:
    """The workgroup-level kernels (``wg_map``: one warp a subgroup, exchanges through
    shared local memory, ``bar.sync`` and named barriers) of ``xetile_dsl.kernels``, the
    XeTile RFC's, on CUDA tensors against torch; small integers, so every result is exact."""
    import xetile_dsl.language as xt
    from xetile_dsl.kernels import workgroup_slm as W
    from xetile_dsl.kernels.gemm_wg import gemm_prefetch_kernel, gemm_wg_kernel, gemm_wg_layout_kernel

    def ints(*shape, dtype=torch.float32, lo=-8, hi=9):
        return torch.randint(lo, hi, shape, device=DEV).to(dtype)

    def nan(*shape):
        return torch.full(shape, float("nan"), device=DEV)

    def on(*tensors):       # (the interpreter's check of this script: numpy views of CPU tensors)
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    @case("workgroup conv_layout f32 64x64 (row bands to column bands)")
    def _(name):
        a, c = ints(64, 64), nan(64, 64)
        W.conv_layout_kernel[(1,)](*on(a, c))
        report(name, rel(c, a * 2 + 1), 0.0)

    @case("workgroup row_sum f32 512x128 (RFC, 32 subgroups)")
    def _(name):
        a, out = ints(512, 128), nan(512, 16)
        W.row_sum_kernel[(2,)](*on(a, out))
        report(name, rel(out[:, 0], a.double().sum(1)), 0.0)

    @case("workgroup col_max f32 64x64 (partials in SLM)")
    def _(name):
        a, out = ints(64, 64), nan(1, 64)
        W.col_max_kernel[(1,)](*on(a, out))
        report(name, rel(out[0], a.max(0).values), 0.0)

    @case("workgroup grid_row_sum f32 384x64 (named barriers)")
    def _(name):
        a, out = ints(384, 64), nan(384, 16)
        W.grid_row_sum_kernel[(3,)](*on(a, out))
        report(name, rel(out[:, 0], a.double().sum(1)), 0.0)

    @case("workgroup grid_col_sum f32 384x64 (named barriers)")
    def _(name):
        a, out = ints(384, 64), nan(3, 64)
        W.grid_col_sum_kernel[(3,)](*on(a, out))
        report(name, rel(out, a.double().reshape(3, 128, 64).sum(1)), 0.0)

    @case("workgroup big_conv f32 256x128 (128 KiB of SLM)")
    def _(name):
        a, c = ints(256, 128), nan(256, 128)
        W.big_conv_kernel[(1,)](*on(a, c))
        report(name, rel(c, a), 0.0)

    @case("workgroup conv_rounds f32 1024x512 (rounds of row chunks)")
    def _(name):
        a, c = ints(1024, 512), nan(1024, 512)
        W.conv_rounds_kernel[(2,)](*on(a, c))
        report(name, rel(c, a * 2 + 1), 0.0)

    @case("workgroup conv_rounds_loop f32 1536x512 (3 steps)")
    def _(name):
        a, c = ints(1536, 512), nan(1536, 512)
        W.conv_rounds_loop_kernel[(1,)](*on(a, c), STEPS=3)
        report(name, rel(c, a * 2 + 1), 0.0)

    @case("workgroup gemm_rowsum f16 128x128x64 (mma map to row bands)")
    def _(name):
        a, b = ints(128, 64, dtype=torch.float16, lo=-2, hi=3), ints(64, 128, dtype=torch.float16, lo=-2, hi=3)
        c, rowsum = nan(128, 128), nan(128, 16)
        W.gemm_rowsum_kernel[(2, 2)](*on(a, b, c, rowsum), 64, BK=32)
        ref = a.double() @ b.double()
        report(name + " c", rel(c, ref), 0.0)
        report(name + " row sums", rel(rowsum[:, :2], ref.reshape(128, 2, 64).sum(2)), 0.0)

    @case("workgroup gemm_coop f16 128x128x96 (cooperative loads through SLM)")
    def _(name):
        a, b = ints(128, 96, dtype=torch.float16, lo=-2, hi=3), ints(96, 128, dtype=torch.float16, lo=-2, hi=3)
        c = nan(128, 128)
        W.gemm_coop_kernel[(2, 2)](*on(a, b, c), 96, BK=32)
        report(name, rel(c, a.double() @ b.double()), 0.0)

    @case("workgroup gemm_wg f16 256x256x128 (2x2 subgroups of 64x64)")
    def _(name):
        a, b = ints(256, 128, dtype=torch.float16, lo=-2, hi=3), ints(128, 256, dtype=torch.float16, lo=-2, hi=3)
        c = nan(256, 256)
        gemm_wg_kernel[(2, 2)](*on(a, b, c), 128, BM=128, BN=128, BK=32, SM=2, SN=2, PF=2, ACC=xt.float32)
        report(name, rel(c, a.double() @ b.double()), 0.0)

    for ta, tb in ((True, False), (False, True)):
        @case(f"workgroup gemm_wg_layout f16 256x256x128 {'A^T' if ta else 'B^T'} (order (0, 1) tiles)")
        def _(name, ta=ta, tb=tb):
            a, b = ints(256, 128, dtype=torch.float16, lo=-2, hi=3), ints(128, 256, dtype=torch.float16, lo=-2, hi=3)
            c = nan(256, 256)
            at, bt = (a.t().contiguous() if ta else a), (b.t().contiguous() if tb else b)
            gemm_wg_layout_kernel[(2, 2)](*on(at, bt, c), 128, BM=128, BN=128, BK=32, SM=2, SN=2, PF=2,
                                          ACC=xt.float32, TA=ta, TB=tb)
            report(name, rel(c, a.double() @ b.double()), 0.0)

    @case("workgroup gemm_prefetch f16 512x256x96 (RFC 2.1, 32 subgroups)")
    def _(name):
        a, b = ints(512, 96, dtype=torch.float16, lo=-2, hi=3), ints(96, 256, dtype=torch.float16, lo=-2, hi=3)
        c = nan(512, 256)
        gemm_prefetch_kernel[(2, 1)](*on(a, b, c), 96, BM=256, BN=256, BK=32, PF=3)
        report(name, rel(c, a.double() @ b.double()), 0.0)


def run_atomics() -> None:
    """Atomics from many programs at once on CUDA tensors: tile adds, maxima and products
    into one tile, and a scalar ticket counter (every program's old value distinct)."""
    from xetile_dsl.kernels import atomics_check as A

    def on(*tensors):       # (the interpreter's check of this script: numpy views of CPU tensors)
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    @case("atomics tile add f32 64 programs into 4x64")
    def _(name):
        x = torch.randint(-4, 5, (64 * 4, 64), device=DEV).float()
        out = torch.zeros(4, 64, device=DEV)
        A.tile_rmw_kernel[(64,)](*on(x, out), KIND="add")
        report(name, rel(out, x.double().reshape(64, 4, 64).sum(0)), 0.0)

    @case("atomics tile max i32 64 programs into 4x64")
    def _(name):
        x = torch.randint(-1000, 1000, (64 * 4, 64), device=DEV, dtype=torch.int32)
        out = torch.full((4, 64), -2 ** 31, device=DEV, dtype=torch.int32)
        A.tile_rmw_kernel[(64,)](*on(x, out), KIND="max")
        report(name, rel(out, x.reshape(64, 4, 64).max(0).values), 0.0)

    @case("atomics tile mul f32 10 programs (a compare-exchange loop)")
    def _(name):
        out = torch.ones(4, 64, device=DEV)
        x = torch.full((10 * 4, 64), 2.0, device=DEV)
        A.tile_rmw_kernel[(10,)](*on(x, out), KIND="mul")
        report(name, rel(out, torch.full_like(out, 1024.0)), 0.0)

    @case("atomics scalar ticket counter 300 programs")
    def _(name):
        count = torch.zeros(1, device=DEV, dtype=torch.int32)
        tickets = torch.full((1, 300), -1, device=DEV, dtype=torch.int32)
        A.ticket_kernel[(300,)](*on(count, tickets))
        ok = sorted(tickets[0].tolist()) == list(range(300)) and int(count[0]) == 300
        report(name, 0.0 if ok else 1.0, 0.0)


import numpy as np  # noqa: E402
import xetile_dsl as xd  # noqa: E402
import xetile_dsl.language as xt  # noqa: E402
from xetile_dsl.kernels.gemm_loop import subgroup_gemm  # noqa: E402


@xd.jit
def _padded_softmax_kernel(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """Row softmax of a [BM, BN] tile over x, the elements outside x read as -inf."""
    t = xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BN])
    v = xt.load_tile(t, padding=float("-inf"))
    e = xt.exp(v - xt.max(v, 1))
    xt.store_tile(e / xt.sum(e, 1), xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, BN]))


@xd.jit
def _padded_gather_kernel(x, y, N):
    """y[0, i] = x[2 i] where 2 i < N, else 7."""
    idx = xt.arange(0, 64) * 2
    v = xt.load_gather(xt.init_tile(x, idx), mask=idx < N, padding=7.0)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [1, 64]))


def run_padding() -> None:
    """load_tile and load_gather with a padding value: a softmax whose tile runs past the
    array's rows and columns (the outside read as -inf), a gather past its bound."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    @case("padding load_tile -inf: softmax of 37x200 by 8x256 tiles")
    def _(name):
        x = rnd(37, 200, dtype=torch.float32)
        y = torch.full_like(x, float("nan"))
        _padded_softmax_kernel[(5,)](*on(x, y), BM=8, BN=256)
        report(name, rel(y, torch.softmax(x.double(), -1)), tol(torch.float32))

    @case("padding load_gather 7.0 past N = 100")
    def _(name):
        x = rnd(128, dtype=torch.float32)
        y = torch.full((1, 64), float("nan"), device=DEV)
        _padded_gather_kernel[(1,)](*on(x, y), 100)
        ref = torch.where(torch.arange(64, device=DEV) * 2 < 100, x[::2][:64], torch.tensor(7.0, device=DEV))
        report(name, rel(y[0], ref), 0.0)


@xd.jit
def _to_fp8_kernel(x, y, OUT: xt.constexpr, SAT: xt.constexpr):
    """y = x as OUT (an fp8 type), rounded to nearest even; SAT clamps to its finite range."""
    rows = xt.program_id(0) * 4
    v = xt.load_tile(xt.init_tile(x, [rows, 0], [4, 64]))
    xt.store_tile(xt.astype(v, OUT, saturate=SAT), xt.init_tile(y, [rows, 0], [4, 64]))


def run_fp8_conversions() -> None:
    """f32 -> fp8 in a kernel (the shared integer code) against torch's conversion, in the
    formats' ranges (ties included: values on the fp8 grid plus half a unit), and
    saturated past them."""
    if DEV != "cuda":
        return      # (numpy views of fp8 CPU tensors need ml_dtypes' types: the GPU check only)
    for fmt, top in (("float8_e4m3fn", 448.0), ("float8_e5m2", 57344.0)):
        @case(f"fp8 conversion f32 to {fmt} 32x64")
        def _(name, fmt=fmt, top=top):
            dt = getattr(torch, fmt)
            x = (rnd(32, 64, dtype=torch.float32) * top / 8).clamp(-top, top)
            y = torch.empty(32, 64, device=DEV, dtype=dt)
            _to_fp8_kernel[(8,)](x, y, OUT=getattr(xt, fmt), SAT=False)
            report(name, rel(y.float(), x.to(dt).float()), 0.0)

        @case(f"fp8 conversion f32 to {fmt} saturated past {top:g}")
        def _(name, fmt=fmt, top=top):
            dt = getattr(torch, fmt)
            x = rnd(32, 64, dtype=torch.float32) * top * 4
            y = torch.empty(32, 64, device=DEV, dtype=dt)
            _to_fp8_kernel[(8,)](x, y, OUT=getattr(xt, fmt), SAT=True)
            report(name, rel(y.float(), x.clamp(-top, top).to(dt).float()), 0.0)


@xd.jit
def _small_mma_kernel(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = a @ b by [BM, BN] tiles over K steps of BK, any extents (m16n8k16 pads them)."""
    m, n = xt.program_id(0) * BM, xt.program_id(1) * BN
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        x = xt.load_tile(xt.init_tile(a, [m, k], [BM, BK]))
        y = xt.load_tile(xt.init_tile(b, [k, n], [BK, BN]))
        acc = xt.tile_mma(x, y, acc)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN]))


@xd.jit
def _scaled_rows_mma_kernel(a, s, b, c):
    """c = (a * s) @ b for a [16, 1] row scale s broadcast into A's fragment."""
    x = xt.load_tile(xt.init_tile(a, [0, 0], [16, 32]))
    sc = xt.load_tile(xt.init_tile(s, [0, 0], [16, 1]))
    acc = xt.tile_mma(x * sc, xt.load_tile(xt.init_tile(b, [0, 0], [32, 16])))
    xt.store_tile(acc, xt.init_tile(c, [0, 0], [16, 16]))


def run_small_mma() -> None:
    """tile_mma of tiles whose extents are not m16n8k16 multiples (1, 2, 4 and 8 rows, the
    row counts a DPAS also takes): their operands padded with zeros into fragments, the
    result cropped; against float64 products of the same f16 inputs (f32 accumulation over K)."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    for bm, bn, bk in ((1, 16, 16), (2, 32, 16), (4, 48, 32), (8, 16, 16)):
        @case(f"small mma {bm}x{bn}x{bk} tiles of 70x72x64")
        def _(name, bm=bm, bn=bn, bk=bk):
            M, N, K = 70, 72, 64
            a, b = rnd(M, K), rnd(K, N)
            c = torch.full((M, N), float("nan"), device=DEV)
            _small_mma_kernel[(-(-M // bm), -(-N // bn))](*on(a, b, c), M, N, K, BM=bm, BN=bn, BK=bk)
            report(name, rel(c, a.double() @ b.double()), tol(torch.float32, 4 * K))

    @case("mma of a [16, 1] scale broadcast into A 16x16x32")
    def _(name):
        a, s, b = rnd(16, 32), rnd(16, 1), rnd(32, 16)
        c = torch.full((16, 16), float("nan"), device=DEV)
        _scaled_rows_mma_kernel[(1,)](*on(a, s, b, c))
        # a * s rounded to f16 (half a unit each), then f32 sums over K = 32
        report(name, rel(c, (a * s).double() @ b.double()), tol(torch.float32, 4 * 32))


@xd.jit
def _unsigned_max_kernel(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y[r] = the unsigned max of row r of a [BM, BN] tile."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]))
    xt.store_tile(xt.max(v, axis=1), xt.init_tile(y, [0, 0], [BM, 1]))


def run_unsigned_reductions() -> None:
    """max of uint8 rows across a warp's lanes (shuffles of the zero-extended bytes: 200 >
    100 as unsigned, not as signed), exact."""
    if DEV != "cuda":
        return
    @case("reduce max uint8 rows 4x64")
    def _(name):
        x = torch.randint(0, 256, (4, 64), device=DEV, dtype=torch.uint8)
        y = torch.zeros(4, 1, device=DEV, dtype=torch.uint8)
        _unsigned_max_kernel[(1,)](x, y, BM=4, BN=64)
        report(name, rel(y.double(), x.double().amax(1, keepdim=True)), 0.0)


@xd.jit
def _math_kernel(x, y, z, FN: xt.constexpr):
    """z = FN(x) (or FN(x, y)) for one math function of CUDA's libdevice, by [4, 64] tiles."""
    r = xt.program_id(0) * 4
    t = xt.load_tile(xt.init_tile(x, [r, 0], [4, 64]))
    u = xt.load_tile(xt.init_tile(y, [r, 0], [4, 64]))
    if FN == "atan":
        v = xt.atan(t)
    elif FN == "acosh":
        v = xt.acosh(xt.abs(t) + 1.0)
    elif FN == "expm1":
        v = xt.expm1(t)
    elif FN == "log1p":
        v = xt.log1p(xt.abs(t))
    elif FN == "erfc":
        v = xt.erfc(t)
    elif FN == "cbrt":
        v = xt.cbrt(t)
    elif FN == "pow":
        v = xt.pow(xt.abs(t) + 0.5, u)
    elif FN == "atan2":
        v = xt.atan2(t, u)
    elif FN == "fmod":
        v = xt.fmod(t * 10.0, xt.abs(u) + 0.5)
    else:
        v = xt.extern("hypot", t, u, result=xt.float32, numpy_impl=np.hypot)
    xt.store_tile(v, xt.init_tile(z, [r, 0], [4, 64]))


#: the function of the f64 values of its arguments as the kernel rounds them (f32)
_MATH_REF = {"atan": lambda t, u: (torch.atan, t), "acosh": lambda t, u: (torch.acosh, t.abs() + 1),
             "expm1": lambda t, u: (torch.expm1, t), "log1p": lambda t, u: (torch.log1p, t.abs()),
             "erfc": lambda t, u: (torch.erfc, t), "cbrt": lambda t, u: (lambda v: torch.sign(v) * v.abs() ** (1 / 3), t),
             "pow": lambda t, u: (torch.pow, t.abs() + 0.5, u), "atan2": lambda t, u: (torch.atan2, t, u),
             "fmod": lambda t, u: (torch.fmod, t * 10, u.abs() + 0.5), "hypot": lambda t, u: (torch.hypot, t, u)}


def run_libdevice_math() -> None:
    """Math functions that NVIDIA targets take from CUDA's libdevice, f32, against torch in
    f64 of the arguments as the kernel rounds them (f32): within 8 f32 ulps (the CUDA C
    Programming Guide bounds these by 4); fmod exact."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    for fname in _MATH_REF:
        @case(f"math libdevice {fname} f32 32x64")
        def _(name, fname=fname):
            x, y = rnd(32, 64, dtype=torch.float32) * 2, rnd(32, 64, dtype=torch.float32)
            z = torch.full_like(x, float("nan"))
            _math_kernel[(8,)](*on(x, y, z), FN=fname)
            fn, *args = _MATH_REF[fname](x, y)
            ref = fn(*(a.double() for a in args))
            ulp = torch.finfo(torch.float32).eps * ref.abs().clamp_min(torch.finfo(torch.float32).tiny)
            report(name, float(((z.double() - ref).abs() / ulp).max()), 0.5 if fname == "fmod" else 8.0)


    for dt in (torch.float16, torch.float32):
        @case(f"math libdevice ilogb, ldexp {str(dt)[6:]} 32x64")
        def _(name, dt=dt):
            x = (rnd(32, 64, dtype=torch.float32) * 2.0 ** torch.randint(-8, 8, (32, 64), device=DEV)).to(dt)
            x = torch.where(x == 0, torch.ones_like(x), x)
            n = torch.randint(-6, 6, (32, 64), device=DEV, dtype=torch.int32)
            z = torch.full((32, 64), -99, device=DEV, dtype=torch.int32)
            w = torch.full((32, 64), float("nan"), device=DEV, dtype=torch.float32)
            _int_math_kernel[(8,)](*on(x, n, z, w))
            exact = bool((z == torch.frexp(x.float())[1] - 1).all()) and bool((w == torch.ldexp(x.float(), n)).all())
            report(name, 0.0 if exact else 1.0, 0.0)


@xd.jit
def _int_math_kernel(x, n, z, w):
    """z = ilogb(x) and w = ldexp(x, n), f32 results of libdevice functions taking or
    returning integers, by [4, 64] tiles."""
    r = xt.program_id(0) * 4
    t = xt.load_tile(xt.init_tile(x, [r, 0], [4, 64]))
    e = xt.load_tile(xt.init_tile(n, [r, 0], [4, 64]))
    xt.store_tile(xt.extern("ilogb", t, result=xt.int32, numpy_impl=_ilogb), xt.init_tile(z, [r, 0], [4, 64]))
    xt.store_tile(xt.extern("ldexp", t, e, result=xt.float32, numpy_impl=np.ldexp), xt.init_tile(w, [r, 0], [4, 64]))


def _ilogb(x):
    return (np.frexp(x)[1] - 1).astype(np.int32)


@xd.jit
def _narrow_atomic_kernel(total, old, x):
    """Every program adds its [2, 8] tile of x into total (held whole by every lane: one
    lane an element), keeping what it saw before; and stores it masked to even columns."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [2, 8]))
    seen = xt.atomic_rmw("add", v, xt.init_tile(total, [0, 0], [2, 8]))
    xt.store_tile(seen, xt.init_tile(old, [xt.program_id(0) * 2, 0], [2, 8]))


def run_narrow_tiles() -> None:
    """Tiles narrower than a warp: an integer atomic add of 64 programs into one [2, 8]
    tile (exact: each element's total, and every program saw a multiple of its
    increment below it)."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)

    @case("atomic add of a narrow [2, 8] tile by 64 programs")
    def _(name):
        x = torch.randint(1, 9, (2, 8), device=DEV, dtype=torch.int32)
        total = torch.zeros(2, 8, device=DEV, dtype=torch.int32)
        old = torch.full((128, 8), -1, device=DEV, dtype=torch.int32)
        _narrow_atomic_kernel[(64,)](*on(total, old, x))
        seen = old.view(64, 2, 8)
        ok = bool((total == 64 * x).all()) and bool((seen % x == 0).all()) and \
            bool((torch.sort(seen, 0).values == torch.arange(64, device=DEV)[:, None, None] * x).all())
        report(name, 0.0 if ok else 1.0, 0.0)


@xd.jit
def _col_stats_kernel(a, b, c, s, t, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c = a @ b by [BM, BN] programs; s, t [M / BM, N]: each program's column sums and
    maxima of its C tile (reductions of the accumulator fragment along its rows)."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    acc = subgroup_gemm(a, b, pm * BM, pn * BN, K, BM, BN, BK, xt.float32)
    xt.store_tile(acc, xt.init_tile(c, [pm * BM, pn * BN], [BM, BN]))
    xt.store_tile(xt.sum(acc, axis=0), xt.init_tile(s, [pm, pn * BN], [1, BN]))
    xt.store_tile(xt.max(acc, axis=0), xt.init_tile(t, [pm, pn * BN], [1, BN]))


@xd.jit
def _col_total_kernel(a, b, u, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """u[0, :] += every program's column sums of its C tile (f32 atomic adds): u = 1 @ a @ b."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    acc = subgroup_gemm(a, b, pm * BM, pn * BN, K, BM, BN, BK, xt.float32)
    xt.atomic_rmw("addf", xt.sum(acc, axis=0), xt.init_tile(u, [0, pn * BN], [1, BN]))


@xd.jit
def _acc_total_kernel(a, b, s, t, u, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """s, t [M / BM, N / BN]: each program's sum and maximum of its whole C tile; u [1, 1]:
    every program's sum added atomically (a [1, 1] value, held by every thread)."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    acc = subgroup_gemm(a, b, pm * BM, pn * BN, K, BM, BN, BK, xt.float32)
    total = xt.sum(acc)
    xt.store_tile(total, xt.init_tile(s, [pm, pn], [1, 1]))
    xt.store_tile(xt.max(acc), xt.init_tile(t, [pm, pn], [1, 1]))
    xt.atomic_rmw("addf", total, xt.init_tile(u, [0, 0], [1, 1]))


@xd.jit
def _row_sum_scaled_kernel(a, b, x, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr,
                           W: xt.constexpr):
    """c = (a @ b) * rowsum(x) for x [M, W]: a row tile's reduction broadcast into C's fragment."""
    pm, pn = xt.program_id(0), xt.program_id(1)
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(xt.init_tile(a, [pm * BM, k], [BM, BK])),
                          xt.load_tile(xt.init_tile(b, [k, pn * BN], [BK, BN])), acc)
    r = xt.sum(xt.load_tile(xt.init_tile(x, [pm * BM, 0], [BM, W])).astype(xt.float32), axis=1)
    xt.store_tile(acc * r, xt.init_tile(c, [pm * BM, pn * BN], [BM, BN]))


#: (BM, BN, BK, num_warps) of the column-reduction checks: one warp (mma.sync), 4 and 8
#: warps of mma.sync (the sums folded across warp rows through shared memory), and the
#: wgmma K loop's 2 warpgroups (8 warps of 16 rows)
COL_STATS_TILES = ((16, 16, 16, None), (64, 64, 32, 4), (128, 128, 32, 8), (128, 128, 64, None))


def _componentwise(got, ref, scale) -> float:
    """max |got - ref| / scale (float64): the error in units of the magnitude its bound is
    a multiple of."""
    return float(((got.double() - ref) .abs() / scale.clamp_min(1e-30)).max())


def run_column_reductions() -> None:
    """Reductions of a tile_mma accumulator along its rows (column sums and maxima: each
    lane's rows in its registers, then the 8 lane groups by butterfly shuffles, then the
    warp rows through shared memory), an atomic add of such sums by every program, and a
    row tile's sums broadcast into the accumulator's fragment; f16 inputs, f32 results,
    against float64.  Bounds, in units of u = 2^-24 times the sum of |a| @ |b| over what is
    summed: the K products' f32 sums (K) and the BM (M) additions of the column sums; a
    maximum is off by at most its element's error (K); c * rowsum(x) adds W additions and
    one product."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)
    u = 2.0 ** -24
    for bm, bn, bk, warps in COL_STATS_TILES:
        opts = {"num_warps": warps} if warps else {}
        shape = f"{bm}x{bn}x{bk}{f' {warps} warps' if warps else ''}"

        @case(f"mma column sums and maxima {shape}")
        def _(name, bm=bm, bn=bn, bk=bk, opts=opts):
            M, N, K = 2 * bm, 2 * bn, 4 * bk
            a, b = rnd(M, K), rnd(K, N)
            c = torch.full((M, N), float("nan"), device=DEV)
            s = torch.full((M // bm, N), float("nan"), device=DEV)
            t = torch.full((M // bm, N), float("nan"), device=DEV)
            _col_stats_kernel[(M // bm, N // bn)](*on(a, b, c, s, t), K, BM=bm, BN=bn, BK=bk, **opts)
            ref = a.double() @ b.double()
            mag = (a.double().abs() @ b.double().abs()).reshape(M // bm, bm, N)
            report(f"{name} (c)", rel(c, ref), tol(torch.float32, 4 * K))
            blocks = ref.reshape(M // bm, bm, N)
            report(f"{name} (sums)", _componentwise(s, blocks.sum(1), mag.sum(1)), (K + bm) * u)
            report(f"{name} (maxima)", _componentwise(t, blocks.amax(1), mag.amax(1)), K * u)

        @case(f"mma column sums atomically added {shape}")
        def _(name, bm=bm, bn=bn, bk=bk, opts=opts):
            M, N, K = 4 * bm, 2 * bn, 4 * bk
            a, b = rnd(M, K), rnd(K, N)
            total = torch.zeros(1, N, device=DEV)
            # (on CPU the Intel lowering splits no atomic kernel among subgroups: one warp there)
            _col_total_kernel[(M // bm, N // bn)](*on(a, b, total), K, BM=bm, BN=bn, BK=bk,
                                                  **(opts if DEV == "cuda" else {}))
            ref = (a.double() @ b.double()).sum(0, keepdim=True)
            mag = (a.double().abs() @ b.double().abs()).sum(0, keepdim=True)
            report(name, _componentwise(total, ref, mag), (K + M) * u)

        @case(f"mma accumulator totals {shape}")
        def _(name, bm=bm, bn=bn, bk=bk, opts=opts):
            M, N, K = 2 * bm, 2 * bn, 4 * bk
            a, b = rnd(M, K), rnd(K, N)
            s = torch.full((2, 2), float("nan"), device=DEV)
            t = torch.full((2, 2), float("nan"), device=DEV)
            total = torch.zeros(1, 1, device=DEV)
            _acc_total_kernel[(2, 2)](*on(a, b, s, t, total), K, BM=bm, BN=bn, BK=bk,
                                      **(opts if DEV == "cuda" else {}))
            blocks = (a.double() @ b.double()).reshape(2, bm, 2, bn).transpose(1, 2)
            mag = (a.double().abs() @ b.double().abs()).reshape(2, bm, 2, bn).transpose(1, 2)
            # a sum of n terms in any order is off by at most (n - 1) u times the sum of
            # their magnitudes (each term itself off by K u of its own)
            n = bm * bn
            report(f"{name} (sums)", _componentwise(s, blocks.sum((2, 3)), mag.sum((2, 3))), (K + n) * u)
            report(f"{name} (maxima)", _componentwise(t, blocks.amax((2, 3)), mag.amax((2, 3))), K * u)
            report(f"{name} (atomic total)", _componentwise(total, blocks.sum(), mag.sum()), (K + 4 * n) * u)

    @case("row tile sums broadcast into an mma fragment 32x32x16, W 32")
    def _(name):
        M, N, K, W = 64, 64, 32, 32
        a, b, x = rnd(M, K), rnd(K, N), rnd(M, W)
        c = torch.full((M, N), float("nan"), device=DEV)
        _row_sum_scaled_kernel[(M // 32, N // 32)](*on(a, b, x, c), K, BM=32, BN=32, BK=16, W=W)
        ref = (a.double() @ b.double()) * x.double().sum(1, keepdim=True)
        mag = (a.double().abs() @ b.double().abs()) * x.double().abs().sum(1, keepdim=True)
        report(name, _componentwise(c, ref, mag), (K + W + 1) * u)


@xd.jit
def _mma_as_b_kernel(a, b, f, d, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """d = f @ (a @ b), the first product rounded to f16: an mma result as the next one's
    B operand (moved between the warps' fragments through shared memory)."""
    ab = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BK, BK])),
                     xt.load_tile(xt.init_tile(b, [0, 0], [BK, BN])))
    out = xt.tile_mma(xt.load_tile(xt.init_tile(f, [0, 0], [BM, BK])), ab.astype(xt.float16))
    xt.store_tile(out, xt.init_tile(d, [0, 0], [BM, BN]))


@xd.jit
def _mma_transposed_as_a_kernel(a, b, e, d, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """d = (a @ b)^T @ e, the first product rounded to f16: a transposed mma result as the
    next one's A operand."""
    ab = xt.tile_mma(xt.load_tile(xt.init_tile(a, [0, 0], [BK, BK])),
                     xt.load_tile(xt.init_tile(b, [0, 0], [BK, BM])))
    out = xt.tile_mma(xt.transpose(ab.astype(xt.float16)), xt.load_tile(xt.init_tile(e, [0, 0], [BK, BN])))
    xt.store_tile(out, xt.init_tile(d, [0, 0], [BM, BN]))


def _chained_bound(ab, ab_mag, second, k: int):
    """The componentwise error bound of a product ``second(fl16(ab))`` against its float64
    reference ``second(ab)``, where ab is summed in f32 over k products (``ab_mag``: the
    sum of their magnitudes, |a| @ |b|) and rounded to f16, and ``second`` (a product by
    an f16 matrix, given its magnitudes) sums k more in f32: u16 |ab| for the rounding,
    k u32 |a| @ |b| for the first sums, k u32 of the second's terms (first order, u16 =
    2^-11, u32 = 2^-24).  A kernel accumulating either product in f16 is off by several
    times this (u16 an addition, not u32)."""
    u16, u32 = 2.0 ** -11, 2.0 ** -24
    return second(u16 * ab.abs() + k * u32 * ab_mag) + k * u32 * second(ab.abs())


def run_exchanges() -> None:
    """An mma result moved into another fragment layout in programs of several warps (a
    back-to-back GEMM: through a shared array, every warp reading its operand's part):
    against float64 products of the same f16 inputs, componentwise within
    :func:`_chained_bound` (the error reported in its units: at most 1)."""
    def on(*tensors):
        return tensors if DEV == "cuda" else tuple(t.numpy() for t in tensors)
    n = 64
    for warps in (2, 4):
        opts = {"num_warps": warps} if DEV == "cuda" else {}

        @case(f"mma result as B, {warps} warps, 64x64x64")
        def _(name, opts=opts):
            a, b, f = rnd(n, n), rnd(n, n), rnd(n, n)
            d = torch.full((n, n), float("nan"), device=DEV)
            _mma_as_b_kernel[(1,)](*on(a, b, f, d), BM=n, BN=n, BK=n, **opts)
            ab = a.double() @ b.double()
            scale = _chained_bound(ab, a.double().abs() @ b.double().abs(), lambda m: f.double().abs() @ m, n)
            report(name, _componentwise(d, f.double() @ ab, scale), 1.0)

        @case(f"transposed mma result as A, {warps} warps, 64x64x64")
        def _(name, opts=opts):
            a, b, e = rnd(n, n), rnd(n, n), rnd(n, n)
            d = torch.full((n, n), float("nan"), device=DEV)
            _mma_transposed_as_a_kernel[(1,)](*on(a, b, e, d), BM=n, BN=n, BK=n, **opts)
            ab = (a.double() @ b.double()).T
            scale = _chained_bound(ab, (a.double().abs() @ b.double().abs()).T, lambda m: m @ e.double().abs(), n)
            report(name, _componentwise(d, ab @ e.double(), scale), 1.0)


def _to_device(value):
    """A fuzz case's numpy input as a CUDA tensor (ml_dtypes' bf16 and fp8 through their bits)."""
    kind = {"bfloat16": (np.uint16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
            "float8_e5m2": (np.uint8, torch.float8_e5m2)}.get(str(value.dtype))
    if kind is None:
        return torch.from_numpy(np.ascontiguousarray(value)).to(DEV)
    return torch.from_numpy(np.ascontiguousarray(value).view(kind[0])).to(DEV).view(kind[1])


def _to_host(value, like):
    """A CUDA tensor back as numpy, in the dtype of the input it came from."""
    if str(like.dtype) in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        bits = torch.int16 if str(like.dtype) == "bfloat16" else torch.uint8
        return value.view(bits).cpu().numpy().view(like.dtype)
    return value.cpu().numpy()


def run_fuzz_seeds() -> None:
    """The fuzzer's cases the NVIDIA backend refused or broke on before (scripts/fuzz.py
    NV_SEEDS: tiles of any extents, narrow atomics and stores, libdevice math, bf16
    atomics, dot_scaled's spread codes), run on the GPU and compared with their own numpy
    references within the fuzzer's bounds (its ``_compare``): ok, or the first element
    outside its bound."""
    if DEV != "cuda":
        return
    spec = importlib.util.spec_from_file_location("xetile_fuzz", os.path.join(ROOT, "scripts", "fuzz.py"))
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    cases = tempfile.mkdtemp(prefix="nv_fuzz_cases_")
    for seed, family in fuzz.NV_SEEDS:
        @case(f"fuzz seed {seed} {family or 'default'}")
        def _(name, seed=seed, family=family):
            text = fuzz.script_for(fuzz.spec_for(seed, family))
            path = os.path.join(cases, f"nv_fuzz_case_{seed}.py")
            with open(path, "w") as f:
                f.write(text)
            ns = {"__name__": "nv_fuzz_case", "__file__": path}
            exec(compile(text, path, "exec"), ns)
            host = ns["make_inputs"]()
            outs = ns["launch"](None, {k: _to_device(v) for k, v in host.items()})
            got = {k: _to_host(v, host[k]) for k, v in outs.items()}
            bad = ns["_compare"](got, ns["reference"](ns["make_inputs"]()))
            if bad:
                print(f"  {bad}", flush=True)
            report(name, 1.0 if bad else 0.0, 0.0)


def run_examples() -> None:
    """The tutorial kernels on CUDA tensors where their host code takes them: each kernel
    launched with CUDA tensors and compared with torch."""
    import importlib.util

    def load(name):
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    @case("tutorial_01 vector add f32 n=100003")
    def _(name):
        mod = load("tutorial_01_vector_add")
        x, y = rnd(100003, dtype=torch.float32), rnd(100003, dtype=torch.float32)
        out = torch.empty_like(x)
        mod.add_kernel[(-(-100003 // 256),)](x, y, out, BLOCK=256)
        report(name, rel(out, x.double() + y.double()), tol(torch.float32))

    @case("tutorial_02 fused softmax f32 50x200")
    def _(name):
        mod = load("tutorial_02_fused_softmax")
        x = rnd(50, 200, dtype=torch.float32)
        y = torch.empty_like(x)
        mod.softmax_kernel[(-(-50 // 4),)](x, y, 200, BM=4, BN=256)
        report(name, rel(y, torch.softmax(x.double(), -1)), tol(torch.float32))

    @case("tutorial_03 linear+relu f16 100x80x96")
    def _(name):
        mod = load("tutorial_03_gemm_epilogue")
        a, b, bias = rnd(100, 96), rnd(96, 80), rnd(1, 80, dtype=torch.float32)
        c = torch.zeros(100, 80, device=DEV, dtype=torch.float16)
        mod.linear_relu[(4, 3)](a, b, bias, c, 96, BM=32, BN=32, BK=32)
        report(name, rel(c, torch.relu(a.double() @ b.double() + bias.double())), tol(torch.float16))

    @case("tutorial_04 layer norm f32 30x1000")
    def _(name):
        mod = load("tutorial_04_layer_norm")
        x = rnd(30, 1000, dtype=torch.float32) * 2 + 5
        w, b = rnd(1, 1000, dtype=torch.float32), rnd(1, 1000, dtype=torch.float32)
        y = torch.zeros_like(x)
        mod.layer_norm[(-(-30 // 4),)](x, w, b, y, 1000, 1e-5, BM=4, BC=256)
        ref = F.layer_norm(x.double(), (1000,), w[0].double(), b[0].double(), 1e-5)
        report(name, rel(y, ref), 64 * tol(torch.float32))

    @case("tutorial_06 dropout f32 64x96")
    def _(name):
        mod = load("tutorial_06_dropout")
        x = rnd(64, 96, dtype=torch.float32)
        out = torch.empty_like(x)
        ref = torch.from_numpy(mod.reference(x.cpu().numpy(), 0.3, 7)).to(DEV)
        BM, BN = 4, 32
        mod.dropout_kernel[(-(-64 // BM), -(-96 // BN))](x, out, 96, 0.3, 7, BM=BM, BN=BN)
        report(name, rel(out, ref), tol(torch.float32))

    @case("tutorial_08 grouped gemm (array tables) f16 4 groups")
    def _(name):
        # a table of CUDA tensors: the kernel reads each entry's address and shape from the
        # device table; f16 products exact in f32, K f32 additions: the f32 tolerance x K
        mod = load("tutorial_08_grouped_gemm")
        shapes = [(72, 40, 48), (33, 64, 35), (50, 32, 64), (17, 48, 40), (300, 200, 100)]
        a = [rnd(m, k) for m, n, k in shapes]
        b = [rnd(k, n) for m, n, k in shapes]
        host = DEV != "cuda"    # (the interpreter's check of this script: numpy entries)
        for tiles in ((16, 16, 16), (32, 32, 32)):
            c = mod.grouped_matmul_host([x.numpy() for x in a] if host else a, [y.numpy() for y in b] if host else b,
                                        programs=7, BM=tiles[0], BN=tiles[1], BK=tiles[2])
            c = [torch.from_numpy(z) for z in c] if host else c
            for g, (x, y, z) in enumerate(zip(a, b, c)):
                report(f"{name} tiles {tiles[0]} group {g} {tuple(z.shape)}", rel(z, x.double() @ y.double()),
                       tol(torch.float32, 4 * x.shape[1]))

    @case("tutorial_10 block-scaled fp8 (fp8 e4m3/e5m2, e2m1) 32x32x128")
    def _(name):
        import numpy as np
        mod = load("tutorial_10_block_scaled_matmul")
        for fmt in ("e4m3", "e5m2", "e2m1"):
            a, a_scale, b, b_scale = mod.random_problem(32, 32, 128, fmt)
            torch_fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}.get(fmt)

            def dev(x, fp8=None):
                if DEV != "cuda":   # (the interpreter's check of this script: numpy arrays)
                    return x
                t = torch.from_numpy(np.ascontiguousarray(x).view(np.uint8)).to(DEV)
                return t.view(fp8) if fp8 is not None else t
            c = torch.zeros(32, 32, device=DEV, dtype=torch.float32)
            out = c if DEV == "cuda" else c.numpy()
            mod.mx_matmul[(2, 2)](dev(a, torch_fp8), dev(a_scale), dev(b, torch_fp8), dev(b_scale), out, 128,
                                  BM=16, BN=16, BK=64, FORMAT=fmt)
            ref = torch.from_numpy(mod.reference(a, a_scale, b, b_scale, format=fmt)).to(DEV)
            # exact products and power-of-two scales, K = 128 f32 additions
            report(f"{name} {fmt}", rel(c, ref), tol(torch.float32, 4 * 128))

    @case("example train_gpt d_model 128, 2 layers, 10 steps")
    def _(name):
        # the example's model on DEV tensors: xetile's ops (torch.ops.xetile, forward and
        # backward) against torch's (TorchOps: the same f16 roundings), the same weights and
        # batches.  Step 1's loss is one forward pass of the same arithmetic (f16 operands,
        # f32 accumulation; the two differ by the order of f32 sums and a few f16
        # roundings): 16 f16 units.  Later steps follow AdamW, whose first updates are
        # +-lr whatever a gradient's size, so rounding differences compound: the curves must
        # both fall and stay within 2% of each other (a wrong gradient leaves them far apart;
        # in the interpreter they agree to 1e-4 over 10 steps, and past step 17 this model
        # at lr 3e-3 spikes at different steps in the two runs, hence 10).
        mod = load("train_gpt")
        params = mod.init_params(torch, 128, 2, 32, device=DEV)
        start = mod.copy_params(params)
        data = mod.batches(torch, 10, 4, 32, device=DEV)
        ours = mod.train(torch, mod.XetileOps(torch), params, data, 2, quiet=True)
        ref = mod.train(torch, mod.TorchOps(torch), start, data, 2, quiet=True)
        report(name + " step 1 loss", abs(ours[0] - ref[0]) / ref[0], tol(torch.float16, 16))
        report(name + f" step 10 loss {ours[-1]:.3f} vs {ref[-1]:.3f}", abs(ours[-1] - ref[-1]) / ref[-1], 0.02)
        report(name + " loss falls", max(0.0, ours[-1] - 0.9 * ours[0]), 0.0)


if __name__ == "__main__":
    sys.exit(main())
