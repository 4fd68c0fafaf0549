"""The kernel cache key covers everything a compiled kernel depends on.

Multi-process: a kernel module and a helper module are written into a temporary folder
and run in a new Python process sharing one XETILE_CACHE_DIR; every kind of global a
kernel can read is then edited and a second new process runs the kernels again.  Each
kernel reads one kind of global, so a kind the key misses shows up as that kernel's
stale output (numpy says what the edited program computes).  In-process: constexprs
equal in Python but of different types get their own kernels, a rebound global is seen
by the next launch, and a global the key cannot represent is refused at its line.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import llvmlite
import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler
from xetile_dsl.errors import CacheKeyError

ROWS, COLS = 16, 32

#: the helper module the kernels reach through ``cfg.``; {KSCALE} and {HELPER_ADD} are edited
CFG_MODULE = '''
import xetile_dsl as xd

KSCALE = {KSCALE}


@xd.jit
def helper(v):
    return v + {HELPER_ADD}
'''

#: one kernel per kind of global read; every {FIELD} is edited between the two processes
KERNEL_MODULE = '''
import sys
from types import SimpleNamespace

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
import cfg

SHAPE = {SHAPE}
LSHAPE = {LSHAPE}
CFG = SimpleNamespace(a=SimpleNamespace(b={CFG_B}))
DT = xt.{DT}
MP = xt.wg_map(sg_layout={MP_LAYOUT}, sg_data=[8, 16])
IOFF = {IOFF}
FSCALE = {FSCALE}
MODE = "{MODE}"
CK = xt.constexpr({CK})


@xd.jit
def k_tuple(x, out):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], SHAPE)), xt.init_tile(out, [0, 0], SHAPE))


@xd.jit
def k_list(x, out):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], LSHAPE)), xt.init_tile(out, [0, 0], LSHAPE))


@xd.jit
def k_attr(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * CFG.a.b, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_dtype(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(xt.astype(xt.astype(v, DT), xt.float32), xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_module_const(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * cfg.KSCALE, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_module_helper(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(cfg.helper(v), xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def scale_by_map(v):
    m = MP
    return v * m.sg_layout[0]


@xd.jit
def k_wg_map_callee(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(scale_by_map(v), xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_int(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v + IOFF, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_float(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * FSCALE, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_str(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    if MODE == "add":
        w = v + 10.0
    else:
        w = v * 10.0
    xt.store_tile(w, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_constexpr(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v + CK, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def k_source(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * {SOURCE_MUL}, xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def local_helper(v):
    return v - {LOCAL_SUB}


@xd.jit
def k_callee_source(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(local_helper(v), xt.init_tile(out, [0, 0], [8, 16]))


if __name__ == "__main__":
    x = np.load(sys.argv[1])
    results = {{}}
    for name, kernel in list(globals().items()):
        if name.startswith("k_"):
            out = np.zeros_like(x)
            kernel.on("cpu")[(1,)](x, out)
            results[name] = out
    np.savez(sys.argv[2], **results)
'''

#: (before, after) of every edited field
EDITS = {
    "SHAPE": ("(8, 16)", "(16, 16)"), "LSHAPE": ("[8, 16]", "[16, 32]"), "CFG_B": ("2.0", "3.0"),
    "DT": ("float16", "bfloat16"), "MP_LAYOUT": ("[2, 4]", "[4, 4]"), "IOFF": ("3", "4"),
    "FSCALE": ("1.5", "2.5"), "MODE": ("add", "mul"), "CK": ("4", "6"), "SOURCE_MUL": ("2.0", "3.0"),
    "LOCAL_SUB": ("1.0", "4.0"), "KSCALE": ("2.0", "5.0"), "HELPER_ADD": ("1.0", "7.0"),
}


def _block(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    out = np.zeros_like(x)
    out[:rows, :cols] = x[:rows, :cols]
    return out


def _tile(x: np.ndarray, fn) -> np.ndarray:
    """What a kernel computing ``fn`` on the 8x16 corner writes (zeros elsewhere)."""
    out = np.zeros_like(x)
    out[:8, :16] = fn(x[:8, :16])
    return out


#: kernel -> numpy reference for one round's field values (f32 throughout)
REFERENCES = {
    "k_tuple": lambda x, f: _block(x, *eval(f["SHAPE"])),
    "k_list": lambda x, f: _block(x, *eval(f["LSHAPE"])),
    "k_attr": lambda x, f: _tile(x, lambda v: v * np.float32(f["CFG_B"])),
    "k_dtype": lambda x, f: _tile(x, lambda v: v.astype(np.float16 if f["DT"] == "float16" else ml_dtypes.bfloat16)
                                  .astype(np.float32)),
    "k_module_const": lambda x, f: _tile(x, lambda v: v * np.float32(f["KSCALE"])),
    "k_module_helper": lambda x, f: _tile(x, lambda v: v + np.float32(f["HELPER_ADD"])),
    "k_wg_map_callee": lambda x, f: _tile(x, lambda v: v * np.float32(eval(f["MP_LAYOUT"])[0])),
    "k_int": lambda x, f: _tile(x, lambda v: v + np.float32(f["IOFF"])),
    "k_float": lambda x, f: _tile(x, lambda v: v * np.float32(f["FSCALE"])),
    "k_str": lambda x, f: _tile(x, lambda v: v + np.float32(10) if f["MODE"] == "add" else v * np.float32(10)),
    "k_constexpr": lambda x, f: _tile(x, lambda v: v + np.float32(f["CK"])),
    "k_source": lambda x, f: _tile(x, lambda v: v * np.float32(f["SOURCE_MUL"])),
    "k_callee_source": lambda x, f: _tile(x, lambda v: v - np.float32(f["LOCAL_SUB"])),
}


def _input() -> np.ndarray:
    """1 + k/512: exact in f16 (10 fraction bits), mostly not in bf16 (7), so the dtype
    edit changes the rounding; every product and sum above is exact in f32."""
    rng = np.random.default_rng(7)
    return (1 + rng.integers(0, 512, (ROWS, COLS)) / 512).astype(np.float32)


def _run_round(folder, fields: dict, x_path, out_path, env) -> dict:
    (folder / "cfg.py").write_text(CFG_MODULE.format(**fields))
    (folder / "kern.py").write_text(KERNEL_MODULE.format(**fields))
    proc = subprocess.run([sys.executable, "-B", str(folder / "kern.py"), str(x_path), str(out_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out_path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    """Outputs of every kernel in a first process, then in a second one after every edit."""
    folder = tmp_path_factory.mktemp("cache_key_edits")
    x_path = folder / "x.npy"
    np.save(x_path, _input())
    env = dict(os.environ, XETILE_CACHE_DIR=str(folder / "cache"), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(folder), str(Path(xd.__file__).parent.parent),
                                           os.environ.get("PYTHONPATH", "")]))
    before = {k: v[0] for k, v in EDITS.items()}
    after = {k: v[1] for k, v in EDITS.items()}
    first = _run_round(folder, before, x_path, folder / "first.npz", env)
    second = _run_round(folder, after, x_path, folder / "second.npz", env)
    return [(before, first), (after, second)]


@pytest.mark.parametrize("kernel", sorted(REFERENCES))
def test_new_process_sees_every_edit(rounds, kernel):
    """The second process's output follows the edited program, not the cached kernel."""
    x = _input()
    for fields, outputs in rounds:
        np.testing.assert_array_equal(outputs[kernel], REFERENCES[kernel](x, fields),
                                      err_msg=f"{kernel} with {fields}")


