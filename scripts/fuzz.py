"""A seeded differential fuzzer: random kernels written as source through the public API,
run in every flavour (``cpu`` = PVC lanes on the OpenCL CPU runtime, ``cpu-arc``,
``interpret``) and compared with numpy in f64 with an error bound carried through every op.

A case is ``seed -> spec`` (a dict: family, dtype, shapes, op chain, ...) ``-> script``: one
standalone Python file holding the ``@xd.jit`` kernel, its inputs, the numpy reference with
its bound, and a runner that launches every flavour and prints one JSON line per flavour.
The script is written to a temporary file (so the kernel has a file and a line) and run in
a subprocess with a timeout, so a crash or a hang is a finding, not the fuzzer's death.
Families: element-wise chains with reductions, ``xt.arange`` leaves and runtime scalars
(float and wrap-around integer types, stores across array edges); GEMMs with odd M/N/K,
transposed operands and f16/bf16/int8/tf32 inputs; workgroup kernels (``wg_map``) that
exchange data through ``xt.slm_alloc`` buffers and ``xt.barrier()`` or reduce across
subgroups; ``xt.atomic_rmw`` from many programs; ``while`` loops carrying tiles; and
(``spec_for`` draws it only by name, so that old seeds keep their cases; a run without
``--family`` gives it every ``ROTATE``-th seed, ``--family scatter`` every seed) gathers and
scatters: ``xt.init_tile(x, offsets)`` with a tile of i32/i64 element offsets (loaded, or
``xt.arange`` arithmetic; affine with either sign of stride or permuted, lanes off both ends of
the array), ``load_gather`` with a mask and a padding (stored, or reduced along either axis),
``store_scatter`` and ``atomic_rmw`` add/max/min, in 1, 2 or 4 rows, exact against numpy.
The library family (``--family lib``; a run without ``--family`` gives it every ``ROTATE``-th
seed too) writes 1-D kernels: a masked load (edge or strided mask, an ``other``), a scalar
read ``ya[pid + k]`` (past the end: 0), a sum of math builtins (``LIB_MATH``: each within
its OpenCL ulp bound) and ``xt.rand`` terms stored through the mask, and some of: a
``randint`` word, an fp8 round trip (``saturate`` either way, exact against ml_dtypes), an
integer ``atomic_rmw`` of every program into one tile (masked: a scattered one), an
``atomic_xchg`` of a program's own slice and an element ``atomic_cas`` of its own flag,
all exact; and (``_spec_lib_more``) ``xt.randint4x`` and ``xt.philox`` words with a drawn
``n_rounds`` (counters a program id, a tile, ``xt.astype(seed, xt.int32)``), ``randn``'s
``n_rounds``, ``xt.umulhi`` (uint32 draws, int32 tiles and scalars), the predicates
``isnan``/``isinf``/``isfinite``/``signbit`` (``LIB_PRED``: signed zeros, NaNs of sqrt, infs of
log and of an f32 overflow), an ``xt.extern`` builtin (``LIB_EXT``: float ones within OpenCL's
ulp bound, integer ones exact), a float ``atomic_rmw`` add/max/min in f32, f16 or bf16 (each
program on its own elements, old values stored, or all into one tile: a sum bounded in any
order), an int64 ``atomic_rmw`` (values past 32 bits; add, max, min, and, or, xor, xchg on
its own elements), an ``xt.fence(sem, scope)``, and each atomic's ``sem=``/``scope=``
(relaxed/acquire/release/acq_rel x workgroup/device), exact against the numpy Philox engine
of the interpreter (``xetile_dsl/interpreter/philox.py``) and numpy.
The microscaling family (``--family mx``, also every ``ROTATE``-th seed) writes a GEMM tile
loop over K of ``xt.dot_scaled`` (formats e4m3/e5m2/e2m1/bf16/fp16 per side, mixed e2m1 x
fp8 too, e2m1 packed along K; K a multiple of 32, maybe not of the K step; either scale
None, b_scale ``[N, K/32]`` or ``[K/32, N]``, a NaN scale; the accumulator loaded, zero or
None; fp8 data with subnormal codes), or of ``xt.tile_mma`` on fp8 tiles, or an
``xt.unpack_int4`` stored; the reference decodes every code in f64 (ml_dtypes; e2m1 from
its table) and bounds only the f32 sums.

Bounds: exact for integers; for floats each op adds ``k * u * |r|`` (u the unit roundoff
of the type it computes in, k = 1 for + - * and 4 for transcendental functions) plus the
propagated input errors (first-order, with the op's derivative bound) plus a floor for
flushed subnormals; a GEMM or atomic sum of n terms adds ``n * u * sum|a||b|``.

Findings: ``wrong`` (a value outside its bound), ``internal`` (any exception that is not a
located user error of ours), ``unlocated`` (a CompilationError not at the kernel's file),
``disagree`` (one flavour refuses, another runs), ``crash``, ``timeout``. Each finding is
minimised (smaller shapes, fewer ops, simpler data) and printed as a reproducer script.

    python scripts/fuzz.py --minutes N --seed S [--flavours cpu,cpu-arc,interpret] [--jobs J]
    python scripts/fuzz.py --cases 20 --seed S          # a fixed number of cases
    python scripts/fuzz.py --show SEED [--family F]     # print one case's script
    python scripts/fuzz.py --cases 30 --seed S --family scatter   # one family only

The CI stage ``tests/fuzz`` runs a fixed set of seeds and asserts no finding.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAVOURS = ("cpu", "cpu-arc", "interpret")
#: flavours that only build (no GPU here): compiled for that NVIDIA target and assembled by
#: ptxas; "built", or refused (a located "not supported on NVIDIA targets" is no finding:
#: those are the backend's named gaps), or a finding (internal, unlocated, crash, timeout)
NV_FLAVOURS = ("sm90", "sm80")
#: (seed, family) of cases the NVIDIA backend refused or broke on before (decision 069):
#: tests/fuzz builds them for sm90, benchmarks/nv_ops_check.py ("fuzz") runs them on a GPU
#: against their numpy references
NV_SEEDS = [(1002, None), (1109, None), (1036, None), (20003, None), (1080, None), (30002, "lib"), (30005, "lib"),
            (30008, "lib"), (5002, "lib"), (5028, "lib"), (30001, "mx"), (5007, "scatter"), (60039, "mx")]
CASE_TIMEOUT = 240.0

# --- the reference: the kernel's expression text evaluated on (value, bound) pairs ----------
SHADOW = r'''
import numpy as _np
_U = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24}
_TINY = {"float16": 2.0 ** -14, "bfloat16": 2.0 ** -126, "float32": 2.0 ** -126}
_DT = ["float32"]  # the element type of constants (the kernel's DT)
_INT = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "uint32": 32, "int64": 64}


class R:
    """A reference value: f64 (or exact int64) ``v`` and an absolute error bound ``e``,
    for arithmetic in element type ``dt``."""

    def __init__(self, v, e=0.0, dt="float32"):
        self.v, self.dt = _np.asarray(v), dt
        self.e = _np.broadcast_to(_np.asarray(e, _np.float64), self.v.shape) if dt not in _INT else 0

    @staticmethod
    def of(x, dt=None):
        dt = dt or _DT[0]
        return x if isinstance(x, R) else R(_np.asarray(x, _np.int64 if dt in _INT else _np.float64), 0.0, dt)

    def _round(self, v, e, k=1.0):
        if self.dt in _INT:
            bits = _INT[self.dt]
            signed = not self.dt.startswith("u")
            v = _np.asarray(v, _np.int64) & ((1 << bits) - 1) if bits < 64 else _np.asarray(v, _np.int64)
            if signed and bits < 64:
                v = _np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
            return R(v, 0, self.dt)
        return R(v, e + k * _U[self.dt] * (_np.abs(v) + e) + k * _TINY[self.dt], self.dt)

    def _bin(self, o, f, ferr):
        o = R.of(o, self.dt)
        return self._round(f(self.v, o.v), ferr(self, o))

    def __add__(self, o): return self._bin(o, _np.add, lambda a, b: a.e + b.e)
    __radd__ = __add__
    def __sub__(self, o): return self._bin(o, _np.subtract, lambda a, b: a.e + b.e)
    def __rsub__(self, o): return R.of(o, self.dt) - self
    def __mul__(self, o):
        return self._bin(o, _np.multiply, lambda a, b: _np.abs(a.v) * b.e + _np.abs(b.v) * a.e + a.e * b.e)
    __rmul__ = __mul__
    def __neg__(self): return R(-self.v, self.e, self.dt)
    def __and__(self, o): return self._bin(o, _np.bitwise_and, lambda a, b: 0)
    def __or__(self, o): return self._bin(o, _np.bitwise_or, lambda a, b: 0)
    def __xor__(self, o): return self._bin(o, _np.bitwise_xor, lambda a, b: 0)
    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__


class _Xt:
    """The ``xt`` names a generated expression uses, on R values (blocked 4-D arrays:
    [grid rows, BM, grid cols, BN], so per-tile reductions broadcast like the kernel's)."""
    float16, bfloat16, float32, int8, uint8, int16, int32, uint32, int64 = (
        "float16", "bfloat16", "float32", "int8", "uint8", "int16", "int32", "uint32", "int64")

    @staticmethod
    def maximum(a, b):
        dt = a.dt if isinstance(a, R) else b.dt if isinstance(b, R) else None
        a, b = R.of(a, dt), R.of(b, dt)
        return R(_np.maximum(a.v, b.v), _np.maximum(a.e, b.e) if a.dt not in _INT else 0, a.dt)

    @staticmethod
    def minimum(a, b):
        dt = a.dt if isinstance(a, R) else b.dt if isinstance(b, R) else None
        a, b = R.of(a, dt), R.of(b, dt)
        return R(_np.minimum(a.v, b.v), _np.maximum(a.e, b.e) if a.dt not in _INT else 0, a.dt)

    @staticmethod
    def abs(a):
        a = R.of(a)
        return R(_np.abs(a.v), a.e, a.dt) if a.dt not in _INT else a._round(_np.abs(a.v), 0)

    @staticmethod
    def exp(a):
        a = R.of(a)
        r = _np.exp(a.v)
        return a._round(r, _np.exp(a.v + a.e) - r, 4)

    @staticmethod
    def tanh(a):
        a = R.of(a)
        return a._round(_np.tanh(a.v), a.e, 4)

    @staticmethod
    def sigmoid(a):
        a = R.of(a)
        return a._round(1 / (1 + _np.exp(-a.v)), 0.25 * a.e, 4)

    @staticmethod
    def sqrt(a):
        a = R.of(a)
        x = _np.abs(a.v)
        r = _np.sqrt(x)
        return a._round(r, _np.maximum(_np.sqrt(x + a.e) - r, r - _np.sqrt(_np.maximum(x - a.e, 0))), 4)

    @staticmethod
    def _reduce(a, axis, f, sumlike):
        ax = 1 if axis == 0 else 3
        v = f(a.v, axis=ax, keepdims=True)
        if a.dt in _INT:
            return a._round(v, 0)
        e = a.e.max(axis=ax, keepdims=True) if not sumlike else a.e.sum(axis=ax, keepdims=True)
        if sumlike:
            n = a.v.shape[ax]
            e = e + n * _U[a.dt] * _np.abs(a.v).sum(axis=ax, keepdims=True) + n * _TINY[a.dt]
        return R(v, e, a.dt)

    @staticmethod
    def sum(a, axis): return _Xt._reduce(a, axis, _np.sum, True)

    @staticmethod
    def max(a, axis): return _Xt._reduce(a, axis, _np.max, False)

    @staticmethod
    def min(a, axis): return _Xt._reduce(a, axis, _np.min, False)


def blocked(x, BM, BN, GM, GN, dt):
    """x padded with zeros to the grid's tiles, as [GM, BM, GN, BN] R."""
    p = _np.zeros((GM * BM, GN * BN), _np.int64 if dt in _INT else _np.float64)
    p[:x.shape[0], :x.shape[1]] = x
    return R(p.reshape(GM, BM, GN, BN), 0.0, dt)


def unblocked(r, shape):
    g0, b0, g1, b1 = r.v.shape
    v = r.v.reshape(g0 * b0, g1 * b1)[:shape[0], :shape[1]]
    e = _np.broadcast_to(r.e, r.v.shape).reshape(g0 * b0, g1 * b1)[:shape[0], :shape[1]] if r.dt not in _INT else 0 * v
    return v, e
'''

RUNNER = r'''
import json as _json
import sys as _sys
import traceback as _tb


def _classify(exc):
    from xetile_dsl import errors as E
    if isinstance(exc, E.InternalCompilerError):
        return "internal"
    if isinstance(exc, E.CompilationError):
        if exc.message.startswith("internal"):
            return "internal"  # a compiler bug reported at the kernel's line
        return "refused" if os.path.abspath(exc.filename) == os.path.abspath(__file__) else "unlocated"
    if isinstance(exc, (E.UsageError, E.LaunchError, E.LoweringError)):
        return "refused"
    return "internal"


def _compare(outs, refs):
    worst = None
    for name, (ref, bound) in refs.items():
        got = _np.asarray(outs[name]).astype(_np.float64)
        err = _np.abs(got - ref)
        bad = ~((err <= bound) | (_np.isnan(got) & _np.isnan(ref)))  # NaN expected: left unwritten
        if bad.any():
            i = tuple(int(t) for t in _np.argwhere(bad)[0])
            return (f"{name}: {int(bad.sum())} of {bad.size} outside the bound; first at {i}: "
                    f"got {got[i]!r}, expected {ref[i]!r} +- {bound[i]!r}")
    return worst


def _build_for_nvidia(fl, ins):
    """The ``sm90`` / ``sm80`` flavour: no GPU here, so the kernel is compiled (PTX through
    llvmlite, scripts/nv_coverage.py's launch-as-compile) and each kernel assembled by
    ptxas where there is one; nothing runs, nothing is compared."""
    import importlib.util as _ilu
    from xetile_dsl.runtime import cubins as _cubins
    from xetile_dsl import errors as E
    root = os.path.dirname(os.path.dirname(os.path.abspath(xd.__file__)))
    spec = _ilu.spec_from_file_location("nv_coverage", os.path.join(root, "scripts", "nv_coverage.py"))
    nvc = _ilu.module_from_spec(spec)
    spec.loader.exec_module(nvc)
    nvc.install(fl)
    launch(fl, ins)
    ptxas = _cubins.find_ptxas()
    for name, k in nvc.CURRENT.kernels if ptxas else ():
        try:
            _cubins.assemble(k.ptx, k.ptx_arch or k.target.ptx_arch, ptxas)
        except RuntimeError as exc:
            raise E.InternalCompilerError(f"ptxas refused the PTX of {name}: {exc}") from None
    return len(nvc.CURRENT.kernels)


def main(flavours):
    import warnings
    warnings.simplefilter("ignore")
    found = 0
    for fl in flavours:
        print(_json.dumps({"flavour": fl, "status": "start"}), flush=True)
        ins = make_inputs()
        try:
            if fl in NV_FLAVOURS:
                n = _build_for_nvidia(fl, ins)
                print(_json.dumps({"flavour": fl, "status": "built", "detail": f"{n} kernels"}), flush=True)
                continue
            outs = launch(fl, ins)
        except Exception as exc:  # noqa: BLE001 -- every exception is classified
            st = _classify(exc)
            msg = f"{type(exc).__name__}: {exc}"
            if st != "refused":
                msg += "\n" + "".join(_tb.format_exception(exc)[-6:])
            print(_json.dumps({"flavour": fl, "status": st, "detail": msg[:3000]}), flush=True)
            found += st != "refused"
            continue
        try:
            refs = reference(make_inputs())
        except Exception as exc:  # noqa: BLE001 -- a bug of the fuzzer, not of the compiler
            print(_json.dumps({"flavour": fl, "status": "generator", "detail": "".join(_tb.format_exception(exc)[-4:])}))
            return 1
        bad = _compare(outs, refs)
        print(_json.dumps({"flavour": fl, "status": "wrong" if bad else "ok", "detail": bad}), flush=True)
        found += bool(bad)
    return found


if __name__ == "__main__":
    _sys.exit(1 if main(_sys.argv[1:] or FLAVOURS) else 0)
'''

FLOAT_DT = ["float32", "float16", "bfloat16"]
INT_DT = ["int32", "int8", "uint8", "uint32"]  # no xt.int16 in the language
NP = {"bfloat16": "ml_dtypes.bfloat16"}


def _np_dt(dt):
    return NP.get(dt, f"np.{dt}")


# --- random specs ------------------------------------------------------------------------
def _expr(rng, depth, is_int, leaves):
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(leaves)
    a = _expr(rng, depth - 1, is_int, leaves)
    b = _expr(rng, depth - 1, is_int, leaves)
    if is_int:
        ops = ["({} + {})", "({} - {})", "({} * {})", "xt.maximum({}, {})", "xt.minimum({}, {})", "({} & {})",
               "({} | {})", "({} ^ {})"]
        return rng.choice(ops).format(a, b)
    un = ["xt.abs({})", "xt.sqrt(xt.abs({}))", "xt.exp(xt.minimum({}, 2.0))", "xt.tanh({})", "xt.sigmoid({})", "(-{})",
          "xt.maximum({}, 0.0)"]
    bi = ["({} + {})", "({} - {})", "({} * {})", "xt.maximum({}, {})", "xt.minimum({}, {})"]
    return rng.choice(un).format(a) if rng.random() < 0.4 else rng.choice(bi).format(a, b)


FAMILIES = ["ew", "gemm", "wg", "atomic", "while", "scatter", "lib", "mx"]


def _spec_scatter(rng, s):
    """Scattered tiles: offsets (loaded, i32 or i64, or ``xt.arange`` arithmetic in one row)
    that run off both ends of a (3, W) array, a mask, a padding, then a gather (stored or
    reduced), a store_scatter or an atomic_rmw through them."""
    s["op"] = rng.choice(["gather", "gather", "reduce", "scatter", "atomic"])
    s["dt"] = rng.choice(["float32", "int32"] if s["op"] == "atomic" else ["float32", "float16", "int32"])
    s["R"] = rng.choice([1, 2, 4])
    s["C"] = rng.choice([16, 32])
    s["W"] = rng.choice([8, 16, 20])
    size, lanes = 3 * s["W"], s["R"] * s["C"]
    if rng.random() < 0.5:
        st = rng.choice([-2, -1, 1, 1, 2, 3])  # start + i * stride, off one end or both
        s["pat"] = ["affine", st, rng.randint(-6, 4) if st > 0 else rng.randint(size - 8, size + 4)]
    else:  # (i * k) % n + start: distinct lanes (gcd(k, n) = 1, n >= lanes), a permutation-ish order
        n = rng.randint(lanes, lanes + 20)
        k = rng.choice([q for q in range(2, 12) if __import__("math").gcd(q, n) == 1])
        s["pat"] = ["perm", k, n, rng.randint(-8, max(0, size - n // 2))]
    s["odt"] = rng.choice(["int32", "int64"])
    s["src"] = "arange" if s["R"] == 1 and s["odt"] == "int32" and rng.random() < 0.5 else "load"
    s["mask"] = rng.choice([None, ["offs_lt", rng.randint(0, size + 4)], ["offs_ge", rng.randint(-4, size)]]
                           + ([["lane_lt", rng.randint(0, s["C"])]] if s["R"] == 1 else []))
    s["pad"] = rng.randint(-9, 9)
    s["kind"] = rng.choice(["add", "max", "min"])
    s["red"] = [rng.choice(["sum", "max", "min"]), rng.choice([0, 1])]


def spec_for(seed: int, family: str | None = None) -> dict:
    rng = random.Random(seed)
    # the draw of the first five families is kept as it was, so that old seeds keep their cases;
    # ``scatter`` (newer) is asked for by name: spec_for(seed, "scatter"), --family scatter
    fam = rng.choices(FAMILIES[:5], [4, 3, 2, 1.5, 1.5])[0]
    if family:
        fam = family
    s = {"family": fam, "seed": seed, "data": "random"}
    if fam in ("ew", "while", "atomic"):
        is_int = rng.random() < 0.35
        s["dt"] = rng.choice(INT_DT if is_int else FLOAT_DT)
        s["BM"] = rng.choice([1, 2, 4, 8, 16, 32])
        s["BN"] = rng.choice([16, 32, 64])
        s["M"] = rng.randint(1, 3 * s["BM"])
        s["N"] = rng.randint(1, 3 * s["BN"])
    if fam == "ew":
        is_int = s["dt"] in INT_DT
        leaves = ["x", "y", "s"] + (["3", "xt.arange(0, BN, DT)"] if is_int else
                                    ["0.5", "2.0", "(xt.astype(xt.arange(0, BN), DT) * 0.125)"])
        ops = [_expr(rng, rng.randint(1, 3), is_int, leaves) for _ in range(rng.randint(1, 3))]
        # every term reads a tile (a chain of constants only is no tile value to reduce)
        ops = [e if re.search(r"\b[xy]\b", e) else f"({e} + x)" for e in ops]
        red = rng.choice([None, None, ("sum", 1), ("sum", 0), ("max", 1), ("min", 0)])
        s.update(ops=ops, reduce=red)
    elif fam == "while":
        s["steps"] = rng.randint(0, 5)
        s["ops"] = [rng.choice(["v * 2", "v + x", "v - 1", "xt.maximum(v, x)"] if s["dt"] in INT_DT else
                               ["v * 0.5", "v + x", "v * 0.5 + x", "xt.maximum(v, x) - 0.25", "xt.tanh(v) + x"])
                    for _ in range(rng.randint(1, 3))]
    elif fam == "atomic":
        s["dt"] = rng.choice(["float32", "int32", "int32"])
        s["kind"] = rng.choice(["add", "max", "min"])
        s["G"] = rng.randint(1, 6)
        s["old"] = s["G"] == 1 and rng.random() < 0.5
    elif fam == "gemm":
        s["dt"] = rng.choices(["float16", "bfloat16", "int8", "float32"], [4, 3, 2, 1])[0]
        s["BM"] = rng.choice([1, 2, 4, 8, 16, 32])
        s["BN"] = rng.choice([16, 32])
        s["BK"] = rng.choice([16, 32] if s["dt"] in ("float16", "bfloat16") else [32] if s["dt"] == "int8" else [8, 16])
        s["M"] = rng.randint(1, 70)
        s["N"] = rng.randint(1, 70)
        s["K"] = rng.randint(1, 100)
        s["ta"] = rng.random() < 0.3
        s["tb"] = rng.random() < 0.3
        s["epi"] = rng.choice([None, "relu", "scale"])
    elif fam == "scatter":
        _spec_scatter(rng, s)
    elif fam == "lib":
        _spec_lib(rng, s)
    elif fam == "mx":
        _spec_mx(rng, s)
    elif fam == "wg":
        s["dt"] = rng.choice(["float32", "float16", "int32"])
        s["R"] = rng.choice([32, 64])
        s["C"] = rng.choice([32, 64])
        s["n"] = rng.choice([2, 4])
        s["kind"] = rng.choice(["slm", "slm", "slm_shift", "rowsum", "colmax", "plain", "plain", "storemap"])
        s["M"] = rng.randint(1, 2 * s["R"] + 5)
        s["N"] = rng.randint(1, s["C"] + 8)
        if s["kind"] in ("rowsum", "colmax") and s["dt"] == "float16":
            s["dt"] = "float32"
    return s


# --- the library family: 1-D tiles, masks, scalar reads, random numbers, math, atomics, fp8 ----
#: math terms of a loaded f32 tile ``x`` (or the uniform ``u``): (kernel text, numpy
#: function of the exact f64 input, OpenCL f32 ulp bound of the builtin, the derivative
#: bound used to carry the error of an inexact argument). Arguments are kept inside the
#: domain (``abs(x) + c``, ``u`` in [0, 1)), so a term is finite where it is stored.
LIB_MATH = {
    "exp": ("xt.exp(xt.minimum(x, 3.0))", "np.exp(np.minimum(x, 3.0))", 3),
    "exp2": ("xt.exp2(xt.minimum(x, 3.0))", "np.exp2(np.minimum(x, 3.0))", 3),
    "expm1": ("xt.expm1(xt.minimum(x, 3.0))", "np.expm1(np.minimum(x, 3.0))", 3),
    "log": ("xt.log(xt.abs(x) + 1.0)", "np.log(np.abs(x) + 1.0)", 3),
    "log2": ("xt.log2(xt.abs(x) + 1.0)", "np.log2(np.abs(x) + 1.0)", 3),
    "log10": ("xt.log10(xt.abs(x) + 1.0)", "np.log10(np.abs(x) + 1.0)", 3),
    "log1p": ("xt.log1p(xt.abs(x))", "np.log1p(np.abs(x))", 2),
    "sqrt": ("xt.sqrt(xt.abs(x) + 0.25)", "np.sqrt(np.abs(x) + 0.25)", 3),
    "rsqrt": ("xt.rsqrt(xt.abs(x) + 0.25)", "1 / np.sqrt(np.abs(x) + 0.25)", 2),
    "cbrt": ("xt.cbrt(x)", "np.cbrt(x)", 2),
    "sin": ("xt.sin(x)", "np.sin(x)", 4),
    "cos": ("xt.cos(x)", "np.cos(x)", 4),
    "tan": ("xt.tan(u)", "np.tan(u)", 5),
    "asin": ("xt.asin(u)", "np.arcsin(u)", 4),
    "acos": ("xt.acos(u)", "np.arccos(u)", 4),
    "atan": ("xt.atan(x)", "np.arctan(x)", 5),
    "atan2": ("xt.atan2(x, u + 0.5)", "np.arctan2(x, u + 0.5)", 6),
    "sinh": ("xt.sinh(u)", "np.sinh(u)", 4),
    "cosh": ("xt.cosh(u)", "np.cosh(u)", 4),
    "tanh": ("xt.tanh(x)", "np.tanh(x)", 5),
    "asinh": ("xt.asinh(x)", "np.arcsinh(x)", 4),
    "acosh": ("xt.acosh(xt.abs(x) + 2.0)", "np.arccosh(np.abs(x) + 2.0)", 4),
    "atanh": ("xt.atanh(u * 0.5)", "np.arctanh(u * 0.5)", 5),
    "erf": ("xt.erf(x)", "_erf(x)", 16),
    "erfc": ("xt.erfc(x)", "1 - _erf(x)", 16),
    "sigmoid": ("xt.sigmoid(x)", "1 / (1 + np.exp(-x))", 4),
    "floor": ("xt.floor(x * 4.0)", "np.floor(x * 4.0)", 0),
    "ceil": ("xt.ceil(x * 4.0)", "np.ceil(x * 4.0)", 0),
    "trunc": ("xt.trunc(x * 4.0)", "np.trunc(x * 4.0)", 0),
    "round": ("xt.round(x * 4.0)", "np.sign(x) * np.floor(np.abs(x * 4.0) + 0.5)", 0),
    "fma": ("xt.fma(x, s, u)", "x * s + u", 1),
    "copysign": ("xt.copysign(u, x)", "np.copysign(u, x)", 0),
    "fmod": ("xt.fmod(x, 0.75)", "np.fmod(x, 0.75)", 0),
    "pow": ("xt.pow(u + 0.5, x)", "np.power(u + 0.5, x)", 16),
    "rand": ("u", "u", 0),
}


_U_OF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
_TINY_OF = {"float32": 2.0 ** -126, "float16": 2.0 ** -14, "bfloat16": 2.0 ** -126}
#: the terms whose argument is exact in f16 and bf16 too (x, a power-of-2 multiple of it, u * 0.5)
LIB_EXACT_ARG = {"exp", "exp2", "expm1", "cbrt", "sin", "cos", "atan", "tanh", "asinh", "erf", "erfc", "sigmoid",
                 "floor", "ceil", "trunc", "round", "fmod", "copysign", "rand", "sinh", "cosh", "atanh", "fma"}


def _spec_lib(rng, s):
    """A 1-D kernel: a masked load, a scalar read (maybe off the array: 0), a sum of math
    terms, then some of: a randint word, an fp8 round trip, an integer atomic_rmw into one
    shared tile, an atomic_xchg on the program's own slice, an atomic_cas on its own element."""
    s["B"] = rng.choice([16, 32, 64])  # a per-lane (masked) store needs whole subgroups of lanes
    s["N"] = rng.randint(1, 4 * s["B"])
    s["mask"] = rng.choice([None, "lt_n", "lt_n", ["lt", rng.randint(0, 4 * s["B"])], ["mod", rng.choice([2, 3])]])
    s["other"] = rng.choice([0.0, -1.5, 2.0])
    s["soff"] = rng.choice([0, 0, 1, 2])                 # ya[pid + soff]: past ya's end reads 0
    s["terms"] = rng.sample(sorted(LIB_MATH), rng.randint(1, 3))
    s["int"] = rng.random() < 0.5
    s["fp8"] = rng.choice([None, None, ["float8_e4m3fn", rng.choice([True, False])], ["float8_e5m2", True],
                           ["float8_e5m2", False]])
    s["qs"] = rng.choice([1.0, 16.0, 300.0])
    s["atom"] = rng.choice([None, "add", "max", "min", "or", "xor"])
    s["T"] = rng.choice([s["B"], s["B"], max(1, s["B"] // 2)])  # the shared atomic tile's array: maybe shorter
    s["xchg"] = rng.random() < 0.4
    s["cas"] = rng.random() < 0.4
    s["seedv"] = rng.choice([0, 7, 2**31 + 3, 2**40 + 11])
    # drawn last, so that the fields above stay those of the first f32-only version; f16 and
    # bf16 keep the terms whose argument is exact in any type (an f16 rounding of u + 0.5
    # would be amplified by pow's slope, of u by asin's)
    s["dt"] = rng.choice(["float32", "float32", "float16", "bfloat16"])
    if s["dt"] != "float32":
        s["terms"] = [t for t in s["terms"] if t in LIB_EXACT_ARG] or ["sin"]
    # later still: the offsets of the draws (maybe negative, strided) and a randn term (f32)
    s["roff"] = rng.choice([[1, 0], [1, 0], [3, -77], [-1, 5], [7, 2**31 - 200]])
    s["randn"] = s["dt"] == "float32" and rng.random() < 0.4
    # later still: the rest of the library (each None or [] when not drawn)
    _spec_lib_more(rng, s)


#: predicates of the loaded tile ``x`` (kernel text, numpy of the f64 ``x`` and scalar ``s``),
#: each decided by the sign or zeroness of an exact value (masked-off lanes read ``other``,
#: maybe 0.0): ``isnan(sqrt(x))`` iff x < 0, ``isinf(log|x|)`` iff x == 0, ``-abs(x) * s``
#: a signed zero where s or x is 0; ``ovf`` (f32 only) an IEEE product that overflows
LIB_PRED = {
    "nan_sqrt": ("xt.isnan(xt.sqrt(x))", "x < 0"),
    "inf_log": ("xt.isinf(xt.log(xt.abs(x)))", "x == 0"),
    "fin_log": ("xt.isfinite(xt.log(x))", "x > 0"),
    "sign": ("xt.signbit(x)", "np.signbit(x)"),
    "sign_zero": ("xt.signbit(-xt.abs(x) * s)", "np.signbit(-np.abs(x) * s)"),
    "nan_inf": ("xt.isnan(x) | xt.isinf(x * 0.5)", "np.zeros(x.shape, bool)"),
    "ovf": ("xt.isinf(x * 3.0e38)", "np.isinf(x.astype(np.float32) * np.float32(3.0e38))"),
}
#: ``xt.extern`` calls of OpenCL builtins: (kernel text, numpy_impl text run by the interpreter,
#: f64 reference, ulp bound of OpenCL's table; None: an integer result, exact)
LIB_EXT = {
    "hypot": ("xt.extern('hypot', x, u, result=DT, numpy_impl=np.hypot)", "np.hypot(x, u)", 4),
    "fdim": ("xt.extern('fdim', x, u, result=DT, numpy_impl=_fdim)", "np.maximum(x - u, 0.0)", 0),
    "cospi": ("xt.extern('cospi', x, result=DT, numpy_impl=_cospi)", "np.cos(np.pi * x)", 4),
    "exp10": ("xt.extern('exp10', xt.minimum(x, 3.0), result=DT, numpy_impl=_exp10)",
              "10.0 ** np.minimum(x, 3.0)", 3),
    "ldexp": ("xt.extern('ldexp', x, 3, result=DT, numpy_impl=np.ldexp)", "x * 8.0", 0),
    "mul_hi": ("xt.extern('mul_hi', k, 1234567, result=xt.int32, numpy_impl=_mul_hi)",
               "(kp * 1234567) >> 32", None),
    "popcount": ("xt.extern('popcount', k, result=xt.int32, numpy_impl=_popcount)",
                 "_popcount(kp.astype(np.int32))", None),
    "rotate": ("xt.extern('rotate', k, 7, result=xt.int32, numpy_impl=_rotate)",
               "_rotate(kp.astype(np.int32), 7)", None),
}
LIB_SEMS = ["relaxed", "acquire", "release", "acq_rel"]
LIB_SCOPES = ["workgroup", "device"]


def _spec_lib_more(rng, s):
    """The draws of the random-number, integer, predicate, extern and atomic-ordering library
    (after those of the older lib cases, so that a seed keeps its older fields)."""
    s["r4x"] = rng.choice([None, None, 10, 7, 0])          # randint4x, its n_rounds
    s["ph"] = rng.choice([None, None, [rng.randint(0, 10), rng.choice(["pid", "tile", "const"]),
                                       rng.choice(["seed32", "zero"])]])
    s["mulhi"] = rng.choice([None, None, "u32", "i32"])
    s["nr"] = rng.choice([10, 10, 3])                       # randn's n_rounds
    s["preds"] = rng.sample(sorted(LIB_PRED), rng.randint(0, 3))
    if s["dt"] != "float32":
        s["preds"] = [q for q in s["preds"] if q != "ovf"]
    s["ext"] = rng.choice([None, None] + sorted(LIB_EXT))
    fdt = rng.choice(["float32", "float32", "float16", "bfloat16"])
    s["fatom"] = rng.choice([None, None, [rng.choice(["add", "add", "max", "min"]), fdt,
                                          rng.choice(["own", "shared"])]])
    s["i64"] = rng.choice([None, None, [rng.choice(["add", "max", "min", "or", "xor", "and", "xchg"]),
                                        rng.choice(["own", "shared"])]])
    if s["i64"] and s["i64"][0] == "xchg":
        s["i64"][1] = "own"  # an exchange of one element by many programs has no order-free result
    s["fence"] = rng.choice([None, None, [rng.choice(LIB_SEMS[1:]), rng.choice(LIB_SCOPES)]])
    # the memory order of each atomic: atom, xchg, cas, fatom, i64 (None: the default acq_rel, device)
    s["ords"] = [rng.choice([None, [rng.choice(LIB_SEMS), rng.choice(LIB_SCOPES)]]) for _ in range(5)]


#: the host functions the interpreter runs for ``LIB_EXT``'s builtins (their ``numpy_impl``),
#: written into every lib case
LIB_HELPERS = '''def _fdim(a, b):
    return np.maximum(np.asarray(a, np.float64) - b, 0.0)


def _cospi(a):
    return np.cos(np.pi * np.asarray(a, np.float64))


def _exp10(a):
    return 10.0 ** np.asarray(a, np.float64)


def _mul_hi(a, b):
    return (np.asarray(a, np.int64) * np.int64(b)) >> 32


def _popcount(a):
    u = np.asarray(a).astype(np.int64) & 0xFFFFFFFF
    return sum((u >> i) & 1 for i in range(32))


def _rotate(a, n):
    u = np.asarray(a).astype(np.int64) & 0xFFFFFFFF
    n = np.asarray(n, np.int64) & 31
    w = ((u << n) | (u >> ((32 - n) & 31))) & 0xFFFFFFFF
    return np.where(w >= 2**31, w - 2**32, w)
'''


def _script_lib_more_kernel(s, dt, mexpr, mk, order):
    """The kernel lines of ``_spec_lib_more``'s draws and the outputs they write."""
    lines, outs = [], []
    ext, fat, i64 = s.get("ext"), s.get("fatom"), s.get("i64")
    if s.get("r4x") is not None:
        lines += [f"    r0, r1, r2, r3 = xt.randint4x(seed, roffs, n_rounds={s['r4x']})",
                  "    xt.store_tile((r0 + r1 * 3) ^ (r2 & r3), xt.init_tile(r4, [off], [B]))"]
        outs.append("r4")
    if s.get("ph"):
        n_r, c1, c3 = s["ph"]
        c1 = {"pid": "pid", "tile": "xt.astype(offs, xt.uint32) * 5", "const": "12345"}[c1]
        c3 = {"seed32": "xt.astype(seed, xt.int32)", "zero": "0"}[c3]
        lines += [f"    p0, p1, p2, p3 = xt.philox(seed, roffs, {c1}, 0x13198A2E, {c3}, n_rounds={n_r})",
                  "    xt.store_tile((p0 ^ p3) + (p1 ^ p2) * 7, xt.init_tile(ph, [off], [B]))"]
        outs.append("ph")
    if s.get("mulhi"):
        h = ("xt.umulhi(xt.randint(seed, roffs), xt.astype(offs * 40503 + 7, xt.uint32))" if s["mulhi"] == "u32"
             else "xt.umulhi(k, pid * 977 + 3)")
        lines.append(f"    xt.store_tile({h}, xt.init_tile(hout, [off], [B]))")
        outs.append("hout")
    if s.get("preds"):
        pv = " + ".join(f"xt.where({LIB_PRED[q][0]}, {1 << i}, 0)" for i, q in enumerate(s["preds"]))
        lines.append(f"    xt.store_tile({pv}, xt.init_tile(pout, [off], [B]))")
        outs.append("pout")
    if ext and LIB_EXT[ext][2] is None:
        lines.append(f"    xt.store_tile({LIB_EXT[ext][0]}, xt.init_tile(eout, [off], [B]))")
        outs.append("eout")
    if fat:
        kind, fdt, where = fat
        fv = "x" if fdt == dt else f"xt.astype(x, xt.{fdt})"
        if where == "own":
            tile = "xt.init_tile(fa, offs)" if mexpr else "xt.init_tile(fa, [off], [B])"
            lines += [f"    fo_ = xt.atomic_rmw({kind!r}, {fv}, {tile}{mk}{order(3)})",
                      f"    xt.store_tile(fo_, xt.init_tile(fo, [off], [B]){mk})"]
            outs += ["fa", "fo"]
        else:
            tile = "xt.init_tile(fa, xt.arange(0, B))" if mexpr else "xt.init_tile(fa, [0], [B])"
            lines.append(f"    xt.atomic_rmw({kind!r}, {fv}, {tile}{mk}{order(3)})")
            outs.append("fa")
    if i64:
        kind, where = i64
        kv = "xt.astype(k, xt.int64) * 4294967311"
        if where == "own":
            tile = "xt.init_tile(l64, offs)" if mexpr else "xt.init_tile(l64, [off], [B])"
            lines += [f"    lo_ = xt.atomic_rmw({kind!r}, {kv}, {tile}{mk}{order(4)})",
                      f"    xt.store_tile(lo_, xt.init_tile(lo, [off], [B]){mk})"]
            outs += ["l64", "lo"]
        else:
            tile = "xt.init_tile(l64, xt.arange(0, B))" if mexpr else "xt.init_tile(l64, [0], [B])"
            lines.append(f"    xt.atomic_rmw({kind!r}, {kv}, {tile}{mk}{order(4)})")
            outs.append("l64")
    return lines, outs


def _script_lib(s):
    B, N, G, dt = s["B"], s["N"], -(-s["N"] // s["B"]), s.get("dt", "float32")
    k, c = s.get("roff", [1, 0])
    npdt = _np_dt(dt).replace("np.", "np.")
    mask = s["mask"]
    mexpr = {None: None, "lt_n": "offs < n"}.get(mask if not isinstance(mask, list) else None)
    if isinstance(mask, list):
        mexpr = f"offs < {mask[1]}" if mask[0] == "lt" else f"(offs % {mask[1]}) != 0"
    mk = f", mask={mexpr}" if mexpr else ""
    other = f", other={s['other']!r}" if mexpr else ""
    terms = " + ".join(LIB_MATH[t][0] for t in s["terms"])
    ords = s.get("ords") or [None] * 5

    def order(i):  # the sem=/scope= of atomic i (atom, xchg, cas, fatom, i64), or the defaults
        return f", sem={ords[i][0]!r}, scope={ords[i][1]!r}" if ords[i] else ""
    ext = s.get("ext")
    ext_term = f" + {LIB_EXT[ext][0]}" if ext and LIB_EXT[ext][2] is not None else ""
    nr = f", n_rounds={s['nr']}" if s.get("nr", 10) != 10 else ""
    fat, i64 = s.get("fatom"), s.get("i64")
    need_k = s["atom"] or s["xchg"] or i64 or s.get("mulhi") == "i32" or (ext and LIB_EXT[ext][2] is None)
    lines = [
        "    pid = xt.program_id(0)",
        "    off = pid * B",
        "    offs = xt.arange(0, B) + off",
        f"    roffs = offs * {k} + {c}" if (k, c) != (1, 0) else "    roffs = offs",
        f"    x = xt.load_tile(xt.init_tile(xa, [off], [B]){mk}{other})",
        f"    s = ya[pid + {s['soff']}]",
        "    u = xt.rand(seed, roffs)" if dt == "float32" else f"    u = xt.astype(xt.rand(seed, roffs), xt.{dt})",
        f"    v = {terms} + s" + (f" + xt.randn(seed, roffs{nr})" if s.get("randn") else "") + ext_term,
        f"    xt.store_tile(v, xt.init_tile(out, [off], [B]){mk})",
    ]
    outs = ["out"]
    if s.get("fence"):
        lines.append(f"    xt.fence({s['fence'][0]!r}, {s['fence'][1]!r})")
    if s["int"]:
        lines.append("    xt.store_tile(xt.randint(seed, roffs) ^ xt.astype(offs, xt.uint32), xt.init_tile(iout, [off], [B]))")
        outs.append("iout")
    if s["fp8"]:
        f8, sat = s["fp8"]
        lines.append(f"    xt.store_tile(xt.astype(x * {s['qs']!r}, xt.{f8}, saturate={sat}), xt.init_tile(q, [off], [B]){mk})")
        outs.append("q")
    if need_k:
        lines.append("    k = xt.load_tile(xt.init_tile(ia, [off], [B]))")
    if s["atom"]:
        # a mask needs a scattered tile: element offsets 0..B-1 (those past tot's end skipped)
        tile = "xt.init_tile(tot, xt.arange(0, B))" if mexpr else "xt.init_tile(tot, [0], [B])"
        lines.append(f"    xt.atomic_rmw({s['atom']!r}, k, {tile}{mk}{order(0)})")
        outs.append("tot")
    if s["xchg"]:
        lines += [f"    o = xt.atomic_xchg(xt.init_tile(xc, [off], [B]), k{order(1)})",
                  "    xt.store_tile(o, xt.init_tile(old, [off], [B]))"]
        outs += ["xc", "old"]
    if s["cas"]:
        lines.append(f"    fold[pid] = xt.atomic_cas(flag, [pid], pid % 2, pid + 10{order(2)})")
        outs += ["flag", "fold"]
    more, more_outs = _script_lib_more_kernel(s, dt, mexpr, mk, order)
    lines += more
    outs += more_outs
    kern = textwrap.dedent(f"""
    DT = xt.{dt}


    """) + LIB_HELPERS + textwrap.dedent("""

    @xd.jit
    def kernel(xa, ya, ia, out, iout, q, tot, xc, old, flag, fold, r4, ph, hout, pout, eout, fa, fo, l64, lo, n,
               seed, B: xt.constexpr):
    """) + "\n".join(lines) + "\n"
    f8 = s["fp8"][0] if s["fp8"] else "float8_e4m3fn"
    ins = textwrap.dedent(f"""
    def make_inputs():
        rng = np.random.default_rng({s['seed']})
        d = {{}}
        d["x"] = {'rng.standard_normal(N).astype(' + npdt + ')' if s['data'] == 'random' else
                  '(rng.integers(-8, 9, N) / 4).astype(' + npdt + ')' if s['data'] == 'small' else 'np.ones(N, ' + npdt + ')'}
        d["y"] = rng.standard_normal(G).astype({npdt})
        d["i"] = rng.integers(-1000, 1000, N).astype(np.int32)
        d["out"] = np.full(N, np.nan, {npdt})
        d["iout"] = np.full(N, 77, np.uint32)
        d["q"] = np.full(N, np.nan, ml_dtypes.{f8})
        d["tot"] = rng.integers(-50, 50, {s['T']}).astype(np.int32)
        d["xc"] = rng.integers(-9, 9, N).astype(np.int32)
        d["old"] = np.full(N, -77, np.int32)
        d["flag"] = rng.integers(0, 2, G).astype(np.int32)
        d["fold"] = np.full(G, -77, np.int32)
        d["r4"] = np.full(N, 77, np.uint32)
        d["ph"] = np.full(N, 77, np.uint32)
        d["hout"] = np.full(N, 77, np.{'uint32' if s.get('mulhi') == 'u32' else 'int32'})
        d["pout"] = np.full(N, -77, np.int32)
        d["eout"] = np.full(N, -77, np.int32)
        d["fa"] = rng.standard_normal({N if fat and fat[2] == 'own' else s['T']}).astype({_np_dt(fat[1] if fat else 'float32')})
        d["fo"] = np.full(N, np.nan, {_np_dt(fat[1] if fat else 'float32')})
        d["l64"] = rng.integers(-2**40, 2**40, {N if i64 and i64[1] == 'own' else s['T']}).astype(np.int64)
        d["lo"] = np.full(N, -77, np.int64)
        return d
    """)
    consts = f"N, G, B, SEED = {N}, {G}, {B}, {s['seedv']}\n"
    refs = {
        "out": ("want, bound", ""),
    }
    del refs
    ref = textwrap.dedent(f"""

    def _erf(x):
        import math
        return np.vectorize(math.erf)(x)


    def reference(d):
        from xetile_dsl.interpreter import philox
        P = G * B
        offs = np.arange(P)
        xp = np.zeros(P); xp[:N] = d["x"]
        m = {('np.ones(P, bool)' if not mexpr else mexpr.replace('offs < n', f'offs < {N}'))}
        x = np.where(m, xp, {s['other']!r})
        yp = np.zeros(G + 4); yp[:G] = d["y"]
        s = np.repeat(yp[np.arange(G) + {s['soff']}], B)
        roffs = ((offs * {k} + {c} + 2**31) % 2**32 - 2**31).astype(np.int32)  # int32 wrap-around, as the kernel's
        u = philox.rand(SEED, roffs).astype({npdt}).astype(np.float64)
        U, TINY = {_U_OF[dt]!r}, {_TINY_OF[dt]!r}  # unit roundoff and smallest normal of the type
        terms = [{', '.join(LIB_MATH[t][1] for t in s['terms'])}]
        ulps = {[LIB_MATH[t][2] for t in s['terms']]!r}
        if {bool(s.get("randn"))}:  # randn: within 4 ulp of the numpy definition
            terms.append(philox.randn(SEED, roffs, {s.get('nr', 10)}).astype(np.float64))
            ulps.append(4)
        if {bool(ext_term)}:  # an xt.extern builtin: within its OpenCL ulp bound
            terms.append({LIB_EXT[ext][1] if ext_term else 0})
            ulps.append({LIB_EXT[ext][2] if ext_term else 0})
        v = sum(terms) + s
        # each term: its builtin's ulp bound (1 ulp <= 2^-23 |r|) plus the roundings of its
        # f32 argument (abs(x) + c, x * 4, u * 0.5, u + 0.5: one each, carried with the slope
        # bound |f'| <= max(1, |r|) * 4 over the arguments kept in the domain), then one
        # rounding per addition of the sum
        # in f16/bf16 a term is computed in f32 and rounded once to the type (2U |t|), the
        # terms there have exact arguments (LIB_EXACT_ARG), U the type's unit roundoff
        e = sum(((k + 2) * 2.0 ** -23 + 2 * U) * np.abs(t) * 4 + 2 * U * (1 + np.abs(x)) * 4 + TINY
                for t, k in zip(terms, ulps))
        e = e + (len(terms) + 1) * U * (np.abs(v) + e) + TINY
        want = np.where(m[:N], v[:N], np.nan)
        r = {{"out": (want, np.where(m[:N], e[:N], 0.0))}}
    """)
    # floor/ceil/trunc/round/fmod/copysign are exact (their argument x * 4 is exact), the
    # general bound above covers them too.
    if s["int"]:
        ref += _tail("""
            w = philox.randint(SEED, roffs) ^ offs.astype(np.uint32)
            r["iout"] = (w[:N].astype(np.float64), np.zeros(N))
        """)
    if s["fp8"]:
        f8, sat = s["fp8"]
        big = 448.0 if f8 == "float8_e4m3fn" else 57344.0
        ref += _tail(f"""
            qv = (xp.astype({npdt}) * {npdt}({s['qs']!r}))   # the product rounded to the type, as the kernel's
            {'qv = np.clip(qv, -' + repr(big) + ', ' + repr(big) + ')' if sat else ''}
            qq = qv.astype(ml_dtypes.{f8}).astype(np.float64)[:N]
            r["q"] = (np.where(m[:N], qq, np.nan), np.zeros(N))
        """)
    if need_k or (ext and LIB_EXT[ext][2] is None):
        ref += _tail("""
            kp = np.zeros(P, np.int64); kp[:N] = d["i"]
        """)
    if s["atom"]:
        f = {"add": "np.sum", "max": "np.max", "min": "np.min", "or": "np.bitwise_or.reduce",
             "xor": "np.bitwise_xor.reduce"}[s["atom"]]
        T = s["T"]
        ref += _tail(f"""
            t = d["tot"].astype(np.int64)
            parts = np.where(m, kp, {'0' if s['atom'] in ('add', 'or', 'xor') else 'np.iinfo(np.int64).min' if s['atom'] == 'max' else 'np.iinfo(np.int64).max'}).reshape(G, B)[:, :{T}]
            tv = {f}(np.concatenate([t[None, :], parts]), axis=0)
            tv = (tv + 2**31) % 2**32 - 2**31
            r["tot"] = (tv.astype(np.float64), np.zeros({T}))
        """)
    if s["xchg"]:
        ref += _tail("""
            r["xc"] = (d["i"].astype(np.float64), np.zeros(N))
            r["old"] = (d["xc"].astype(np.float64), np.zeros(N))
        """)
    if s["cas"]:
        ref += _tail("""
            f0 = d["flag"].astype(np.int64)
            pids = np.arange(G)
            r["flag"] = (np.where(f0 == pids % 2, pids + 10, f0).astype(np.float64), np.zeros(G))
            r["fold"] = (f0.astype(np.float64), np.zeros(G))
        """)
    ref += _script_lib_more_ref(s, mexpr)
    ref += "    return r\n"
    launch = _launch_code((G,), f"d['x'], d['y'], d['i'], d['out'], d['iout'], d['q'], d['tot'], d['xc'], d['old'], "
                                f"d['flag'], d['fold'], d['r4'], d['ph'], d['hout'], d['pout'], d['eout'], d['fa'], "
                                f"d['fo'], d['l64'], d['lo'], {N}, {s['seedv']}, B={B}", outs)
    return consts + kern + ins + ref + launch


def _script_lib_more_ref(s, mexpr):
    """The reference of ``_spec_lib_more``'s draws (the lines of ``reference`` after the older ones)."""
    ref, ext = "", s.get("ext")
    M32 = "0xFFFFFFFF"
    if s.get("r4x") is not None:
        ref += _tail(f"""
            w = [a.astype(np.int64) for a in philox.randint4x(SEED, roffs, {s['r4x']})]
            r["r4"] = ((((w[0] + w[1] * 3) & {M32}) ^ (w[2] & w[3]))[:N].astype(np.float64), np.zeros(N))
        """)
    if s.get("ph"):
        n_r, c1, c3 = s["ph"]
        c1 = {"pid": "np.repeat(np.arange(G), B)", "tile": "offs * 5", "const": "12345"}[c1]
        c3 = "SEED & 0xFFFFFFFF" if c3 == "seed32" else "0"
        ref += _tail(f"""
            w = [a.astype(np.int64) for a in philox.philox(SEED, roffs, {c1}, 0x13198A2E, {c3}, {n_r})]
            r["ph"] = ((((w[0] ^ w[3]) + (w[1] ^ w[2]) * 7) & {M32})[:N].astype(np.float64), np.zeros(N))
        """)
    if s.get("mulhi") == "u32":
        ref += _tail("""
            h = philox.umulhi(philox.randint(SEED, roffs), (offs * 40503 + 7) & 0xFFFFFFFF)
            r["hout"] = (h[:N].astype(np.float64), np.zeros(N))
        """)
    elif s.get("mulhi") == "i32":
        ref += _tail("""
            h = philox.umulhi(kp & 0xFFFFFFFF, np.repeat(np.arange(G), B) * 977 + 3).view(np.int32)
            r["hout"] = (h[:N].astype(np.float64), np.zeros(N))
        """)
    if s.get("preds"):
        pv = " + ".join(f"np.where({LIB_PRED[q][1]}, {1 << i}, 0)" for i, q in enumerate(s["preds"]))
        ref += _tail(f"""
            with np.errstate(all="ignore"):
                pv = {pv}
            r["pout"] = (pv[:N].astype(np.float64), np.zeros(N))
        """)
    if ext and LIB_EXT[ext][2] is None:
        ref += _tail(f"""
            ev = {LIB_EXT[ext][1]}
            r["eout"] = (ev[:N].astype(np.float64), np.zeros(N))
        """)
    return ref + _script_lib_atomics_ref(s)


def _script_lib_atomics_ref(s):
    """The reference of ``_spec_lib_more``'s float and int64 atomics."""
    ref, fat, i64 = "", s.get("fatom"), s.get("i64")
    if fat:
        kind, fdt, where = fat
        U, TINY = _U_OF[fdt], _TINY_OF[fdt]
        f = {"add": "np.add", "max": "np.maximum", "min": "np.minimum"}[kind]
        ident = {"add": "0.0", "max": "-np.inf", "min": "np.inf"}[kind]
        ref += _tail(f"""
            fx = x.astype({_np_dt(fdt)}).astype(np.float64)  # the value rounded to the atomic's type
            f0 = d["fa"].astype(np.float64)
            U8, TINY8 = {U!r}, {TINY!r}  # unit roundoff, smallest normal of the atomic's type
        """)
        if where == "own":
            # one atomic per element: one rounding of the sum (twice U: an f16/bf16 add may be
            # an f32 add rounded to the type); max/min exact; the old value is the initial one
            ref += _tail(f"""
                on = m[:N]
                fv = np.where(on, {f}(f0, fx[:N]), f0)
                fe = np.where(on, {'2 * U8 * np.abs(fv) + TINY8' if kind == 'add' else '0 * fv'}, 0.0)
                r["fa"] = (fv, fe)
                r["fo"] = (np.where(on, f0, np.nan), np.zeros(N))
            """)
        else:
            T = s["T"]
            # G + 1 values summed in any order: G roundings, each within 2 U of a partial sum
            ref += _tail(f"""
                parts = np.where(m, fx, {ident}).reshape(G, B)[:, :{T}]
                allv = np.concatenate([f0[None, :], parts])
                fv = {f}.reduce(allv, axis=0)
                fe = {'2 * G * U8 * np.abs(np.where(np.isinf(allv), 0, allv)).sum(axis=0) + G * TINY8' if kind == 'add' else '0 * fv'}
                r["fa"] = (fv, fe)
            """)
    if i64:
        kind, where = i64
        f = {"add": "np.add", "max": "np.maximum", "min": "np.minimum", "or": "np.bitwise_or",
             "xor": "np.bitwise_xor", "and": "np.bitwise_and", "xchg": "(lambda a, b: b)"}[kind]
        ident = {"add": "0", "max": "np.iinfo(np.int64).min", "min": "np.iinfo(np.int64).max", "or": "0",
                 "xor": "0", "and": "-1", "xchg": "0"}[kind]
        ref += _tail("""
            kv = kp * 4294967311
            l0 = d["l64"].astype(np.int64)
        """)
        if where == "own":
            ref += _tail(f"""
                on = m[:N]
                r["l64"] = (np.where(on, {f}(l0, kv[:N]), l0).astype(np.float64), np.zeros(N))
                r["lo"] = (np.where(on, l0, -77).astype(np.float64), np.zeros(N))
            """)
        else:
            ref += _tail(f"""
                parts = np.where(m, kv, {ident}).reshape(G, B)[:, :{s['T']}]
                lv = {f}.reduce(np.concatenate([l0[None, :], parts]), axis=0)
                r["l64"] = (lv.astype(np.float64), np.zeros({s['T']}))
            """)
    return ref


# --- the microscaling family: xt.dot_scaled, tile_mma on fp8, xt.unpack_int4 ----------------
MX_FORMATS = ["e4m3", "e5m2", "e2m1", "bf16", "fp16"]
MX_TYPE = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "bf16": "bfloat16", "fp16": "float16"}
MX_SIG = {"float8_e4m3fn": "ml_dtypes.float8_e4m3fn", "float8_e5m2": "ml_dtypes.float8_e5m2",
          "bfloat16": "ml_dtypes.bfloat16", "float16": "np.float16"}


def _spec_mx(rng, s):
    """A GEMM tile loop over K of ``xt.dot_scaled`` (formats per side, e2m1 packed along K,
    either scale None, b_scale [N, K/32] or [K/32, N], NaN scales, an accumulator loaded,
    zero or None), of ``xt.tile_mma`` on fp8 tiles, or an ``xt.unpack_int4`` stored."""
    s["op"] = rng.choice(["scaled", "scaled", "scaled", "mma8", "int4"])
    s["BM"] = rng.choice([8, 16, 16, 32])
    s["BN"] = rng.choice([16, 16, 32])
    s["M"] = rng.randint(1, 2 * s["BM"] + 3)
    s["N"] = rng.randint(1, 2 * s["BN"] + 3)
    s["bk"] = rng.choice([1, 2, 2, 4])            # the K step, in 32-element scale blocks
    s["nk"] = s["bk"] * rng.randint(1, 2) + rng.choice([0, 0, -1])  # K / 32: maybe not a whole number of steps
    s["nk"] = max(1, s["nk"])
    if s["op"] == "int4":
        s["signed"] = rng.random() < 0.5
        s["axis"] = rng.choice([0, 1])
        s["BM"] = max(s["BM"], 16) if s["axis"] == 0 else s["BM"]  # the f16 DPAS K interleaves (refused else)
        return
    fam8 = ["e4m3", "e5m2"]
    if s["op"] == "mma8":
        s["fa"], s["fb"] = rng.choice(fam8), rng.choice(fam8)
    else:
        s["fa"] = rng.choices(MX_FORMATS, [3, 2, 3, 1, 1])[0]
        s["fb"] = rng.choices(MX_FORMATS, [3, 2, 3, 1, 1])[0]
        if {s["fa"], s["fb"]} == {"bf16", "fp16"}:
            s["fb"] = s["fa"]
    # the element type of an fp8 operand: either fp8 type under either format name
    s["ta"] = MX_TYPE.get(s["fa"]) if s["fa"] not in fam8 or rng.random() < 0.8 else rng.choice(
        ["float8_e4m3fn", "float8_e5m2"])
    s["tb"] = MX_TYPE.get(s["fb"]) if s["fb"] not in fam8 or rng.random() < 0.8 else rng.choice(
        ["float8_e4m3fn", "float8_e5m2"])
    s["sa"] = s["op"] == "scaled" and s["fa"] not in ("bf16", "fp16") and rng.random() < 0.75
    s["sb"] = s["op"] == "scaled" and s["fb"] not in ("bf16", "fp16") and rng.random() < 0.75
    s["row"] = rng.random() < 0.4                 # b_scale as [K/32, N]
    s["srange"] = rng.choice([[120, 134], [100, 150], [80, 170]])
    s["nan"] = rng.random() < 0.25                # a 255 (NaN) scale somewhere
    s["spread"] = rng.choice([1.0, 1.0, 8.0, 2.0 ** -12])  # fp8 data: * spread (small: subnormal codes)
    s["acc"] = rng.choice(["load", "zeros", "none"])
    s["fmt1"] = rng.random() < 0.5                # format= when both sides agree


def _mx_decl(fmt, t, shape, spread):
    if fmt == "e2m1":
        return f"rng.integers(0, 256, {shape}).astype(np.uint8)"
    if fmt in ("bf16", "fp16"):
        return f"rng.standard_normal({shape}).astype({MX_SIG[t]})"
    return f"np.clip(rng.standard_normal({shape}) * {spread!r}, -400, 400).astype({MX_SIG[t]})"


def _script_mx(s):
    BM, BN, M, N, nk, bk = s["BM"], s["BN"], s["M"], s["N"], s["nk"], s["bk"]
    K, BK = 32 * nk, 32 * bk
    GM, GN = -(-M // BM), -(-N // BN)
    consts = f"M, N, K, BM, BN, BK = {M}, {N}, {K}, {BM}, {BN}, {BK}\n"
    if s["op"] == "int4":
        ax = s["axis"]
        om, on = (2 * BM, BN) if ax == 0 else (BM, 2 * BN)
        kern = textwrap.dedent(f"""
        @xd.jit
        def kernel(p, out, BM: xt.constexpr, BN: xt.constexpr):
            pid_m, pid_n = xt.program_id(0), xt.program_id(1)
            v = xt.load_tile(xt.init_tile(p, [pid_m * BM, pid_n * BN], [BM, BN]))
            w = xt.unpack_int4(v, signed={s['signed']}, axis={ax})
            xt.store_tile(w, xt.init_tile(out, [pid_m * {om}, pid_n * {on}], [{om}, {on}]))
        """)
        oshape = (2 * M, N) if ax == 0 else (M, 2 * N)
        ins = textwrap.dedent(f"""
        def make_inputs():
            rng = np.random.default_rng({s['seed']})
            d = {{}}
            d["p"] = {'rng.integers(0, 256, (M, N))' if s['data'] == 'random' else 'rng.integers(0, 4, (M, N)) * 17' if s['data'] == 'small' else 'np.full((M, N), 0x1f)'}.astype(np.uint8)
            d["out"] = np.full({oshape}, -77, np.int8)
            return d
        """)
        ref = textwrap.dedent(f"""

        def reference(d):
            p = d["p"].astype(np.int64)
            lo, hi = p & 15, p >> 4
            if {s['signed']}:
                lo, hi = (lo ^ 8) - 8, (hi ^ 8) - 8
            w = np.stack([lo, hi], axis={ax + 1}).reshape({oshape})   # element 2i: the low nibble
            return {{"out": (w.astype(np.float64), np.zeros({oshape}))}}
        """)
        return consts + kern + ins + ref + _launch_code((GM, GN), "d['p'], d['out'], BM=BM, BN=BN", ["out"])
    fa, fb, nb = s["fa"], s["fb"], bk
    KA, KB = (BK // 2 if fa == "e2m1" else BK), (BK // 2 if fb == "e2m1" else BK)
    ka, kb = (K // 2 if fa == "e2m1" else K), (K // 2 if fb == "e2m1" else K)
    one_step = nk <= bk
    acc = s["acc"] if (s["acc"] != "none" or one_step) else "zeros"
    lines = ["    pid_m, pid_n = xt.program_id(0), xt.program_id(1)",
             f"    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, {KA}])",
             f"    tb = xt.init_tile(b, [0, pid_n * BN], [{KB}, BN])"]
    lines.append({"load": "    acc = xt.load_tile(xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))",
                  "zeros": "    acc = xt.zeros([BM, BN], xt.float32)", "none": "    acc = None"}[acc])
    # acc None (a constant) cannot be carried by a loop: one K step, no loop
    lines.append("    for k in range(0, K, BK):" if acc != "none" else "    if True:\n        k = 0")
    if s["op"] == "mma8":
        lines.append("        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)")
    else:
        sa = f"xt.load_tile(xt.init_tile(sa, [pid_m * BM, k // 32], [BM, {nb}]))" if s["sa"] else "None"
        if not s["sb"]:
            sb = "None"
        elif s["row"]:
            sb = f"xt.load_tile(xt.init_tile(sb, [k // 32, pid_n * BN], [{nb}, BN]))"
        else:
            sb = f"xt.load_tile(xt.init_tile(sb, [pid_n * BN, k // 32], [BN, {nb}]))"
        fmt = f"format={fa!r}" if fa == fb and s["fmt1"] else f"a_format={fa!r}, b_format={fb!r}"
        lines += [f"        s1 = {sa}", f"        s2 = {sb}",
                  f"        acc = xt.dot_scaled(xt.load_tile(ta), s1, xt.load_tile(tb), s2, acc, {fmt})"]
    lines += [f"        ta = xt.update_tile_offset(ta, 0, {KA})", f"        tb = xt.update_tile_offset(tb, {KB}, 0)",
              "    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))"]
    kern = ("\n\n@xd.jit\ndef kernel(a, sa, b, sb, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):\n"
            + "\n".join(lines) + "\n")
    lo, hi = s["srange"]
    data = s["data"]
    spread = s["spread"] if data == "random" else 1.0
    a_in = _mx_decl(fa, s.get("ta"), (M, ka), spread) if data != "ones" else "np.ones((M, %d), %s)" % (
        ka, "np.uint8" if fa == "e2m1" else MX_SIG[s["ta"]])
    b_in = _mx_decl(fb, s.get("tb"), (kb, N), spread) if data != "ones" else "np.ones((%d, N), %s)" % (
        kb, "np.uint8" if fb == "e2m1" else MX_SIG[s["tb"]])
    sbshape = "(K // 32, N)" if s["row"] else "(N, K // 32)"
    ins = ["def make_inputs():", f"    rng = np.random.default_rng({s['seed']})", "    d = {}", f"    d['a'] = {a_in}",
           f"    d['b'] = {b_in}", f"    d['sa'] = rng.integers({lo}, {hi}, (M, K // 32)).astype(np.uint8)",
           f"    d['sb'] = rng.integers({lo}, {hi}, {sbshape}).astype(np.uint8)"]
    if s["nan"] and data == "random" and (s["sa"] or s["sb"]):  # NaN: a row of a or a column of b
        ins.append("    d['sa'][rng.integers(0, M), -1] = 255" if s["sa"] else "    d['sb'][0, -1] = 255")
    ins += ["    d['c'] = " + ("rng.standard_normal((M, N)).astype(np.float32)" if acc == "load" else
                               "np.full((M, N), np.nan, np.float32)"), "    return d\n"]
    ins = "\n" + "\n".join(ins)
    ref = textwrap.dedent(f"""
    E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


    def _values(x, fp4, axis):
        # float64 values in K order; e2m1 from its code table, the low nibble first along K
        if not fp4:
            return x.astype(np.float64)
        return np.stack([E2M1[x & 15], E2M1[x >> 4]], axis=axis + 1).reshape(
            (x.shape[0], -1) if axis == 1 else (-1, x.shape[1]))


    def _scales(s):
        # e8m0 codes: 2^(s - 127), 255 is NaN; repeated over the 32 K elements of their block
        v = np.where(s == 255, np.nan, np.ldexp(1.0, s.astype(np.int64) - 127))
        return v.repeat(32, axis=1)


    def reference(d):
        va = _values(d["a"], {fa == 'e2m1'}, 1)
        vb = _values(d["b"], {fb == 'e2m1'}, 0)
        if {bool(s.get('sa'))}:
            va = va * _scales(d["sa"])
        if {bool(s.get('sb'))}:
            vb = vb * (_scales(d["sb"].T).T if {s.get('row', False)} else _scales(d["sb"]).T)
        acc = {'d["c"].astype(np.float64)' if acc == 'load' else 'np.zeros((M, N))'}
        with np.errstate(invalid="ignore"):
            want = acc + va @ vb
            # every code converts exactly to f16 (bf16 beside bf16), a product of two is exact in
            # f32 and a scale is an exact ldexp: only the f32 sums round, at most K + K/32 + 1 of
            # them, 2^-24 each on the sum of magnitudes, plus a flushed f32 subnormal a block
            bound = ((K + K // 32 + 1) * 2.0 ** -24 * (np.abs(va) @ np.abs(vb) + np.abs(acc))
                     + (K // 32 + 2) * 2.0 ** -126)
        return {{"c": (want, np.where(np.isnan(bound), 0.0, bound))}}
    """)
    return consts + kern + ins + ref + _launch_code((GM, GN), "d['a'], d['sa'], d['b'], d['sb'], d['c'], K, BM=BM, "
                                                    "BN=BN, BK=BK", ["c"])


def flavours_for(spec, flavours):
    """tf32 is PVC-only by the README: not asked of cpu-arc."""
    if spec["family"] == "gemm" and spec["dt"] == "float32":
        return [f for f in flavours if f != "cpu-arc"]
    return list(flavours)


# --- scripts -------------------------------------------------------------------------------
def _inputs_code(names_shapes, dt, data, seed):
    lines = ["def make_inputs():", f"    rng = np.random.default_rng({seed})", "    d = {}"]
    for name, shape, kind in names_shapes:
        d = dt if kind != "f32" else "float32"
        if kind == "zero":
            lines.append(f"    d[{name!r}] = np.zeros({shape}, {_np_dt(d)})")
        elif kind == "sentinel":
            fill = "np.nan" if d in FLOAT_DT else "-77" if not d.startswith("u") else "77"
            lines.append(f"    d[{name!r}] = np.full({shape}, {fill}, {_np_dt(d)})")
        elif data == "ones":
            lines.append(f"    d[{name!r}] = np.ones({shape}, {_np_dt(d)})")
        elif d in FLOAT_DT:
            lines.append(f"    d[{name!r}] = (rng.integers(-8, 9, {shape}) / 4).astype({_np_dt(d)})" if data == "small" else
                         f"    d[{name!r}] = rng.standard_normal({shape}).astype({_np_dt(d)})")
        else:
            lo, hi = (0, 100) if d.startswith("u") else (-50, 50)
            if data == "small":
                lo, hi = (0, 4) if d.startswith("u") else (-3, 4)
            lines.append(f"    d[{name!r}] = rng.integers({lo}, {hi}, {shape}).astype({_np_dt(d)})")
    lines.append("    return d")
    return "\n".join(lines)


def _launch_code(grid, call, outs):
    return textwrap.dedent(f"""
    def launch(flavour, d):
        kernel.on(flavour)[{grid}]({call})
        return {{k: d[k] for k in {outs!r}}}
    """)


PLANTED = """
_true_reference = reference


def reference(d):  # planted: the reference is off by one (the fuzzer's self-test)
    return {k: (v + 1, e) for k, (v, e) in _true_reference(d).items()}
"""


def script_for(spec) -> str:
    fam = spec["family"]
    body = globals()[f"_script_{fam}"](spec) + (PLANTED if spec.get("plant") else "")
    head = (f"# xetile_dsl fuzz case, seed {spec['seed']}: {json.dumps(spec)}\n"
            "import os\nimport ml_dtypes\nimport numpy as np\nimport xetile_dsl as xd\nimport xetile_dsl.language as xt\n")
    return head + SHADOW + body + f"\nFLAVOURS = {list(FLAVOURS)!r}\nNV_FLAVOURS = {list(NV_FLAVOURS)!r}\n" + RUNNER


def _tail(text):
    """``text`` (any common indentation) as lines of a function body."""
    return textwrap.indent(textwrap.dedent(text).strip("\n"), "    ") + "\n"


def _script_ew(s):
    BM, BN, M, N, dt = s["BM"], s["BN"], s["M"], s["N"], s["dt"]
    GM, GN = -(-M // BM), -(-N // BN)
    is_int = dt in INT_DT
    lines = []
    for i, e in enumerate(s["ops"]):
        lines.append(f"    v{i} = {e}")
    expr = " + ".join(f"v{i}" for i in range(len(s["ops"])))
    red = s["reduce"]
    if red:
        f, ax = red
        expr = f"xt.{f}({expr}, axis={ax})"
    lines.append(f"    r = {expr}")
    oshape = (M, N) if not red else ((M, GN) if red[1] == 1 else (GM, N))
    store = ("[m, n], [BM, BN]" if not red else "[m, xt.program_id(1)], [BM, 1]" if red[1] == 1 else
             "[xt.program_id(0), n], [1, BN]")
    sval = "3" if is_int else "0.75"
    kern = textwrap.dedent(f"""
    DT = xt.{dt}


    @xd.jit
    def kernel(xa, ya, out, s, BM: xt.constexpr, BN: xt.constexpr):
        m = xt.program_id(0) * BM
        n = xt.program_id(1) * BN
        x = xt.load_tile(xt.init_tile(xa, [m, n], [BM, BN]))
        y = xt.load_tile(xt.init_tile(ya, [m, n], [BM, BN]))
    """) + "\n".join(lines) + f"\n    xt.store_tile(r, xt.init_tile(out, {store}))\n"
    ins = _inputs_code([("x", (M, N), "in"), ("y", (M, N), "in"), ("out", oshape, "sentinel")], dt, s["data"], s["seed"])
    ref = textwrap.dedent(f"""

    def reference(d):
        xt = _Xt
        BM, BN, DT = {BM}, {BN}, {dt!r}
        _DT[0] = DT
        x = blocked(d["x"], {BM}, {BN}, {GM}, {GN}, DT)
        y = blocked(d["y"], {BM}, {BN}, {GM}, {GN}, DT)
        s = R.of({sval}, DT)
        xt.arange = lambda lo, hi, dt=None: R(_np.arange(lo, hi).reshape(1, 1, 1, -1), 0.0, DT)
        xt.astype = lambda a, dt: a
    """) + "\n".join("    " + ln.strip() for ln in lines) + "\n" + _tail(f"""
        if not isinstance(r, R):
            r = R.of(_np.broadcast_to(r, (1, 1, 1, 1)), DT)
        r = R(_np.broadcast_to(r.v, ({GM}, {BM if not red or red[1] == 1 else 1}, {GN}, {BN if not red or red[1] == 0 else 1})),
              r.e, DT)
        v, e = unblocked(r, {oshape})
        return {{"out": (v, e)}}
    """)
    # a single-program reference: rounding of the stored value into the output type
    launch = _launch_code((GM, GN), f"d['x'], d['y'], d['out'], {sval}, BM={BM}, BN={BN}", ["out"])
    return kern + ins + ref + launch


def _script_while(s):
    BM, BN, M, N, dt = s["BM"], s["BN"], s["M"], s["N"], s["dt"]
    GM, GN = -(-M // BM), -(-N // BN)
    body = "\n".join(f"            v = {e}" for e in s["ops"])
    kern = textwrap.dedent(f"""
    @xd.jit
    def kernel(xa, out, steps, BM: xt.constexpr, BN: xt.constexpr):
        m = xt.program_id(0) * BM
        n = xt.program_id(1) * BN
        x = xt.load_tile(xt.init_tile(xa, [m, n], [BM, BN]))
        v = x
        i = 0
        while i < steps:
{body}
            i = i + 1
        xt.store_tile(v, xt.init_tile(out, [m, n], [BM, BN]))
    """)
    ins = _inputs_code([("x", (M, N), "in"), ("out", (M, N), "sentinel")], dt, s["data"], s["seed"])
    ref = textwrap.dedent(f"""

    def reference(d):
        xt = _Xt
        _DT[0] = {dt!r}
        x = blocked(d["x"], {BM}, {BN}, {GM}, {GN}, {dt!r})
        v = x
        for _ in range({s['steps']}):
{body}
        return {{"out": unblocked(v, {(M, N)})}}
    """)
    return kern + ins + ref + _launch_code((GM, GN), f"d['x'], d['out'], {s['steps']}, BM={BM}, BN={BN}", ["out"])


def _script_atomic(s):
    BM, BN, M, N, dt, G, kind = s["BM"], s["BN"], s["M"], s["N"], s["dt"], s["G"], s["kind"]
    old = s["old"]
    kern = textwrap.dedent(f"""
    @xd.jit
    def kernel(xa, total, old, BM: xt.constexpr, BN: xt.constexpr):
        v = xt.load_tile(xt.init_tile(xa, [xt.program_id(0) * BM, 0], [BM, BN]))
        o = xt.atomic_rmw({kind!r}, v, xt.init_tile(total, [0, 0], [BM, BN]))
    """) + ("    xt.store_tile(o, xt.init_tile(old, [0, 0], [BM, BN]))\n" if old else "")
    ins = _inputs_code([("x", (G * BM, BN), "in"), ("total", (M, N), "in"), ("old", (M, N), "sentinel")],
                       dt, s["data"], s["seed"])
    f = {"add": "sum", "max": "max", "min": "min"}[kind]
    u = {"float32": 2.0 ** -24}.get(dt, 0.0)
    ref = textwrap.dedent(f"""

    def reference(d):
        x = d["x"].astype(_np.float64).reshape({G}, {BM}, {BN})[:, :{M}, :{N}]
        t = d["total"].astype(_np.float64)
        tm, tn = min({M}, {BM}), min({N}, {BN})
        parts = _np.concatenate([t[None, :tm, :tn], x[:, :tm, :tn]])
        want = t.copy()
        want[:tm, :tn] = _np.{f}(parts, axis=0)
        bound = _np.zeros_like(want)
        bound[:tm, :tn] = {G + 1} * {u!r} * _np.abs(parts).sum(axis=0)
        r = {{"total": (want, bound)}}
        if {old}:
            o = d["old"].astype(_np.float64)  # outside the tile: the sentinel, left unwritten
            o[:tm, :tn] = t[:tm, :tn]
            r["old"] = (o, _np.zeros_like(o))
        return r
    """)
    outs = ["total", "old"] if old else ["total"]
    return kern + ins + ref + _launch_code((G,), f"d['x'], d['total'], d['old'], BM={BM}, BN={BN}", outs)


def _offsets_of(s):
    """The offsets tile of a scatter case, as a list of rows (lane i = row * C + col)."""
    R, C, pat = s["R"], s["C"], s["pat"]
    f = (lambda i: pat[2] + i * pat[1]) if pat[0] == "affine" else (lambda i: (i * pat[1]) % pat[2] + pat[3])
    return [[f(r * C + c) for c in range(C)] for r in range(R)]


def _script_scatter(s):
    R, C, W, dt, op, odt = s["R"], s["C"], s["W"], s["dt"], s["op"], s["odt"]
    pat, mask, pad = s["pat"], s["mask"], s["pad"]
    if s["src"] == "arange":
        offs = (f"xt.arange(0, {C}) * {pat[1]} + {pat[2]}" if pat[0] == "affine" else
                f"(xt.arange(0, {C}) * {pat[1]}) % {pat[2]} + {pat[3]}")
    else:
        offs = f"xt.load_tile(xt.init_tile(idx, [0, 0], [{R}, {C}]))"
    mexpr = {None: None, "offs_lt": "offs < {}", "offs_ge": "offs >= {}", "lane_lt": f"xt.arange(0, {C}) < {{}}"}[
        mask and mask[0]]
    mexpr = mexpr.format(mask[1]) if mask else None
    marg = f", mask={mexpr}" if mask else ""
    body = [f"    offs = {offs}", "    t = xt.init_tile(dst, offs)"]
    if op in ("gather", "reduce"):
        body.append(f"    v = xt.load_gather(t{marg}, padding={pad})")
        if op == "reduce":
            f, ax = s["red"]
            body.append(f"    v = xt.{f}(v, axis={ax})")
            oshape, oshape_t = ((R, 1), f"[{R}, 1]") if ax == 1 else ((1, C), f"[1, {C}]")
        else:
            oshape, oshape_t = (R, C), f"[{R}, {C}]"
        body.append(f"    xt.store_tile(v, xt.init_tile(out, [0, 0], {oshape_t}))")
    else:
        oshape = (R, C)
        body.append(f"    v = xt.load_tile(xt.init_tile(val, [0, 0], [{R}, {C}]))")
        if op == "scatter":
            body.append(f"    xt.store_scatter(v, t{marg})")
        else:
            body.append(f"    o = xt.atomic_rmw({s['kind']!r}, v, t{marg})")
            body.append(f"    xt.store_tile(o, xt.init_tile(out, [0, 0], [{R}, {C}]))")
    kern = "\n\n@xd.jit\ndef kernel(dst, idx, val, out):\n" + "\n".join(body) + "\n"
    o = _offsets_of(s)
    lo, hi = (-3, 4) if s["data"] == "small" else (1, 2) if s["data"] == "ones" else (-20, 21)
    ins = textwrap.dedent(f"""

    def make_inputs():
        rng = np.random.default_rng({s['seed']})
        d = {{}}
        d["big"] = np.full((5, {W}), 99, {_np_dt(dt)})  # guard rows around dst = big[1:4]
        d["big"][1:4] = rng.integers({lo}, {hi}, (3, {W}))
        d["idx"] = np.array({o!r}, np.{odt})
        d["val"] = rng.integers({lo}, {hi}, ({R}, {C})).astype({_np_dt(dt)})
        d["out"] = np.full({oshape}, -77, {_np_dt(dt)})
        return d
    """)
    if mask is None:
        mref = "True"
    elif mask[0] == "lane_lt":
        mref = f"_np.arange({C}).reshape(1, {C}) < {mask[1]}"
    else:
        mref = f"offs {'<' if mask[0] == 'offs_lt' else '>='} {mask[1]}"
    fold = {"add": "flat[o] + v", "max": "max(flat[o], v)", "min": "min(flat[o], v)"}[s["kind"]]
    red = s["red"]
    ref = textwrap.dedent(f"""

    def reference(d):
        big = d["big"].astype(_np.float64)
        flat = big[1:4].reshape(-1).copy()
        offs = d["idx"].astype(_np.int64)
        keep = (offs >= 0) & (offs < flat.size) & ({mref})
        got = _np.where(keep, flat[_np.clip(offs, 0, flat.size - 1)], {pad}.0)
        r = {{}}
        if {op!r} == "gather":
            r["out"] = got
        elif {op!r} == "reduce":
            r["out"] = getattr(_np, {red[0]!r})(got, axis={red[1]}, keepdims=True)
        else:
            val = d["val"].astype(_np.float64)
            if {op!r} == "atomic":
                r["out"] = _np.where(keep, got, 0.0)
            for o, v in zip(offs[keep], val[keep]):
                flat[o] = {fold if op == "atomic" else "v"}
            big[1:4] = flat.reshape(3, {W})
            r["big"] = big
        return {{k: (v, _np.zeros_like(v)) for k, v in r.items()}}
    """)
    outs = ["out"] if op in ("gather", "reduce") else ["big"] if op == "scatter" else ["big", "out"]
    return kern + ins + ref + _launch_code((1,), "d['big'][1:4], d['idx'], d['val'], d['out']", outs)


def _script_gemm(s):
    BM, BN, BK, M, N, K, dt = s["BM"], s["BN"], s["BK"], s["M"], s["N"], s["K"], s["dt"]
    ta, tb = s["ta"], s["tb"]
    acc_t, odt = ("int32", "int32") if dt == "int8" else ("float32", "float32")
    a_tile = ("xt.init_tile(a, [pid_m * BM, 0], [BM, BK], order=(0, 1))" if ta else "xt.init_tile(a, [pid_m * BM, 0], [BM, BK])")
    b_tile = ("xt.init_tile(b, [0, pid_n * BN], [BK, BN], order=(0, 1))" if tb else "xt.init_tile(b, [0, pid_n * BN], [BK, BN])")
    epi = {None: "", "relu": "    acc = xt.maximum(acc, 0)\n" if dt == "int8" else "    acc = xt.maximum(acc, 0.0)\n",
           "scale": "    acc = acc * 2\n" if dt == "int8" else "    acc = acc * 0.5 + 1.0\n"}[s["epi"]]
    kern = textwrap.dedent(f"""
    @xd.jit
    def kernel(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
        pid_m, pid_n = xt.program_id(0), xt.program_id(1)
        ta = {a_tile}
        tb = {b_tile}
        acc = xt.zeros([BM, BN], xt.{acc_t})
        for k in range(0, K, BK):
            acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
            ta = xt.update_tile_offset(ta, 0, BK)
            tb = xt.update_tile_offset(tb, BK, 0)
    """) + epi + "    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))\n"
    ashape = (K, M) if ta else (M, K)
    bshape = (N, K) if tb else (K, N)
    ins = _inputs_code([("a", ashape, "in"), ("b", bshape, "in"), ("c", (M, N), "sentinel_out")], dt, s["data"], s["seed"])
    ins = ins.replace("d['c'] = ", "d['c'] = ")
    ins = ins.replace("    return d", f"    d['c'] = np.full(({M}, {N}), {'-77' if odt == 'int32' else 'np.nan'}, np.{odt})\n    return d")
    ins = "\n".join(ln for ln in ins.splitlines() if "sentinel_out" not in ln and "'c'] = rng" not in ln and "\"c\"] = rng" not in ln)
    # tf32: each input rounded to 10 fraction bits (2^-11 relative each, both operands)
    rel = {"float32": 2 * 2.0 ** -11 + 2.0 ** -22}.get(dt, 0.0)
    ep = {None: "", "relu": "    c = np.maximum(c, 0)\n", "scale": "    c = c * 2\n" if dt == "int8" else
          "    c = c * 0.5 + 1.0\n    bnd = bnd * 0.5 + 2.0 ** -24 * (np.abs(c) + bnd) * 2\n"}[s["epi"]]
    ref = textwrap.dedent(f"""

    def reference(d):
        a = d["a"].astype(np.float64){'.T' if ta else ''}
        b = d["b"].astype(np.float64){'.T' if tb else ''}
        c = a @ b
        s = np.abs(a) @ np.abs(b)
        bnd = ({K} * {2.0 ** -24 if dt != 'int8' else 0.0!r} + {rel!r}) * s + {2.0 ** -126 if dt != 'int8' else 0.0!r} * {K}
    """) + textwrap.indent(ep, "") + "    if 'int' in " + repr(odt) + ":\n        c = ((c.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.float64)\n" \
        "    return {'c': (c, bnd)}\n"
    GM, GN = -(-M // BM), -(-N // BN)
    return kern + ins + ref + _launch_code((GM, GN), f"d['a'], d['b'], d['c'], {K}, BM={BM}, BN={BN}, BK={BK}", ["c"])


def _script_wg(s):
    R_, C, n, dt, kind, M, N = s["R"], s["C"], s["n"], s["dt"], s["kind"], s["M"], s["N"]
    rows = f"xt.wg_map(sg_layout=[{n}, 1], sg_data=[{R_ // n}, {C}])"
    cols = f"xt.wg_map(sg_layout=[1, {n}], sg_data=[{R_}, {C // n}])"
    one = "1" if dt in INT_DT else "1.0"
    G = -(-M // R_)
    ref_core, oshape = "", (M, N)
    if kind in ("slm", "slm_shift", "plain", "storemap"):
        if kind in ("plain", "storemap"):
            mid = f"    w = v * 2 + {one}\n"
        if kind == "plain":
            cols = rows  # stored in the producer's layout (a store in another layout is refused)
        if kind in ("slm", "slm_shift"):
            half = C // 2 if kind == "slm_shift" else 0
            # slm_shift: the subgroups read the buffer's columns rotated by half a width
            mid = textwrap.dedent(f"""
                sl = xt.slm_alloc([{R_}, {2 * C}], xt.{dt})
                xt.store_tile(v, xt.init_tile(sl, [0, 0], [{R_}, {C}], wg_map={rows}))
                xt.store_tile(v, xt.init_tile(sl, [0, {C}], [{R_}, {C}], wg_map={rows}))
                xt.barrier()
                w = xt.load_tile(xt.init_tile(sl, [0, {half}], [{R_}, {C}], wg_map={cols})) * 2 + {one}
            """)
            mid = textwrap.indent(mid.strip("\n"), "    ") + "\n"
        kern = textwrap.dedent(f"""
        @xd.jit
        def kernel(xa, out):
            m = xt.program_id(0) * {R_}
            v = xt.load_tile(xt.init_tile(xa, [m, 0], [{R_}, {C}], wg_map={rows}))
        """) + mid + f"    xt.store_tile(w, xt.init_tile(out, [m, 0], [{R_}, {C}], wg_map={cols}))\n"
        ref_core = textwrap.dedent(f"""
            v = p.reshape({G}, {R_}, {C})
            v = np.roll(v, -{C // 2 if kind == 'slm_shift' else 0}, axis=2)
            w = (v * 2 + 1).reshape({G * R_}, {C})[:{M}, :{min(N, C)}]
            want = np.full(({M}, {N}), np.nan); want[:, :{min(N, C)}] = w
            out = d0["out"].astype(np.float64); keep = np.isnan(want); want[keep] = out[keep]
        """)
    elif kind == "rowsum":
        kern = textwrap.dedent(f"""
        @xd.jit
        def kernel(xa, out):
            m = xt.program_id(0) * {R_}
            v = xt.load_tile(xt.init_tile(xa, [m, 0], [{R_}, {C}], wg_map={rows}))
            r = xt.sum(v, axis=1)
            xt.store_tile(r, xt.init_tile(out, [m, 0], [{R_}, 1], wg_map=xt.wg_map(sg_layout=[{n}, 1], sg_data=[{R_ // n}, 1])))
        """)
        oshape = (M, 1)
        ref_core = textwrap.dedent(f"""
            v = p.reshape({G * R_}, {C})
            want = v.sum(axis=1, keepdims=True)[:{M}]
        """)
    else:  # colmax: partial maxima of row bands meet across subgroups
        kern = textwrap.dedent(f"""
        @xd.jit
        def kernel(xa, out):
            m = xt.program_id(0) * {R_}
            v = xt.load_tile(xt.init_tile(xa, [m, 0], [{R_}, {C}], wg_map={rows}))
            r = xt.max(v, axis=0)
            xt.store_tile(r, xt.init_tile(out, [xt.program_id(0), 0], [1, {C}], wg_map=xt.wg_map(sg_layout=[{n}, 1], sg_data=[1, {C}])))
        """)
        oshape = (G, N)
        ref_core = textwrap.dedent(f"""
            v = p.reshape({G}, {R_}, {C})
            want = np.full(({G}, {N}), np.nan); want[:, :{min(N, C)}] = v.max(axis=1)[:, :{min(N, C)}]
            out = d0["out"].astype(np.float64); keep = np.isnan(want); want[keep] = out[keep]
        """)
    ins = _inputs_code([("x", (M, N), "in"), ("out", oshape, "sentinel")], dt, s["data"], s["seed"])
    u = {"float32": 2.0 ** -24, "float16": 2.0 ** -11}.get(dt, 0.0)
    ref = textwrap.dedent(f"""

    def reference(d):
        d0 = make_inputs()
        p = np.zeros(({G * R_}, {C}))
        x = d["x"].astype(np.float64)
        p[:{M}, :{min(N, C)}] = x[:, :{min(N, C)}]
    """) + textwrap.indent(ref_core.strip("\n"), "    ") + "\n" + _tail(f"""
        bound = {u * (C + 2)!r} * (np.abs(np.nan_to_num(want)) + {C}) + {u!r}
        if {dt!r} in ("int32",):
            bound = np.zeros_like(want)
        return {{"out": (want, bound)}}
    """)
    return kern + ins + ref + _launch_code((G,), "d['x'], d['out']", ["out"])


# --- running and classifying ------------------------------------------------------------------
def run_case(spec, flavours, timeout=CASE_TIMEOUT, workdir=None, env=None):
    """Run one case's script in a subprocess: {flavour: (status, detail)}."""
    text = script_for(spec)
    workdir = Path(workdir or tempfile.mkdtemp(prefix="xetile_fuzz_"))
    path = workdir / f"fuzz_case_{spec['seed']}_{abs(hash(json.dumps(spec, sort_keys=True))) % 10 ** 8}.py"
    path.write_text(text)
    e = dict(os.environ if env is None else env)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    res, current = {}, None
    try:
        p = subprocess.run([sys.executable, str(path), *flavours], capture_output=True, text=True, timeout=timeout,
                           env=e, cwd=str(workdir))
        out, rc, err = p.stdout, p.returncode, p.stderr
    except subprocess.TimeoutExpired as exc:
        out, rc, err = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""), None, ""
    for line in out.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("status") == "start":
            current = j["flavour"]
        else:
            res[j["flavour"]] = (j["status"], j.get("detail"))
            current = None
    if current is not None:
        res[current] = ("timeout", f"over {timeout:.0f} s") if rc is None else ("crash", f"exit {rc}: {err[-2000:]}")
    for fl in flavours:
        if fl not in res:
            res[fl] = ("crash", f"never ran (exit {rc}): {err[-2000:]}") if rc is not None else ("timeout", "not reached")
    path.unlink(missing_ok=True)
    return res


def findings_of(res):
    """The finding kinds of one run's results (empty: nothing wrong)."""
    kinds = {st for st, _ in res.values() if st not in ("ok", "refused", "built")}
    sts = {st for fl, (st, _) in res.items() if fl not in NV_FLAVOURS}
    if "refused" in sts and "ok" in sts:
        kinds.add("disagree")
    return kinds


def shrinks(spec):
    """Smaller variants of ``spec``, simplest first."""
    out = []

    def var(**kw):
        t = copy.deepcopy(spec)
        t.update(kw)
        if t != spec:
            out.append(t)
    if spec["data"] != "ones":
        var(data="small" if spec["data"] == "random" else "ones")
    if spec.get("ops") and len(spec["ops"]) > 1:
        for i in range(len(spec["ops"])):
            var(ops=spec["ops"][:i] + spec["ops"][i + 1:])
    if spec.get("reduce"):
        var(reduce=None)
    for k in ("M", "N", "K", "G", "steps"):
        if spec.get(k, 0) > 1:
            var(**{k: max(1, spec[k] // 2)})
            var(**{k: spec[k] - 1})
    if spec.get("epi"):
        var(epi=None)
    for k in ("ta", "tb", "old"):
        if spec.get(k):
            var(**{k: False})
    if spec["family"] == "lib":
        if len(spec["terms"]) > 1:
            for i in range(len(spec["terms"])):
                var(terms=spec["terms"][:i] + spec["terms"][i + 1:])
        for k in ("int", "fp8", "atom", "xchg", "cas", "mask"):
            if spec[k]:
                var(**{k: None if k in ("fp8", "atom", "mask") else False})
        if spec["soff"]:
            var(soff=0)
        for k in ("r4x", "ph", "mulhi", "ext", "fatom", "i64", "fence"):
            if spec.get(k) is not None:
                var(**{k: None})
        if spec.get("preds"):
            var(preds=[])
        if any(spec.get("ords") or []):
            var(ords=[None] * 5)
    if spec["family"] == "mx" and spec["op"] != "int4":
        for k in ("nan", "sa", "sb", "row"):
            if spec[k]:
                var(**{k: False})
        if spec["acc"] != "zeros":
            var(acc="zeros")
        if spec["nk"] > 1:
            var(nk=spec["nk"] - 1, bk=min(spec["bk"], spec["nk"] - 1))
        if spec["spread"] != 1.0:
            var(spread=1.0)
    if spec["family"] == "scatter":
        if spec["R"] > 1:
            var(R=spec["R"] // 2, src="load")
        if spec["pat"][0] == "perm":
            var(pat=["affine", 1, spec["pat"][3]])
        elif spec["pat"][1:] != [1, 0]:
            var(pat=["affine", 1, 0])
        if spec["mask"]:
            var(mask=None)
        if spec["odt"] != "int32":
            var(odt="int32")
        if spec["src"] != "load":
            var(src="load")
        if spec["C"] > 16:
            var(C=16)
    return out


def minimise(spec, res, flavours, budget=25, log=lambda m: None):
    """Greedy shrinking while the same finding kinds stay (bounded by ``budget`` runs)."""
    want = findings_of(res)
    bad = [f for f, (st, _) in res.items() if st not in ("ok",)] or list(flavours)
    runfl = [f for f in flavours if f in bad] + [f for f in flavours if f not in bad][:1] if "disagree" in want else bad
    runfl = [f for f in flavours if f in runfl]
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cand in shrinks(spec):
            tries += 1
            r = run_case(cand, runfl, timeout=CASE_TIMEOUT)
            if findings_of(r) & want:
                spec, res, improved = cand, r, True
                log(f"    shrunk -> {json.dumps({k: v for k, v in cand.items() if k != 'seed'})}")
                break
            if tries >= budget:
                break
    return spec, res


def reproducer(spec, flavours):
    return script_for(spec).replace(f"\nFLAVOURS = {list(FLAVOURS)!r}\n", f"\nFLAVOURS = {list(flavours)!r}\n")


ROTATE = 6  # see fuzz(): seeds S with S % ROTATE == ROTATE - 1 run a scatter case there, ROTATE - 2 a lib case,
#: ROTATE - 3 an mx case


def fuzz(seed, *, minutes=None, cases=None, flavours=FLAVOURS, jobs=1, minimise_findings=True, log=print,
         family=None):
    """Run cases seed, seed+1, ... for ``minutes`` or ``cases``; the findings (list of dicts)."""
    end = time.time() + 60 * minutes if minutes else None
    found, done = [], [0]
    seeds = iter(range(seed, seed + (cases if cases else 10 ** 9)))

    def one(sd):
        # a run without --family gives every ROTATE-th seed to the gather/scatter family and
        # to the lib family, whose cases spec_for draws only by name (so old seeds keep theirs)
        rotated = {ROTATE - 1: "scatter", ROTATE - 2: "lib", ROTATE - 3: "mx"}.get(sd % ROTATE)
        spec = spec_for(sd, family or rotated)
        fls = flavours_for(spec, flavours)
        t0 = time.time()
        res = run_case(spec, fls)
        kinds = findings_of(res)
        tag = ",".join(sorted(kinds)) or "ok"
        brief = " ".join(f"{f}={st}" for f, (st, _) in res.items())
        log(f"[{sd}] {spec['family']:6s} {spec.get('dt', ''):8s} {time.time() - t0:5.1f}s {tag:10s} {brief}")
        if kinds:
            if minimise_findings:
                spec, res = minimise(spec, res, fls, log=log)
            fls2 = [f for f in fls if f in res]
            found.append({"seed": sd, "kinds": sorted(findings_of(res) or kinds), "spec": spec,
                          "results": res, "reproducer": reproducer(spec, fls2)})
        done[0] += 1

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = []
        for sd in seeds:
            if end and time.time() > end:
                break
            futs.append(ex.submit(one, sd))
            while len([f for f in futs if not f.done()]) >= jobs:
                time.sleep(0.05)
            if end and time.time() > end:
                break
        for f in futs:
            f.result()
    return found, done[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--minutes", type=float)
    ap.add_argument("--cases", type=int)
    ap.add_argument("--flavours", default=",".join(FLAVOURS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-minimise", action="store_true")
    ap.add_argument("--family", choices=FAMILIES, help="every case of this family (the seed picks the rest)")
    ap.add_argument("--show", type=int, help="print the script of one seed's case and exit")
    a = ap.parse_args(argv)
    if a.show is not None:
        print(script_for(spec_for(a.show, a.family)))
        return 0
    if a.minutes is None and a.cases is None:
        a.minutes = 1.0
    fls = tuple(a.flavours.split(","))
    t0 = time.time()
    print(f"fuzzing from seed {a.seed}, flavours {','.join(fls)}, {a.jobs} job(s)", flush=True)
    found, n = fuzz(a.seed, minutes=a.minutes, cases=a.cases, flavours=fls, jobs=a.jobs,
                    minimise_findings=not a.no_minimise, log=lambda m: print(m, flush=True), family=a.family)
    for f in found:
        print(f"\n=== finding at seed {f['seed']}: {', '.join(f['kinds'])} ===")
        for fl, (st, det) in f["results"].items():
            print(f"  {fl}: {st}" + (f": {str(det).splitlines()[0][:300]}" if det else ""))
        print("--- reproducer (python repro.py) ---")
        print(f["reproducer"])
    print(f"\n{n} cases in {time.time() - t0:.0f} s: {len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
