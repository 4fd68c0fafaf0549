"""Launching hand-written SPIR-V kernels through dpctl and pyopencl, and bad arguments."""
import ctypes

import ml_dtypes
import numpy as np
import pytest

from spirv_kernels import AXPY2D, FILL3D, build_spirv
from xetile_dsl.runtime.abi import ArrayParam, KernelABI, ScalarParam
from xetile_dsl.runtime.devices import get_device
from xetile_dsl.errors import BuildError, LaunchError
from xetile_dsl.runtime.launchers import Launcher
from xetile_dsl.runtime.loaded_kernel import LoadedKernel

BACKENDS = ["dpctl", "pyopencl"]
FILL_ABI = KernelABI("fill3d", (ArrayParam("out", "i32", 3),), workgroup_size=16, pitch_align_bytes=64)
AXPY_ABI = KernelABI("axpy2d", (ArrayParam("x", "f32", 2, written=False), ArrayParam("y", "f32", 2),
                                ScalarParam("alpha", "f32"), ScalarParam("beta", "i32")),
                     workgroup_size=8, pitch_align_bytes=16, min_width_bytes=16)


@pytest.fixture(scope="module", params=BACKENDS)
def launcher(request):
    return Launcher(get_device("opencl:cpu", request.param))


def _expected_fill(shape, pitch):
    s1, s0 = pitch, shape[1] * pitch
    z, r, c = np.indices(shape)
    return (z * s0 + r * s1 + c).astype(np.int32)


