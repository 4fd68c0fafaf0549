"""The cache key is composed in one place (runtime/cache_key.py) from named parts: it
changes when any one part changes, and only then; each component's part is what the
``@jit`` key is made of."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler, knobs
from xetile_dsl.frontend import dependencies
from xetile_dsl.frontend.argspec import ArgSpec
from xetile_dsl.jit import signature_text
from xetile_dsl.runtime import cache_key

KERNEL_PARTS = {"source": "def k(): ...", "name": "k", "signature": '{"x": ["array", "f32", 2, ""]}',
                "constants": "BM: int 32", "target": "cpu-pvc", "options": "{}", "compiler": "0123abcd",
                "knobs": ""}
TUNING_PARTS = {"source": "abc", "compiler": "0123abcd", "knobs": "", "device": '["cpu", "dpctl", "opencl"]',
                "target": "", "tuning_key": "(64,)", "configs": "[]"}


@pytest.mark.parametrize("compose, parts", [(cache_key.kernel_key, KERNEL_PARTS), (cache_key.tuning_key, TUNING_PARTS)])
def test_the_key_changes_with_each_part_and_only_then(compose, parts):
    base = compose(**parts)
    assert compose(**dict(parts)) == base and len(base) == 64
    changed = {name: compose(**{**parts, name: parts[name] + "'"}) for name in parts}
    assert base not in changed.values()
    assert len(set(changed.values())) == len(parts)          # no two parts change it alike
    # a value moved from one part to the next is another key (every part is named)
    names = list(parts)
    for first, second in zip(names, names[1:]):
        moved = {**parts, first: parts[first] + parts[second], second: ""}
        assert moved == parts or compose(**moved) != base


@pytest.mark.parametrize("compose, parts", [(cache_key.kernel_key, KERNEL_PARTS), (cache_key.tuning_key, TUNING_PARTS)])
def test_a_missing_or_unknown_part_is_refused(compose, parts):
    missing = dict(parts)
    missing.popitem()
    with pytest.raises(TypeError, match="missing"):
        compose(**missing)
    with pytest.raises(TypeError, match="unknown"):
        compose(**parts, extra="x")


@xd.jit
def _scaled(x, y, n, BM: xt.constexpr):
    t = xt.load_tile(xt.init_tile(x, [0, 0], [BM, 16]))
    xt.store_tile(t * 2.0, xt.init_tile(y, [0, 0], [BM, 16]))


def test_the_jit_key_is_composed_from_each_components_part(monkeypatch):
    """``JITFunction.cache_key`` is :func:`cache_key.kernel_key` of the frontend's source and
    constants, jit's signature, the compiler's version and the codegen knobs."""
    specs = {"x": ArgSpec("array", "f32", 2), "y": ArgSpec("array", "f32", 2), "n": ArgSpec("scalar", "i32")}
    consts = {"BM": 8}
    expected = cache_key.kernel_key(
        source=_scaled.dependencies().text, name="_scaled", signature=signature_text(specs),
        constants=dependencies.encode_constants("_scaled", consts), target="cpu-pvc", options="{}",
        compiler=compiler.compiler_version(), knobs=knobs.codegen_tag())
    key = _scaled.cache_key(specs, consts, "cpu-pvc")
    assert key == expected and _scaled.cache_key(specs, consts, "cpu-pvc") == key   # stable within a run
    assert _scaled.cache_key(specs, {"BM": 16}, "cpu-pvc") != key
    assert _scaled.cache_key(specs, consts, "pvc") != key
    assert _scaled.cache_key({**specs, "n": ArgSpec("scalar", "i64")}, consts, "cpu-pvc") != key
    assert _scaled.cache_key(specs, consts, "cpu-pvc", {"opt": 1}) != key
    monkeypatch.setenv(knobs.ROTATE_LOADS.name, "off")                 # a codegen knob
    assert knobs.codegen_tag() and _scaled.cache_key(specs, consts, "cpu-pvc") != key
    monkeypatch.delenv(knobs.ROTATE_LOADS.name)
    monkeypatch.setattr(compiler, "compiler_version", lambda: "another compiler")
    assert _scaled.cache_key(specs, consts, "cpu-pvc") != key
