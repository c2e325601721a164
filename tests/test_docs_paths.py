"""Every file of this repository that the docs and the docstrings name exists.

Scanned: README.md, CONTRIBUTING.md, docs/*.md and every module of the package. Checked:
paths from the repository root (``docs/x.md``, ``pytest_vibecheck/a/b.py``, ``tests/...``,
``benchmarks/...``, ``scripts/...``, ``instructions/...``, ``.ci/...``, ``.github/...``), paths
inside the package named from one of its subpackages (``report/terminal.py``,
``_child/judge.py``) and ``:mod:`` references. Globs (``instructions/*.toml``) and the
placeholders and user-side files of examples (:data:`NOT_FILES`) are not files of the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_vibecheck"
SOURCES = [
    ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
    *sorted(PACKAGE.rglob("*.py")),
]  # fmt: skip

#: Named in examples, not files of this repository: placeholders, a user's own files, outputs.
NOT_FILES = {
    ".github/workflows/vibecheck-gate.yml": "the user's workflow in README's example",
    "docs/results/qwen2.5-coder-0.5b.rerun": "VIBE_OUT, the prefix the script's outputs get",
    "problems/NAME": "placeholder",
    "problems/he-mine": "the example's output folder",
    "problems/mine": "the example's output folder",
    "problems/mine/problems.jsonl": "the example's output file",
    "problems/mysuite": "the example's output folder",
    "replays/NAME": "placeholder",
    "tests/test_X.py": "placeholder",
}
#: In an installed wheel, the repository's instructions/, problems/ and replays/ (pyproject's
#: force-include).
WHEEL_DATA = "pytest_vibecheck/_data"

_ROOTED = re.compile(
    r"(?<![\w./~-])((?:docs|pytest_vibecheck|tests|benchmarks|scripts|instructions|problems|"
    r"replays|\.ci|\.github)/[\w./-]*\w)(?![*{<\w])"
)
_SUBPACKAGES = sorted(
    p.name for p in PACKAGE.rglob("*") if p.is_dir() and ((p / "__init__.py").exists() or p.name == "_child")
)
_IN_PACKAGE = re.compile(
    r"``?((?:" + "|".join(map(re.escape, _SUBPACKAGES)) + r")/[\w./-]+\.(?:py|toml|json))``?"
)
_MODULE = re.compile(r":mod:`~?(pytest_vibecheck(?:\.\w+)*)`")
#: Every path inside the package, as POSIX text relative to each of its folders.
_PACKAGE_PATHS = {
    p.relative_to(base).as_posix()
    for base in [PACKAGE, *(d for d in PACKAGE.rglob("*") if d.is_dir())]
    for p in base.rglob("*")
}


def _refs() -> list[tuple[str, str]]:
    """(source, reference) pairs of every path and module named."""
    out = []
    for src in SOURCES:
        text = src.read_text(encoding="utf-8")
        name = src.relative_to(ROOT).as_posix()
        out += [(name, m.group(1).rstrip(".")) for m in _ROOTED.finditer(text)]
        out += [(name, "pkg:" + m.group(1)) for m in _IN_PACKAGE.finditer(text)]
        out += [(name, "mod:" + m.group(1)) for m in _MODULE.finditer(text)]
    return out


def _exists(ref: str) -> bool:
    if ref.startswith("mod:"):
        path = ROOT / ref[4:].replace(".", "/")
        return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()
    if ref.startswith("pkg:"):
        rel = ref[4:]
        return rel in _PACKAGE_PATHS
    if ref in NOT_FILES:
        return True
    if ref.startswith(WHEEL_DATA):
        return (ROOT / ref[len(WHEEL_DATA) + 1:]).exists() if ref != WHEEL_DATA else True
    return (ROOT / ref).exists()


def test_the_scan_finds_the_references() -> None:
    refs = {r for _, r in _refs()}
    assert "docs/architecture.md" in refs
    assert "pkg:report/terminal.py" in refs
    assert "mod:pytest_vibecheck.ci.gate" in refs


_ALL = _refs()


@pytest.mark.parametrize("source", sorted({s for s, _ in _ALL}))
def test_every_named_file_exists(source: str) -> None:
    missing = sorted({r for s, r in _ALL if s == source and not _exists(r)})
    assert missing == []


_GLOB = re.compile(
    r"``?((?:docs|pytest_vibecheck|tests|benchmarks|scripts|instructions|problems|replays|\.ci|"
    r"\.github|" + "|".join(map(re.escape, _SUBPACKAGES)) + r")/[\w./-]*\*[\w./*-]*)``?"
)


def _glob_matches(pattern: str) -> bool:
    """Whether ``pattern`` names at least one file, from the root or from a folder of the
    package (as the subpackage-relative paths are written)."""
    bases = [ROOT, PACKAGE, *(d for d in PACKAGE.rglob("*") if d.is_dir())]
    return any(next(iter(base.glob(pattern)), None) is not None for base in bases)


def test_every_named_glob_matches_a_file() -> None:
    """A glob in the docs (``instructions/*.toml``) names files that exist: docs/architecture.md
    once pointed new test kinds to ``execute/_child/run_*.py``, which had been merged away."""
    globs = sorted({(src.relative_to(ROOT).as_posix(), m.group(1)) for src in SOURCES
                    for m in _GLOB.finditer(src.read_text(encoding="utf-8"))})
    assert ("docs/architecture.md", "cli/*_cmd.py") in globs
    assert ("docs/ci.md", ".github/workflows/*.yml") in globs
    assert [g for g in globs if not _glob_matches(g[1])] == []


@pytest.mark.parametrize("source", ["docs/reward.md", "pytest_vibecheck/reward/dataset.py"])
def test_the_single_turn_sentence_is_quoted_as_sent(source: str) -> None:
    from pytest_vibecheck.generate.protocols import SINGLE_TURN_HEADER, SINGLE_TURN_ONE

    text = " ".join((ROOT / source).read_text(encoding="utf-8").split())
    assert SINGLE_TURN_ONE in text
    assert SINGLE_TURN_HEADER in text
    assert "Also, generate the code" not in text


def test_suites_md_says_lcb_runner_takes_the_last_two_fences() -> None:
    text = " ".join((ROOT / "docs" / "suites.md").read_text(encoding="utf-8").split())
    assert "between the **last** two lines containing a fence" in text
    assert "between the first two lines containing a fence" not in text
