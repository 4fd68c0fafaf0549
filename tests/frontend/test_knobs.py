"""Every XETILE_* environment variable is declared in xetile_dsl/knobs.py, documented in
README.md, and read through the knob (at use time, parsed, bad values named)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xetile_dsl import knobs
from xetile_dsl.errors import UsageError
from xetile_dsl.runtime import cache
from xetile_dsl.targets import cpu_device

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bXETILE_[A-Z0-9_]*[A-Z0-9]\b")


def _python_sources():
    for folder in ("xetile_dsl", "tests", "scripts"):
        yield from (ROOT / folder).rglob("*.py")


def _names_in_sources() -> dict[str, str]:
    """XETILE_* name -> a file that mentions it."""
    found = {}
    for path in _python_sources():
        for name in NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_name_in_the_sources_is_a_declared_knob():
    names = _names_in_sources()
    assert len(names) >= 15   # the scan really reads the sources
    undeclared = {n: f for n, f in names.items() if n not in knobs.KNOBS}
    assert not undeclared, f"declare these in xetile_dsl/knobs.py: {undeclared}"


def test_every_knob_is_in_the_readme_table_with_its_doc():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(XETILE_\w+)` \|[^|]*\| (.*) \|$", readme, re.M)}
    for knob in knobs.KNOBS.values():
        assert rows.get(knob.name) == knob.doc, knob.name


def test_the_package_reads_the_environment_only_through_knobs():
    direct = re.compile(r"environ(?:\.get\(|\[)\s*[\"']XETILE_|getenv\(\s*[\"']XETILE_")
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "xetile_dsl").rglob("*.py")
                 if p.name != "knobs.py" and direct.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_knobs_are_read_when_used(monkeypatch):
    monkeypatch.delenv("XETILE_DEBUG", raising=False)
    assert knobs.debug_tracebacks() is False
    monkeypatch.setenv("XETILE_DEBUG", "yes")
    assert knobs.debug_tracebacks() is True
    monkeypatch.setenv("XETILE_CACHE_LOCK_TIMEOUT", "2.5")
    assert cache.default_lock_timeout() == 2.5
    monkeypatch.setenv("XETILE_CACHE_LOCK_TIMEOUT", "")
    assert cache.default_lock_timeout() == knobs.CACHE_LOCK_TIMEOUT.default == 10.0
    monkeypatch.setenv("XETILE_INTERPRET", "SubGroups")
    assert knobs.interpret_mode() == "subgroups"
    monkeypatch.setenv("XETILE_INTERPRET", "true")
    assert knobs.interpret_mode() == "1"
    for text in ("SubGroups", "true", "1", "off", "No", "0", ""):
        monkeypatch.setenv("XETILE_INTERPRET", text)
        assert knobs.interpreting() is (knobs.interpret_mode() != "0")


@pytest.mark.parametrize("name, value, legal", [
    ("XETILE_CACHE_LOCK_TIMEOUT", "soon", "give a number, e.g. 10.0"),
    ("XETILE_DEBUG", "maybe", "use 1 or 0"),
    ("XETILE_INTERPRET", "numpy", "use one of 0, 1, subgroups"),
])
def test_a_bad_value_names_the_knob_and_what_is_legal(monkeypatch, name, value, legal):
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=re.escape(f"{name}={value!r}: {legal}")):
        knobs.KNOBS[name].get()


def test_a_bad_cpu_flavour_names_the_knob_and_the_flavours(monkeypatch):
    """XETILE_CPU_FLAVOUR's legal values are the targets' CPU flavours (the target table),
    checked where the flavour is read."""
    monkeypatch.setenv("XETILE_CPU_FLAVOUR", "xe2")
    with pytest.raises(UsageError, match=re.escape("XETILE_CPU_FLAVOUR='xe2': use one of pvc, arc")):
        cpu_device.flavour()
    monkeypatch.setenv("XETILE_CPU_FLAVOUR", "ARC")
    assert cpu_device.flavour() == "arc"


def test_a_knob_parses_each_raw_text_once(monkeypatch):
    """A launch reads knobs every time: a value set to the same text as before is not
    parsed again, a changed text is, and a text that does not parse raises at every read."""
    calls = []
    parse_float = knobs._PARSERS[float]
    monkeypatch.setitem(knobs._PARSERS, float, lambda knob, text: calls.append(text) or parse_float(knob, text))
    knob = knobs.Knob("XETILE_CACHE_LOCK_TIMEOUT", float, 10.0, "seconds")
    monkeypatch.setenv("XETILE_CACHE_LOCK_TIMEOUT", "2.5")
    assert [knob.get() for _ in range(3)] == [2.5, 2.5, 2.5]
    assert calls == ["2.5"]
    monkeypatch.setenv("XETILE_CACHE_LOCK_TIMEOUT", "4")
    assert knob.get() == 4.0 and calls == ["2.5", "4"]
    monkeypatch.setenv("XETILE_CACHE_LOCK_TIMEOUT", "soon")
    for _ in range(2):
        with pytest.raises(UsageError, match="XETILE_CACHE_LOCK_TIMEOUT='soon'"):
            knob.get()
    monkeypatch.delenv("XETILE_CACHE_LOCK_TIMEOUT")
    assert knob.get() == 10.0
