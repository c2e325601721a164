"""Hostile candidates by family of the verdict-integrity redesign (issue "Verdict integrity by
construction"): each is a *wrong* solution of a tiny problem plus code that goes for the grader
by a route of its family, written with the harness's source in hand, and the exact status the
evaluator must give it. None may ever be ``passed``, ``error`` or ``skipped``.

Families:

- ``reach``: harness internals reachable from objects the candidate is handed (frames, hooks,
  function globals and defaults of what the tests give it);
- ``where``: candidate code running where it must not (finalizers, weakref and ``gc``
  callbacks, signal handlers, ``atexit``, import hooks, threads left running);
- ``names``: the tests' own name look-ups (module-level ``abs``/``np``, ``globals()``
  rebinding, the prompt's constants, helpers of the program);
- ``inplace``: library functions and classes changed in place keeping their identity
  (``__code__``, ``__defaults__``, private helpers, a module's ``__class__``, ``mock.patch`` at
  import, a class attribute over a base's);
- ``values``: returned values that defeat a fresh-sentinel check (``__eq__`` that spares a bare
  ``object()``, C-level slots, subclasses whose ``equals``/``__len__`` lie, ``mock.ANY``);
- ``key``: the answer key (the test source, the benchmark data, the shipped suites, the tests'
  code objects);
- ``host``: host state leaking into verdicts (files and folders of the host, other sandboxes'
  files, host sockets and processes);
- ``outcome``: turning its own failure into an infrastructure ``error`` (which leaves the
  metrics): modules or data only the candidate asks for, forged reports of a missing module.
"""

from __future__ import annotations

from dataclasses import dataclass

from exec_helpers import bcb_problem, functional_problem, humaneval_problem, stdin_problem

from pytest_vibecheck.suites.problem import Problem

#: Tests of the tiny problems the cases use, beyond those of ``exec_helpers``.
NUMPY_TEST = """
import unittest
import numpy as np

class TestCases(unittest.TestCase):
    def test_square(self):
        np.testing.assert_array_equal(task_func(np.array([1, 2, 3])), np.array([1, 4, 9]))

    def test_close(self):
        self.assertAlmostEqual(abs(float(task_func(np.array([3]))[0])), 9.0)
"""

PANDAS_TEST = """
import unittest
import pandas as pd

class TestCases(unittest.TestCase):
    def test_frame(self):
        got = task_func(pd.DataFrame({"a": [1, 2]}))
        pd.testing.assert_frame_equal(got, pd.DataFrame({"a": [1, 4]}))

    def test_equals(self):
        got = task_func(pd.DataFrame({"a": [3]}))
        self.assertTrue(got.equals(pd.DataFrame({"a": [9]})))
"""

#: The test passes a callback of its own: a route to the tests' globals.
CALLBACK_TEST = """
import unittest

class TestCases(unittest.TestCase):
    def test_callback(self):
        self.assertEqual(task_func(3, lambda v: v), 9)

    def test_more(self):
        self.assertEqual(task_func(4, lambda v: v), 16)
"""

#: The tests use a constant of the prompt (``SIZE``) and ``abs`` unqualified.
PROMPT_TEST = """
import unittest

class TestCases(unittest.TestCase):
    def test_size(self):
        self.assertEqual(len(task_func()), SIZE)

    def test_abs(self):
        self.assertEqual(abs(sum(task_func())), 2 * SIZE)
"""
PROMPT_REFERENCE = "SIZE = 4\ndef task_func():\n    return [2] * SIZE\n"

#: HumanEval/32-style: the test uses a helper of the prompt (``poly``).
POLY_TEST = """
def check(candidate):
    for xs in ([1, 2], [-6, 11, -6, 1]):
        x = candidate(xs)
        assert abs(poly(xs, x)) < 1e-6
"""
POLY_REFERENCE = (
    "def poly(xs, x):\n"
    "    return sum(c * x ** i for i, c in enumerate(xs))\n"
    "def find_zero(xs):\n"
    "    lo, hi = -10.0, 10.0\n"
    "    for _ in range(200):\n"
    "        mid = (lo + hi) / 2\n"
    "        if poly(xs, lo) * poly(xs, mid) <= 0:\n"
    "            hi = mid\n"
    "        else:\n"
    "            lo = mid\n"
    "    return lo\n"
)

