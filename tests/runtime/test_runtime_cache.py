"""The on-disk kernel cache: roundtrip, damage, degraded directories, other processes."""
import errno
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import xetile_dsl
from xetile_dsl.__main__ import main
from xetile_dsl.runtime import cache as C
from xetile_dsl.runtime.cache import CacheWarning, KernelCache
from xetile_dsl.runtime.cache_key import key_for

FILES = {"kernel.spv": b"\x03\x02\x23\x07" + bytes(range(256)), "abi.json": b'{"kernel_name": "k"}'}
REPO = Path(xetile_dsl.__file__).resolve().parent.parent


def test_key_for_is_length_prefixed_and_stable():
    assert key_for("ab", "c") != key_for("a", "bc")
    assert key_for("a", b"\x00") == key_for("a", b"\x00") and len(key_for("x")) == 64
    assert key_for() != key_for("")


def test_roundtrip_memory_and_disk(tmp_path):
    cache = KernelCache(tmp_path)
    key = key_for("kernel", "pvc")
    assert cache.get(key) is None and cache.stats.misses == 1
    cache.put(key, FILES)
    assert cache.get(key) == FILES and cache.stats.hits_memory == 1
    manifest = json.loads((tmp_path / key / "manifest.json").read_text())
    assert set(manifest["files"]) == set(FILES) and manifest["key"] == key
    fresh = KernelCache(tmp_path)
    assert fresh.get(key) == FILES and fresh.stats.hits_disk == 1
    assert fresh.get(key) == FILES and fresh.stats.hits_memory == 1
    assert not list(tmp_path.glob(".tmp-*"))          # no temp dirs left behind


def test_default_directory_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path / "c"))
    assert KernelCache().directory == tmp_path / "c"
    monkeypatch.delenv("XETILE_CACHE_DIR")
    assert C.default_directory() == Path.home() / ".cache" / "xetile_dsl" / "kernels"


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "delete a file", "bad manifest", "wrong key"])
def test_damaged_entry_is_deleted_and_rebuilt(tmp_path, damage):
    key = key_for("damaged", damage)
    KernelCache(tmp_path).put(key, FILES)
    entry = tmp_path / key
    blob = entry / "kernel.spv"
    if damage == "flip a byte":
        data = bytearray(blob.read_bytes()); data[10] ^= 0xFF; blob.write_bytes(bytes(data))
    elif damage == "truncate":
        blob.write_bytes(blob.read_bytes()[:5])
    elif damage == "delete a file":
        blob.unlink()
    elif damage == "bad manifest":
        (entry / "manifest.json").write_text("{not json")
    else:
        m = json.loads((entry / "manifest.json").read_text()); m["key"] = "x"
        (entry / "manifest.json").write_text(json.dumps(m))
    cache = KernelCache(tmp_path)
    with pytest.warns(CacheWarning, match="is damaged.*will be rebuilt"):
        assert cache.get(key) is None
    assert not entry.exists() and cache.stats.corrupt == 1 and cache.stats.misses == 1
    cache.put(key, FILES)                              # the caller rebuilds
    assert KernelCache(tmp_path).get(key) == FILES


def test_unwritable_directory_degrades_to_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.warns(CacheWarning, match="cannot use cache directory.*memory only"):
        cache = KernelCache(blocker / "kernels")
    assert not cache.disk_ok
    cache.put("k1", FILES)
    assert cache.get("k1") == FILES and cache.stats.hits_memory == 1
    assert cache.entries()[0]["where"] == "memory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_readonly_directory_degrades_to_memory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.warns(CacheWarning, match="memory only"):
            cache = KernelCache(ro)
        cache.put("k1", FILES)
        assert cache.get("k1") == FILES
    finally:
        ro.chmod(0o755)


def test_readonly_directory_simulated(tmp_path, monkeypatch):
    """As root permissions do not bite, so refuse writes the way a read-only mount does."""
    KernelCache(tmp_path).put("old", FILES)

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path))

    monkeypatch.setattr(C.tempfile, "NamedTemporaryFile", refuse)
    with pytest.warns(CacheWarning, match="cannot use cache directory.*memory only"):
        cache = KernelCache(tmp_path)
    assert not cache.disk_ok and cache.readable
    assert cache.get("old") == FILES and cache.stats.hits_disk == 1     # existing entries still read
    cache.put("new", FILES)
    assert cache.get("new") == FILES and not (tmp_path / "new").exists()


def test_readonly_filesystem_or_full_disk_on_write(tmp_path, monkeypatch):
    cache = KernelCache(tmp_path)
    for code in (errno.EROFS, errno.ENOSPC):
        cache.disk_ok = True

        def fail(self, data, code=code):
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(Path, "write_bytes", fail)
        with pytest.warns(CacheWarning, match="cannot write entry.*memory only"):
            cache.put(f"k{code}", FILES)
        monkeypatch.undo()
        assert not cache.disk_ok and cache.get(f"k{code}") == FILES
        assert not list(tmp_path.glob(".tmp-*")) and not (tmp_path / f"k{code}").exists()


