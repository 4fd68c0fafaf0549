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


#: real PCI device ids per family, with the name the driver reports (Intel's compute
#: runtime device lists; xetile_dsl/targets/pci_ids.py), and a generic name that only the id
#: can resolve
DEVICE_TABLE = [
    (0x0BD5, "Intel(R) Data Center GPU Max 1550", "pvc"),
    (0x0BDA, "Intel(R) Data Center GPU Max 1100", "pvc"),
    (0x0B6E, "Intel(R) Data Center GPU Max 1100C", "pvc"),   # outside the 0x0BDx range
    (0xE20B, "Intel(R) Arc(TM) B580 Graphics", "bmg"),
    (0xE20C, "Intel(R) Arc(TM) B570 Graphics", "bmg"),
    (0xE211, "Intel(R) Arc(TM) Pro B60 Graphics", "bmg"),
    (0xE223, "Intel(R) Graphics", "bmg"),                    # G31
    (0x64A0, "Intel(R) Arc(TM) 140V GPU (16GB)", "lnl"),
    (0x6420, "Intel(R) Graphics", "lnl"),
    (0xB080, "Intel(R) Graphics", "ptl"),
    (0xB090, "Intel(R) Graphics", "ptl"),
    (0x56A0, "Intel(R) Arc(TM) A770 Graphics", "arc"),
    (0x5693, "Intel(R) Arc(TM) A370M Graphics", "arc"),
    (0x56C0, "Intel(R) Data Center GPU Flex 170", "arc"),
    (0x4F85, "Intel(R) Graphics", "arc"),                    # G12, outside the 0x56xx range
]


@pytest.mark.parametrize("dev_id,name,target", DEVICE_TABLE, ids=lambda v: f"{v:04x}" if isinstance(v, int) else None)
def test_detect_target_by_device_id(dev_id, name, target):
    assert D.detect_target("Intel(R) Graphics", dev_id) == target  # the id alone decides
    assert D.detect_target(f"Intel(R) Graphics [0x{dev_id:04x}]") == target  # as an unnamed device reports it
    if name != "Intel(R) Graphics":
        assert D.detect_target(name) == target  # dpctl reports the name only


@pytest.mark.parametrize("architecture,target", [
    ("intel_gpu_pvc", "pvc"), ("intel_gpu_bmg_g21", "bmg"), ("intel_gpu_bmg_g31", "bmg"), ("intel_gpu_lnl_m", "lnl"),
    ("intel_gpu_ptl_h", "ptl"), ("intel_gpu_dg2_g10", "arc"), ("bmg-g21-a0", "bmg"), ("lnl-m", "lnl"),
    ("acm-g10", "arc"),
])
def test_detect_target_by_architecture(architecture, target):
    assert D.detect_target("Intel(R) Graphics", None, architecture) == target


def test_unknown_gpu_names_closest_target():
    with pytest.raises(D.UnsupportedTargetError, match="not a supported target.*closest is 'arc'.*XETILE_TARGET=arc"):
        D.detect_target("Intel(R) Iris(R) Xe Graphics", 0x9A49)
    with pytest.raises(D.UnsupportedTargetError, match=r"\(device id 0x7d55\).*closest is 'arc'"):
        D.detect_target("Intel(R) Arc(TM) Graphics", 0x7D55)   # Meteor Lake Xe-LPG
    with pytest.raises(D.UnsupportedTargetError, match="closest is 'ptl'"):
        D.detect_target("Intel(R) Graphics", 0xD740, "intel_gpu_nvl_s")
    dev = D._make_device("Intel(R) UHD Graphics 770", "dpctl", "level_zero", "gpu", 0, None)
    assert "unsupported" in dev.describe() and "closest is 'arc'" in dev.describe()
    with pytest.raises(D.UnsupportedTargetError, match="closest is 'arc'"):
        dev.target_name


@pytest.mark.parametrize("override", ["pvc", "bmg", "lnl", "arc"])
def test_target_override(monkeypatch, override):
    monkeypatch.setenv("XETILE_TARGET", override)
    assert D._make_device("Intel(R) UHD Graphics 770", "dpctl", "level_zero", "gpu", 0, None).target_name == override
    assert D._make_device("Intel(R) Arc(TM) B580 Graphics", "dpctl", "level_zero", "gpu", 0, None,
                          0xE20B).target_name == override


def test_bad_target_override_says_what_is_legal(monkeypatch):
    monkeypatch.setenv("XETILE_TARGET", "battlemage")
    dev = D._make_device("Intel(R) Arc(TM) B580 Graphics", "dpctl", "level_zero", "gpu", 0, None, 0xE20B)
    with pytest.raises(D.DeviceError, match="XETILE_TARGET='battlemage' is not a GPU target; use one of pvc, bmg"):
        dev.target_name


def test_missing_dpctl_is_reported_and_pyopencl_used(monkeypatch):
    def no_dpctl(platform, kind):
        raise ImportError("No module named 'dpctl'")

    monkeypatch.setitem(D._FINDERS, "dpctl", no_dpctl)
    report = D.list_devices()
    assert any("dpctl not importable (No module named 'dpctl')" in m for m in report.missing)
    assert D.get_device("opencl:cpu").backend == "pyopencl"
