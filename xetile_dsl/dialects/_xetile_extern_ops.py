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
        name = self.callee.data
        if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name):
            raise VerifyException(f"{self.name}: callee must be an OpenCL builtin name (letters, digits, '_'), "
                                  f"got {name!r}")
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