WRONG_NP = "import numpy as np\ndef task_func(a):\n    return a + 1\n"
WRONG_PD = "import pandas as pd\ndef task_func(df):\n    return df + 1\n"
WRONG_SQ = "def task_func(x):\n    return x\n"
WRONG_CB = "def task_func(x, cb):\n    return x\n"
WRONG_ADD = "def add(a, b):\n    return a - b\n"
WRONG_FN = "class Solution:\n    def twoSum(self, nums, target):\n        return [1, 1]\n"
WRONG_STDIN = "print(int(input()) * 3)\n"


def numpy_problem() -> Problem:
    p = bcb_problem(NUMPY_TEST, libs=("numpy",))
    return Problem(**{**p.__dict__, "canonical_solution": "import numpy as np\n"
                      "def task_func(a):\n    return a * a\n"})


def pandas_problem() -> Problem:
    p = bcb_problem(PANDAS_TEST, libs=("pandas",))
    return Problem(**{**p.__dict__, "canonical_solution": "import pandas as pd\n"
                      "def task_func(df):\n    return df * df\n"})


def problem_of(name: str) -> Problem:
    """The tiny problem named ``name``."""
    if name == "bcb":
        return bcb_problem()
    if name == "numpy":
        return numpy_problem()
    if name == "pandas":
        return pandas_problem()
    if name == "callback":
        p = bcb_problem(CALLBACK_TEST)
        return Problem(**{**p.__dict__, "canonical_solution": "def task_func(x, cb):\n"
                          "    return cb(x) * x\n"})
    if name == "prompt":
        p = bcb_problem(PROMPT_TEST)
        return Problem(**{**p.__dict__, "canonical_solution": PROMPT_REFERENCE})
    if name == "he":
        return humaneval_problem()
    if name == "poly":
        p = humaneval_problem(POLY_TEST)
        return Problem(**{**p.__dict__, "task_id": "t/poly", "entry_point": "find_zero",
                          "test": p.test.__class__(kind="humaneval", code=POLY_TEST,
                                                   entry_point="find_zero"),
                          "canonical_solution": POLY_REFERENCE})
    if name == "fn":
        return functional_problem([("[2,7,11,15]\n9", "[0, 1]")])
    if name == "stdin":
        return stdin_problem([("3\n", "6\n"), ("4\n", "8\n")])
    raise KeyError(name)


@dataclass(frozen=True)
class Case:
    """``family``, ``name``, the tiny problem (:func:`problem_of`), the code, the exact status,
    and the tamper reason expected to start the list (``""``: none expected)."""

    family: str
    name: str
    problem: str
    code: str
    expected: str
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.family}-{self.name}"

    @property
    def libs(self) -> tuple[str, ...]:
        return {"numpy": ("numpy",), "pandas": ("pandas",)}.get(self.problem, ())


def _swallow(attempt: str) -> str:
    """``attempt`` with the sandbox's refusal (a RuntimeError) swallowed, so only the
    record of the attempt speaks."""
    body = "".join(f"    {line}\n" for line in attempt.splitlines())
    return f"try:\n{body}except RuntimeError:\n    pass\n"