def test_bad_keys_and_file_names_rejected(tmp_path):
    cache = KernelCache(tmp_path)
    for key in ("../escape", ".hidden", "a/b", ""):
        with pytest.raises(ValueError, match="bad cache key"):
            cache.put(key, FILES)
    with pytest.raises(ValueError, match="bad cache file name"):
        cache.put("k", {"manifest.json": b""})
    with pytest.raises(TypeError, match="must be bytes"):
        cache.put("k", {"a": "text"})


_CHILD = """
import sys
from xetile_dsl.runtime.cache import KernelCache
c = KernelCache(sys.argv[1])
files = c.get(sys.argv[2])
if sys.argv[3] == "put":
    c.put(sys.argv[2], {"blob": sys.argv[4].encode()})
    print("put")
else:
    print(sorted(files.items()) if files else None, c.stats.hits_disk)
"""


def _child(*args, env=None):
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, cwd=REPO,
                         env=env, check=True)
    return out.stdout.strip()


def test_fresh_process_sees_entry(tmp_path):
    key = key_for("cross-process")
    KernelCache(tmp_path).put(key, {"blob": b"hello"})
    assert _child(str(tmp_path), key, "get") == "[('blob', b'hello')] 1"


def test_concurrent_writers_leave_a_valid_entry(tmp_path):
    key = key_for("race")
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), key, "put", f"v{i}"], cwd=REPO,
                              stdout=subprocess.PIPE) for i in range(6)]
    assert all(p.wait() == 0 for p in procs)
    files = KernelCache(tmp_path).get(key)
    assert files is not None and files["blob"] in {f"v{i}".encode() for i in range(6)}
    assert not list(tmp_path.glob(".tmp-*"))


