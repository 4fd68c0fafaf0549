"""Device discovery and selection on this machine (Intel's OpenCL CPU runtime)."""
import pytest

from xetile_dsl.runtime import devices as D


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    for var in ("XETILE_DEVICE", "XETILE_BACKEND", "XETILE_TARGET"):
        monkeypatch.delenv(var, raising=False)
    D._default.clear()
    yield
    D._default.clear()


def test_list_devices_finds_the_cpu_and_reports_missing_gpus():
    report = D.list_devices()
    cpus = [d for d in report.devices if d.kind == "cpu"]
    assert cpus and cpus[0].target_name == "cpu" and cpus[0].platform == "opencl"
    assert cpus[0].backend == "dpctl"           # first choice
    text = str(report)
    assert "opencl:cpu:0" in text and cpus[0].name in text
    if not any(d.kind == "gpu" for d in report.devices):
        assert any(m.startswith("no Level Zero GPU: ") for m in report.missing)
        assert any(m.startswith("no OpenCL GPU: ") for m in report.missing)


@pytest.mark.parametrize("backend", ["dpctl", "pyopencl"])
def test_select_cpu_by_argument(backend):
    dev = D.get_device("opencl:cpu", backend)
    assert (dev.backend, dev.kind, dev.target_name) == (backend, "cpu", "cpu")
    assert dev.name in dev.describe() and "target: cpu" in dev.describe()


def test_select_by_environment(monkeypatch):
    monkeypatch.setenv("XETILE_DEVICE", "cpu")
    monkeypatch.setenv("XETILE_BACKEND", "pyopencl")
    dev = D.get_device()
    assert dev.backend == "pyopencl" and dev.kind == "cpu"


def test_default_is_first_in_discovery_order():
    dev = D.get_device()
    first = D.list_devices().devices[0]
    assert (dev.platform, dev.kind, dev.name) == (first.platform, first.kind, first.name)


def test_bad_selector_and_backend_messages():
    with pytest.raises(D.DeviceError, match="bad device selector 'opencl:fpga'.*'level_zero:gpu'"):
        D.get_device("opencl:fpga")
    with pytest.raises(D.DeviceError, match="unknown backend 'cuda'.*dpctl, pyopencl"):
        D.get_device(backend="cuda")
    with pytest.raises(D.DeviceError, match="with index 7"):
        D.get_device("opencl:cpu:7")


def test_level_zero_through_pyopencl_is_explained():
    with pytest.raises(D.DeviceError, match="Level Zero needs dpctl"):
        D.get_device("level_zero:gpu", "pyopencl")


def test_missing_gpu_message(monkeypatch):
    if any(d.kind == "gpu" for d in D.list_devices().devices):
        pytest.skip("this machine has a GPU")
    with pytest.raises(D.DeviceError, match="no Level Zero GPU.*no OpenCL GPU"):
        D.get_device("gpu")


@pytest.mark.parametrize("name,dev_id,target", [
    ("Intel(R) Data Center GPU Max 1550", None, "pvc"),
    ("Intel(R) Graphics [0x0bd5]", 0x0BD5, "pvc"),
    ("Intel(R) Graphics [0x0bd5]", None, "pvc"),
    ("Intel(R) Graphics [0x56a0]", None, "arc"),
    ("Intel(R) Arc(TM) A770 Graphics", None, "arc"),
    ("Intel(R) Data Center GPU Flex 170", None, "arc"),
    ("Intel(R) Graphics", 0x56A0, "arc"),
])
def test_detect_target(name, dev_id, target):
    assert D.detect_target(name, dev_id) == target


def test_unknown_gpu_names_closest_target():
    with pytest.raises(D.UnsupportedTargetError, match="not a supported target.*closest is 'pvc'.*XETILE_TARGET=pvc"):
        D.detect_target("Intel(R) Arc(TM) B580 Graphics", 0xE20B)
    with pytest.raises(D.UnsupportedTargetError, match="closest is 'arc'"):
        D.detect_target("Intel(R) Iris(R) Xe Graphics", 0x9A49)
    dev = D._make_device("Intel(R) UHD Graphics 770", "dpctl", "level_zero", "gpu", 0, None)
    assert "unsupported" in dev.describe() and "closest is 'arc'" in dev.describe()
    with pytest.raises(D.UnsupportedTargetError, match="closest is 'arc'"):
        dev.target_name


def test_target_override(monkeypatch):
    monkeypatch.setenv("XETILE_TARGET", "pvc")
    assert D._make_device("Intel(R) UHD Graphics 770", "dpctl", "level_zero", "gpu", 0, None).target_name == "pvc"


def test_missing_dpctl_is_reported_and_pyopencl_used(monkeypatch):
    def no_dpctl(platform, kind):
        raise ImportError("No module named 'dpctl'")

    monkeypatch.setitem(D._FINDERS, "dpctl", no_dpctl)
    report = D.list_devices()
    assert any("dpctl not importable (No module named 'dpctl')" in m for m in report.missing)
    assert D.get_device("opencl:cpu").backend == "pyopencl"