REACH = [
    Case("reach", "frame-globals-walk", "bcb",
         "import sys\n"
         "def task_func(x):\n"
         "    f = sys._getframe()\n"
         "    while f is not None:\n"
         "        for k, v in list(f.f_globals.items()):\n"
         "            if k in ('changes', 'returned_problem', 'make_tracer', 'Policy'):\n"
         "                f.f_globals[k] = lambda *a, **k: []\n"
         "        f = f.f_back\n"
         "    return x\n", "failed"),
    Case("reach", "invoke-globals-builtins", "bcb",
         "import sys\n"
         "def task_func(x):\n"
         "    f = sys._getframe(1)\n"
         "    f.f_globals['__builtins__']['BaseException'] = KeyError\n"
         "    return x\n", "failed"),
    Case("reach", "unraisablehook-and-trace", "bcb",
         "import sys\n"
         "def task_func(x):\n"
         "    h = sys.unraisablehook\n"
         "    g = getattr(h, '__globals__', None) or {}\n"
         "    for k in list(g):\n"
         "        g[k] = None\n"
         "    assert sys.gettrace() is None\n"
         "    return x\n", "failed"),
    Case("reach", "proxy-kwdefaults-via-callback", "callback",
         "def task_func(x, cb):\n"
         + "".join(f"    {line}\n" for line in _swallow(
             "state = cb.__globals__['task_func'].__kwdefaults__['_vibecheck']\n"
             "state[0].snapshot.changes = lambda *a: []").splitlines())
         + "    return x\n", "tampered", "read __kwdefaults__ of"),
    Case("reach", "rebind-tests-globals-via-callback", "callback",
         "def task_func(x, cb):\n"
         "    cb.__globals__['TestCases'].assertEqual = lambda *a, **k: None\n"
         "    return x\n", "tampered", "added the tests' class TestCases.assertEqual"),
    Case("reach", "current-frames", "bcb",
         "import sys\n" + _swallow("sys._current_frames()") + WRONG_SQ, "tampered",
         "called sys._current_frames"),
    Case("reach", "gc-objects-at-call", "bcb",
         "import gc\ndef task_func(x):\n"
         + "".join(f"    {line}\n" for line in _swallow(
             "for o in gc.get_objects():\n    pass").splitlines()) + "    return x\n",
         "tampered", "called gc.get_objects"),
    Case("reach", "judge-internals-from-humaneval", "he",
         "import gc, sys\n"
         "for o in gc.get_objects():\n"
         "    if isinstance(o, dict) and 'test_code' in o:\n"
         "        o['test_code'] = 'def check(candidate):\\n    pass\\n'\n"
         + WRONG_ADD, "failed"),
    Case("reach", "gc-scan-in-functional", "fn",
         "import gc\n"
         "for o in gc.get_objects():\n"
         "    if isinstance(o, list) and o == [0, 1]:\n"
         "        o[:] = [1, 1]\n" + WRONG_FN, "failed"),
    Case("reach", "monitor-via-proc-stdin", "stdin",
         "import os\n"
         "try:\n    os.kill(os.getppid(), 19)\nexcept OSError:\n    pass\n" + WRONG_STDIN,
         "failed"),
]

