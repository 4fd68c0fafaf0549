"""The latency a user feels, each number against a baseline measured in the same run.

    python benchmarks/latency.py [--json] [--compiles 200] [--launches 2000] [--rounds 5]

* **import**: ``import xetile_dsl`` in a fresh process (in-process time), against ``import numpy``.
* **compile**: cold compile of the README GEMM and the RFC 2.1 GEMM (per stage, median over
  ``--compile-reps`` in one process that has compiled other kernels before), and how many
  of ``--compiles`` compiles of different kernels in one process had to emit SPIR-V again
  in a new process (the LLVM 22 backend's duplicate-id bug).
* **first launch**: a fresh process imports xetile_dsl and launches the README GEMM once:
  cold (empty cache), warm (cache filled by the cold run), and warm with the program-binary
  cache off (``XETILE_PROGRAM_CACHE=0``: what a warm process did before it existed).  Timed
  from ``import`` returning to the result being back (the issue's "above import"), against a
  bare process that does the runtime's part of that with dpctl alone (the floor: dpctl's
  import, device discovery, queue, program from binary, copies, submit), in wall time and in
  the launching thread's CPU time.
* **per launch**: one small GEMM launched ``--launches`` times, against a bare submit of the
  same program and arguments on the same queue: dpnp with the same arguments, dpnp with a
  scalar changing every launch (each bare submit waiting for the one before, as every
  launch of ours on a dpnp queue does: dpnp's queues are out of order; also against bare
  submits that do not wait, which is not like for like; and against a bare call of
  dpctl's C ``DPCTLQueue_SubmitNDRange`` through ctypes with the argument arrays built
  once, the floor under dpctl's Python submit), numpy arrays (against a
  bare launch doing the same copies), pyopencl arrays (against setting the arguments and
  enqueueing).

Rounds of a launch path and its baseline alternate, so load on the machine hits both.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler
from xetile_dsl.codegen.spirv import translate as spirv_emit
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
README_CONST = {"BM": 32, "BN": 32, "BK": 16}
RFC21_CONST = {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4, "PF": 2, "ACC": xt.float32}


# --- fresh processes ------------------------------------------------------------------------

def _child(code: str, env: dict | None = None, argv: list | None = None) -> dict:
    """Run ``code`` in a new Python process; its last output line is a JSON dict."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    full_env.update(env or {})
    # in ROOT: ``python -c`` puts the working directory first on sys.path, so a run from
    # another checkout would otherwise time that checkout's xetile_dsl
    proc = subprocess.run([sys.executable, "-c", code, *(argv or [])], capture_output=True, text=True, env=full_env,
                          cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def import_times(reps: int) -> dict:
    """Median in-process import time of numpy and of xetile_dsl, each in fresh processes;
    also xetile_dsl with Python's bytecode cache on (as an installed package has it: a
    ``PYTHONDONTWRITEBYTECODE=1`` environment compiles every source file at each import)."""
    code = "import json, time; t = time.perf_counter(); import {}; print(json.dumps(time.perf_counter() - t))"
    out = {}
    for module in ("numpy", "xetile_dsl"):
        samples = [_child(code.format(module)) for _ in range(reps)]
        out[module] = statistics.median(samples)
    with tempfile.TemporaryDirectory(prefix="xetile-pyc-") as pyc:
        env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": pyc}
        _child(code.format("xetile_dsl"), env)                 # writes the bytecode
        out["xetile_dsl_bytecode_cached"] = statistics.median(_child(code.format("xetile_dsl"), env)
                                                              for _ in range(reps))
    return out


_FIRST_LAUNCH = textwrap.dedent("""
    import json, time
    t0, c0 = time.perf_counter(), time.process_time()
    import numpy as np
    import xetile_dsl as xd
    from xetile_dsl.kernels.matmul import matmul_kernel
    t1, c1, m1 = time.perf_counter(), time.process_time(), time.thread_time()
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (64, 48)).astype(np.float16)
    b = rng.integers(-2, 3, (48, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    matmul_kernel[(2, 2)](a, b, c, 48, BM=32, BN=32, BK=16)
    t2, c2, m2 = time.perf_counter(), time.process_time(), time.thread_time()
    exact = bool(np.array_equal(c, a.astype(np.float32) @ b.astype(np.float32)))
    from xetile_dsl import compiler
    from xetile_dsl.runtime import program_cache
    out = {"import": t1 - t0, "first_launch": t2 - t1, "first_launch_cpu": c2 - c1, "first_launch_thread_cpu": m2 - m1, "exact": exact, "compiles": compiler.stats["compiles"],
           "programs": program_cache.stats}
    if len(sys.argv) > 1:          # what the bare launch of the same program needs (after the clock)
        loaded, grid3, runtime = matmul_kernel.resolve((2, 2), None, (a, b, c, 48), dict(BM=32, BN=32, BK=16))
        prep = loaded.prepare(grid3, runtime)
        out["bare"] = {"kernel": loaded.abi.kernel_name, "global": list(prep.global_size),
                       "local": list(prep.local_size),
                       "args": [[type(x).__name__, getattr(x, "value", None)] for x in prep.native_args]}
    print(json.dumps(out))
""").replace("import json, time", "import json, sys, time", 1)

_BARE_FIRST_LAUNCH = textwrap.dedent("""
    import glob, json, os, sys, time
    t0, c0 = time.perf_counter(), time.process_time()
    import numpy as np
    from xetile_dsl.runtime.opencl_programs import native_builder
    t1, c1, m1 = time.perf_counter(), time.process_time(), time.thread_time()
    info = json.loads(sys.argv[1])
    import ctypes
    import dpctl
    import dpctl.memory
    queue = dpctl.SyclQueue("opencl:cpu")
    (entry,) = [os.path.dirname(p) for p in glob.glob(os.path.join(info["cache"], "*", "program.bin"))]
    with open(os.path.join(entry, "program.json")) as f:
        options = json.load(f)["options"]
    with open(os.path.join(entry, "program.bin"), "rb") as f:
        program = native_builder(queue).from_binary(f.read(), options)
    kernel = program.get_sycl_kernel(info["kernel"])
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (64, 48)).astype(np.float16)
    b = rng.integers(-2, 3, (48, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    host = [x.reshape(-1).view(np.uint8) for x in (a, b, c)]
    bufs = [dpctl.memory.MemoryUSMDevice(h.nbytes, queue=queue) for h in host]
    for buf, h in zip(bufs, host):
        buf.copy_from_host(h)
    arrays, args = iter(bufs), []
    for kind, value in info["args"]:
        args.append(getattr(ctypes, kind)(value) if kind.startswith("c_") else next(arrays))
    queue.submit(kernel, args, info["global"], info["local"]).wait()
    bufs[2].copy_to_host(host[2])
    t2, c2, m2 = time.perf_counter(), time.process_time(), time.thread_time()
    exact = bool(np.array_equal(c, a.astype(np.float32) @ b.astype(np.float32)))
    print(json.dumps({"import": t1 - t0, "first_launch": t2 - t1, "first_launch_cpu": c2 - c1, "first_launch_thread_cpu": m2 - m1, "exact": exact}))
""")


def first_launches(warm_reps: int) -> dict:
    """Cold, warm and warm-without-program-binaries first launches of the README GEMM, and
    the bare baseline: a fresh process that loads the same program binary with dpctl
    (queue, program from binary, USM copies, submit, wait, copy back) -- what the runtime
    itself costs; "above bare" is ours minus that.  Warm runs also with Python's bytecode
    cached (``PYTHONDONTWRITEBYTECODE=1`` compiles every imported source file in each
    process; an installed package has its .pyc files)."""
    with tempfile.TemporaryDirectory(prefix="xetile-latency-") as cache, \
            tempfile.TemporaryDirectory(prefix="xetile-pyc-") as pyc:
        env = {"XETILE_CACHE_DIR": cache}
        pyc_env = dict(env, PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=pyc)
        cold = _child(_FIRST_LAUNCH, env, ["bare"])
        bare_info = json.dumps(dict(cold["bare"], cache=cache))
        _child(_FIRST_LAUNCH, pyc_env)                          # writes the bytecode
        warm, bare, warm_pyc, bare_pyc = [], [], [], []
        for _ in range(warm_reps):                              # alternating: load hits both alike
            warm.append(_child(_FIRST_LAUNCH, env))
            bare.append(_child(_BARE_FIRST_LAUNCH, env, [bare_info]))
            warm_pyc.append(_child(_FIRST_LAUNCH, pyc_env))
            bare_pyc.append(_child(_BARE_FIRST_LAUNCH, pyc_env, [bare_info]))
        no_binaries = [_child(_FIRST_LAUNCH, dict(env, XETILE_PROGRAM_CACHE="0")) for _ in range(warm_reps)]
    runs = [cold] + warm + bare + warm_pyc + bare_pyc + no_binaries
    if not all(r["exact"] for r in runs):
        raise RuntimeError("a first launch computed a wrong result")
    if any(r["compiles"] or r["programs"]["built"] for r in warm + warm_pyc):
        raise RuntimeError(f"a warm process compiled or built from SPIR-V: {warm + warm_pyc}")
    med = lambda runs, key: statistics.median(r[key] for r in runs)   # noqa: E731

    def above(ours, base, key="first_launch"):
        return statistics.median(w[key] - b[key] for w, b in zip(ours, base))
    return {"cold_s": cold["first_launch"], "warm_s": med(warm, "first_launch"),
            "warm_range_s": [min(r["first_launch"] for r in warm), max(r["first_launch"] for r in warm)],
            "warm_import_s": med(warm, "import"), "bare_s": med(bare, "first_launch"),
            "warm_above_bare_s": above(warm, bare),
            "warm_bytecode_cached_s": med(warm_pyc, "first_launch"),
            "bare_bytecode_cached_s": med(bare_pyc, "first_launch"),
            "warm_above_bare_bytecode_cached_s": above(warm_pyc, bare_pyc),
            # CPU time of the launching thread: what load from other processes inflates less
            "warm_bytecode_cached_cpu_s": med(warm_pyc, "first_launch_thread_cpu"),
            "bare_bytecode_cached_cpu_s": med(bare_pyc, "first_launch_thread_cpu"),
            "warm_above_bare_bytecode_cached_cpu_s": above(warm_pyc, bare_pyc, "first_launch_thread_cpu"),
            "warm_no_binary_cache_s": med(no_binaries, "first_launch")}


# --- compiles ---------------------------------------------------------------------------------

def _emission_counters() -> dict:
    """The emitter's counters; an older emitter without them is wrapped to count re-emissions."""
    if not hasattr(spirv_emit, "stats"):
        spirv_emit.stats = {"reemitted": 0}
        original = spirv_emit._emit_in_subprocess

        def counted(text):
            spirv_emit.stats["reemitted"] += 1
            return original(text)
        spirv_emit._emit_in_subprocess = counted
    return spirv_emit.stats


@xd.jit
def _scaled(x, y, BM: xt.constexpr, BN: xt.constexpr, S: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BN]))
    xt.store_tile(v * S + 1.0, xt.init_tile(y, [xt.program_id(0) * BM, 0], [BM, BN]))


