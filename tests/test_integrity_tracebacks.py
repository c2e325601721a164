"""The standard library's traceback summaries work in candidate code (traceback.format_exc,
logging.exception, a multiprocessing or concurrent.futures worker's error), and no way
around them reaches the tests' frames: the candidate's calls run on threads of their own,
whose frames lead to none of the tests'."""

from __future__ import annotations

import time

import pytest
from exec_helpers import bcb_problem

from pytest_vibecheck.execute.tests import ExecSettings, run_tests

#: The static screen off: these cases test the layers behind it (it reports every hostile one).
SETTINGS = ExecSettings(time_limit_s=20.0, screen=False)

#: Correct solutions (x * x) that format or send tracebacks on the way.
LEGIT = {
    "format_exc": (
        "import traceback\n"
        "def task_func(x):\n"
        "    try:\n        raise KeyError(x)\n"
        "    except KeyError:\n        text = traceback.format_exc()\n"
        "    assert 'KeyError' in text and 'candidate.py' in text\n"
        "    return x * x\n"
    ),
    "logging.exception": (
        "import io, logging\n"
        "def task_func(x):\n"
        "    out = io.StringIO()\n"
        "    log = logging.getLogger('t'); log.addHandler(logging.StreamHandler(out))\n"
        "    try:\n        1 / 0\n"
        "    except ZeroDivisionError:\n        log.exception('boom')\n"
        "    assert 'ZeroDivisionError' in out.getvalue()\n"
        "    return x * x\n"
    ),
    "multiprocessing worker error": (  # BigCodeBench/363 hung here until its time limit
        "from multiprocessing import Pool\n"
        "def check(v):\n"
        "    if v is None:\n        raise ValueError('no value')\n"
        "    return v * v\n"
        "def task_func(x):\n"
        "    with Pool(2) as pool:\n"
        "        try:\n            pool.map(check, [None])\n"
        "        except ValueError:\n            pass\n"
        "        return pool.map(check, [x])[0]\n"
    ),
    "process pool executor error": (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "def check(v):\n"
        "    if v is None:\n        raise ValueError('no value')\n"
        "    return v * v\n"
        "def task_func(x):\n"
        "    with ProcessPoolExecutor(2) as ex:\n"
        "        try:\n            ex.submit(check, None).result()\n"
        "        except ValueError:\n            pass\n"
        "        return ex.submit(check, x).result()\n"
    ),
}


@pytest.mark.parametrize("name", sorted(LEGIT))
def test_tracebacks_of_candidate_code_can_be_formatted(name: str) -> None:
    t0 = time.perf_counter()
    res = run_tests(LEGIT[name], bcb_problem(), SETTINGS)
    assert (res.status, res.message) == ("passed", "")
    assert time.perf_counter() - t0 < 15  # no hang until the time limit


#: Wrong solutions that return the right answer only if they get hold of a frame of the
#: tests (``CHEAT`` is set when a frame or the globals of tests.py were reached). Each raises
#: in its own running frame, whose ``f_back`` is the test method's.
_PRELUDE = (
    "import sys, traceback, types\n"
    "CHEAT = []\n"
    "def _tests_reached(frames):\n"
    "    for f in frames:\n"
    "        while f is not None:\n"
    "            if f.f_code.co_filename == 'tests.py':\n"
    "                CHEAT.append(f)\n"
    "                return\n"
    "            f = f.f_back\n"
)


def _hostile(setup: str, attempt: str) -> str:
    """``task_func`` runs ``setup``, raises, and runs ``attempt`` (``e``: the exception) in its
    handler; a RuntimeError (the sandbox's refusal) is swallowed."""
    body = "".join(f"    {line}\n" for line in setup.splitlines())
    tried = "".join(f"            {line}\n" for line in attempt.splitlines())
    return (
        "def task_func(x):\n" + body
        + "    try:\n        raise KeyError(x)\n    except KeyError as e:\n"
        + "        try:\n" + tried + "        except RuntimeError:\n            pass\n"
        + "    return x * x if CHEAT else x\n"
    )


_SPY_LINECACHE = (
    "import linecache\n"
    "class _Spy:\n"
    "    def __getattr__(self, name):\n        return getattr(linecache, name)\n"
    "    def lazycache(self, filename, module_globals):\n"
    "        if 'TestCases' in module_globals:\n            CHEAT.append(module_globals)\n"
    "        return False\n"
)
_SPY_LAZYCACHE = (
    "import linecache\n"
    "def _spy(filename, module_globals):\n"
    "    if 'TestCases' in module_globals:\n        CHEAT.append(module_globals)\n"
    "    return False\n"
)
_SPY_ITERTOOLS = (
    "import itertools\n"
    "class _It:\n"
    "    def __getattr__(self, name):\n        return getattr(itertools, name)\n"
    "    def islice(self, gen, *args):\n"
    "        if getattr(gen, '__name__', '') not in ('walk_tb', '_walk_tb_with_full_positions'):\n"
    "            return itertools.islice(gen, *args)\n"
    "        _tests_reached([f for f, _n in gen])\n"
    "        return iter([])\n"
)

HOSTILE = {
    "walk_tb by hand": _PRELUDE + _hostile(
        "", "_tests_reached([f for f, _n in traceback.walk_tb(e.__traceback__)])"),
    "a clone of the walker with the module's globals": _PRELUDE + _hostile(
        "walker = getattr(traceback, '_walk_tb_with_full_positions', traceback.walk_tb)\n"
        "clone = types.FunctionType(walker.__code__, traceback.__dict__)",
        "_tests_reached([f for f, _n in clone(e.__traceback__)])"),
    "linecache replaced in the traceback module": _PRELUDE + _SPY_LINECACHE + _hostile(
        "traceback.linecache = _Spy()", "traceback.format_exception(e)"),
    "linecache.lazycache replaced": _PRELUDE + _SPY_LAZYCACHE + _hostile(
        "linecache.lazycache = _spy", "traceback.format_exception(e)"),
    "capture_locals": _PRELUDE + _hostile(
        "", "te = traceback.TracebackException.from_exception(e, capture_locals=True)\n"
            "CHEAT.extend(fs for fs in te.stack if fs.filename == 'tests.py')"),
    "itertools replaced to take the walker": _PRELUDE + _SPY_ITERTOOLS + _hostile(
        "traceback.itertools = _It()", "traceback.format_exception(e, limit=5)"),
}


#: Routes that replace a library's function while the candidate runs: the module guard names
#: them as they happen.
REPLACED = {
    "linecache replaced in the traceback module": "changed traceback.linecache",
    "linecache.lazycache replaced": "changed linecache.lazycache",
    "itertools replaced to take the walker": "changed traceback.itertools",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_no_way_around_the_summaries_reaches_the_tests(name: str) -> None:
    """The candidate's frames lead to no frame of the tests (its calls run on threads of
    their own), so none of these finds one; replacing a library's function is tampering."""
    res = run_tests(HOSTILE[name], bcb_problem(), SETTINGS)
    if name in REPLACED:
        assert res.status == "tampered", res.message
        assert res.tamper[0] == f"{REPLACED[name]} (a module of the tests or a library)"
    else:
        assert (res.status, res.tamper) == ("failed", ()), res.message
