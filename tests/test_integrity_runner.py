"""Verdict integrity: hostile candidates through the runner (docs/sandbox.md, "Verdict integrity").

Every case of ``integrity_cases`` is a wrong solution plus code that goes for the grader; each
must get its exact status, never ``passed`` and never ``error``/``skipped``. The cases run in
one batch through :func:`~pytest_vibecheck.execute.pool.run_many` (as the plugin runs them):
a representative set on every run (one case per family and test kind), all of them with the
fork server on and off under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from exec_helpers import bcb_problem, load_file_module
from integrity_cases import CASES, CTYPES_CASES, KINDS, Case, problem_for, reachability_code

from pytest_vibecheck.execute import sandbox
from pytest_vibecheck.execute.cache import ExecCache
from pytest_vibecheck.execute.channel import MAX_DEPTH, read_channel, seal
from pytest_vibecheck.execute.expected import expected_tests
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.sandbox import SandboxSettings
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings, run_tests

CAPS = sandbox.capabilities()
needs_ns = pytest.mark.skipif(
    CAPS.mode == "process" or not sys.platform.startswith("linux"),
    reason="needs Linux namespaces",
)


def _settings(fork_server: bool) -> ExecSettings:
    # the functional cases are written in LiveCodeBench's form (``class Solution``), which the
    # lcb grading rule calls (the paper's rule calls a top-level function); the static screen
    # is off: these cases test the layers behind it (test_integrity_families runs it on)
    return ExecSettings(
        sandbox=SandboxSettings(fork_server=fork_server), time_limit_s=5, startup_s=10,
        grading="lcb", screen=False,
    )


def _run(cases: Sequence[Case], fork_server: bool, libs: tuple[str, ...] = ()) -> list[str]:
    """``id: status`` of each case whose status is not the expected one (empty when all are)."""
    items = [(c.code, problem_for(c.kind, libs)) for c in cases]
    results = run_many(items, _settings(fork_server), None, workers=2)
    wrong = []
    for case, res in zip(cases, results, strict=True):
        assert res.status != "passed", f"{case.id} passed: {res.message}"
        assert res.status not in ("error", "skipped"), f"{case.id}: {res.status} {res.message}"
        if res.status != case.expected:
            wrong.append(f"{case.id}: {res.status} (expected {case.expected}) {res.message[:300]}")
        if case.expected == "tampered":
            assert res.tamper and res.message.startswith("tampered with its tests: ")
    return wrong


def _representative() -> list[Case]:
    seen: set[tuple[str, str]] = set()
    out = []
    for case in CASES:
        if (case.family, case.kind) not in seen and case.name not in ("tens-of-mib",):
            seen.add((case.family, case.kind))
            out.append(case)
    return out


def test_the_table_covers_every_family_and_kind() -> None:
    families = {c.family for c in CASES}
    assert families == {
        "channel", "framework", "introspection", "serializer", "fork", "error", "evaluator", "host",
    }
    for family in families:
        for kind in KINDS:
            n = sum(c.family == family and c.kind == kind for c in CASES)
            assert n >= 1, (family, kind)
        assert sum(c.family == family for c in CASES) >= 8, family
    assert len({c.id for c in CASES}) == len(CASES)


@needs_ns
def test_hostile_candidates_get_their_exact_status() -> None:
    assert _run(_representative(), fork_server=True) == []


@needs_ns
@pytest.mark.slow  # ~160 sandboxed runs per mode, about 30-80 s on 2 cores
@pytest.mark.parametrize("fork_server", [True, False], ids=["fork-server", "subprocess"])
def test_every_hostile_candidate_gets_its_exact_status(fork_server: bool) -> None:
    assert _run(CASES, fork_server) == []


@needs_ns
def test_raw_memory_reads_are_refused_where_ctypes_stays() -> None:
    assert _run(CTYPES_CASES, fork_server=True, libs=("ctypes",)) == []


@needs_ns
def test_without_the_fork_server_too() -> None:
    picked = [c for c in _representative() if c.kind in ("bigcodebench-unittest", "stdin")]
    assert _run(picked[:10], fork_server=False) == []


#: A right solution only when a function called at import time sees its importer's real module
#: frame (as statsmodels' ``PytestTester`` does, ``sys._getframe(1).f_locals['__file__']``,
#: reached by ``import seaborn``), and when no frame reachable from the candidate, at import or
#: during a test, is the tests' or the harness's.
IMPORTER_FRAME = (
    "import sys\n"
    "def _importer_file():\n"
    "    return sys._getframe(1).f_locals.get('__file__')\n"
    "_FILE = _importer_file()\n"
    "def _files():\n"
    "    f, seen = sys._getframe(0), []\n"
    "    while f is not None:\n"
    "        seen.append(f.f_code.co_filename)\n"
    "        f = f.f_back\n"
    "    return seen\n"
    "_AT_IMPORT = _files()\n"
    "def _clean(seen):\n"
    "    return not any(s == 'tests.py' or s.endswith(('harness.py', 'boot.py')) for s in seen)\n"
    "def task_func(x):\n"
    "    ok = _FILE == __file__ and _clean(_AT_IMPORT) and _clean(_files())\n"
    "    return x * x if ok else x\n"
)


def test_import_time_frames_are_real_and_lead_to_no_protected_frame() -> None:
    res = run_tests(IMPORTER_FRAME, bcb_problem(), _settings(True))
    assert (res.status, res.message) == ("passed", "")


#: pandas < 3 calls ``gc.get_referents`` on a frame's DataFrame at every chained assignment
#: (``NDFrame._check_setitem_copy``, on a DataFrame or None): allowed, and the solution is
#: right; on a traceback (whose referents are frames) it is refused and recorded.
REFERENTS_OK = (
    "import gc\n"
    "class _Frame:\n    def __init__(self):\n        self.shape = (1, 2)\n"
    "def task_func(x):\n"
    "    gc.get_referents(_Frame(), None, [1])\n"
    "    return x * x\n"
)
REFERENTS_TB = (
    "import gc\n"
    "def task_func(x):\n"
    "    try:\n        1 / 0\n"
    "    except ZeroDivisionError as e:\n"
    "        try:\n            gc.get_referents(e.__traceback__)\n"
    "        except RuntimeError:\n            pass\n"
    "    return x\n"
)


def test_gc_referents_of_python_objects_are_allowed_of_tracebacks_not() -> None:
    ok, tb = run_many(
        [(REFERENTS_OK, bcb_problem()), (REFERENTS_TB, bcb_problem())], _settings(True), None,
        workers=2,
    )
    assert (ok.status, ok.message) == ("passed", "")
    assert tb.status == "tampered" and tb.tamper == ("called gc.get_referents on frames",)


def _snapshot_module() -> Any:
    path = Path(sandbox.__file__).parent / "_child" / "snapshot.py"
    return load_file_module(path, "vibecheck_snapshot_under_test")


def test_the_snapshot_never_evaluates_a_lazy_proxy() -> None:
    """django.conf.settings computes ``__class__`` (and raises ImproperlyConfigured) until the
    tests configure it: a snapshot looks values up with C-level checks only (``callable``,
    ``type``), never ``isinstance``, so nothing of such an object runs; replacing a function
    of a module is found, a flag of plain data it changes is not."""
    import types

    class Lazy:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            raise RuntimeError("settings are not configured")

    snap_mod = _snapshot_module()
    module = types.ModuleType("vc_lazy_settings")
    module.settings = Lazy()  # type: ignore[attr-defined]
    module.helper = len  # type: ignore[attr-defined]
    module.flag = False  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        index = snap_mod.Index()
        snap = index.take()
        assert snap_mod.changes(snap) == []
        module.flag = True  # type: ignore[attr-defined]
        assert snap_mod.changes(snap) == []
        module.helper = abs  # type: ignore[attr-defined]
        assert snap_mod.changes(snap) == ["replaced vc_lazy_settings.helper"]
        # around a test, only values of the candidate's making count
        assert snap_mod.changes(snap, only=lambda v: v is not abs) == []
    finally:
        del sys.modules[module.__name__]


def test_a_prebuilt_index_is_refreshed_to_what_grow_would_build_now() -> None:
    """Index.prebuild (the fork server, over what it preloaded) then refresh (the forked run,
    at its first take) gives the keys a fresh index would read at that take: a function
    added to a module after the prebuild, a key of plain data that now holds a function and
    a key deleted since are as a fresh index has them, and a replaced one is then found.
    Modules are not behaviours (a submodule's name is never the candidate's making)."""
    import types

    snap_mod = _snapshot_module()
    module = types.ModuleType("vc_prebuilt")
    module.helper = len  # type: ignore[attr-defined]
    module.slot = None  # type: ignore[attr-defined]
    module.gone = min  # type: ignore[attr-defined]
    module.sub = types  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        index = snap_mod.Index()
        index.prebuild()
        entry = next(e for e in index.spaces if e[0] == "vc_prebuilt")
        assert set(entry[2]) == {"helper", "gone"}
        module.added = max  # type: ignore[attr-defined]  # a lazily set function
        module.slot = abs  # type: ignore[attr-defined]  # data that now holds a function
        del module.gone
        snap = index.take()
        fresh = snap_mod.Index()
        fresh.take()
        want = next(e for e in fresh.spaces if e[0] == "vc_prebuilt")[2]
        got = next(e for e in index.spaces if e[0] == "vc_prebuilt")[2]
        assert sorted(got) == sorted(want) == ["added", "helper", "slot"]
        assert len(index.spaces) == len(fresh.spaces)
        module.added = sum  # type: ignore[attr-defined]
        assert snap_mod.changes(snap) == ["replaced vc_prebuilt.added"]
        found, again = index.retake(snap)
        assert found == ["replaced vc_prebuilt.added"]
        module.slot = round  # type: ignore[attr-defined]
        assert index.retake(again)[0] == ["replaced vc_prebuilt.slot"]
    finally:
        del sys.modules[module.__name__]


def test_an_unchanged_prebuilt_index_keeps_its_keys() -> None:
    """When nothing changed since the prebuild, refresh keeps every namespace's keys as they
    were (the one-pass path), and the first snapshot is the one a fresh index takes."""
    snap_mod = _snapshot_module()
    index = snap_mod.Index()
    index.prebuild()
    before = [(e[0], e[2]) for e in index.spaces]
    snap = index.take()
    assert [(e[0], e[2]) for e in index.spaces[: len(before)]] == before
    fresh = snap_mod.Index()
    assert [(e[0], e[4]) for e in fresh.take().spaces] == [(e[0], e[4]) for e in snap.spaces]


def test_retake_checks_and_takes_the_next_snapshot_as_take_would() -> None:
    """Index.retake (after each test) reports what changes() reports and gives the snapshot
    take() would give right after: the same records when nothing changed, a replaced
    behaviour recorded anew (so the next check does not report it again), a namespace's new
    size, and the namespaces of a module imported since."""
    import types

    snap_mod = _snapshot_module()
    first = types.ModuleType("vc_retake_first")
    first.helper = len  # type: ignore[attr-defined]
    sys.modules[first.__name__] = first
    try:
        index = snap_mod.Index()
        snap = index.take()
        found, again = index.retake(snap)
        assert found == [] and again.spaces == snap.spaces and again is not snap
        first.helper = abs  # type: ignore[attr-defined]
        found, again = index.retake(again)
        assert found == ["replaced vc_retake_first.helper"]
        assert index.retake(again)[0] == []  # recorded anew
        first.flag = 1  # type: ignore[attr-defined]  # plain data: a new size, nothing reported
        found, bigger = index.retake(again)
        assert found == []
        entry = next(e for e in bigger.spaces if e[0] == "vc_retake_first")
        assert entry[6] == len(vars(first))
        first.__getattr__ = len  # type: ignore[method-assign]  # a module hook: reported
        assert index.retake(bigger)[0] == ["added vc_retake_first.__getattr__"]
        second = types.ModuleType("vc_retake_second")
        second.tool = min  # type: ignore[attr-defined]
        sys.modules[second.__name__] = second
        found, grown = index.retake(bigger)
        assert any(e[0] == "vc_retake_second" for e in grown.spaces)
        assert len(grown.spaces) == len(index.take().spaces)
        second.tool = max  # type: ignore[attr-defined]
        assert index.retake(grown)[0] == ["replaced vc_retake_second.tool"]
    finally:
        sys.modules.pop("vc_retake_first", None)
        sys.modules.pop("vc_retake_second", None)


@needs_ns
def test_host_folders_and_sockets_are_out_of_reach(tmp_path: Path) -> None:
    """A solution that would be right if it could see the project, a home folder or a socket
    bound in the project folder on the host is wrong in the sandbox."""
    project = Path.cwd()
    sock_path = project / f".vibecheck-integrity-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    server.listen(1)
    try:
        probes = [str(project / "pyproject.toml") if (project / "pyproject.toml").exists()
                  else str(project), str(sock_path)]
        items = [(reachability_code(kind, p), problem_for(kind)) for kind in KINDS for p in probes]
        results = run_many(items, _settings(True), None, workers=2)
    finally:
        server.close()
        sock_path.unlink()
    assert [r.status for r in results] == ["failed"] * len(items), [r.message for r in results]
    # the same solution passes when the path exists inside the sandbox
    ok = run_tests(reachability_code("bigcodebench-unittest", "/usr"), bcb_problem(), _settings(True))
    assert ok.status == "passed"


# --------------------------------------------------------------------------- the channel


KEY = b"k" * 32


def _line(obj: object, key: bytes = KEY) -> bytes:
    raw = json.dumps(obj).encode()
    return seal(raw, key) + b" " + raw + b"\n"


def test_channel_keeps_sealed_lines_only() -> None:
    data = _line({"boot": {"uid": 1}}) + b"0" * 32 + b' {"kind": "x"}\n' + _line({"kind": "y"})
    got = read_channel(data, len(data), KEY, 1 << 20)
    assert got.boot == {"uid": 1}
    assert got.job == {"kind": "y"}
    assert got.problems == ("1 line(s) on the result channel that the harness did not write",)
    forged = _line({"boot": {}}, key=b"x" * 32)
    assert read_channel(forged, len(forged), KEY, 1 << 20).boot is None


def test_channel_reading_is_bounded_and_never_raises() -> None:
    deep = _line({"boot": {}}) + b"0" * 32 + b" " + b"[" * 500_000 + b"\n"
    assert read_channel(deep, len(deep), KEY, 1 << 22).problems == (
        "1 line(s) on the result channel that the harness did not write",
    )
    # even sealed (the harness never writes these): depth and integer size are bounded
    nested: object = 0
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    for bad in ({"boot": {}, "x": nested}, {"boot": {"n": 10**200}}):
        data = _line(bad)
        got = read_channel(data, len(data), KEY, 1 << 20)
        assert got.boot is None and len(got.problems) == 1, got
    huge = b"x" * (40 << 20)
    got = read_channel(huge[: 1 << 20], len(huge), KEY, 1 << 20)
    assert got.problems[0] == f"the result channel held {40 << 20} bytes, more than the {1 << 20} read"
    # a second result is tampering, not a replacement
    two = _line({"boot": {}}) + _line({"a": 1}) + _line({"a": 2})
    assert read_channel(two, len(two), KEY, 1 << 20).job == {"a": 1}
    assert "more than one result on the result channel" in read_channel(
        two, len(two), KEY, 1 << 20
    ).problems


def test_expected_tests_are_parsed_not_run() -> None:
    source = (
        "import unittest, numpy.testing\n"
        "class Base(unittest.TestCase):\n    def test_b(self): pass\n"
        "class TestCases(Base):\n    def test_a(self): pass\n    def helper(self): pass\n"
        "    test_data = '/tmp/x'\n"  # an attribute, not a test (unittest wants callables)
        "raise SystemExit('never executed')\n"
    )
    got = expected_tests("bigcodebench-unittest", source)
    assert got.names == ("test_a", "test_b")
    assert got.imports == ("unittest", "numpy", "numpy.testing")
    assert got.error is None
    assert expected_tests("bigcodebench-unittest", "import unittest\n").error == (
        "the test source defines no TestCases"
    )
    assert expected_tests("humaneval", "def check(c):\n    assert c(1)\n").names == ("check",)


def test_a_problem_without_tests_is_an_error_not_a_pass() -> None:
    prob = bcb_problem("import unittest\nclass TestCases(unittest.TestCase):\n    pass\n")
    res = run_tests("def task_func(x):\n    return x * x\n", prob, _settings(True))
    assert res.status == "error"
    assert res.message == "the problem's tests cannot be used: TestCases has no test methods"


@needs_ns
def test_tampered_is_cached_and_unsound_cache_records_are_misses(tmp_path: Path) -> None:
    cache = ExecCache(tmp_path / "c.sqlite")
    case = next(c for c in CASES if c.id == "channel-spray-import-bcb")
    first = run_tests(case.code, problem_for(case.kind), _settings(True), cache)
    again = run_tests(case.code, problem_for(case.kind), _settings(True), cache)
    assert (first.status, again.status, again.cached) == ("tampered", "tampered", True)
    assert ExecResult.from_cache({"status": "passed", "failed_tests": [1]}) is None
    assert ExecResult.from_cache({"status": "error"}) is None
    assert ExecResult.from_cache("passed") is None
    assert ExecResult.from_cache({"status": "passed", "nonsense": 1}) == ExecResult("passed")



PATCHING_TEST = '''import random
import unittest
from unittest.mock import patch


class TestCases(unittest.TestCase):
    def test_shuffled_under_patch(self):
        # the tests themselves patch a module function (as BigCodeBench/0's do)
        with patch("random.shuffle", side_effect=lambda x: x.reverse()):
            self.assertEqual(task_func([1, 2, 3]), [3, 2, 1])
'''


@pytest.mark.parametrize("fork_server", [True, False], ids=["fork-server", "no-fork-server"])
def test_a_timeout_inside_the_tests_own_patch_is_a_timeout_not_tampering(fork_server: bool) -> None:
    """Regression: a test that patches ``random.shuffle`` itself and runs past the limit was
    flagged ``tampered`` (the patch was still in place when the harness compared its
    snapshot). The reference solution of BigCodeBench/0 met it on a loaded machine."""
    slow = "import random, time\n\ndef task_func(xs):\n    time.sleep(30)\n    random.shuffle(xs)\n    return xs\n"
    fast = "import random\n\ndef task_func(xs):\n    random.shuffle(xs)\n    return xs\n"
    problem = bcb_problem(PATCHING_TEST)
    settings = ExecSettings(
        sandbox=SandboxSettings(fork_server=fork_server), time_limit_s=1, startup_s=10
    )
    slow_res, fast_res = run_many([(slow, problem), (fast, problem)], settings, None, workers=2)
    assert (slow_res.status, slow_res.tamper) == ("timeout", ())
    assert (fast_res.status, fast_res.tamper) == ("passed", ())


def test_lxml_is_imported_before_the_snapshot() -> None:
    """lxml's Cython extension replaces ``inspect.isgenerator`` when first imported (bs4,
    pandas, openpyxl, python-docx and pyquery import it): imported before the snapshot, a
    candidate importing it is not recorded as tampering (21 BigCodeBench samples were)."""
    from pytest_vibecheck.execute.tests import IMPORT_TIME_PATCHERS

    assert IMPORT_TIME_PATCHERS == ("lxml.etree",)
    pytest.importorskip("lxml.etree")
    test = BCB_MOCK_TEST
    code = "import lxml.etree\ndef task_func(x):\n    return x * x\n"
    res = run_tests(code, bcb_problem(test), _settings(True))
    assert (res.status, res.message) == ("passed", "")


BCB_MOCK_TEST = """
import unittest
from unittest import mock

class TestCases(unittest.TestCase):
    def test_small(self):
        self.assertEqual(task_func(2), 4)
"""