#: (cols, pitch alignment, the pitch the launcher lays the [2, 3, cols] i32 array out with):
#: rows padded to the alignment, then (an N-D array read with 2D blocks) until a 3-row
#: slice is a multiple of 64 bytes: 80-byte rows become 128, 20-byte ones 64
@pytest.mark.parametrize("cols,align,pitch", [(20, 64, 32), (20, 16, 32), (5, 16, 16), (16, 1, 16)])
def test_fill3d_padded_pitch(launcher, cols, align, pitch):
    abi = KernelABI("fill3d", FILL_ABI.params, workgroup_size=16, pitch_align_bytes=align)
    kernel = launcher.build(build_spirv(FILL3D), abi)
    out = np.full((2, 3, cols), -1, np.int32)
    kernel((-(-cols // 16), 3, 2), [out])
    np.testing.assert_array_equal(out, _expected_fill(out.shape, pitch))


def test_axpy_scalars_and_read_only_input(launcher):
    kernel = launcher.build(build_spirv(AXPY2D), AXPY_ABI)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 13)).astype(np.float32)
    x.flags.writeable = False                     # never written: read-only is fine
    y = rng.standard_normal((5, 13)).astype(np.float32)
    expected = 2.5 * x + y + 3
    kernel((2, 5), [x, y, 2.5, 3])
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_prepared_launch_and_bare_submit(launcher):
    kernel = launcher.build(build_spirv(AXPY2D), AXPY_ABI)
    x = np.ones((4, 8), np.float32)
    y = np.zeros((4, 8), np.float32)
    launch = kernel.prepare((1, 4), [x, y, 1.0, 0])
    kernel.bare_submit(launch)
    launch.submit()
    if launcher.device.backend == "dpctl":      # the raw dpctl call a benchmark would time
        kernel.queue.submit(kernel.native_kernel, launch.native_args, launch.global_size, launch.local_size)
    launch.finish()
    runs = 3 if launcher.device.backend == "dpctl" else 2
    np.testing.assert_array_equal(y, np.full((4, 8), runs, np.float32))


def test_build_checks_abi_against_spirv(launcher):
    bad = KernelABI("fill3d", (ArrayParam("out", "i32", 2),))
    with pytest.raises(BuildError, match="takes 6 SPIR-V arguments but its ABI describes 4"):
        launcher.build(build_spirv(FILL3D), bad)
    with pytest.raises(BuildError, match="bad magic"):
        launcher.build(b"not spirv", FILL_ABI)
    with pytest.raises(BuildError, match="no kernel named 'nope'|nope"):
        launcher.build(build_spirv(FILL3D), KernelABI("nope", FILL_ABI.params))
    with pytest.raises(BuildError, match="needs 100000 work items per workgroup.*at most"):
        launcher.build(build_spirv(FILL3D), KernelABI("fill3d", FILL_ABI.params, workgroup_size=100000))


def test_get_launcher_is_shared():
    from xetile_dsl.runtime.launchers import get_launcher

    dev = get_device("opencl:cpu", "dpctl")
    assert get_launcher(dev) is get_launcher(dev) and get_launcher(dev).device == dev


# --- bad arguments: rejected before anything reaches the device ---------------------------

class _NoDevice:
    """A backend that fails the test if it is ever used."""

    reverse_ranges = False
    queue = None
    native_scalar = None          # how arguments are passed: set-up, not a device use
    native_int = int

    @staticmethod
    def typed(kernel, dtypes):
        assert kernel is None

    def __getattr__(self, name):
        raise AssertionError(f"device touched: {name}")


ALL_ABI = KernelABI("k", (ArrayParam("a", "f32", 2), ArrayParam("b", "bf16", 2, written=True),
                          ScalarParam("n", "i32"), ScalarParam("s", "f16"), ScalarParam("u", "u8")),
                    workgroup_size=16, pitch_align_bytes=16, min_width_bytes=64)


def _good():
    return [np.zeros((4, 16), np.float32), np.zeros((4, 32), ml_dtypes.bfloat16), 7, 0.5, 255]


def _kernel():
    return LoadedKernel(_NoDevice(), None, ALL_ABI)


def _with(i, value):
    args = _good()
    args[i] = value
    return args


ro = np.zeros((4, 16), np.float32)
ro.flags.writeable = False
BAD_ARGS = [
    ("count", _good()[:3], r"kernel 'k' takes 5 argument\(s\) \(a, b, n, s, u\), got 3"),
    ("not array", _with(0, [[1.0] * 16] * 4), r"argument 0 \('a'\): expected a numpy array, a dpnp/USM array or a pyopencl array of f32 .* got list"),
    ("dtype", _with(0, np.zeros((4, 16), np.float64)), r"argument 0 \('a'\): expected dtype f32 \(numpy.float32\), got float64"),
    ("bf16 dtype", _with(1, np.zeros((4, 32), np.float16)), r"argument 1 \('b'\): expected dtype bf16 \(ml_dtypes.bfloat16\), got float16"),
    ("rank", _with(0, np.zeros((4, 4, 16), np.float32)), r"argument 0 \('a'\): expected 2 dimension\(s\), got 3 \(shape \(4, 4, 16\)\)"),
    ("contiguity", _with(0, np.zeros((4, 32), np.float32)[:, ::2]), r"argument 0 \('a'\): expected a C-contiguous array.*ascontiguousarray"),
    ("read-only output", _with(0, ro), r"argument 0 \('a'\): the kernel writes this array but it is read-only"),
    ("narrow rows", _with(1, np.zeros((4, 8), ml_dtypes.bfloat16)),
     r"argument 1 \('b'\): rows are 16 bytes wide \(8 x bf16\); .* at least 64 bytes \(32 elements\)"),
    ("int scalar given float", _with(2, 7.0), r"argument 2 \('n'\): expected a Python int for i32, got float"),
    ("int scalar given str", _with(2, "7"), r"argument 2 \('n'\): expected a Python int for i32, got str"),
    ("int range", _with(2, 2**31), r"argument 2 \('n'\): value 2147483648 is out of range for i32 \[-2147483648, 2147483647\]"),
    ("unsigned range", _with(4, -1), r"argument 4 \('u'\): value -1 is out of range for u8 \[0, 255\]"),
    ("float scalar given str", _with(3, "x"), r"argument 3 \('s'\): expected a Python float for f16, got str"),
    ("float range", _with(3, 1e6), r"argument 3 \('s'\): value 1000000.0 is out of range for f16 \(max 65504\)"),
    ("args not a list", "abc", r"args must be a list, got str"),
]


@pytest.mark.parametrize("case,args,message", BAD_ARGS, ids=[c[0] for c in BAD_ARGS])
def test_bad_arguments(case, args, message):
    with pytest.raises(LaunchError, match=message):
        _kernel()((1,), args)


BAD_GRIDS = [
    ((0,), r"grid\[0\] must be a positive int, got 0"),
    ((2, -1), r"grid\[1\] must be a positive int, got -1"),
    ((1, 1, 1, 1), r"grid must have 1 to 3 dimensions, got 4"),
    ((), r"grid must have 1 to 3 dimensions, got 0"),
    ((1.5,), r"grid\[0\] must be a positive int, got float \(1.5\)"),
    ((True,), r"grid\[0\] must be a positive int, got bool"),
    ("12", r"grid must be a tuple of 1 to 3 positive ints, got str"),
]


@pytest.mark.parametrize("grid,message", BAD_GRIDS, ids=[str(g[0]) for g in BAD_GRIDS])
def test_bad_grid(grid, message):
    with pytest.raises(LaunchError, match=message):
        _kernel()(grid, _good())


def test_good_arguments_convert():
    grid, conv = _kernel().check(3, _good())
    assert grid == (3, 1, 1)
    assert isinstance(conv[2], ctypes.c_int32) and conv[2].value == 7
    assert conv[3].value == int(np.array(0.5, np.float16).view(np.uint16))
    assert isinstance(conv[4], ctypes.c_uint8) and conv[4].value == 255


def test_float_inf_nan_pass_and_int_accepted_for_float():
    kernel = _kernel()
    kernel.check((1,), _with(3, float("inf")))
    kernel.check((1,), _with(3, 2))


def test_repeated_calls_reuse_and_resize_buffers(launcher):
    kernel = launcher.build(build_spirv(FILL3D), FILL_ABI)
    for shape in [(1, 2, 20), (1, 2, 20), (3, 4, 40), (1, 2, 20)]:
        out = np.full(shape, -1, np.int32)
        kernel((-(-shape[2] // 16), shape[1], shape[0]), [out])
        pitch = -(-shape[2] * 4 // 64) * 16
        np.testing.assert_array_equal(out, _expected_fill(shape, pitch))
