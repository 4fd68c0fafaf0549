"""``xd.device_properties()``: the target table's facts, the CPU device reporting the
emulated GPU's, a GPU runtime's answers winning, and Triton's key names."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import xetile_dsl as xd
from xetile_dsl.errors import UsageError
from xetile_dsl.runtime.device_properties import ALIASES, _from_runtime
from xetile_dsl.targets import TARGETS


@pytest.mark.parametrize("name", list(TARGETS))
def test_a_targets_properties_are_its_table_facts(name):
    gpu = TARGETS[name]
    props = xd.device_properties(target=name)
    assert (props.target, props.device, props.emulated, props.source) == (name, None, False, "target")
    assert props.subgroup_size == gpu.subgroup_size and props.subgroup_sizes == (gpu.subgroup_size,)
    assert props.xe_cores == gpu.xe_cores > 0
    assert props.eu_count == gpu.xe_cores * gpu.eus_per_xe_core
    assert props.slm_bytes == gpu.slm_bytes and props.max_workgroup_size == gpu.max_workgroup_size
    assert props.max_subgroups == gpu.max_workgroup_size // gpu.subgroup_size


@pytest.mark.parametrize("flavour", ["pvc", "arc"])
def test_the_cpu_device_reports_the_emulated_target(flavour, monkeypatch):
    monkeypatch.setenv("XETILE_CPU_FLAVOUR", flavour)
    props = xd.device_properties("opencl:cpu")
    assert props.emulated and props.target == f"cpu-{flavour}" and props.device
    assert props.xe_cores == TARGETS[flavour].xe_cores and props.subgroup_size == TARGETS[flavour].subgroup_size


def test_triton_names_and_a_dict():
    props = xd.device_properties(target="cpu-arc")
    assert props.emulated
    assert props["multiprocessor_count"] == props.xe_cores == 32
    assert props["max_shared_mem"] == props.slm_bytes == 64 * 1024
    assert props["warp_size"] == 8 and props["max_num_sub_groups"] == 128
    assert set(ALIASES.values()) <= set(props.keys())
    assert props.as_dict()["eus_per_xe_core"] == 16
    with pytest.raises(KeyError, match=r"'sm_count': the device properties are target, device"):
        props["sm_count"]
    with pytest.raises(UsageError, match="not both"):
        xd.device_properties("opencl:cpu", target="pvc")


def test_a_gpu_runtimes_answers_win():
    table = xd.device_properties(target="bmg")
    native = SimpleNamespace(max_compute_units=144, local_mem_size=65536, max_work_group_size=2048,
                             sub_group_sizes=[32, 16])
    props = _from_runtime(table, native)
    assert props.source == "runtime" and props.eu_count == 144 and props.xe_cores == 18   # a B570
    assert props.slm_bytes == 65536 and props.subgroup_sizes == (16, 32)
    assert props.max_workgroup_size == 1024 and props.max_subgroups == 64   # never past the target's
    assert props.subgroup_size == 16                                          # the compiled size
    assert _from_runtime(table, SimpleNamespace()) == table