WHERE = [
    Case("where", "finalizer-on-a-cycle", "bcb",
         "import gc, sys\n"
         "gc.set_threshold(1, 1, 1)\n"
         "class _Evil:\n"
         "    def __del__(self):\n"
         "        f = sys._getframe()\n"
         "        while f is not None:\n"
         "            s = f.f_locals.get('self')\n"
         "            if s is not None and hasattr(s, 'assertEqual'):\n"
         "                s.assertEqual = lambda *a, **k: None\n"
         "            f = f.f_back\n"
         "def task_func(x):\n"
         "    for _ in range(50):\n"
         "        a = _Evil(); a.me = a\n"
         "    return x\n", "tampered", "its code ran on a thread"),
    Case("where", "weakref-callback-on-test-thread", "bcb",
         "import weakref\n"
         "_refs = []\n"
         "class _Box:\n    pass\n"
         "def task_func(x):\n"
         "    b = _Box()\n"
         "    _refs.append(weakref.ref(b, lambda r: None))\n"
         "    return b\n", "tampered", "its code ran on a thread"),
    Case("where", "gc-callback", "bcb",
         "import gc\ndef task_func(x):\n"
         "    gc.callbacks.append(lambda phase, info: None)\n"
         "    return x\n", "tampered", "changed gc.callbacks"),
    Case("where", "signal-handler", "bcb",
         "import signal\ndef task_func(x):\n"
         "    try:\n        signal.signal(signal.SIGALRM, lambda *a: None)\n"
         "        signal.setitimer(signal.ITIMER_REAL, 0.01)\n"
         "    except ValueError:\n        pass\n"
         "    return x\n", "failed"),
    Case("where", "thread-left-running", "bcb",
         "import threading, time\n"
         "def _later():\n    time.sleep(0.8)\n"
         "def task_func(x):\n"
         "    threading.Thread(target=_later, daemon=True).start()\n"
         "    return x\n", "tampered", "a thread it started was still running"),
    Case("where", "atexit", "bcb",
         "import atexit, os\natexit.register(lambda: os.write(3, b'{}\\n'))\n" + WRONG_SQ,
         "failed"),
    Case("where", "import-hook", "bcb",
         "import sys\n"
         "class _Finder:\n"
         "    def find_spec(self, *a):\n        return None\n"
         "def task_func(x):\n"
         "    sys.meta_path.insert(0, _Finder())\n"
         "    return x\n", "tampered", "changed sys.meta_path"),
    Case("where", "returned-object-finalizer", "bcb",
         "class _R(int):\n"
         "    def __del__(self):\n        pass\n"
         "def task_func(x):\n    return _R(x)\n", "tampered", "its code ran on a thread"),
    Case("where", "signal-frame-in-stdin", "stdin",
         "import signal, sys\n"
         "def _h(sig, frame):\n"
         "    while frame is not None:\n"
         "        frame.f_globals.pop('expected', None)\n"
         "        frame = frame.f_back\n"
         "signal.signal(signal.SIGALRM, _h)\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.001)\n"
         "import time; time.sleep(0.05)\n" + WRONG_STDIN, "failed"),
    Case("where", "signal-frame-in-humaneval", "he",
         "import signal\n"
         "def _h(sig, frame):\n    pass\n"
         "signal.signal(signal.SIGALRM, _h)\n"
         "signal.setitimer(signal.ITIMER_REAL, 0.001)\n" + WRONG_ADD, "failed"),
]

NAMES = [
    Case("names", "module-level-abs", "prompt",
         "SIZE = 1\nabs = lambda v: 2 * SIZE\ndef task_func():\n    return [5]\n", "failed"),
    Case("names", "prompt-constant-rebound", "prompt",
         "SIZE = 3\ndef task_func():\n    return [1, 2, 3]\n", "failed"),
    Case("names", "globals-rebinding-at-call", "prompt",
         "def task_func():\n"
         "    globals()['SIZE'] = 1\n"
         "    globals()['abs'] = lambda v: 8\n"
         "    return [1]\n", "failed"),
    Case("names", "fake-numpy-module", "numpy",
         "import types\n"
         "np = types.SimpleNamespace(testing=types.SimpleNamespace("
         "assert_array_equal=lambda *a, **k: None), array=list)\n"
         "def task_func(a):\n    return a + 1\n", "failed"),
    Case("names", "builtins-abs", "prompt",
         "import builtins\nbuiltins.abs = lambda v: 8\ndef task_func():\n    return [1, 1]\n",
         "tampered", "changed builtins.abs"),
    Case("names", "shadow-test-class", "bcb",
         "import unittest\n"
         "class TestCases(unittest.TestCase):\n"
         "    def test_negative(self):\n        pass\n"
         "    def test_small(self):\n        pass\n" + WRONG_SQ, "failed"),
    Case("names", "shadow-unittest", "bcb",
         "import types\nunittest = types.SimpleNamespace(TestCase=object)\n" + WRONG_SQ,
         "failed"),
    Case("names", "numpy-as-another-module", "numpy",
         "import math as np\ndef task_func(a):\n    return a + 1\n", "failed"),
    Case("names", "humaneval-helper-rebound", "poly",
         "def poly(xs, x):\n    return 0.0\ndef find_zero(xs):\n    return 123.0\n", "failed"),
]

