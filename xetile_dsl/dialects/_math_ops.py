"""xDSL's math dialect plus ``math.erfc``, which MLIR's math dialect has and xDSL 0.74
lacks: :data:`MATH` is the dialect the context loads."""
from __future__ import annotations

from xdsl.dialects import math
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure, SameOperandsAndResultType


@irdl_op_definition
class ErfcOp(math.FloatingPointLikeUnaryMathOperation):
    """``%r = math.erfc %x : T``: the complementary error function ``1 - erf(x)``, computed
    without the cancellation of that difference (scalars and vectors)."""

    name = "math.erfc"
    traits = traits_def(Pure(), SameOperandsAndResultType())


#: math ops xDSL lacks
ADDED = (ErfcOp,)

MATH = Dialect("math", list(math.Math.operations) + list(ADDED), list(math.Math.attributes))
