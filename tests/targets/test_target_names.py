"""Target names: the launch path tells an NVIDIA target from an Intel one by its name's
``sm`` prefix without importing the NVIDIA table (jit._nv_target), so the prefix must
separate the two tables."""
from xetile_dsl.interpreter import INTERPRETER_TARGETS
from xetile_dsl.targets import TARGETS
from xetile_dsl.targets.nvidia import NV_TARGETS


def test_nvidia_names_and_only_they_start_with_sm():
    assert NV_TARGETS and all(name.startswith("sm") for name in NV_TARGETS)
    intel = [*TARGETS, *INTERPRETER_TARGETS, "cpu", "cpu-pvc", "cpu-arc"]
    assert not [name for name in intel if name.startswith("sm")]
