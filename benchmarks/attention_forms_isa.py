"""Flash-attention forward forms compared by machine code (no GPU): ops.attention's
transposed kernel against a candidate whose second product takes V as a VNNI operand B.

    python benchmarks/attention_forms_isa.py [--targets bmg] [--head-dims 128] [--tiles 16x32 16x48 16x64]

ops.attention's form (``transposed``, xetile_dsl/ops/attention.py) computes O^T = V^T P^T:
V^T is operand A, read with transposed 32-bit block messages whose dwords pair two
head-dim columns, where operand A pairs two keys, so every V^T element is moved once more
(word de-interleave moves).  The candidate (``vnni-v``, :func:`vnni_v_kernel`, not an op:
measured only) keeps S^T = K Q^T and the softmax down each lane's column as the
transposed form does, then computes O = P V with V a VNNI operand B (plain block
messages with the VNNI transform, no moves) and P = transpose(P^T) as operand A, which
the compiler's tile_transpose stages through SLM (decision 016: a register transpose
does not feed operand A).  The per-query alpha and sum reach O's rows through the same
[1, BM] -> [BM, 1] transposes.  Numbers are the project's ISA report (tools/isa_report.py)
of the innermost DPAS loop, causal and not, f16, scale > 0, and per DPAS by role as
benchmarks/peer_attention_isa.py attributes them (its ``role``).  Triton-XPU's numbers
for the same shapes: benchmarks/peer_attention_isa.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.ops.attention import (RESCALE_SLACK, _block_max, _exponents, _masked, _scores,
                                      attention_kernel)
from xetile_dsl.ops import configs
from xetile_dsl.ops.matmul import XT_DTYPES
from xetile_dsl.ops.rows import NEG_BIG

sys.path.insert(0, str(Path(__file__).parent))
import peer_attention_isa as peer  # noqa: E402  (the sibling script: its role attribution and tables)


@xd.jit
def _first_vnni(s, tv, qk_scale, OUT: xt.constexpr, D: xt.constexpr, SCALED: xt.constexpr):
    """The first key block: m its maximum, O = P V from zero."""
    m = _block_max(s, qk_scale, SCALED)
    p = xt.exp2(_exponents(s, m, qk_scale, SCALED))
    acc = xt.tile_mma(xt.transpose(xt.astype(p, OUT)), xt.load_tile(tv), xt.zeros([s.shape[1], D], xt.float32))
    return m, xt.sum(p, axis=0), acc


@xd.jit
def _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT: xt.constexpr, SCALED: xt.constexpr):
    """A later key block, lazily rescaled as attention._softmax_step; acc = O [queries, D]."""
    m_blk = _block_max(s, qk_scale, SCALED)
    x = _exponents(s, m, qk_scale, SCALED)
    if xt.tile_reduce("maxnumf", m_blk - m, 1) > RESCALE_SLACK:
        shift = m - xt.maximum(m, m_blk)
        x = x + shift
        alpha = xt.exp2(shift)
        s_sum = s_sum * alpha
        acc = acc * xt.transpose(alpha)
        m = m - shift
    p = xt.exp2(x)
    s_sum = s_sum + xt.sum(p, axis=0)
    acc = xt.tile_mma(xt.transpose(xt.astype(p, OUT)), xt.load_tile(tv), acc)
    return m, s_sum, acc


@xd.jit
def vnni_v_kernel(q, k, v, o, lse, N, NP, qk_scale, with_lse, CAUSAL: xt.constexpr, OUT: xt.constexpr,
                  D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, SCALED: xt.constexpr):
    """attention_kernel's signature and blocks (without the lse store), O = P V with V
    a VNNI operand B.  For example, in the interpreter:

    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((32, 128)).astype(np.float16)
    >>> o = np.zeros_like(x)
    >>> vnni_v_kernel.on("interpret")[(2, 1)](x, x, x, o, np.zeros((1, 1), np.float32), 32, 32, 0.18, 0,
    ...     CAUSAL=False, OUT=XT_DTYPES["float16"], D=128, BM=16, BN=16, SCALED=False)
    >>> bool(np.isfinite(o).all())
    True
    """
    base = xt.program_id(1) * NP
    qblk = xt.program_id(0) * BM
    tq = xt.init_tile(q, [0, base + qblk], [D, BM], order=(0, 1))   # Q^T: [D, queries]
    tk = xt.init_tile(k, [base, 0], [BN, D])                         # K: [keys, D]
    tv = xt.init_tile(v, [base, 0], [BN, D])                         # V: [keys, D], operand B
    end = N
    unmasked = N // BN * BN
    if CAUSAL:
        end = qblk + BM
        unmasked = (qblk + 1) // BN * BN
    m = xt.full([1, BM], NEG_BIG, xt.float32)
    s_sum = xt.zeros([1, BM], xt.float32)
    acc = xt.zeros([BM, D], xt.float32)                              # O
    if N > 0:
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), 0, N, qblk, BN, BM, CAUSAL)
        m, s_sum, acc = _first_vnni(s, tv, qk_scale, OUT, D, SCALED)
    tk = xt.update_tile_offset(tk, BN, 0)
    tv = xt.update_tile_offset(tv, BN, 0)
    for start in range(BN, unmasked, BN):
        s = _scores(tk, tq, qk_scale, BN, BM, SCALED)
        m, s_sum, acc = _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
        tk = xt.update_tile_offset(tk, BN, 0)
        tv = xt.update_tile_offset(tv, BN, 0)
    if BN <= unmasked and unmasked < end:
        s = _masked(_scores(tk, tq, qk_scale, BN, BM, SCALED), unmasked, N, qblk, BN, BM, CAUSAL)
        m, s_sum, acc = _step_vnni(s, m, s_sum, acc, tv, qk_scale, OUT, SCALED)
    xt.store_tile(xt.astype(acc / xt.transpose(s_sum), OUT), xt.init_tile(o, [base + qblk, 0], [BM, D]))


FORMS = {"transposed": attention_kernel, "vnni-v": vnni_v_kernel}


def form_row(form: str, target: str, d: int, bm: int, bn: int, causal: bool) -> dict:
    """One row: the ISA report of ``form``'s hot loop at ``bm`` x ``bn``."""
    consts = {"CAUSAL": causal, "OUT": XT_DTYPES["float16"], "D": d, "BM": bm, "BN": bn, "SCALED": False}
    kernel = xd.compile(FORMS[form], peer.OURS_SIG, consts, target=target)
    report = kernel.report()
    loop = next(t for lp, t in peer.dpas_loops(kernel.asm["isa"], report) if lp is report.hot)
    r = peer.row("xetile_dsl", f"{bm}x{bn}", form, report, report.hot, loop)
    return {"target": target, "d": d, "causal": causal, **r}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", default=["bmg"])
    parser.add_argument("--head-dims", nargs="+", type=int, default=[128])
    parser.add_argument("--tiles", nargs="+", default=["16x32", "16x48", "16x64"], help="BMxBN of the candidate")
    args = parser.parse_args(argv)
    rows = []
    for target in args.targets:
        for d in args.head_dims:
            for causal in (False, True):
                tiles = [("transposed", *configs.attention_tiles(target, d))] + [("vnni-v", *map(int, t.split("x"))) for t in args.tiles]
                for form, bm, bn in tiles:
                    r = form_row(form, target, d, bm, bn, causal)
                    rows.append(r)
                    print(f"{target} D={d} causal={causal} {form} {bm}x{bn}: {r['per_dpas']:.2f} per DPAS "
                          f"({r['short_per_dpas']:.2f} short path), spill {r['spill']} B", file=sys.stderr, flush=True)
    print(peer.counts_table(rows))
    print()
    print("Instructions per DPAS by role (short path):")
    print()
    print(peer.roles_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
