"""``xetile.extern_elementwise``: a call of an OpenCL builtin by name, element by element
over vectors (or on scalars) of one shape, the result in its own element type.

``callee`` is the builtin's plain OpenCL name (``hypot``); codegen mangles it from the
operand types.  ``numpy_impl`` names the host function the interpreter runs instead
(``numpy:hypot``, module and qualified name), empty when there is none.  Printed in the
generic form::

    %r = "xetile.extern_elementwise"(%x, %y) <{callee = "hypot", numpy_impl = "numpy:hypot"}>
        : (vector<8x16xf32>, vector<8x16xf32>) -> vector<8x16xf32>
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AnyFloat, IntegerType, StringAttr, VectorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, var_operand_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


_NATIVE = ("cos", "divide", "exp", "exp2", "exp10", "log", "log2", "log10", "powr", "recip", "rsqrt", "sin", "sqrt",
           "tan")
#: the OpenCL C builtins ``xt.extern`` may call: the math, integer and common functions of
#: the OpenCL C specification ("Built-in Functions") whose parameters are all values (no
#: pointer: frexp, modf, sincos, remquo, lgamma_r, fract are left out).  The relational
#: functions are left out too: their scalar and vector forms answer true differently (1
#: and -1), and a lane's fragment is either.
OPENCL_BUILTINS = frozenset((
    "acos", "acosh", "acospi", "asin", "asinh", "asinpi", "atan", "atan2", "atanh", "atanpi", "atan2pi", "cbrt",
    "ceil", "copysign", "cos", "cosh", "cospi", "erfc", "erf", "exp", "exp2", "exp10", "expm1", "fabs", "fdim",
    "floor", "fma", "fmax", "fmin", "fmod", "hypot", "ilogb", "ldexp", "lgamma", "log", "log2", "log10", "log1p",
    "logb", "mad", "maxmag", "minmag", "nan", "nextafter", "pow", "pown", "powr", "remainder", "rint", "rootn",
    "round", "rsqrt", "sin", "sinh", "sinpi", "sqrt", "tan", "tanh", "tanpi", "tgamma", "trunc",
    *(f"half_{n}" for n in _NATIVE), *(f"native_{n}" for n in _NATIVE),
    "abs", "abs_diff", "add_sat", "hadd", "rhadd", "clamp", "clz", "ctz", "mad_hi", "mad_sat", "max", "min",
    "mul_hi", "rotate", "sub_sat", "upsample", "popcount", "mad24", "mul24",
    "degrees", "mix", "radians", "step", "smoothstep", "sign",
))


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _shape(t: Attribute) -> tuple:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else ()


@irdl_op_definition
class ExternElementwiseOp(IRDLOperation):
    """``callee(args...)`` element-wise; every vector operand has the result's shape
    (scalar operands are the same in every element)."""

    name = "xetile.extern_elementwise"
    args = var_operand_def()
    result = result_def()
    callee = prop_def(StringAttr)
    numpy_impl = prop_def(StringAttr)
    traits = traits_def(Pure())

    def __init__(self, callee: str, args: Sequence[SSAValue], result_type: Attribute, numpy_impl: str = ""):
        super().__init__(operands=[list(args)], result_types=[result_type],
                         properties={"callee": StringAttr(callee), "numpy_impl": StringAttr(numpy_impl)})

    def verify_(self) -> None:
        if self.callee.data not in OPENCL_BUILTINS:
            raise VerifyException(f"{self.name}: {self.callee.data!r} is not an OpenCL builtin it can call "
                                  f"(OPENCL_BUILTINS)")
        if not self.args:
            raise VerifyException(f"{self.name}: takes at least one operand")
        shape = _shape(self.result.type)
        for v in [*self.args, self.result]:
            if not isinstance(_elem(v.type), (AnyFloat, IntegerType)):
                raise VerifyException(f"{self.name}: operands and result are float or integer scalars or vectors, "
                                      f"got {v.type}")
            if isinstance(v.type, VectorType) and _shape(v.type) != shape:
                raise VerifyException(f"{self.name}: vector operands must have the result's shape "
                                      f"{list(shape)}, got {v.type}")