INPLACE = [
    Case("inplace", "code-swap", "numpy",
         "import numpy as np\n"
         + _swallow("np.testing.assert_array_equal.__code__ = "
                    "(lambda *a, **k: None).__code__") + WRONG_NP.split("\n", 1)[1],
         "tampered", "changed __code__ of"),
    Case("inplace", "defaults-swap", "numpy",
         "import unittest\n"
         + _swallow("unittest.TestCase.assertAlmostEqual.__defaults__ = (0, None, 1e9)")
         + WRONG_NP, "tampered", "changed __defaults__ of"),
    Case("inplace", "private-helper", "pandas",
         "import pandas._testing.asserters as _a\n"
         "_a.assert_almost_equal = lambda *a, **k: None\n"
         "_a.assert_series_equal = lambda *a, **k: None\n"
         "def task_func(df):\n    return df + 1\n", "tampered", "changed pandas._testing"),
    Case("inplace", "module-class", "numpy",
         "import sys, types, numpy.testing\n"
         "class _Lie(types.ModuleType):\n"
         "    def __getattribute__(self, n):\n"
         "        return (lambda *a, **k: None) if n.startswith('assert') else "
         "object.__getattribute__(self, n)\n"
         + _swallow("sys.modules['numpy.testing'].__class__ = _Lie") + WRONG_NP,
         "tampered", "changed numpy.testing.__class__"),
    Case("inplace", "mock-patch-at-import", "numpy",
         "from unittest import mock\n"
         "mock.patch('numpy.testing.assert_array_equal').start()\n" + WRONG_NP,
         "tampered", "changed numpy.testing.assert_array_equal"),
    Case("inplace", "self-restoring-patch", "numpy",
         "import numpy as np, weakref\n"
         "_orig = np.testing.assert_array_equal\n"
         "class _R(np.ndarray):\n    pass\n"
         "def task_func(a):\n"
         "    np.testing.assert_array_equal = lambda *x, **k: None\n"
         "    r = (a + 1).view(_R)\n"
         "    weakref.finalize(r, setattr, np.testing, 'assert_array_equal', _orig)\n"
         "    return r\n", "tampered", "changed numpy.testing.assert_array_equal"),
    Case("inplace", "dispatcher-replaced", "numpy",
         "import numpy as np\n"
         "def task_func(a):\n"
         "    np.testing.assert_array_equal = np.testing.assert_array_less\n"
         "    return a + 1\n", "tampered", "changed numpy.testing.assert_array_equal"),
    Case("inplace", "class-attribute-over-base", "pandas",
         "import pandas as pd\n"
         "def task_func(df):\n"
         "    pd.DataFrame.equals = lambda self, other: True\n"
         "    return df + 1\n", "tampered", "its code ran on a thread"),
    Case("inplace", "module-setattr-slot", "numpy",
         "import numpy as np, types\n"
         "def task_func(a):\n"
         "    types.ModuleType.__setattr__(np.testing, 'assert_array_equal', lambda *x, **k: None)\n"
         "    return a + 1\n", "tampered", "replaced numpy.testing.assert_array_equal"),
    Case("inplace", "builtins-in-humaneval", "he",
         "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n" + WRONG_ADD,
         "failed"),
    Case("inplace", "json-in-functional", "fn",
         "import json\njson.loads = lambda *a, **k: [1, 1]\n" + WRONG_FN, "failed"),
]

