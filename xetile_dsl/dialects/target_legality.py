"""Target legality: the checks that depend on one GPU, kept apart from the structural
verifiers of the dialects.  Every hardware number comes from :mod:`xetile_dsl.targets.target`.

``check_for_target(module, target)`` returns the problems found; ``verify_for_target``
raises a :class:`VerifyException` listing them.  Each message names the op, the rule and
the legal alternatives.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import VerifyException

from ..targets.slm_budget import SlmBudget
from ..targets.target import Target, get_target
from . import xegpu, xetile
from .walk import ops_in
from .xegpu import LayoutAttr, SGMapAttr, SliceAttr, element_bits


@dataclass(frozen=True)
class Problem:
    op: Operation
    message: str

    def __str__(self) -> str:
        return self.message


def type_name(t: Attribute) -> str:
    """The target's spelling of an element type (f16, bf16, f32, tf32, i8, u8, i32)."""
    text = str(t)
    if text.startswith("ui"):
        return "u" + text[2:]
    if text.startswith("si"):
        return "i" + text[2:]
    return text


def _dpas(op: xegpu.DpasOp, target: Target) -> list[str]:
    a_t, b_t = type_name(op.lhs.type.element_type), type_name(op.rhs.type.element_type)
    cfg = target.dpas_for(a_t, b_t)
    if cfg is None:
        return [f"{op.name}: {target.name} has no DPAS for {a_t} x {b_t}; legal inputs: "
                f"{', '.join(target.legal_mma_inputs())}"]
    out = []
    acc_t = type_name(op.result.type.element_type)
    if acc_t not in cfg.acc_types:
        out.append(f"{op.name}: {a_t} DPAS on {target.name} accumulates in {', '.join(cfg.acc_types)}, not {acc_t}")
    d = op.result.type.get_shape()
    if d[1] == 1:  # per-lane (SIMT) form: checked through its layout
        return out
    a = op.lhs.type.get_shape()
    k = a[1] * a[2] if len(a) == 3 else a[1]
    if d[0] not in cfg.m_values or d[1] != cfg.n or k != cfg.k:
        out.append(f"{op.name}: {target.name} DPAS for {a_t} is M x N x K with M in {list(cfg.m_values)}, "
                   f"N = {cfg.n}, K = {cfg.k}; got {d[0]} x {d[1]} x {k}")
    return out


_BLOCK_KIND = {xegpu.StoreNdOp: "write", xegpu.PrefetchNdOp: "prefetch"}


def _block2d(op: Operation, target: Target) -> list[str]:
    tdesc = op.tensor_desc.type
    shape = tdesc.get_shape()
    if len(shape) != 2 or tdesc.memory_space != "global" or tdesc.layout is not None:
        return []
    if not target.has_2d_block_io:
        return [f"{op.name}: {target.name} has no 2D block messages; lower 2-D descriptors to scattered "
                f"xegpu.load/store (or 1-D block loads) for this target"]
    kind = _BLOCK_KIND.get(type(op), "read")
    if isinstance(op, xegpu.LoadNdOp):
        kind = "read_transform" if op.packed is not None else "read_transpose" if op.transpose is not None else "read"
    bits = element_bits(tdesc.element_type)
    rows, cols, count = shape[0], shape[1], tdesc.block_attr.arr_len
    if isinstance(op, xegpu.LoadNdOp) and op.transpose is not None and op.transpose_bit_width is not None:
        bits, cols = op.transpose_bit_width.data, cols * bits // op.transpose_bit_width.data
    if target.find_block2d(kind, bits, rows, cols, count) is None:
        legal = sorted({f"{r}x{c}" + (f"x{n}" if n > 1 else "") for r, c, n in target.block2d_shapes(kind, bits)})
        return [f"{op.name}: {rows}x{cols}" + (f"x{count}" if count > 1 else "") +
                f" of {bits}-bit elements is not a {target.name} 2D block {kind.replace('_', ' ')}; legal "
                f"rows x cols(x array_length): {', '.join(legal) or 'none'}"]
    return []


def _create_nd(op: xegpu.CreateNdTdescOp, target: Target) -> list[str]:
    src = op.source.type
    tdesc = op.tensor_desc.type
    if not isinstance(src, MemRefType) or len(tdesc.get_shape()) != 2 or not target.has_2d_block_io:
        return []
    shape = src.get_shape()
    if any(d < 0 for d in shape):
        return []
    lim = target.block2d_limits
    pitch = shape[-1] * element_bits(src.element_type) // 8
    out = []
    if pitch % lim.pitch_align_bytes:
        out.append(f"{op.name}: row pitch {pitch} B is not a multiple of {lim.pitch_align_bytes} B required by "
                   f"{target.name} 2D blocks; pad the rows or use scattered loads")
    if pitch < lim.min_width_bytes:
        out.append(f"{op.name}: surface width {pitch} B is below the {lim.min_width_bytes} B minimum of "
                   f"{target.name} 2D blocks; pad the rows or use scattered loads")
    return out