# ----------------------------------------------------------------------------- constexpr types
@xd.jit
def bool_or_int(x, out, MUL: xt.constexpr):
    """(x > 0) is an i1 tile: a bool MUL keeps i1 (1 + 1 wraps to 0), an int MUL makes it i32."""
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(xt.astype((v > 0) + MUL, xt.int32), xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def int_or_float(y, z, oy, oz, MUL: xt.constexpr):
    """An int MUL multiplies in i32 (wrapping), a float MUL in f32 (rounding)."""
    yv = xt.load_tile(xt.init_tile(y, [0, 0], [8, 16]))
    zv = xt.load_tile(xt.init_tile(z, [0, 0], [8, 16]))
    xt.store_tile(xt.astype(yv * MUL, xt.float32), xt.init_tile(oy, [0, 0], [8, 16]))
    xt.store_tile(xt.astype(zv * MUL - 16777216, xt.float32), xt.init_tile(oz, [0, 0], [8, 16]))


def _wrap32(v: np.ndarray) -> np.ndarray:
    return v.astype(np.int64).astype(np.int32)


def test_constexprs_equal_in_python_get_their_own_kernels():
    """1 == True == 1.0, 2**30 == 2.0**30 and 0.0 == -0.0 in Python; each launch computes
    with its own value and type."""
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (8, 16)).astype(np.int32)
    for mul in (1, True, 1):
        out = np.zeros((8, 16), np.int32)
        bool_or_int.on("cpu")[(1,)](x, out, MUL=mul)
        want = np.logical_xor(x > 0, True) if mul is True else (x > 0) + 1
        np.testing.assert_array_equal(out, want.astype(np.int32), err_msg=f"MUL={mul!r}")
    y = rng.integers(1, 4, (8, 16)).astype(np.int32)
    z = (2**24 + 1 + 2 * rng.integers(0, 8, (8, 16))).astype(np.int32)   # odd: not exact in f32
    for mul in (2**30, 2.0**30, 1, 1.0, 0.0, -0.0):
        oy, oz = np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float32)
        int_or_float.on("cpu")[(1,)](y, z, oy, oz, MUL=mul)
        if isinstance(mul, int):
            want_y = _wrap32(y.astype(np.int64) * mul).astype(np.float32)
            want_z = _wrap32(_wrap32(z.astype(np.int64) * mul).astype(np.int64) - 2**24).astype(np.float32)
        else:
            want_y = y.astype(np.float32) * np.float32(mul)
            want_z = z.astype(np.float32) * np.float32(mul) - np.float32(2**24)
        np.testing.assert_array_equal(oy, want_y, err_msg=f"MUL={mul!r}")
        np.testing.assert_array_equal(np.signbit(oy), np.signbit(want_y), err_msg=f"MUL={mul!r}")
        np.testing.assert_array_equal(oz, want_z, err_msg=f"MUL={mul!r}")