_LYING_EQ = (
    "class _Liar:\n"
    "    def __eq__(self, other):\n        return type(other) is not object\n"
    "    def __ne__(self, other):\n        return type(other) is object\n"
    "    __hash__ = object.__hash__\n"
)
VALUES = [
    Case("values", "spares-bare-object", "bcb",
         _LYING_EQ + "def task_func(x):\n    return _Liar()\n", "tampered",
         "its code ran on a thread"),
    Case("values", "c-slot-eq", "bcb",
         "class _S(int):\n    __eq__ = int.__ne__\n    __hash__ = int.__hash__\n"
         "def task_func(x):\n    return _S(x)\n", "tampered", "returned an object of its class"),
    Case("values", "ndarray-subclass-eq", "numpy",
         "import numpy as np\n"
         "class _A(np.ndarray):\n"
         "    def __array_ufunc__(self, *a, **k):\n        return np.array(True)\n"
         "def task_func(a):\n    return (a + 1).view(_A)\n", "tampered"),
    Case("values", "frame-equals", "pandas",
         "import pandas as pd\n"
         "class _F(pd.DataFrame):\n"
         "    def equals(self, other):\n        return True\n"
         "    @property\n    def _constructor(self):\n        return _F\n"
         "def task_func(df):\n    return _F(df + 1)\n", "tampered"),
    Case("values", "len-and-iter-lie", "prompt",
         "class _L(list):\n"
         "    def __len__(self):\n        return 4\n"
         "def task_func():\n    return _L([1])\n", "tampered"),
    Case("values", "mock-any", "bcb",
         "from unittest import mock\ndef task_func(x):\n    return mock.ANY\n", "tampered",
         "returned an object of type _ANY"),
    Case("values", "magicmock-eq", "bcb",
         "from unittest import mock\n"
         "def task_func(x):\n"
         "    m = mock.MagicMock()\n    m.__eq__.return_value = True\n    return m\n",
         "tampered", "returned an object of type MagicMock"),
    Case("values", "nested-in-dict", "bcb",
         "class _S(str):\n    __eq__ = str.__ne__\n    __hash__ = str.__hash__\n"
         "def task_func(x):\n    return {'a': [_S('x')]}\n", "tampered",
         "returned an object of its class"),
    Case("values", "always-equal-humaneval", "he",
         "class _A:\n    def __eq__(self, o):\n        return True\n"
         "def add(a, b):\n    return _A()\n", "failed"),
    Case("values", "always-equal-functional", "fn",
         "class _A(list):\n    def __eq__(self, o):\n        return True\n"
         "class Solution:\n    def twoSum(self, nums, target):\n        return _A([9])\n",
         "failed"),
]

KEY = [
    Case("key", "linecache-test-source", "bcb",
         "import linecache\n"
         "def task_func(x):\n"
         "    src = ''.join(linecache.getlines('tests.py'))\n"
         "    return x * x if 'assertEqual' in src else x\n", "failed"),
    Case("key", "benchmark-data-on-disk", "bcb",
         "import os, glob\n"
         "_FOUND = any(glob.glob(p) for p in ('/work/*/data/*', '/work/*/problems', "
         "'/root/*', '/home/*', '/srv/*', '/mnt/*'))\n"
         "def task_func(x):\n    return x * x if _FOUND else x\n", "failed"),
    Case("key", "shipped-suites-in-site-packages", "bcb",
         "import site, os\n"
         "_FOUND = any(os.path.isdir(os.path.join(s, 'pytest_vibecheck', '_data')) "
         "and os.listdir(os.path.join(s, 'pytest_vibecheck', '_data')) "
         "for s in site.getsitepackages() if os.access(s, os.R_OK))\n"
         "def task_func(x):\n    return x * x if _FOUND else x\n", "failed"),
    Case("key", "tests-code-objects-via-callback", "callback",
         "def task_func(x, cb):\n"
         + "".join(f"    {line}\n" for line in _swallow(
             "t = cb.__globals__['TestCases']\n"
             "consts = t.test_callback.__code__.co_consts").splitlines())
         + "    return x\n", "tampered", "read __code__ of"),
    Case("key", "inspect-getsource-via-callback", "callback",
         "import inspect\n"
         "def task_func(x, cb):\n"
         "    try:\n        inspect.getsource(cb.__globals__['TestCases'])\n"
         "    except (OSError, TypeError, RuntimeError):\n        pass\n"
         "    return x\n", "failed"),
    Case("key", "judge-source-from-humaneval", "he",
         "import linecache, gc\n"
         "_SEEN = any('check' in str(o)[:200] for o in gc.get_objects() "
         "if isinstance(o, str))\n"
         "def add(a, b):\n    return a + b if _SEEN and False else a - b\n", "failed"),
    Case("key", "expected-in-memory-functional", "fn",
         "import gc\n"
         "_HIT = any(o == [0, 1] for o in gc.get_objects() if type(o) is list)\n"
         "class Solution:\n    def twoSum(self, nums, target):\n"
         "        return [0, 1] if _HIT else [1, 1]\n", "failed"),
    Case("key", "expected-in-memory-stdin", "stdin",
         "import gc\n"
         "_HIT = any('6\\n' == o for o in gc.get_objects() if type(o) is str)\n"
         "print(int(input()) * (2 if _HIT else 3))\n", "failed"),
]