def _lanes(op: Operation, attr: Attribute | None, target: Target) -> list[str]:
    lanes = attr.lanes if isinstance(attr, (SGMapAttr, LayoutAttr)) else None
    if lanes and lanes != target.subgroup_size:
        return [f"{op.name}: lane layout covers {lanes} lanes but the {target.name} subgroup has "
                f"{target.subgroup_size}; use wi_layout/lane_layout = [1, {target.subgroup_size}]"]
    return []


def _attached_layouts(op: Operation, target: Target) -> list[str]:
    """``layout_result_0`` / ``layout_operand_N`` on any op (and convert_layout's layouts):
    a lane layout, where given, covers the subgroup (a slice: its parent's)."""
    attrs = [v for k, v in op.attributes.items() if k.startswith("layout")]
    if isinstance(op, xegpu.ConvertLayoutOp):
        attrs += [v for v in (op.properties.get("target_layout"), op.properties.get("input_layout")) if v]
    out: list[str] = []
    for attr in attrs:
        while isinstance(attr, SliceAttr):
            attr = attr.parent
        if isinstance(attr, SGMapAttr) or (isinstance(attr, LayoutAttr) and attr.field("lane_layout")):
            out += _lanes(op, attr, target)
    return out


def _scatter(op: Operation, target: Target) -> list[str]:
    tdesc = op.tensor_desc.type
    lanes = tdesc.get_shape()[0]
    if tdesc.layout is None and lanes not in (target.subgroup_size, 2 * target.subgroup_size):
        return [f"{op.name}: a scattered descriptor has one offset per lane; {target.name} needs "
                f"{target.subgroup_size} (or {2 * target.subgroup_size}), got {lanes}"]
    return []


def _slm_bytes(op: Operation) -> int:
    if op.name not in ("memref.alloc", "memref.alloca") or not op.results:
        return 0
    t = op.results[0].type
    if not isinstance(t, MemRefType):
        return 0
    space = t.memory_space
    if not (isinstance(space, IntegerAttr) and space.value.data == 3):
        return 0
    n = 1
    for d in t.get_shape():
        if d < 0:
            return 0
        n *= d
    return n * element_bits(t.element_type) // 8


def _op_problems(op: Operation, target: Target) -> list[str]:
    out: list[str] = _attached_layouts(op, target)
    if isinstance(op, xegpu.DpasOp):
        out += _dpas(op, target)
        for name in ("layout_a", "layout_b", "layout_cd"):
            out += _lanes(op, op.properties.get(name), target)
    elif isinstance(op, (xegpu.LoadNdOp, xegpu.StoreNdOp, xegpu.PrefetchNdOp)):
        out += _block2d(op, target)
    elif isinstance(op, xegpu.CreateNdTdescOp):
        out += _create_nd(op, target)
        out += _lanes(op, op.tensor_desc.type.layout, target)
    elif isinstance(op, xegpu.CreateTdescOp):
        out += _scatter(op, target)
        out += _lanes(op, op.tensor_desc.type.layout, target)
    elif isinstance(op, xegpu.AllocNbarrierOp):
        n = _const(op.nbarrier_num) if op.nbarrier_num is not None else op.nbarrier_count.value.data
        if target.named_barriers == 0:
            out.append(f"{op.name}: {target.name} has no named barriers; use gpu.barrier")
        elif n is not None and n > target.named_barriers:
            out.append(f"{op.name}: {n} named barriers requested, {target.name} has {target.named_barriers}")
    elif isinstance(op, xegpu.LaneTransposeOp) and op.lanes != target.subgroup_size:
        out.append(f"{op.name}: a {op.lanes}x{op.lanes} block, but the {target.name} subgroup has "
                   f"{target.subgroup_size} lanes; the block must be vector<{target.subgroup_size}x1x...>")
    elif isinstance(op, xetile.TileMMAOp):
        a_t, b_t = type_name(op.a.type.element_type), type_name(op.b.type.element_type)
        if target.dpas_for(a_t, b_t) is None:
            out.append(f"{op.name}: {target.name} has no DPAS for {a_t} x {b_t}; legal inputs: "
                       f"{', '.join(target.legal_mma_inputs())}")
    return out


def _const(value) -> int | None:
    owner = value.owner
    if getattr(owner, "name", None) == "arith.constant":
        attr = owner.properties.get("value")
        if isinstance(attr, IntegerAttr):
            return attr.value.data
    return None


def check_for_target(module: Operation, target: Target | str) -> list[Problem]:
    """Every target-legality problem in ``module`` (empty when legal)."""
    if isinstance(target, str):
        target = get_target(target)
    problems: list[Problem] = []
    slm = SlmBudget(target)
    for op in ops_in(module):
        problems += [Problem(op, m) for m in _op_problems(op, target)]
        slm.used += _slm_bytes(op)
    if slm.left < 0:
        problems.append(Problem(module, f"{module.name}: {slm.used} B of shared local memory allocated, {target.name} "
                                        f"has {target.slm_bytes} B; shrink the tiles or stage through global memory"))
    return problems


def verify_for_target(module: Operation | ModuleOp, target: Target | str) -> None:
    """Raise a VerifyException listing every target-legality problem in ``module``."""
    problems = check_for_target(module, target)
    if problems:
        raise VerifyException("\n".join(str(p) for p in problems))
