"""``Families`` (value families through loops, branches and offset updates) finds each op
type's join once and keeps it; the partition must stay what the isinstance
chain per op gave: checked here against that chain, written out independently, on the
modules of kernels with scf.for, scf.while, scf.if, update_tile_offset, tile_mma and dpas,
after every lowering pass."""
from __future__ import annotations

import pytest
from xdsl.dialects import scf

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler
from xetile_dsl.dialects import make_context, xegpu, xetile
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.lowering import pipeline
from xetile_dsl.lowering.analysis.families import Families

GEMM_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}


@xd.jit
def carried_kernel(x, y, n):
    t = xt.init_tile(x, [0, 0], [8, 16])
    acc = xt.load_tile(t)
    i = 0
    while i < n:
        t = xt.update_tile_offset(t, 8, 0)
        acc = acc + xt.load_tile(t)
        i = i + 1
    if n > 2:
        acc = acc * 2.0
    xt.store_tile(acc, xt.init_tile(y, [0, 0], [8, 16]))


KERNELS = [
    (matmul_kernel, GEMM_SIG, {"BM": 32, "BN": 32, "BK": 16}),
    (gemm_wg_kernel, GEMM_SIG, {"BM": 64, "BN": 64, "BK": 32, "SM": 2, "SN": 2, "PF": 2, "ACC": xt.float32}),
    (carried_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "n": "i32"}, {}),
]


def _reference_partition(root) -> set[frozenset]:
    """The families as the per-op isinstance chain joined them (a plain union-find)."""
    parent: dict = {}

    def find(v):
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra is not rb:
            parent[ra] = rb
        parent.setdefault(a, parent.get(a, a))
        parent.setdefault(b, parent.get(b, b))

    for op in root.walk():
        if isinstance(op, scf.ForOp):
            body = op.body.block
            for init, barg, res in zip(op.iter_args, body.args[1:], op.results):
                union(init, barg)
                union(barg, res)
            for yv, barg in zip(body.last_op.operands, body.args[1:]):
                union(yv, barg)
        elif isinstance(op, scf.IfOp):
            for region in op.regions:
                for block in region.blocks:
                    for yv, res in zip(block.last_op.operands, op.results):
                        union(yv, res)
        elif isinstance(op, scf.WhileOp):
            before, after = op.before_region.block, op.after_region.block
            for init, *rest in zip(op.arguments, before.args, before.last_op.args, after.args,
                                   after.last_op.operands, op.results):
                for v in rest:
                    union(init, v)
        elif isinstance(op, (xetile.UpdateTileOffsetOp, xegpu.UpdateNdOffsetOp)):
            union(op.operands[0], op.results[0])
        elif isinstance(op, xetile.TileMMAOp) and op.c is not None:
            union(op.c, op.output)
        elif isinstance(op, xegpu.DpasOp) and op.acc is not None:
            union(op.acc, op.result)
    return _groups(parent.keys(), find)


def _groups(values, find) -> set[frozenset]:
    by_root: dict = {}
    for v in values:
        by_root.setdefault(find(v), set()).add(v)
    return {frozenset(g) for g in by_root.values() if len(g) > 1}


@pytest.mark.parametrize("fn, sig, const", KERNELS, ids=lambda k: getattr(getattr(k, "fn", None), "__name__", ""))
def test_families_match_the_isinstance_chain_after_every_pass(fn, sig, const):
    module = compiler.to_xetile(fn, sig, const, "pvc")
    ctx, checked, joined = make_context(), 0, 0
    for _, passes in pipeline.stages("pvc"):
        for p in passes:
            families = Families(module)
            assert _groups(list(families.parent), families.find) == _reference_partition(module)
            joined += len(families.parent)
            checked += 1
            p.apply(ctx, module)
    assert checked == len(pipeline.pass_names("pvc")) and joined > 0
