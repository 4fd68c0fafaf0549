"""A kernel's source is parsed once per function and version of its file (reading,
tokenizing and parsing it on every request was a third of the frontend), and parsed again
when the file changes, as ``inspect`` then reads the new text."""
from __future__ import annotations

import importlib.util
import os

import xetile_dsl as xd
from xetile_dsl.frontend.source import KernelSource

SIG = {"x": "f32[:,:]", "y": "f32[:,:]"}
BODY = """
import xetile_dsl.language as xt


def copy_kernel(x, y):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [8, 16]))
    xt.store_tile(v {op} 1.0, xt.init_tile(y, [0, 0], [8, 16]))
"""


def _load(path):
    spec = importlib.util.spec_from_file_location(f"source_cache_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.copy_kernel


def test_a_function_is_parsed_once(tmp_path):
    path = tmp_path / "kernel_once.py"
    path.write_text(BODY.format(op="+"))
    fn = _load(str(path))
    first = KernelSource.of(fn)
    assert KernelSource.of(fn) is first
    assert "v + 1.0" in first.text


def test_a_changed_file_is_parsed_again(tmp_path):
    """The function object is the one compiled from the old text; its source, like
    ``inspect.getsourcelines`` reads it, is the new text, and so is what compiles."""
    path = tmp_path / "kernel_edit.py"
    path.write_text(BODY.format(op="+"))
    fn = _load(str(path))
    before = KernelSource.of(fn)
    path.write_text(BODY.format(op="*"))
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    after = KernelSource.of(fn)
    assert after is not before
    assert "v * 1.0" in after.text and "v + 1.0" in before.text
    ir = xd.compile(fn, SIG, target="interpret").asm["xetile"]
    assert "mulf" in ir and "addf" not in ir


def test_wrapped_functions_of_one_decorator_keep_their_own_source(tmp_path):
    """``functools.wraps`` wrappers share the decorator's code object; inspect reads the
    wrapped function's source, and so must the parse kept for each."""
    (tmp_path / "deco_shared.py").write_text(
        "import functools\n\n\ndef deco(f):\n    @functools.wraps(f)\n    def wrapper(x, y):\n"
        "        return f(x, y)\n    return wrapper\n")
    sources = []
    for op in ("+", "*"):
        path = tmp_path / f"kernel_wrapped_{'add' if op == '+' else 'mul'}.py"
        path.write_text("import sys\nsys.path.insert(0, %r)\nfrom deco_shared import deco\n" % str(tmp_path)
                        + BODY.format(op=op).replace("\ndef copy_kernel", "\n@deco\ndef copy_kernel"))
        sources.append(KernelSource.of(_load(str(path))))
    assert "v + 1.0" in sources[0].text and "v * 1.0" in sources[1].text