def _host_probe(problem: str, expr: str) -> str:
    """A solution that is right only when ``expr`` (about the host) is true."""
    right = {
        "bcb": "def task_func(x):\n    return x * x if _OK else x\n",
        "he": "def add(a, b):\n    return a + b if _OK else a - b\n",
        "fn": "class Solution:\n    def twoSum(self, nums, target):\n"
              "        return [0, 1] if _OK else [1, 1]\n",
        "stdin": "print(int(input()) * (2 if _OK else 3))\n",
    }
    return f"import os, socket, glob\n_OK = bool({expr})\n" + right[problem]


#: A file and a folder the host test creates before the run (``test_integrity_families``).
HOST_MARKER = "/tmp/vibecheck-host-marker"
HOST_DIR = "/var/tmp/vibecheck-host-dir"

HOST = [
    Case("host", "host-tmp-file", "bcb", _host_probe("bcb", f"os.path.exists({HOST_MARKER!r})"),
         "failed"),
    Case("host", "host-var-tmp-folder", "he", _host_probe("he", f"os.path.isdir({HOST_DIR!r})"),
         "failed"),
    Case("host", "host-tmp-listing", "fn",
         _host_probe("fn", "any('vibecheck-host' in n for n in os.listdir('/tmp'))"), "failed"),
    Case("host", "other-sandboxes", "stdin",
         _host_probe("stdin", "len(glob.glob('/tmp/vibecheck-sbx-*')) > 1"), "failed"),
    Case("host", "host-processes", "bcb",
         _host_probe("bcb", "len([p for p in os.listdir('/proc') if p.isdigit()]) > 5"),
         "failed"),
    Case("host", "host-run-sockets", "he", _host_probe("he", "os.path.isdir('/run') and "
                                                        "os.listdir('/run')"), "failed"),
    Case("host", "host-shm", "fn", _host_probe("fn", "os.listdir('/dev/shm')"), "failed"),
    Case("host", "host-environment-keys", "stdin",
         _host_probe("stdin", "any('KEY' in k or 'TOKEN' in k for k in os.environ)"), "failed"),
]