def _kernel_variants(count: int):
    """``count`` different kernels: GEMM tile shapes and targets, then element-wise variants."""
    gemms = [(matmul_kernel, README_SIG, {"BM": bm, "BN": bn, "BK": bk}, target)
             for target in ("cpu", "cpu-arc", "pvc", "arc") for bm in (8, 16, 32) for bn in (16, 32, 64)
             for bk in (16, 32)]
    scaled = [(_scaled, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": bm, "BN": 16, "S": float(s)}, target)
              for s in range(1, 1000) for bm in (8, 16) for target in ("cpu", "cpu-arc")]
    return (gemms + scaled)[:count]


def _compile(fn, sig, const, target):
    return compiler.compile_kernel(getattr(fn, "fn", fn), compiler.parse_signature(sig), const, target)


def compile_times(reps: int, different: int) -> dict:
    """Stage timings of the two GEMMs (median of ``reps``) and re-emissions over ``different``."""
    counters = _emission_counters()
    before = dict(counters)
    t0 = time.perf_counter()
    for fn, sig, const, target in _kernel_variants(different):
        _compile(fn, sig, const, target)
    many_s = time.perf_counter() - t0
    delta = {k: counters[k] - before.get(k, 0) for k in counters}
    out = {"different_kernels": different, "emissions": delta, "seconds_for_all": many_s}
    rfc_sig = dict(README_SIG)
    for name, fn, sig, const in (("readme_gemm", matmul_kernel, README_SIG, README_CONST),
                                 ("rfc21_gemm", gemm_wg_kernel, rfc_sig, RFC21_CONST)):
        totals, stages = [], {}
        for _ in range(reps):
            t = time.perf_counter()
            kernel = _compile(fn, sig, const, "cpu")
            totals.append(time.perf_counter() - t)
            for stage, seconds in kernel.timings.items():
                stages.setdefault(stage, []).append(seconds)
        out[name] = {"total_s": statistics.median(totals),
                     **{f"{stage}_s": statistics.median(v) for stage, v in stages.items()}}
    return out


# --- per-launch overhead ---------------------------------------------------------------------

def _alternate(ours, bare, rounds: int, launches: int, wait) -> dict:
    """Microseconds per launch of ``ours`` and ``bare`` (median over alternating rounds):
    elapsed, and the CPU time of the launching thread (``cpu``: what the Python side
    costs, which load from other processes on the machine inflates less)."""
    samples = {"ours": [], "bare": []}
    cpu = {"ours": [], "bare": []}
    for _ in range(rounds):
        for name, loop in (("bare", bare), ("ours", ours)):
            wait()
            t, c = time.perf_counter(), time.thread_time()
            loop(launches)
            wait()
            cpu[name].append((time.thread_time() - c) / launches * 1e6)
            samples[name].append((time.perf_counter() - t) / launches * 1e6)
    o, b = statistics.median(samples["ours"]), statistics.median(samples["bare"])
    oc, bc = statistics.median(cpu["ours"]), statistics.median(cpu["bare"])
    return {"ours_us": o, "bare_us": b, "ratio": o / b, "ours_cpu_us": oc, "bare_cpu_us": bc, "cpu_ratio": oc / bc}


def _with_unordered(ordered: dict, unordered: dict) -> dict:
    """The like-for-like row (bare submits ordered as ours are) with the unordered bare's
    time and our ratio to it, measured in its own alternating rounds."""
    return dict(ordered, bare_unordered_us=unordered["bare_us"], ratio_to_unordered=unordered["ratio"])


def _with_c_submit(row: dict, c_row: dict) -> dict:
    """``row`` with the bare C submit's time and our ratios to it, measured in its own
    alternating rounds."""
    return dict(row, bare_c_us=c_row["bare_us"], ratio_to_c=c_row["ratio"], bare_c_cpu_us=c_row["bare_cpu_us"],
                cpu_ratio_to_c=c_row["cpu_ratio"])


class _BareCSubmit:
    """The second bare baseline: dpctl's C ``DPCTLQueue_SubmitNDRange`` called through
    ctypes with the argument, type and range arrays built once (what the Python
    ``submit_async`` does after its per-argument type checks), each launch after the one
    before and its event wrapped as a ``SyclEvent`` (``SyclEvent(capsule)`` copies the
    reference, which is then deleted), as a launch of ours returns one."""

    def __init__(self, queue, kernel, args, gs, ls) -> None:
        import dpctl
        import dpctl._sycl_queue as sycl_queue
        import dpctl.memory

        lib = ctypes.PyDLL(os.path.join(os.path.dirname(dpctl.__file__), "libDPCTLSyclInterface.so"))  # GIL kept
        self.submit, self.delete = lib.DPCTLQueue_SubmitNDRange, lib.DPCTLEvent_Delete
        self.submit.restype, self.delete.restype = ctypes.c_void_p, None
        self.submit.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                                        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        self.delete.argtypes = [ctypes.c_void_p]
        self.capsule = ctypes.pythonapi.PyCapsule_New
        self.capsule.restype, self.capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self.event_type = dpctl.SyclEvent
        enum = sycl_queue.kernel_arg_type
        kinds = {ctypes.c_int32: enum.dpctl_int32, ctypes.c_int64: enum.dpctl_int64, ctypes.c_float: enum.dpctl_float32}
        self.args, self.types = (ctypes.c_void_p * len(args))(), (ctypes.c_int * len(args))()
        for i, arg in enumerate(args):
            if isinstance(arg, dpctl.memory._memory._Memory):
                self.args[i], self.types[i] = arg._pointer, enum.dpctl_void_ptr.value
            else:
                self.args[i], self.types[i] = ctypes.addressof(arg), kinds[arg.__class__].value
        self.kref, self.qref, self.nargs = kernel.addressof_ref(), queue.addressof_ref(), len(args)
        self.gs, self.ls, self.ndims = (ctypes.c_size_t * 3)(*gs), (ctypes.c_size_t * 3)(*ls), len(gs)
        self.deps = (ctypes.c_void_p * 1)()
        self.keep = args

    def _one(self, after):
        if after is not None:
            self.deps[0] = after.addressof_ref()
        ref = self.submit(self.kref, self.qref, self.args, self.types, self.nargs, self.gs, self.ls, self.ndims,
                          self.deps, 0 if after is None else 1)
        event = self.event_type(self.capsule(ref, b"SyclEventRef", None))
        self.delete(ref)
        return event

    def same(self, count: int) -> None:
        after = None
        for _ in range(count):
            after = self._one(after)

    def changing_last(self, count: int, values) -> None:
        """The last argument (an int32) alternating over ``values``."""
        scalars = [ctypes.c_int32(v) for v in values]
        slots, last, after = self.args, self.nargs - 1, None
        for i in range(count):
            slots[last] = ctypes.addressof(scalars[i & 1])
            after = self._one(after)


def _inputs(n: int):
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, (n, n)).astype(np.float16)
    b = rng.integers(-2, 3, (n, n)).astype(np.float16)
    return a, b, a.astype(np.float32) @ b.astype(np.float32)


