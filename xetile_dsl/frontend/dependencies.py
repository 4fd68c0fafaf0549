"""What a compiled kernel depends on besides its arguments, as canonical text for the
kernel cache key.

The frontend reads a kernel's globals while it compiles (``SHAPE``, ``CFG.a.b``,
``cfg.KSCALE``, ``cfg.helper(...)``, ``xt.float16``); the same reads are found here in the
ASTs of the kernel and of every ``@jit`` function it reaches (:attr:`KernelSource.global_reads`)
and the values read are written as type-tagged text: no memory addresses and no ``repr``
of arbitrary objects, so equal text means the frontend sees equal values, in any process.
A value that cannot be written that way is refused with a :class:`CacheKeyError` at the
line that reads it.

:class:`Dependencies` also remembers which objects it read (the module's globals dict and
name, the object and attribute of each step of a chain), so the launcher can check with a
few identity comparisons per launch that no global was rebound since the key was made.
"""
from __future__ import annotations

import builtins
import json
import types
from dataclasses import dataclass

import numpy as np

from ..errors import CacheKeyError, LaunchError
from ..language import core as lang
from . import suggestions
from .source import GlobalRead, KernelSource

#: what a kernel may read from its globals (for error messages)
ALLOWED = ("None, bool, int, float, str, numpy scalars and dtypes, tuples and lists of these, xt.constexpr(...), "
           "xetile_dsl dtypes (xt.float16 ...), xt.wg_map(...), @jit functions, xetile_dsl.language operations "
           "and Python builtins; modules and other objects only through attributes that are one of these "
           "(cfg.KSCALE, CFG.shape)")

_MISSING = object()
#: chains through these modules are not watched per launch: their contents are the
#: compiler's own (covered by the compiler version in the key)
_COMPILER_MODULES = ("xetile_dsl.language",)


class _Unrepresentable(Exception):
    """A value with no canonical text; ``args[0]`` says what it is."""


@dataclass(frozen=True)
class Dependencies:
    """The canonical text of a kernel's sources and the global values they read, and
    what to compare to know that text is still current."""

    text: str
    names: tuple     # (globals dict, name, object read or _MISSING)
    attrs: tuple     # (object, attribute, object read or _MISSING)

    def unchanged(self) -> bool:
        """True when every watched global and attribute is still bound to the object read.

        Rebinding is seen (``SCALE = 3.0``, ``cfg.KSCALE = 2``, a redefined ``@jit``
        helper); mutating a list in place is not (a new process sees it)."""
        # (``in`` and subscripts: cheaper than get() calls; this runs at every launch)
        for scope, name, value in self.names:
            if value is _MISSING:
                if name in scope:               # a builtin now shadowed by a global
                    return False
            else:
                try:
                    if scope[name] is not value:
                        return False
                except KeyError:
                    return False
        for obj, attr, value in self.attrs:
            if getattr(obj, attr, _MISSING) is not value:
                return False
        return True


def collect(fn) -> Dependencies:
    """The dependencies of kernel ``fn`` (a Python function): its source, the sources of
    the ``@jit`` functions it reaches and every global value read, in a fixed order."""
    collector = _Collector()
    collector.function(fn, kernel=True)
    return Dependencies("\n".join(collector.parts), _unique(collector.names), _unique(collector.attrs))


def encode_constants(kernel_name: str, constants: dict) -> str:
    """The constexpr values of a launch as canonical text (type and value: ``2**30`` and
    ``2.0**30`` differ); a LaunchError for a value that has none."""
    collector = _Collector()
    for name in sorted(constants):
        try:
            collector.parts.append(f"constexpr {name} = {collector.encode(constants[name])}")
        except _Unrepresentable as exc:
            raise LaunchError(f"{kernel_name}: constexpr {name}={exc.args[0]} cannot be part of the kernel "
                              f"cache key; a constexpr may be {ALLOWED}") from None
    return "\n".join(collector.parts)


