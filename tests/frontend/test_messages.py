"""Messages for what a user coming from Triton or numpy reaches for: each located at the
user's line, saying what to write instead, the same in the interpreter and compiled."""
from __future__ import annotations

import numpy as np
import pytest

from xetile_dsl import CacheKeyError, CompilationError
from xetile_dsl.frontend import suggestions

import xetile_dsl.language as xt

from . import message_kernels as mk

A = np.zeros((16, 16), np.float32)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
@pytest.mark.parametrize("kernel, args, line, fragments, absent", [
    (mk.uses_cumsum, (A,), 12, ["has no attribute 'cumsum'", "xt.cumsum is not available yet"], "did you mean"),
    (mk.uses_math_gamma, (A,), 18, ["math.gamma is not a kernel function", "xt has no gamma",
                                   "xt.sin", "xt.sqrt"], "cache key"),
    (mk.uses_numpy_exp, (A,), 24, ["np.exp is not a kernel function; use xt.exp"], "cache key"),
    (mk.uses_math_sqrt, (A,), 30, ["math.sqrt is not a kernel function; use xt.sqrt"], "cache key"),
    (mk.min_of_runtime_scalars, (A, 1, 2), 35, ["min() must be a compile-time constant",
                                                "for runtime values use xt.minimum(a, b)"], None),
    (mk.max_of_runtime_scalars, (A, 1, 2), 41, ["max() must be a compile-time constant",
                                                "for runtime values use xt.maximum(a, b)"], None),
    (mk.masked_load_tile, (A, 3), 47, ["load_tile: a mask of shape [1, 8] does not fit the tile's [16, 16]",
                                       "[1, 16] rows"], "unexpected keyword"),
    (mk.typo_of_ours, (A,), 53, ["has no attribute 'laod_tile'; did you mean xt.load_tile"], None),
    (mk.uses_extern, (A,), 59, ["xt.extern's result must be an xt dtype such as xt.float32"], "cache key"),
], ids=["cumsum", "math.gamma", "np.exp", "math.sqrt", "min-key", "max-key", "load_tile-mask", "typo", "extern"])
def test_message_at_the_users_line(kernel, args, line, fragments, absent, target):
    with pytest.raises(CompilationError) as info:
        kernel.on(target)[(1,)](*args)
    assert not isinstance(info.value, CacheKeyError)
    text = str(info.value)
    assert f"message_kernels.py:{line}:" in text and "^" in text, text
    for fragment in fragments:
        assert fragment in text, text
    assert absent is None or absent not in text, text


def test_names_triton_has_and_we_lack_are_never_guessed_at():
    """Names said to be not available yet are not ours (else they would be wrong), and
    none of them gets a look-alike suggestion; real typos still do."""
    assert not any(hasattr(xt, name) for name in suggestions.TRITON_NOT_YET)
    for name in suggestions.TRITON_NOT_YET:
        assert "did you mean" not in suggestions.hint(name), name
    assert suggestions.hint("zero") == "; did you mean xt.zeros?"
    assert "xt.tile_mma" in suggestions.hint("tile_mm")
    assert all(hasattr(xt, name) for name in suggestions.XT_MATH)


# --- without ocloc ------------------------------------------------------------------------------

def _no_ocloc(monkeypatch, tmp_path):
    """No ocloc anywhere: an empty tools folder, no XETILE_OCLOC, a PATH without it."""
    from xetile_dsl.tools import locate
    (tmp_path / "tools").mkdir()
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("XETILE_TOOLS_DIR", str(tmp_path / "tools"))
    monkeypatch.delenv("XETILE_OCLOC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert locate.ocloc_status()[0] is None


def test_without_ocloc_asm_isa_and_report_say_so_and_how_to_get_it(monkeypatch, tmp_path):
    """k.asm["isa"] was a KeyError that did not name ocloc, and report() named the script
    scripts/install-test-tools.sh, which a wheel does not ship."""
    import xetile_dsl as xd
    from xetile_dsl.errors import MissingStageError, ToolError
    from xetile_dsl.kernels.matmul import matmul_kernel

    _no_ocloc(monkeypatch, tmp_path)
    k = xd.compile(matmul_kernel, {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
                   {"BM": 16, "BN": 16, "BK": 16}, target="pvc")
    with pytest.raises(KeyError) as info:        # still a KeyError: asm.get("isa") keeps working
        k.asm["isa"]
    assert isinstance(info.value, MissingStageError)
    assert k.asm.get("isa") is None
    with pytest.raises(ToolError) as report:
        k.report()
    for text in (str(info.value), str(report.value)):
        assert "ocloc (Intel's offline compiler) was not found" in text, text
        assert "python -m xetile_dsl install-tools" in text, text
        assert "scripts/" not in text and "site-packages" not in text, text


def test_install_tools_subcommand_runs_the_shipped_installer(capsys, tmp_path):
    """`python -m xetile_dsl install-tools --dry-run` names the installer inside the package
    (package data) and the folder xetile_dsl reads; nothing is run."""
    from pathlib import Path

    from xetile_dsl.__main__ import main
    from xetile_dsl.tools import locate

    script = locate.installer_script()
    assert script.is_file() and script.parent == Path(locate.__file__).resolve().parent
    assert main(["install-tools", "--dry-run", "--tools-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"XETILE_TOOLS_DIR={tmp_path} bash {script}"
    with pytest.raises(SystemExit) as info:
        main(["install-tools", "--help"])
    assert info.value.code == 0
    assert "ocloc" in capsys.readouterr().out
    wrapper = (Path(locate.__file__).resolve().parents[2] / "scripts" / "install-test-tools.sh").read_text()
    assert "xetile_dsl/tools/install-test-tools.sh" in wrapper    # the checkout's path runs the same file
