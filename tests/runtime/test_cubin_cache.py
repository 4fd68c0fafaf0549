"""The cubins of NVIDIA modules in the kernel cache (runtime/cubins.py), with the CUDA
driver replaced by a recorder (no GPU here) and ptxas by a script that records its runs:
the first load assembles the PTX and stores the cubin; a later process (an empty module
table) loads the stored cubin without assembling; a corrupt entry, a cubin the driver
refuses and a failing ptxas each end in a working load (the PTX), never in a trusted bad
entry; without a ptxas the PTX is loaded.  The real ptxas assembles a kernel of ours."""
from __future__ import annotations

import os
import stat

import pytest

from xetile_dsl.runtime import backend_cuda, cache, cubins

PTX = ".version 8.0\n.target sm_90a\n.address_size 64\n"
CUBIN = b"\x7fELF fake cubin"

#: a ptxas stand-in: logs its arguments, answers --version, writes what $FAKE_PTXAS says
FAKE = """#!/bin/sh
echo "$@" >> "$FAKE_PTXAS_LOG"
if [ "$1" = "--version" ]; then echo "fake ptxas, release 1.$FAKE_PTXAS_RELEASE"; exit 0; fi
case "$FAKE_PTXAS" in fail) echo "ptxas fatal: no" >&2; exit 1;; esac
prev=""; out=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$FAKE_PTXAS" in notelf) printf 'not elf' > "$out";; *) printf '\\177ELF fake cubin' > "$out";; esac
"""


