"""``python -m xetile_dsl explain FILE.py:kernel --target pvc --const BM=256 ... --sig a=f16[:,:] ...``:
compile a ``@jit`` kernel of a Python file (or of an importable module, ``MODULE:kernel``)
and print its static ISA report (``CompiledKernel.report()``; ``--json`` for tools).

Every runtime parameter needs its type, ``--sig NAME=TYPE`` (``f16[:,:]`` for a 2-D array,
``i32`` for a scalar): there is no default, because a name does not say whether it is an
array or a scalar.  The error lists the parameters still missing.  ``--const NAME=VALUE``
gives a constexpr: an integer, a float, ``True``/``False``, an ``xetile_dsl.language``
dtype (``float32``, ``int32``, ...) or the name of a global of the kernel's file (a
``wg_map`` constant, say).
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path

import xetile_dsl.language as xt
from xetile_dsl.compiler import compile as compile_kernel
from xetile_dsl.errors import XeTileError
from xetile_dsl.jit import JITFunction
from xetile_dsl.targets import TARGETS

#: compile targets whose machine code ocloc builds
GPU_TARGETS = tuple(TARGETS)
#: a dotted module name (``MODULE:KERNEL``)
MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class ExplainError(XeTileError):
    """A bad ``explain`` command line (file, kernel, --const or --sig)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kernel", help="FILE.py:KERNEL or MODULE:KERNEL, a @jit kernel of a Python file or an "
                                       "importable module (e.g. xetile_dsl.kernels.gemm_wg:gemm_wg_kernel)")
    parser.add_argument("--target", choices=GPU_TARGETS, default="pvc", help="GPU to compile for (default pvc)")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="a constexpr value (repeatable): int, float, True/False, a dtype name "
                             "(float32, int32, ...) or a global of FILE")
    parser.add_argument("--sig", action="append", default=[], metavar="NAME=TYPE",
                        help="a runtime parameter's type (repeatable), e.g. a=f16[:,:] or K=i32; "
                             "every runtime parameter needs one")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def load_kernel(spec: str) -> tuple[JITFunction, dict]:
    """The ``@jit`` kernel named by ``FILE.py:KERNEL`` or ``MODULE:KERNEL`` (a dotted
    module name, e.g. ``xetile_dsl.kernels.gemm_wg:gemm_wg_kernel``) and its module's globals."""
    where, sep, name = spec.rpartition(":")
    if not sep or not name or not where:
        raise ExplainError(f"expected FILE.py:KERNEL or MODULE:KERNEL, got {spec!r}")
    path = Path(where)
    is_module = not path.is_file() and not where.endswith(".py") and MODULE_NAME.fullmatch(where)
    if not is_module and not path.is_file():
        raise ExplainError(f"no such file: {path}")
    try:
        module = importlib.import_module(where) if is_module else _import_file(path)
    except ModuleNotFoundError as exc:
        if not is_module or not where.startswith(exc.name or "?"):
            raise ExplainError(f"importing {where} failed: {type(exc).__name__}: {exc}") from None
        raise ExplainError(f"no such file or module: {where}") from None
    except Exception as exc:  # the user's file failed to import: say so, no traceback
        raise ExplainError(f"importing {where} failed: {type(exc).__name__}: {exc}") from None
    kernel = getattr(module, name, None)
    if not isinstance(kernel, JITFunction):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, JITFunction))
        raise ExplainError(f"{where} has no @jit kernel {name!r}; its kernels: {', '.join(found) or 'none'}")
    return kernel, vars(module)


def _import_file(path: Path):
    """``path`` as a module: by its dotted name when it lies in a package (its directory
    has ``__init__.py``), so relative imports work -- the package's parent directory goes
    on ``sys.path`` -- else as a standalone module."""
    path = path.resolve()
    parts, folder = [path.stem], path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) > 1:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        return importlib.import_module(".".join(parts))
    module_spec = importlib.util.spec_from_file_location(f"_xetile_explain_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def parse_const(text: str, names: dict) -> tuple[str, object]:
    """``NAME=VALUE`` -> (name, value); see the module docstring for the values accepted."""
    name, sep, value = text.partition("=")
    if not sep:
        raise ExplainError(f"--const needs NAME=VALUE, got {text!r}")
    for convert in (int, float):
        try:
            return name, convert(value)
        except ValueError:
            pass
    if value in ("True", "False"):
        return name, value == "True"
    if isinstance(getattr(xt, value, None), xt.dtype):
        return name, getattr(xt, value)
    if value in names:
        return name, names[value]
    raise ExplainError(f"--const {name}: {value!r} is not a number, True/False, an xetile_dsl.language "
                       "dtype (float32, int32, ...) or a global of the kernel's file")


def signature(kernel: JITFunction, sigs: list[str]) -> dict[str, str]:
    """The runtime parameters' types from ``--sig``; every one is required."""
    given = {}
    for text in sigs:
        name, sep, type_text = text.partition("=")
        if not sep:
            raise ExplainError(f"--sig needs NAME=TYPE, got {text!r}")
        given[name] = type_text
    runtime = [n for n in kernel.signature.parameters if n not in kernel.constexpr_params]
    missing = [n for n in runtime if n not in given]
    unknown = [n for n in given if n not in runtime]
    if missing or unknown:
        problems = [f"missing --sig for {', '.join(missing)}"] if missing else []
        problems += [f"{', '.join(unknown)} not runtime parameters of the kernel"] if unknown else []
        raise ExplainError(f"{'; '.join(problems)} (runtime parameters: {', '.join(runtime)}; "
                           "e.g. --sig a=f16[:,:] for a 2-D array, --sig K=i32 for a scalar)")
    return given


def run(args: argparse.Namespace) -> int:
    """Compile and print the report; errors are one ``error:`` line and exit code 1."""
    try:
        kernel, names = load_kernel(args.kernel)
        constants = dict(parse_const(c, names) for c in args.const)
        compiled = compile_kernel(kernel, signature(kernel, args.sig), constants, target=args.target)
        report = compiled.report()
    except XeTileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report.to_json() if args.json else report)
    return 0
