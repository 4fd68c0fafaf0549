"""xetile_dsl.runtime: launching built programs (it knows no IR).

One module per job: :mod:`.launchers` builds SPIR-V for a device (``Launcher``, one
shared per device or queue context) through a backend, the only code that touches a
device (:mod:`.backend_dpctl`, :mod:`.backend_pyopencl`); :mod:`.loaded_kernel` launches
a built kernel, after :mod:`.arguments` checked and marshalled its arguments and
:mod:`.grids` its grid; :mod:`.inflight` keeps asynchronous launches until they end.
:mod:`.cache` stores compiled kernels on disk under the key :mod:`.cache_key` composes,
:mod:`.program_cache` the built program binaries.
"""