def test_constexpr_disk_keys_differ_by_type():
    specs = {"x": xd.compiler.parse_signature({"x": "i32[:,:]"})["x"],
             "out": xd.compiler.parse_signature({"out": "i32[:,:]"})["out"]}
    keys = {bool_or_int.cache_key(specs, {"MUL": m}, "cpu-pvc") for m in (1, True, 1.0, 2**30, 2.0**30, 0.0, -0.0)}
    assert len(keys) == 7


# ----------------------------------------------------------------------------- same process
SCALE_G = 2.0
CFG_G = type("Cfg", (), {})()
CFG_G.bias = 1.0


@xd.jit
def scale_bias(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * SCALE_G + CFG_G.bias, xt.init_tile(out, [0, 0], [8, 16]))


def test_rebound_global_is_seen_by_the_next_launch(monkeypatch):
    """Rebinding a global (or an attribute read through one) between launches recompiles;
    rebinding it back reuses the first kernel."""
    x = np.arange(128, dtype=np.float32).reshape(8, 16)

    def launch():
        out = np.zeros_like(x)
        scale_bias.on("cpu")[(1,)](x, out)
        return out

    np.testing.assert_array_equal(launch(), x * 2 + 1)
    monkeypatch.setattr(sys.modules[__name__], "SCALE_G", 3.0)
    np.testing.assert_array_equal(launch(), x * 3 + 1)
    monkeypatch.setattr(CFG_G, "bias", 5.0)
    np.testing.assert_array_equal(launch(), x * 3 + 5)
    compiles = compiler.stats["compiles"]
    monkeypatch.undo()
    np.testing.assert_array_equal(launch(), x * 2 + 1)
    assert compiler.stats["compiles"] == compiles   # the first kernel, from memory


# ----------------------------------------------------------------------------- refused globals
TABLE = np.arange(4, dtype=np.float32)


@xd.jit
def reads_array_global(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * TABLE[1], xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def reads_module_as_value(x, out):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * passes_module(np), xt.init_tile(out, [0, 0], [8, 16]))


@xd.jit
def passes_module(m):
    return m.pi


@pytest.mark.parametrize("kernel, needle, what", [
    (reads_array_global, "v * TABLE[1]", "numpy.ndarray"),
    (reads_module_as_value, "passes_module(np)", "module numpy used as a value"),
])
def test_unrepresentable_global_is_refused_at_its_line(kernel, needle, what):
    x = np.ones((8, 16), np.float32)
    with pytest.raises(CacheKeyError) as info:
        kernel.on("cpu")[(1,)](x, np.zeros_like(x))
    err = info.value
    lines, first = inspect.getsourcelines(kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if needle in text)
    assert (err.filename, err.line) == (inspect.getsourcefile(kernel.fn), line)
    assert what in err.message and "a kernel may read globals that are" in err.message


