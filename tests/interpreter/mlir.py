"""Hand-written XeTile kernels for the interpreter tests: MLIR text builders."""
from __future__ import annotations

from xetile_dsl.dialects import parse_module
from xetile_dsl.interpreter import interpret


def memref(elem: str) -> str:
    return f"memref<?x?x{elem}, strided<[?, 1]>>"


def kernel(params: dict[str, str], body: str) -> str:
    """A kernel function: ``params`` maps names to element types of 2-D arrays (or to a
    scalar type prefixed with ``=``, e.g. ``{"n": "=index"}``).  For each array ``x`` the
    body may use ``%x_rows``, ``%x_cols``, ``%x_stride``, ``%c1`` and ``%c0``."""
    args, meta = [], ["  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index"]
    for name, elem in params.items():
        if elem.startswith("="):
            args.append(f"%{name}: {elem[1:]}")
            continue
        args.append(f"%{name}: {memref(elem)}")
        meta.append(f"  %{name}_base, %{name}_off, %{name}_rows, %{name}_cols, %{name}_stride, %{name}_one = "
                    f"memref.extract_strided_metadata %{name} : {memref(elem)} -> memref<{elem}>, index, index, "
                    f"index, index, index")
    return (f"func.func @k({', '.join(args)}) attributes {{xetile.kernel = \"pvc\"}} {{\n" + "\n".join(meta)
            + "\n" + body + "\n  func.return\n}\n")


def tile(name: str, elem: str, shape: str, row: str = "%c0", col: str = "%c0", attr: str = "") -> str:
    """``init_tile`` of array ``name`` (dynamic form) at (row, col)."""
    ttype = f"!xetile.tile<{shape}x{elem}{', ' + attr if attr else ''}>"
    return (f"xetile.init_tile %{name}[{row}, {col}], [%{name}_rows, %{name}_cols], [%{name}_stride, %c1] : "
            f"{memref(elem)} -> {ttype}")


def run(text: str, grid, *args) -> None:
    """Parse and verify ``text``, then interpret it on ``grid`` with ``args``."""
    module = parse_module(text)
    module.verify()
    interpret(module, grid, list(args))
