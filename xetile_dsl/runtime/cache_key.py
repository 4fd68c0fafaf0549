"""The kernel cache key and the autotuner's memo key: composed here, from named parts.

Each component provides its own part as stable text, and only this module puts the
parts together and hashes them (:func:`key_for`: sha256 over length-prefixed parts;
the disk cache, runtime/cache.py, only stores under the key it is given):

* ``source`` -- the frontend (``frontend/dependencies.py``, ``Dependencies.text``): the
  kernel's source, the ``@jit`` functions it reaches and every global value they read;
* ``name`` -- the kernel's name;
* ``signature`` -- ``jit.signature_text``: argument kinds, types and specialisations;
* ``constants`` -- the frontend (``encode_constants``): constexpr types and values;
* ``target`` -- the target the kernel compiles for (``cpu-pvc``, ``pvc``, ``interpret-pvc``);
* ``options`` -- compile options as sorted JSON: the launch options that change the
  kernel (``launch_options.LaunchOptions.compile_options``: ``num_warps``,
  ``num_stages``, only those given, so a launch without them keeps its key);
* ``compiler`` -- ``compiler.compiler_version()``: the compiler's sources and the
  versions of xDSL, llvmlite, LLVM, numpy and Python;
* ``knobs`` -- ``knobs.codegen_tag()``: the knobs that change the code a kernel compiles to.

A missing or unknown part is an error, so a part cannot be dropped by accident; every
part is named in the hashed text, so two parts never trade places.  :data:`KEY_FORMAT`
changes when what the key covers changes (old entries are then simply not found).
"""
from __future__ import annotations

import hashlib

#: first part of every kernel key; changes when what the key covers changes
KEY_FORMAT = "xetile_dsl cache key 3"
#: the parts of a kernel key, in the order they are hashed
KERNEL_PARTS = ("source", "name", "signature", "constants", "target", "options", "compiler", "knobs")

#: first part of every autotuner memo key
TUNING_FORMAT = "xetile_dsl autotune memo 1"
#: the parts of an autotuner memo key: the kernel's sources, the compiler, the codegen
#: knobs, the device (name, backend, platform), the target, the tuning key's values and
#: the configurations searched
TUNING_PARTS = ("source", "compiler", "knobs", "device", "target", "tuning_key", "configs")


def key_for(*parts) -> str:
    """A sha256 hex key over ``parts`` (str or bytes), each prefixed with its length."""
    h = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, (bytes, bytearray)) else str(part).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def kernel_key(**parts: str) -> str:
    """The cache key of one compiled kernel from exactly :data:`KERNEL_PARTS`."""
    return _compose(KEY_FORMAT, KERNEL_PARTS, parts)


def tuning_key(**parts: str) -> str:
    """The key of one autotuner memo file from exactly :data:`TUNING_PARTS`."""
    return _compose(TUNING_FORMAT, TUNING_PARTS, parts)


def _compose(key_format: str, names: tuple[str, ...], parts: dict) -> str:
    if parts.keys() != set(names):
        missing, unknown = sorted(set(names) - parts.keys()), sorted(parts.keys() - set(names))
        raise TypeError(f"cache key parts: missing {missing}, unknown {unknown}")
    return key_for(key_format, *(f"{name}={parts[name]}" for name in names))
