"""The cubins of NVIDIA modules in the kernel cache (runtime/cubins.py), with the CUDA
driver replaced by a recorder (no GPU here): the first load links the PTX and stores the
cubin; a later process (an empty module table) loads the stored cubin without linking;
a corrupt entry, a cubin the driver refuses and a failing linker each end in a working
load (the PTX), never in a trusted bad entry."""
from __future__ import annotations

import types

import pytest

from xetile_dsl.runtime import backend_cuda, cache, cubins

PTX = ".version 8.0\n.target sm_90a\n.address_size 64\n"
CUBIN = b"\x7fELF" + b"\x02" * 60


class FakeDriver:
    """What backend_cuda asks of cuda.bindings.driver, recorded."""

    class CUjitInputType:
        CU_JIT_INPUT_PTX = 1

    def __init__(self, cubin=CUBIN, refuse_cubin=False, link_fails=False):
        self.cubin, self.refuse_cubin, self.link_fails = cubin, refuse_cubin, link_fails
        self.calls: list = []
        self._buffer = None

    def cuDriverGetVersion(self):
        return 0, 13000

    def cuLinkCreate(self, n, options, values):
        self.calls.append("link")
        return 0, "state"

    def cuLinkAddData(self, state, kind, data, size, name, n, options, values):
        assert kind == 1 and data.endswith(b"\0") and size == len(data)
        return (1 if self.link_fails else 0),

    def cuLinkComplete(self, state):
        import ctypes
        self._buffer = ctypes.create_string_buffer(self.cubin, len(self.cubin))
        return 0, ctypes.addressof(self._buffer), len(self.cubin)

    def cuLinkDestroy(self, state):
        return 0,

    def cuModuleLoadData(self, image):
        kind = "cubin" if image[:4] == b"\x7fELF" else "ptx"
        self.calls.append(f"load {kind}")
        return (200 if kind == "cubin" and self.refuse_cubin else 0), f"module:{kind}"

    def cuGetErrorName(self, err):
        return 0, b"CUDA_ERROR_FAKE"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(backend_cuda, "_CAPABILITY", {0: (9, 0)})

    def use(driver):
        monkeypatch.setattr(backend_cuda, "_driver", lambda: driver)
        monkeypatch.setattr(backend_cuda, "_MODULES", {})
        return driver
    return use


def test_a_module_is_linked_once_then_loaded_as_its_cubin(fresh):
    first = fresh(FakeDriver())
    assert backend_cuda._load_module(PTX, 0) == "module:cubin"
    assert first.calls == ["link", "load cubin"]
    later = fresh(FakeDriver(cubin=b"\x7fELF other"))      # another process: the stored cubin
    cache._SHARED = None
    assert backend_cuda._load_module(PTX, 0) == "module:cubin" and later.calls == ["load cubin"]
    key = cubins.cubin_key(PTX, 13000, (9, 0))
    assert cache.shared_cache().get(key)[cubins.CUBIN] == CUBIN
    assert key != cubins.cubin_key(PTX, 13010, (9, 0)) != cubins.cubin_key(PTX, 13000, (8, 0))


def test_a_corrupt_entry_is_rebuilt(fresh, tmp_path):
    fresh(FakeDriver())
    backend_cuda._load_module(PTX, 0)
    key = cubins.cubin_key(PTX, 13000, (9, 0))
    (tmp_path / key / cubins.CUBIN).write_bytes(b"garbage")    # its checksum no longer holds
    cache._SHARED = None
    again = fresh(FakeDriver())
    with pytest.warns(cache.CacheWarning):
        assert backend_cuda._load_module(PTX, 0) == "module:cubin"
    assert again.calls == ["link", "load cubin"]
    assert (tmp_path / key / cubins.CUBIN).read_bytes() == CUBIN


def test_a_refused_cubin_is_discarded_and_the_ptx_loaded(fresh, tmp_path):
    driver = fresh(FakeDriver(refuse_cubin=True))
    with pytest.warns(cache.CacheWarning, match="refused"):
        assert backend_cuda._load_module(PTX, 0) == "module:ptx"
    assert driver.calls == ["link", "load cubin", "load ptx"]
    assert not (tmp_path / cubins.cubin_key(PTX, 13000, (9, 0))).exists()


@pytest.mark.parametrize("driver", [FakeDriver(link_fails=True), FakeDriver(cubin=b"not elf"),
                                    types.SimpleNamespace()])
def test_without_a_working_linker_the_ptx_is_loaded(fresh, tmp_path, driver):
    if isinstance(driver, types.SimpleNamespace):     # a driver with no linker entry points at all
        full = FakeDriver()
        driver = types.SimpleNamespace(cuDriverGetVersion=full.cuDriverGetVersion, calls=full.calls,
                                       cuModuleLoadData=full.cuModuleLoadData, cuGetErrorName=full.cuGetErrorName)
    fresh(driver)
    assert backend_cuda._load_module(PTX, 0) == "module:ptx"
    assert driver.calls[-1] == "load ptx"
    assert not any(p.name != ".locks" for p in tmp_path.iterdir())      # nothing stored