class FakeDriver:
    """What backend_cuda asks of cuda.bindings.driver, recorded."""

    def __init__(self, refuse_cubin=False):
        self.refuse_cubin = refuse_cubin
        self.calls: list = []

    def cuDriverGetVersion(self):
        return 0, 13000

    def cuModuleLoadData(self, image):
        kind = "cubin" if image[:4] == b"\x7fELF" else "ptx"
        self.calls.append(f"load {kind}")
        return (200 if kind == "cubin" and self.refuse_cubin else 0), f"module:{kind}"

    def cuGetErrorName(self, err):
        return 0, b"CUDA_ERROR_FAKE"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """use(driver, mode): a new process's view (empty module table and cache handle) with
    that driver and the fake ptxas in ``mode``; returns the driver and the ptxas log."""
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("XETILE_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(backend_cuda, "_CAPABILITY", {0: (9, 0)})
    ptxas = tmp_path / "ptxas"
    ptxas.write_text(FAKE)
    ptxas.chmod(ptxas.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_PTXAS_LOG", str(log))
    monkeypatch.setenv("FAKE_PTXAS_RELEASE", "0")
    monkeypatch.setenv("XETILE_PTXAS", str(ptxas))

    def use(driver, mode="ok"):
        monkeypatch.setenv("FAKE_PTXAS", mode)
        monkeypatch.setattr(backend_cuda, "_driver", lambda: driver)
        monkeypatch.setattr(backend_cuda, "_MODULES", {})
        cubins.ptxas_release.cache_clear()
        cache._SHARED = None
        if log.exists():
            log.unlink()
        return driver, log
    use.cache_dir, use.ptxas = cache_dir, str(ptxas)
    return use


def _runs(log) -> list[str]:
    """The fake ptxas's assembling runs (not its --version answers)."""
    return [line for line in log.read_text().splitlines() if "--version" not in line] if log.exists() else []


def _key(fresh, release="0", driver=13000, capability=(9, 0)):
    return cubins.cubin_key(PTX, driver, capability, f"fake ptxas, release 1.{release}")


def test_a_module_is_assembled_once_then_loaded_as_its_cubin(fresh, monkeypatch):
    first, log = fresh(FakeDriver())
    assert backend_cuda._load_module(PTX, 0) == "module:cubin"
    assert first.calls == ["load cubin"]
    (run,) = _runs(log)
    assert run.startswith("-arch=sm_90a ") and run.endswith(cubins.CUBIN)
    later, log = fresh(FakeDriver())                 # another process: the stored cubin, no ptxas run
    assert backend_cuda._load_module(PTX, 0) == "module:cubin" and later.calls == ["load cubin"]
    assert _runs(log) == []
    assert cache.shared_cache().get(_key(fresh))[cubins.CUBIN] == CUBIN
    assert len({_key(fresh), _key(fresh, release="1"), _key(fresh, driver=13010), _key(fresh, capability=(8, 0))}) == 4
    monkeypatch.setenv("FAKE_PTXAS_RELEASE", "1")    # another ptxas release: assembled again
    _, log = fresh(FakeDriver())
    monkeypatch.setenv("FAKE_PTXAS_RELEASE", "1")
    assert backend_cuda._load_module(PTX, 0) == "module:cubin" and len(_runs(log)) == 1


def test_a_corrupt_entry_is_rebuilt(fresh):
    fresh(FakeDriver())
    backend_cuda._load_module(PTX, 0)
    entry = fresh.cache_dir / _key(fresh) / cubins.CUBIN
    entry.write_bytes(b"garbage")                    # its checksum no longer holds
    again, log = fresh(FakeDriver())
    with pytest.warns(cache.CacheWarning):
        assert backend_cuda._load_module(PTX, 0) == "module:cubin"
    assert again.calls == ["load cubin"] and len(_runs(log)) == 1
    assert entry.read_bytes() == CUBIN


def test_a_refused_cubin_is_discarded_and_the_ptx_loaded(fresh):
    driver, _ = fresh(FakeDriver(refuse_cubin=True))
    with pytest.warns(cache.CacheWarning, match="refused"):
        assert backend_cuda._load_module(PTX, 0) == "module:ptx"
    assert driver.calls == ["load cubin", "load ptx"]
    assert not (fresh.cache_dir / _key(fresh)).exists()


@pytest.mark.parametrize("mode", ["fail", "notelf", "missing"])
def test_without_a_working_ptxas_the_ptx_is_loaded(fresh, monkeypatch, mode):
    driver, _ = fresh(FakeDriver(), mode)
    if mode == "missing":
        monkeypatch.setenv("XETILE_PTXAS", fresh.ptxas + ".gone")
    assert backend_cuda._load_module(PTX, 0) == "module:ptx"
    assert driver.calls == ["load ptx"]
    stored = [p for p in fresh.cache_dir.iterdir() if p.name != ".locks"] if fresh.cache_dir.exists() else []
    assert stored == []                              # nothing stored


def test_the_arch_follows_the_gpu_and_the_ptx_target():
    assert cubins.ptxas_arch(PTX, (9, 0)) == "sm_90a"
    assert cubins.ptxas_arch(PTX.replace("sm_90a", "sm_80"), (9, 0)) == "sm_90"
    assert cubins.ptxas_arch(PTX.replace("sm_90a", "sm_80"), (8, 6)) == "sm_86"


def test_the_real_ptxas_assembles_a_kernel_of_ours():
    """The ptxas the tests use (PATH or the [test] extra's nvidia-cuda-nvcc wheel) makes an
    ELF cubin of an sm90 kernel's PTX at the arch :func:`cubins.ptxas_arch` names."""
    from tests.nvptx.test_nvptx_compile import require_ptxas
    import xetile_dsl as xd
    from xetile_dsl.kernels.matmul import matmul_kernel
    from tests.nvptx.test_nvptx_compile import GEMM_SIG
    ptxas = require_ptxas()
    k = xd.compile(matmul_kernel, GEMM_SIG, {"BM": 64, "BN": 64, "BK": 64}, target="sm90")
    arch = cubins.ptxas_arch(k.ptx, (9, 0))
    assert arch == "sm_90a"                          # (the wgmma GEMM's PTX targets sm_90a)
    cubin = cubins.assemble(k.ptx, arch, ptxas)
    assert cubin[:4] == b"\x7fELF" and k.name.encode() in cubin
    assert cubins.ptxas_release(ptxas)
    with pytest.raises(RuntimeError, match="ptxas -arch=sm_90a"):
        cubins.assemble(k.ptx.replace(".entry", ".entry_not_a_directive", 1), arch, ptxas)


def test_find_ptxas_takes_the_knob_then_the_search(monkeypatch, tmp_path):
    monkeypatch.setenv("XETILE_PTXAS", str(tmp_path / "none"))
    assert cubins.find_ptxas() is None               # a named ptxas that is not there: none
    monkeypatch.delenv("XETILE_PTXAS")
    monkeypatch.setenv("PATH", str(tmp_path))
    found = cubins.find_ptxas()
    assert found is None or os.access(found, os.X_OK)
