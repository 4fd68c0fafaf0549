"""The documents point at things that exist, and only inside the repository.

* every package path a document or a docstring names (``codegen/emit/slm.py``,
  ``lowering/rewrites/``) is a file or folder of the package (or of the repository);
* every relative Markdown link resolves;
* no document cites an issue number or a path outside the repository.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "xetile_dsl"
FOLDERS = "codegen|lowering|runtime|frontend|interpreter|dialects|targets|ops|kernels|tools|language|cli"
#: ``codegen/emit/slm.py`` or ``xetile_dsl/lowering/rewrites/`` (not inside a longer path or URL)
PATH = re.compile(rf"(?<![\w./-])(?:xetile_dsl/)?((?:{FOLDERS})/[\w/]*\w\.py|(?:{FOLDERS})/[\w/]+/)(?![\w])")
LINK = re.compile(r"\]\((\w[\w./-]*)(?:#[^)]*)?\)")
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)")
OUTSIDE = re.compile(r"(?:^|[\s(`])(?:/work/|\.\./shared/|shared/(?:docs|spec|tools)/)")


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def sources() -> list[Path]:
    return [p for p in [*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").rglob("*.py"),
                        *(ROOT / "benchmarks").rglob("*.py")] if "__pycache__" not in p.parts]


def _exists(rel: str) -> bool:
    return any((base / rel).exists() for base in (PACKAGE, ROOT, ROOT / "tests"))


def missing_paths(files: list[Path]) -> list[str]:
    return [f"{p.relative_to(ROOT)}:{n}: {m.group(1)}"
            for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
            for m in PATH.finditer(line) if not _exists(m.group(1))]


@pytest.mark.parametrize("kind", ["documents", "sources"])
def test_named_package_paths_exist(kind):
    missing = missing_paths(documents() if kind == "documents" else sources())
    assert not missing, "paths that name no file or folder (moved? update the text):\n" + "\n".join(missing)


def test_relative_links_resolve():
    broken = [f"{p.relative_to(ROOT)}: {target}" for p in documents()
              for target in LINK.findall(p.read_text())
              if "://" not in target and not target.startswith("mailto:") and not (p.parent / target).exists()]
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def test_documents_cite_no_issue_numbers_and_nothing_outside_the_repository():
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in documents()
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if ISSUE.search(line) or OUTSIDE.search(line)]
    assert not found, "a document must stand alone:\n" + "\n".join(found)


def test_the_checks_can_fail(tmp_path):
    doc = tmp_path / "x.md"
    nowhere = "codegen/emit/" + "nowhere.py"   # spelled in two pieces: this file is read too
    doc.write_text(f"see {nowhere} and lowering/rewrites/ (issue 12), [a](missing.md), k[grid](...)\n")
    assert PATH.findall(doc.read_text()) == [nowhere, "lowering/rewrites/"]
    assert not _exists(nowhere) and _exists("lowering/rewrites/")
    assert ISSUE.search(doc.read_text()) and LINK.findall(doc.read_text()) == ["missing.md"]
    assert OUTSIDE.search("read ../shared/spec/x.md") and not OUTSIDE.search("docs/decisions/x.md")
