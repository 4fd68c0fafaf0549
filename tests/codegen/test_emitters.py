"""The op emitters' registry (codegen/emit/EMITTERS): what the driver finds for an op."""
from __future__ import annotations

import pathlib
import subprocess
import sys

from xdsl.dialects import arith
from xetile_dsl.dialects._math_ops import MATH

from xetile_dsl.codegen import emit
from xetile_dsl.codegen.simt_to_llvm import EMITTERS
from xetile_dsl.dialects import _arith_vector as av


def test_the_driver_imports_every_module_that_registers_emitters():
    """Registration happens on import: an emitter module the driver does not import (in a
    fresh process, importing nothing else) would leave its ops unsupported."""
    folder = pathlib.Path(emit.__file__).parent
    registering = sorted(f"xetile_dsl.codegen.emit.{p.stem}" for p in folder.glob("*.py")
                         if p.name != "__init__.py" and "EMITTERS.register" in p.read_text())
    code = ("import sys, xetile_dsl.codegen.simt_to_llvm; "
            f"print([m for m in {registering!r} if m not in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_arith_and_math_op_has_an_emitter():
    """arith as xDSL defines it and as the compiler's context parses it (casts, compares and
    select redefined for vectors): a pass may build either."""
    missing = [cls.name for cls in (*arith.Arith.operations, *av.ARITH.operations, *MATH.operations)
               if EMITTERS.lookup(cls) is None]
    assert not missing


def test_an_arith_op_with_a_scalar_form_is_element_wise_on_vectors():
    """One emitter per op class: the scalar form's, which hands vector results on."""
    for cls in (arith.AddiOp, av.TruncIOp, arith.IndexCastOp, av.IndexCastOp, arith.RemSIOp):
        assert EMITTERS.lookup(cls).__module__.endswith("emit.scalar_ops")
    assert EMITTERS.lookup(av.CmpiOp).__module__.endswith("emit.vector_ops")