def launch_overheads(rounds: int, launches: int) -> dict:
    import dpctl
    import dpnp

    n, grid, const = 32, (1, 1), README_CONST
    a, b, expected = _inputs(n)
    queue = dpctl.SyclQueue("opencl:cpu")
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((n, n), dtype=np.float32, sycl_queue=queue)
    launch = matmul_kernel[grid]
    launch(da, db, dc, n, **const)
    xd.synchronize()
    assert np.array_equal(dpnp.asnumpy(dc), expected), "dpnp launch is wrong"
    loaded, grid3, runtime = matmul_kernel.resolve(grid, None, (da, db, dc, n), const)
    prep = loaded.prepare(grid3, runtime)
    kernel, args, gs, ls = loaded.native_kernel, list(prep.native_args), prep.global_size, prep.local_size
    out = {}

    # The baselines submit the same program, arguments (the same ctypes kinds) and ranges on
    # the same queue, each launch after the one before (``depends``): dpnp's queues are out
    # of order and our launches are ordered (the next launch on the queue waits for this
    # one), so a bare submit that does not wait is not like for like; it is measured too
    # ("unordered").
    def bare_same(count):
        submit, after = queue.submit_async, []
        for _ in range(count):
            after = [submit(kernel, args, gs, ls, after)]

    def bare_same_unordered(count):
        submit = queue.submit_async
        for _ in range(count):
            submit(kernel, args, gs, ls)

    def ours_same(count):
        for _ in range(count):
            launch(da, db, dc, n, **const)

    c_submit = _BareCSubmit(queue, kernel, args, gs, ls)
    out["dpnp_same_args"] = _with_c_submit(
        _with_unordered(_alternate(ours_same, bare_same, rounds, launches, queue.wait),
                        _alternate(ours_same, bare_same_unordered, rounds, launches, queue.wait)),
        _alternate(ours_same, c_submit.same, rounds, launches, queue.wait))
    ks = (16, 32)

    def bare_scalar(count):
        submit, varying, after = queue.submit_async, list(args), []
        for i in range(count):
            varying[-1] = ctypes.c_int32(ks[i & 1])
            after = [submit(kernel, varying, gs, ls, after)]

    def bare_scalar_unordered(count):
        submit, varying = queue.submit_async, list(args)
        for i in range(count):
            varying[-1] = ctypes.c_int32(ks[i & 1])
            submit(kernel, varying, gs, ls)

    def ours_scalar(count):
        for i in range(count):
            launch(da, db, dc, ks[i & 1], **const)

    out["dpnp_changing_scalar"] = _with_c_submit(_with_unordered(
        _alternate(ours_scalar, bare_scalar, rounds, launches, queue.wait),
        _alternate(ours_scalar, bare_scalar_unordered, rounds, launches, queue.wait)),
        _alternate(ours_scalar, lambda count: c_submit.changing_last(count, ks), rounds, launches, queue.wait))
    out["numpy"] = _numpy_overhead(a, b, expected, rounds, max(launches // 10, 50))
    out["pyopencl"] = _pyopencl_overhead(a, b, expected, rounds, launches)
    return out


def _numpy_overhead(a, b, expected, rounds, launches) -> dict:
    """numpy arrays: ours copies in, launches, waits, copies back; so does the baseline, with
    the same program on the same queue (the default device's, which our numpy launch uses)."""
    import dpctl.memory

    n, grid, const = a.shape[0], (1, 1), README_CONST
    c = np.zeros((n, n), np.float32)
    launch = matmul_kernel[grid]
    launch(a, b, c, n, **const)
    assert np.array_equal(c, expected), "numpy launch is wrong"
    # the program and queue our numpy launch uses (the default device's), not the dpnp ones
    loaded = matmul_kernel.resolve(grid, None, (a, b, c, n), const)[0]
    queue = loaded.queue
    bufs = [dpctl.memory.MemoryUSMDevice(x.nbytes, queue=queue) for x in (a, b, c)]
    i64 = ctypes.c_int64
    args = [bufs[0], i64(n), i64(n), i64(n), bufs[1], i64(n), i64(n), i64(n), bufs[2], i64(n), i64(n), i64(n),
            ctypes.c_int32(n)]
    prep = loaded.prepare(grid, [a, b, c, n])
    gs, ls = prep.global_size, prep.local_size
    host = [x.reshape(-1).view(np.uint8) for x in (a, b, c)]

    def bare(count):
        for _ in range(count):
            for buf, h in zip(bufs, host):
                buf.copy_from_host(h)
            queue.submit(loaded.native_kernel, args, gs, ls).wait()
            bufs[2].copy_to_host(host[2])

    def ours(count):
        for _ in range(count):
            launch(a, b, c, n, **const)

    return _alternate(ours, bare, rounds, launches, queue.wait)


def _pyopencl_overhead(a, b, expected, rounds, launches) -> dict:
    """pyopencl arrays: ours against setting every argument and enqueueing."""
    import pyopencl as cl
    import pyopencl.array as cla

    platform = next(p for p in cl.get_platforms() if p.get_devices(device_type=cl.device_type.CPU))
    ctx = cl.Context(devices=platform.get_devices(device_type=cl.device_type.CPU)[:1])
    queue = cl.CommandQueue(ctx)
    n, grid, const = a.shape[0], (1, 1), README_CONST
    ca, cb = cla.to_device(queue, a), cla.to_device(queue, b)
    cc = cla.zeros(queue, (n, n), np.float32)
    launch = matmul_kernel[grid]
    launch(ca, cb, cc, n, **const)
    queue.finish()
    assert np.array_equal(cc.get(), expected), "pyopencl launch is wrong"
    loaded, grid3, runtime = matmul_kernel.resolve(grid, None, (ca, cb, cc, n), const)
    prep = loaded.prepare(grid3, runtime)
    kernel, args, gs, ls = loaded.native_kernel, list(prep.native_args), prep.global_size, prep.local_size

    def bare(count):
        enqueue = cl.enqueue_nd_range_kernel
        for _ in range(count):
            kernel.set_args(*args)
            enqueue(queue, kernel, gs, ls)

    def ours(count):
        for _ in range(count):
            launch(ca, cb, cc, n, **const)

    return _alternate(ours, bare, rounds, launches, queue.finish)


# --- report -------------------------------------------------------------------------------------

def _print(report: dict) -> None:
    if "import" in report:
        _print_import(report["import"])
    if "first_launch" in report:
        _print_first_launch(report["first_launch"])
    if "compile" in report:
        _print_compile(report["compile"])
    for name, row in report.get("launch", {}).items():
        print(f"launch {name:<20} {row['ours_us']:8.1f} us   bare {row['bare_us']:.1f} us, "
              f"ratio {row['ratio']:.2f}x (goal <= 1.3x); launching thread's CPU {row['ours_cpu_us']:.1f} us, "
              f"bare {row['bare_cpu_us']:.1f} us, {row['cpu_ratio']:.2f}x")
        if "bare_c_us" in row:
            print(f"  bare C submit (ctypes DPCTLQueue_SubmitNDRange, arrays built once) {row['bare_c_us']:.1f} us, "
                  f"ratio {row['ratio_to_c']:.2f}x; its launching thread's CPU {row['bare_c_cpu_us']:.1f} us, "
                  f"{row['cpu_ratio_to_c']:.2f}x")
        if "bare_unordered_us" in row:
            print(f"  bare submits not waiting for the one before {row['bare_unordered_us']:.1f} us, "
                  f"ratio {row['ratio_to_unordered']:.2f}x (not like for like: our launches are ordered)")


def _print_import(imp: dict) -> None:
    print(f"import xetile_dsl          {imp['xetile_dsl'] * 1e3:8.1f} ms   (import numpy {imp['numpy'] * 1e3:.1f} ms, "
          f"ratio {imp['xetile_dsl'] / imp['numpy']:.2f}x; goal <= 250 ms)")
    print(f"  with bytecode cached     {imp['xetile_dsl_bytecode_cached'] * 1e3:8.1f} ms   (as installed: .pyc files)")


def _print_first_launch(first: dict) -> None:
    """"First launch" is the time from ``import`` returning to the kernel's results being
    back: the issue's "above import".  Its 50 ms goal is read against the bare baseline,
    because the runtime's own part of a first launch (dpctl's import, device discovery,
    queue, program from binary, copies, submit: the bare process) alone takes more."""
    print(f"first launch, cold         {first['cold_s'] * 1e3:8.1f} ms   (fresh process, empty cache)")
    print(f"first launch, warm         {first['warm_s'] * 1e3:8.1f} ms   (1/{first['cold_s'] / first['warm_s']:.0f} "
          f"of cold, range {first['warm_range_s'][0] * 1e3:.0f}-{first['warm_range_s'][1] * 1e3:.0f} ms, after "
          f"import; goal <= 1/20 and <= 50 ms above bare)")
    above = first["warm_above_bare_s"] * 1e3
    print(f"  bare dpctl from binary   {first['bare_s'] * 1e3:8.1f} ms   (ours {above:+.1f} ms above it: dpctl import, "
          f"queue, program from binary, copies, submit)")
    above = first["warm_above_bare_bytecode_cached_s"] * 1e3
    print(f"  with bytecode cached     {first['warm_bytecode_cached_s'] * 1e3:8.1f} ms   (bare "
          f"{first['bare_bytecode_cached_s'] * 1e3:.1f} ms, ours {above:+.1f} ms above it; as installed: .pyc files)")
    if "warm_bytecode_cached_cpu_s" in first:
        print(f"    launching thread's CPU {first['warm_bytecode_cached_cpu_s'] * 1e3:8.1f} ms   (bare "
              f"{first['bare_bytecode_cached_cpu_s'] * 1e3:.1f} ms, ours "
              f"{first['warm_above_bare_bytecode_cached_cpu_s'] * 1e3:+.1f} ms above it)")
    print(f"  without program binaries {first['warm_no_binary_cache_s'] * 1e3:8.1f} ms   (XETILE_PROGRAM_CACHE=0)")


def _print_compile(comp: dict) -> None:
    for name in ("readme_gemm", "rfc21_gemm"):
        stages = ", ".join(f"{k[:-2]} {v * 1e3:.0f} ms" for k, v in comp[name].items() if k != "total_s")
        print(f"compile {name:<18} {comp[name]['total_s'] * 1e3:8.1f} ms   ({stages})")
    em = comp["emissions"]
    print(f"{comp['different_kernels']} different compiles   re-emitted in a new process: {em.get('reemitted', 0)} "
          f"(emissions {json.dumps(em)})")


SECTIONS = ("import", "first_launch", "compile", "launch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--compiles", type=int, default=200, help="different kernels compiled in one process")
    ap.add_argument("--compile-reps", type=int, default=5)
    ap.add_argument("--launches", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--process-reps", type=int, default=3, help="fresh processes per import / warm launch")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), help="measure only these parts")
    opts = ap.parse_args()
    measure = {"import": lambda: import_times(opts.process_reps),
               "first_launch": lambda: first_launches(opts.process_reps),
               "compile": lambda: compile_times(opts.compile_reps, opts.compiles),
               "launch": lambda: launch_overheads(opts.rounds, opts.launches)}
    report = {name: measure[name]() for name in SECTIONS if name in opts.only}
    if opts.json:
        print(json.dumps(report, indent=1))
    else:
        _print(report)


if __name__ == "__main__":
    main()