def test_entries_clear_and_cli(tmp_path, capsys):
    cache = KernelCache(tmp_path)
    cache.put("aaaa", FILES)
    cache.put("bbbb", {"x": b"1"})
    assert [e["key"] for e in cache.entries()] == ["aaaa", "bbbb"]
    assert main(["cache", "list", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and "abi.json, kernel.spv" in out
    assert main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert KernelCache(tmp_path).entries() == []


def test_cli_devices_subprocess():
    out = subprocess.run([sys.executable, "-m", "xetile_dsl", "devices"], capture_output=True, text=True,
                         cwd=REPO, check=True).stdout
    assert "opencl:cpu:0" in out and "selected:" in out


def test_no_pickle_in_runtime():
    for path in (REPO / "xetile_dsl" / "runtime").glob("*.py"):
        text = path.read_text()
        assert "import pickle" not in text and "pickle." not in text, path


# --- entry locks: a stuck holder is not waited for; a dead holder's lock is broken --------

_HOLDER = """
import sys
from xetile_dsl.runtime.cache import KernelCache
with KernelCache(sys.argv[1])._lock(sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()                  # hold until the test closes stdin (or kills us)
"""


def _holder(directory, key):
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory), key], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_live_lock_holder_is_not_waited_for_then_its_dead_lock_is_broken(tmp_path):
    """A second process holds the entry's lock: put gives up after lock_timeout with a
    one-line warning naming the holder and keeps the entry in memory; once the holder is
    killed (its lock file left behind with a dead pid) the next put breaks the lock."""
    key = key_for("held")
    holder = _holder(tmp_path, key)
    lock_file = tmp_path / ".locks" / f"{key}.lock"
    try:
        cache = KernelCache(tmp_path, lock_timeout=0.2)
        with pytest.warns(CacheWarning, match=rf"locked by pid {holder.pid} on .*memory only") as record:
            cache.put(key, FILES)
        assert len(record) == 1 and "\n" not in str(record[0].message)
        assert cache.get(key) == FILES                     # the caller still has its kernel
        assert not (tmp_path / key).exists() and json.loads(lock_file.read_text())["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    assert json.loads(lock_file.read_text())["pid"] == holder.pid     # left behind by the dead holder
    cache = KernelCache(tmp_path, lock_timeout=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)   # broken at once: no wait, no warning
        cache.put(key, FILES)
    assert KernelCache(tmp_path).get(key) == FILES and not lock_file.exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("lock, broken", [
    ({"pid": "dead", "host": "this"}, True),              # a process that has exited
    ({"pid": os.getppid(), "host": "this"}, False),       # alive
    ({"pid": 1, "host": "elsewhere", "age": 3600}, True),  # another host, abandoned long ago
    ({"pid": 1, "host": "elsewhere", "age": 0}, False),    # another host, recent: cannot tell
    ({"raw": b"", "age": 60}, True),                        # created, never written, long ago
])
def test_lock_staleness(tmp_path, lock, broken):
    from xetile_dsl.runtime.entry_lock import HOST

    key = key_for("stale", repr(lock))
    (tmp_path / ".locks").mkdir()
    lock_file = tmp_path / ".locks" / f"{key}.lock"
    raw = lock.get("raw")
    if raw is None:
        host = HOST if lock["host"] == "this" else lock["host"]
        pid = _dead_pid() if lock["pid"] == "dead" else lock["pid"]
        raw = json.dumps({"pid": pid, "host": host, "nonce": "x", "time": 0}).encode()
    lock_file.write_bytes(raw)
    age = lock.get("age", 0)
    os.utime(lock_file, (os.path.getmtime(lock_file) - age,) * 2)
    cache = KernelCache(tmp_path, lock_timeout=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.put(key, FILES)
    locked = [w for w in caught if "locked by pid" in str(w.message)]
    assert (tmp_path / key).is_dir() == broken and len(locked) == (0 if broken else 1)
    assert lock_file.exists() != broken                   # a held lock is left alone
    assert cache.get(key) == FILES


# --- concurrent writers and readers; files where directories belong ---------------------

_CHURN = """
import json, sys, warnings
from xetile_dsl.runtime.cache import KernelCache
from xetile_dsl.runtime.cache_key import key_for
directory, me, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = 0
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(rounds):
        for key in (key_for("shared"), key_for("own", me)):
            cache = KernelCache(directory)            # no memory layer: every get reads the disk
            files = cache.get(key)
            if files is not None:                     # one writer's entry, never a mix of two
                a = files["a"]
                bad += files["b"] != a[::-1] or files["c"] != a * 4096
            a = f"{me}-{i}".encode()
            cache.put(key, {"a": a, "b": a[::-1], "c": a * 4096})
print(json.dumps({"warnings": [str(w.message) for w in caught], "bad": bad}))
"""


def test_four_processes_put_and_get_without_damage(tmp_path):
    """Four processes put and get the same and their own keys 40 times: no "damaged"
    warning (a file vanishing while a writer replaces the entry is not damage), every
    read is one consistent entry, and every entry is intact at the end."""
    procs = [subprocess.Popen([sys.executable, "-c", _CHURN, str(tmp_path), str(me), "40"], cwd=REPO,
                              stdout=subprocess.PIPE, text=True) for me in range(4)]
    results = [json.loads(p.communicate(timeout=600)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert [r["warnings"] for r in results] == [[]] * 4 and [r["bad"] for r in results] == [0] * 4
    cache = KernelCache(tmp_path)
    for key in [key_for("shared")] + [key_for("own", me) for me in range(4)]:
        files = cache.get(key)
        assert files is not None and files["b"] == files["a"][::-1] and files["c"] == files["a"] * 4096
    assert cache.stats.hits_disk == 5 and cache.stats.corrupt == 0
    assert not list(tmp_path.glob(".tmp-*")) and not list(tmp_path.glob(".old-*"))


@pytest.mark.parametrize("where", ["entry", ".locks"])
def test_file_in_place_of_a_directory_is_repaired(tmp_path, where):
    """A file where an entry's directory (or the lock directory) belongs: one miss and
    rebuild, then hits in every later process; no warning, no fall back to memory."""
    key = key_for("blocked", where)
    KernelCache(tmp_path).put(key, FILES)
    blocked = tmp_path / (key if where == "entry" else ".locks")
    shutil.rmtree(blocked)
    blocked.write_text("not a directory")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        cache = KernelCache(tmp_path)
        if where == "entry":
            assert cache.get(key) is None                 # miss: the caller rebuilds
        cache.put(key, FILES)
        assert cache.disk_ok and blocked.is_dir()
        fresh = KernelCache(tmp_path)
        assert fresh.get(key) == FILES and fresh.stats.hits_disk == 1


def test_invalid_entry_is_a_miss_with_a_warning(tmp_path):
    """``get(check=...)``: an entry read from disk that the caller's check refuses is a
    miss with a one-line warning (the caller rebuilds and puts it again)."""
    key = key_for("checked")
    KernelCache(tmp_path).put(key, FILES)
    cache = KernelCache(tmp_path)
    with pytest.warns(CacheWarning, match=r"is invalid \(bad SPIR-V\); the kernel will be rebuilt"):
        assert cache.get(key, check=lambda files: "bad SPIR-V\nsecond line") is None
    assert cache.stats.misses == 1 and cache.stats.corrupt == 1
    assert cache.get(key, check=lambda files: None) == FILES      # accepted: a hit