@xd.jit
def shadowed(x, out, FLAG: xt.constexpr):
    if FLAG:
        SCALE_G = 4.0
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v * SCALE_G, xt.init_tile(out, [0, 0], [8, 16]))


def test_global_read_where_the_key_sees_a_local_is_refused():
    """``SCALE_G`` is assigned in a branch the constexpr skips, so the frontend would read
    the global where the key looked for a local: refused rather than cached wrongly."""
    x = np.ones((8, 16), np.float32)
    with pytest.raises(CacheKeyError, match="treats it as a local"):
        shadowed.on("cpu")[(1,)](x, np.zeros_like(x), FLAG=False)


# ----------------------------------------------------------------------------- compiler sources
def test_an_edited_compiler_source_changes_the_key(tmp_path, monkeypatch):
    """The compiler's sources are named by path, size and mtime (no source is read on a
    warm launch): an edit of the same size, a changed size, an added, a removed and a
    renamed file each change the stamp, and so the key; touching nothing changes nothing."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (pkg / "notes.txt").write_text("not a source\n")
    stamps = [compiler.sources_stamp(str(pkg))]
    assert compiler.sources_stamp(str(pkg)) == stamps[0]
    (pkg / "notes.txt").write_text("still not a source\n")
    assert compiler.sources_stamp(str(pkg)) == stamps[0]
    mtime = (pkg / "sub" / "b.py").stat().st_mtime_ns
    (pkg / "sub" / "b.py").write_text("y = 3\n")                     # same size
    os.utime(pkg / "sub" / "b.py", ns=(mtime + 1_000_000, mtime + 1_000_000))
    stamps.append(compiler.sources_stamp(str(pkg)))
    (pkg / "a.py").write_text("x = 10\n")                             # another size
    os.utime(pkg / "a.py", ns=(mtime, mtime))
    stamps.append(compiler.sources_stamp(str(pkg)))
    (pkg / "sub" / "c.py").write_text("")
    stamps.append(compiler.sources_stamp(str(pkg)))
    (pkg / "sub" / "c.py").rename(pkg / "c.py")
    stamps.append(compiler.sources_stamp(str(pkg)))
    (pkg / "sub" / "b.py").unlink()
    stamps.append(compiler.sources_stamp(str(pkg)))
    assert len(set(stamps)) == len(stamps), stamps
    # and the key follows the stamp
    monkeypatch.setattr(compiler, "_VERSION_HASH", None)
    before = compiler.compiler_version()
    monkeypatch.setattr(compiler, "_VERSION_HASH", None)
    monkeypatch.setattr(compiler, "sources_stamp", lambda root: stamps[1])
    assert compiler.compiler_version() != before


def test_versions_read_without_importing_match_the_packages():
    """xDSL's version from its dist-info folder name is the one importlib.metadata reports,
    and LLVM is named by every library file in llvmlite's binding folder (read by listing,
    not by a glob or by loading LLVM)."""
    assert compiler._xdsl_version() == metadata.version("xdsl")
    binding = Path(llvmlite.__file__).parent / "binding"
    assert [lib[0] for lib in compiler._llvm_library_identity()] == sorted(p.name for p in binding.glob("libllvmlite*"))
    assert compiler._llvm_library_identity(), "llvmlite's LLVM library was not found"


def test_the_stamp_covers_every_compiler_source():
    root = os.path.dirname(compiler.__file__)
    named = {line.split("\0")[0] for line in compiler.sources_stamp(root).splitlines()}
    on_disk = {os.path.relpath(os.path.join(folder, n), root) for folder, _, names in os.walk(root)
               for n in names if n.endswith(".py")}
    assert named == on_disk and os.path.join("codegen", "spirv", "translate.py") in named


# ----------------------------------------------------------------------------- component versions
def test_component_versions_are_in_the_key(monkeypatch):
    """A different llvmlite (or xDSL, LLVM, numpy, Python) changes every cache key."""
    monkeypatch.setattr(compiler, "_VERSION_HASH", None)
    before = compiler.compiler_version()
    monkeypatch.setattr(compiler, "_VERSION_HASH", None)
    monkeypatch.setattr(llvmlite, "__version__", "0.0.1")
    assert compiler.compiler_version() != before
    versions = compiler.component_versions()
    for name in ("xdsl", "llvmlite", "llvm", "numpy", "python"):
        assert f'"{name}"' in versions
