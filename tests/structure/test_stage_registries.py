"""The stages' op registries cover what they must (xetile_dsl/op_registry.py).

* the interpreter: every key is an xDSL op class, and every op it implemented when it was
  keyed by op name still has an implementation, in each class the name has (the class the
  parser produces and any other one Python code may build, e.g. xDSL's ``arith.CmpiOp``
  next to our vector-capable replacement);
* the frontend: every kernel-language function has a builder, and no builder is
  registered for a name the language lacks.
"""
from __future__ import annotations

import pytest
from xdsl.ir import Operation

import xetile_dsl.language as xt
from xetile_dsl.dialects import make_context
from xetile_dsl.frontend import expressions  # noqa: F401 - registers the language builders
from xetile_dsl.frontend.language_registry import LANGUAGE
from xetile_dsl.interpreter import launch  # noqa: F401 - registers the op implementations
from xetile_dsl.interpreter.engine import IMPLS, TERMINATORS

#: the ops the interpreter implemented when its registry was keyed by name
#: (``arith.index_castui`` was one too: no dialect defines it and the context refuses
#: unregistered ops, so no IR can hold it; see test_no_op_class_is_missing_for_a_dropped_name)
INTERPRETED = [
    "arith.addf", "arith.addi", "arith.andi", "arith.bitcast", "arith.ceildivsi", "arith.ceildivui",
    "arith.cmpf", "arith.cmpi", "arith.constant", "arith.divf", "arith.divsi", "arith.divui", "arith.extf",
    "arith.extsi", "arith.extui", "arith.floordivsi", "arith.fptosi", "arith.fptoui", "arith.index_cast",
    "arith.maximumf", "arith.maxnumf", "arith.maxsi", "arith.maxui", "arith.minimumf", "arith.minnumf",
    "arith.minsi", "arith.minui", "arith.mulf", "arith.muli", "arith.negf", "arith.ori", "arith.remf", "arith.remsi",
    "arith.remui", "arith.select", "arith.shli", "arith.shrsi", "arith.shrui", "arith.sitofp", "arith.subf",
    "arith.subi", "arith.truncf", "arith.trunci", "arith.uitofp", "arith.xori", "func.call", "gpu.barrier",
    "gpu.block_dim", "gpu.block_id", "gpu.grid_dim", "gpu.num_subgroups", "gpu.subgroup_id",
    "gpu.subgroup_size", "math.absf", "math.absi", "math.acos", "math.acosh", "math.asin", "math.asinh",
    "math.atan", "math.atan2", "math.atanh", "math.cbrt", "math.ceil", "math.copysign", "math.cos",
    "math.cosh", "math.erf", "math.erfc", "math.exp", "math.exp2", "math.expm1", "math.floor", "math.fma", "math.log",
    "math.log10", "math.log1p", "math.log2", "math.powf", "math.round", "math.roundeven", "math.rsqrt",
    "math.sin", "math.sinh", "math.sqrt", "math.tan", "math.tanh", "math.trunc", "memref.alloc",
    "memref.alloca", "memref.assume_alignment", "memref.cast", "memref.dealloc", "memref.dim",
    "memref.extract_aligned_pointer_as_index", "memref.extract_strided_metadata", "memref.load",
    "memref.memory_space_cast", "memref.reinterpret_cast", "memref.store", "scf.execute_region", "scf.for",
    "scf.if", "scf.while", "vector.bitcast", "vector.broadcast", "vector.extract",
    "vector.extract_strided_slice", "vector.fma", "vector.insert", "vector.insert_strided_slice",
    "vector.multi_reduction", "vector.reduction", "vector.shape_cast", "vector.transpose",
    "xegpu.alloc_nbarrier", "xegpu.init_nbarrier", "xegpu.nbarrier_arrive", "xegpu.nbarrier_wait",
    "xetile.atomic_cas_scalar", "xetile.atomic_rmw", "xetile.atomic_rmw_scalar", "xetile.extern_elementwise", "xetile.fence",
    "xetile.init_tile", "xetile.load_gather", "xetile.load_tile", "xetile.prefetch_tile",
    "xetile.store_scatter", "xetile.store_tile", "xetile.tile_broadcast", "xetile.tile_conv_layout",
    "xetile.tile_mma", "xetile.tile_pack", "xetile.tile_reduce", "xetile.tile_transpose", "xetile.tile_unpack",
    "xetile.update_tile_offset", "xtdebug.print",
]


def _op_classes() -> dict[str, set[type]]:
    """IR name -> every loaded Operation class of that name."""
    found: dict[str, set[type]] = {}
    todo = [Operation]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        name = getattr(cls, "name", None)
        if isinstance(name, str):
            found.setdefault(name, set()).add(cls)
    return found


def test_interpreter_keys_are_op_classes():
    bad = [key for key in IMPLS.keys() if not (isinstance(key, type) and issubclass(key, Operation))]
    assert not bad, f"interpreter implementations registered on non-op keys: {bad}"
    assert all(issubclass(t, Operation) and t not in IMPLS for t in TERMINATORS)


@pytest.mark.parametrize("name", INTERPRETED)
def test_every_formerly_interpreted_op_is_implemented(name):
    parsed = make_context().get_optional_op(name)
    assert parsed is not None, f"{name}: the parser knows no such op"
    assert parsed in IMPLS, f"{name}: the class the parser produces ({parsed.__qualname__}) has no implementation"
    missing = [f"{c.__module__}.{c.__qualname__}" for c in _op_classes()[name] if c not in IMPLS]
    assert not missing, f"{name}: no implementation for {missing}"


def test_no_op_class_is_missing_for_a_dropped_name():
    """When an xDSL upgrade defines arith.index_castui, the interpreter must implement it
    (like arith.extui: the operand read as unsigned)."""
    assert make_context().get_optional_op("arith.index_castui") is None
    assert "arith.index_castui" not in _op_classes()


def test_nothing_new_is_implemented_without_a_name_in_the_list():
    """A new implementation adds its op name to INTERPRETED, so this file keeps the record."""
    assert sorted(set(IMPLS.names())) == sorted(INTERPRETED)


def _language_names() -> set[str]:
    return {getattr(getattr(xt, attr), "__xetile_builtin__", None) for attr in dir(xt)} - {None}


def test_every_language_function_has_a_frontend_builder():
    missing = sorted(name for name in _language_names() if LANGUAGE.lookup(name) is None)
    assert not missing, f"xetile_dsl.language functions the frontend cannot build: {missing}"


def test_no_frontend_builder_for_a_name_the_language_lacks():
    extra = sorted(set(LANGUAGE.keys()) - _language_names())
    assert not extra, f"frontend builders for names xetile_dsl.language does not export: {extra}"