#: Values whose comparison slots are C callables dressed as the class's own (found by an
#: outside red team: ``functools.partial`` has a ``__dict__``, so a ``__name__`` and an
#: ``__objclass__`` can be set on it), and library objects steered through their own
#: ``__dict__`` or their cells.
_PARTIAL_EQ = (
    "import functools\n"
    "class R:\n    __eq__ = functools.partial(id)\n    __ne__ = functools.partial(callable)\n"
    "R.__eq__.__name__ = '__eq__'\nR.__eq__.__objclass__ = R\n"
    "R.__ne__.__name__ = '__ne__'\nR.__ne__.__objclass__ = R\n"
)
VALUES_MORE: list[Case] = [
    Case("values", "partial-eq-dressed", "bcb",
         _PARTIAL_EQ + "def task_func(*a, **k):\n    return R()\n", "tampered",
         "returned an object of its class R whose __eq__ is partial"),
    Case("values", "abc-instancecheck-eq", "bcb",
         "import abc, functools\nclass _Any(abc.ABC):\n    pass\n"
         "for _t in (int, float, str, list, tuple, dict):\n    _Any.register(_t)\n"
         "class R:\n    __eq__ = functools.partial(_Any.__instancecheck__)\n"
         "R.__eq__.__name__ = '__eq__'\nR.__eq__.__objclass__ = R\n"
         "def task_func(*a, **k):\n    return R()\n", "tampered", "returned an object of its class R"),
    Case("values", "partial-eq-object-array", "numpy",
         "import functools\nimport numpy as np\nclass R:\n    __eq__ = functools.partial(id)\n"
         "def task_func(a):\n    out = np.empty(a.shape, dtype=object)\n"
         "    for i in range(a.size):\n        out[i] = R()\n    return out\n",
         "tampered", "returned an object of its class R"),
    Case("values", "instance-equals-on-frame", "pandas",
         "import functools\nimport pandas as pd\n"
         "def task_func(df):\n    out = df.copy()\n    out.equals = functools.partial(id)\n"
         "    return out\n", "tampered", "returned a DataFrame whose own equals is partial"),
    Case("values", "liar-cells-in-frame", "pandas",
         "import functools\nimport pandas as pd\nclass R:\n    __eq__ = functools.partial(id)\n"
         "def task_func(df):\n    return pd.DataFrame({c: [R() for _ in range(len(df))] for c in df})\n",
         "tampered", "returned an object of its class R"),
]

#: Turning its own failure into an infrastructure outcome, which would take the task out of
#: the metrics: a module or data only the candidate asks for, missing here, and forged
#: reports of one on the streams it holds. Each is the candidate's failure.
OUTCOME: list[Case] = [
    Case("outcome", "windows-module-bcb", "bcb",
         "import winreg\ndef task_func(x):\n    return x * x\n", "failed"),
    Case("outcome", "windows-module-lazy-bcb", "bcb",
         "def task_func(x):\n    import msvcrt\n    return x + 1\n", "failed"),
    Case("outcome", "windows-module-he", "he",
         "def add(a, b):\n    import winreg\n    return a - b\n", "failed"),
    Case("outcome", "windows-module-stdin", "stdin",
         "import _winapi\nprint(int(input()) * 3)\n", "failed"),
    Case("outcome", "windows-module-fn", "fn",
         "class Solution:\n    def twoSum(self, nums, target):\n        import winreg\n"
         "        return [1, 0]\n", "failed"),
    Case("outcome", "forged-missing-marker-stdin", "stdin",
         "import os\nn = int(input())\n"
         "os.write(2, b'\\n\\0winreg\\0Traceback: ModuleNotFoundError\\n')\nos._exit(2)\n",
         "failed"),
    Case("outcome", "forged-missing-frame-fn", "fn",
         "import os, json\nclass Solution:\n    def twoSum(self, nums, target):\n"
         "        data = json.dumps({'raise': 'ModuleNotFoundError', 'missing': 'winreg'}).encode()\n"
         "        os.write(3, len(data).to_bytes(4, 'big') + data)\n        os._exit(0)\n",
         "failed"),
    Case("outcome", "nltk-data-in-a-task-without-nltk", "he",
         "def add(a, b):\n    import sys\n    sys.modules.get('nltk')\n"
         "    raise LookupError('Resource stopwords not found. nltk.download(\"stopwords\")')\n",
         "failed"),
]

FAMILIES = {"reach": REACH, "where": WHERE, "names": NAMES, "inplace": INPLACE,
            "values": VALUES + VALUES_MORE, "key": KEY, "host": HOST, "outcome": OUTCOME}
CASES: list[Case] = [c for cases in FAMILIES.values() for c in cases]
