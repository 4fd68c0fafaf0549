"""Cross-lane register ops (xetile_dsl extensions; the RFC's SIMT form has none).

``xegpu.lane_transpose``: the SIMT form of a ``lanes x lanes`` block transpose in registers
(an xetile_dsl extension; the RFC's SIMT form has no cross-lane vector op)::

    %t = xegpu.lane_transpose %v : vector<16x1xf32> -> vector<16x1xf32>

Before SIMT distribution the block is ``vector.transpose %sq, [1, 0] : vector<16x16xf32> to
vector<16x16xf32>`` with source and result in the plain lane layout (``wi_layout = [1, L],
wi_data = [1, 1]``: lane n holds column n). After distribution each lane holds its column as
``vector<L x 1 x T>``; ``lane_transpose`` gives lane n row n of the block, i.e. element j of
lane n's result is element n of lane j's source. Codegen does it with L subgroup shuffles
(codegen/emit/lane_transpose.py). L is the subgroup size (checked by target_legality).

``xegpu.a_from_c``: operand A of a dpas built from ``r`` blocks in the plain (result) lane
layout, joined side by side (lowering/rewrites/mma_relayout.py)::

    %a = xegpu.a_from_c %c0, %c1 : vector<8x8xf16>, vector<8x8xf16> -> vector<8x16xf16>

At subgroup level it is a column concatenation. After SIMT distribution the sources are
lane columns ``vector<R x 1 x T>`` and the result is A's lane fragment ``vector<R x r x T>``
(on an 8-lane target with 16-bit A, lane n holds columns 2n, 2n+1); codegen moves the
elements with subgroup shuffles (codegen/emit/a_from_c.py).
"""
from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from ._fields import PureVectorOp


@irdl_op_definition
class LaneTransposeOp(PureVectorOp):
    """Transpose a ``lanes x lanes`` block held one column per lane (SIMT form)."""

    name = "xegpu.lane_transpose"
    source = operand_def(VectorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue):
        source = SSAValue.get(source)
        super().__init__(operands=[source], result_types=[source.type])

    @property
    def lanes(self) -> int:
        return self.source.type.get_shape()[0]

    def verify_(self) -> None:
        t = self.source.type
        shape = tuple(t.get_shape())
        if len(shape) != 2 or shape[1] != 1 or shape[0] < 2:
            raise VerifyException(f"{self.name}: the source must be one lane's column of a lanes x lanes block, "
                                  f"vector<L x 1 x T> (L = subgroup size), got {t}")
        if self.result.type != t:
            raise VerifyException(f"{self.name}: the result type must be the source type {t}, got "
                                  f"{self.result.type}")


@irdl_op_definition
class AFromCOp(PureVectorOp):
    """Join ``r`` same-typed ``[R, w]`` blocks side by side into one ``[R, r * w]`` block
    held in operand A's lane layout (subgroup form ``w`` = block width, SIMT form ``w`` = 1)."""

    name = "xegpu.a_from_c"
    sources = var_operand_def(VectorType)
    assembly_format = "$sources attr-dict `:` type($sources) `->` type($result)"

    def __init__(self, sources, result_type: VectorType):
        super().__init__(operands=[[SSAValue.get(s) for s in sources]], result_types=[result_type])

    def verify_(self) -> None:
        types = {s.type for s in self.sources}
        if len(types) != 1:
            raise VerifyException(f"{self.name}: the sources must share one type, got {sorted(map(str, types))}")
        t = types.pop()
        rows, cols = t.get_shape() if len(t.get_shape()) == 2 else (None, None)
        want = (rows, cols * len(self.sources)) if rows is not None else None
        res = self.result.type
        if want is None or tuple(res.get_shape()) != want or res.element_type != t.element_type:
            raise VerifyException(f"{self.name}: {len(self.sources)} sources of {t} join into "
                                  f"vector<{want[0] if want else '?'}x{want[1] if want else '?'}x{t.element_type}>, "
                                  f"got {res}")