class _Collector:
    """Walks functions and values depth-first, appending one line of text per fact."""

    def __init__(self):
        self.parts: list[str] = []
        self.names: list = []
        self.attrs: list = []
        self.functions: dict = {}    # function -> its number in this key

    def function(self, fn, kernel: bool = False) -> int:
        """Append ``fn``'s source, defaults and global reads (once); its number."""
        number = self.functions.get(fn)
        if number is not None:
            return number
        number = self.functions[fn] = len(self.functions)
        src = KernelSource.of(fn)
        self.parts.append(f"def #{number} {fn.__module__}.{fn.__qualname__}\n{src.text}")
        if not kernel:   # a kernel's defaults arrive as launch arguments and constexprs
            self._defaults(fn, src)
        seen = set()
        for read in src.global_reads:
            if (read.name, read.attrs, read.host_function) not in seen:
                seen.add((read.name, read.attrs, read.host_function))
                self._read(fn.__globals__, read, src)
        return number

    def _defaults(self, fn, src: KernelSource) -> None:
        values = list(fn.__defaults__ or ()) + sorted((fn.__kwdefaults__ or {}).items())
        try:
            self.parts.append("defaults " + ",".join(self.encode(v) for v in values))
        except _Unrepresentable as exc:
            raise src.error(src.tree, f"a default value of {fn.__name__} is {exc.args[0]}, which cannot be part "
                            f"of the kernel cache key; defaults may be {ALLOWED}", CacheKeyError) from None

    def _read(self, scope: dict, read: GlobalRead, src: KernelSource) -> None:
        value = self._resolve(scope, read)
        if read.host_function and callable(value) and host_function_name(value):
            self.parts.append(f"read {read.text} = host function {host_function_name(value)}")
            return
        try:
            text = self.encode(value)
        except _Unrepresentable as exc:
            if suggestions.is_triton(value):   # tl.dot(...): say what to write instead
                raise src.error(read.where, suggestions.triton_call(value)) from None
            if suggestions.is_host_math(value):   # math.asin(t), np.exp(t): name the xt function
                raise src.error(read.where, suggestions.host_math_call(read.text, value)) from None
            raise src.error(read.where, f"this kernel reads the global {read.text}, {exc.args[0]}, which cannot be "
                            f"part of the kernel cache key (a changed value would not be recompiled); a kernel "
                            f"may read globals that are {ALLOWED}", CacheKeyError) from None
        self.parts.append(f"read {read.text} = {text}")

    def _resolve(self, scope: dict, read: GlobalRead):
        """The value the frontend sees at ``read`` (constexpr wrappers removed, as it does)."""
        value = scope.get(read.name, _MISSING)
        self.names.append((scope, read.name, value))
        if value is _MISSING:
            value = getattr(builtins, read.name, _MISSING)
        for attr in read.attrs:
            value = _unwrap(value)
            if value is _MISSING:
                break
            step = getattr(value, attr, _MISSING)
            if not _compiler_module(value):
                self.attrs.append((value, attr, step))
            value = step
        return _unwrap(value)

    def encode(self, value) -> str:
        """Canonical, type-tagged text of a value a kernel may read (raises _Unrepresentable if none)."""
        if value is _MISSING:
            return "undefined"
        if value is None or value.__class__ in (bool, int, str):
            return f"{value.__class__.__name__}:{json.dumps(value)}"
        if value.__class__ is float:
            return f"float:{value.hex()}"
        if value.__class__ in (tuple, list):
            return f"{value.__class__.__name__}({','.join(self.encode(v) for v in value)})"
        if isinstance(value, lang.constexpr):
            return f"constexpr({self.encode(value.value)})"
        if value.__class__ is lang.dtype:
            return f"xt.dtype:{value.name}"
        if value.__class__ is lang.wg_map:
            return f"xt.wg_map:{self.encode(value.sg_layout)}:{self.encode(value.sg_data)}"
        if type(value).__name__ == "JITFunction" and hasattr(value, "fn"):
            return f"jit #{self.function(value.fn)}"
        return _encode_named(value)


def _encode_named(value) -> str:
    """Numpy scalars and dtypes, Python builtins and the compiler's own functions and types."""
    if isinstance(value, np.generic):
        return f"numpy.{value.dtype.name}:{value.tobytes().hex()}"
    if isinstance(value, np.dtype):
        return f"numpy.dtype:{value.name}:{value.str}"
    if isinstance(value, type) and issubclass(value, np.generic):
        return f"numpy.type:{value.__module__}.{value.__qualname__}"
    name = getattr(value, "__name__", None)
    if isinstance(name, str) and getattr(builtins, name, None) is value:
        return f"builtin:{name}"
    module = getattr(value, "__module__", None) or ""
    if isinstance(value, (type, types.FunctionType)) and module.split(".")[0] == "xetile_dsl":
        return f"xetile_dsl:{module}.{value.__qualname__}"
    if isinstance(value, types.ModuleType):
        raise _Unrepresentable(f"the module {value.__name__} used as a value (read its attributes instead)")
    raise _Unrepresentable(f"an object of type {type(value).__module__}.{type(value).__qualname__}")


def host_function_name(fn) -> str:
    """``module:qualname`` of a host function passed as ``xt.extern(..., numpy_impl=fn)``
    (the interpreter imports it by that name), "" for a lambda or local function."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return ""
    return f"{module}:{qualname}"


def _unique(watched: list) -> tuple:
    """One entry per (container, name): a kernel reads ``xt`` many times, it is checked once."""
    return tuple({(id(where), name): (where, name, value) for where, name, value in watched}.values())


def _unwrap(value):
    return value.value if isinstance(value, lang.constexpr) else value


def _compiler_module(value) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.startswith(_COMPILER_MODULES)


__all__ = ["ALLOWED", "Dependencies", "collect", "encode_constants", "host_function_name"]
