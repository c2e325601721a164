"""Honest code that leans on introspection passes as it does in plain Python: the verdict-integrity
layers harm no correct solution (issue "Verdict integrity by construction", item 4). Each
candidate is right; each must be ``passed`` with nothing recorded as tampering, in the test
kind that shares the candidate's interpreter (BigCodeBench) and, for a few, in the judged kinds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from exec_helpers import bcb_problem, humaneval_problem, stdin_problem

from pytest_vibecheck.execute import sandbox
from pytest_vibecheck.execute.pool import run_many
from pytest_vibecheck.execute.tests import ExecResult, ExecSettings

pytestmark = pytest.mark.skipif(
    sandbox.capabilities().mode == "process" or not sys.platform.startswith("linux"),
    reason="needs Linux namespaces",
)

SETTINGS = ExecSettings(time_limit_s=20.0, startup_s=20.0)

#: Right solutions of the square task (``task_func(x) == x * x``), each leaning on one kind of
#: introspection.
HONEST: dict[str, str] = {
    "own-traceback-frame": (
        "def task_func(x):\n"
        "    try:\n        1 / 0\n"
        "    except ZeroDivisionError as e:\n"
        "        frame = e.__traceback__.tb_frame\n"
        "        assert frame.f_code.co_name == 'task_func' and frame.f_lineno > 1\n"
        "    return x * x\n"
    ),
    "protocol-with-abc": (
        "import abc\nfrom typing import Protocol, runtime_checkable\n"
        "@runtime_checkable\n"
        "class Squarer(Protocol):\n    def square(self, x: int) -> int: ...\n"
        "class Base(Squarer, abc.ABC):\n"
        "    @abc.abstractmethod\n    def square(self, x: int) -> int: ...\n"
        "class Impl(Base):\n    def square(self, x: int) -> int:\n        return x * x\n"
        "def task_func(x):\n"
        "    impl = Impl()\n    assert isinstance(impl, Squarer)\n    return impl.square(x)\n"
    ),
    "logging-and-warnings": (
        "import io, logging, warnings\n"
        "def task_func(x):\n"
        "    out = io.StringIO()\n"
        "    log = logging.getLogger('honest')\n"
        "    log.addHandler(logging.StreamHandler(out))\n"
        "    log.warning('squaring %s', x)\n"
        "    try:\n        raise ValueError(x)\n"
        "    except ValueError:\n        log.exception('boom')\n"
        "    with warnings.catch_warnings(record=True) as seen:\n"
        "        warnings.simplefilter('always')\n"
        "        warnings.warn('careful', stacklevel=2)\n"
        "    assert 'squaring' in out.getvalue() and seen\n"
        "    return x * x\n"
    ),
    "inspect-and-wraps": (
        "import functools, inspect\n"
        "def logged(fn):\n"
        "    @functools.wraps(fn)\n"
        "    def inner(*a, **k):\n        return fn(*a, **k)\n"
        "    return inner\n"
        "@logged\n"
        "def _sq(v: int) -> int:\n    return v * v\n"
        "def task_func(x):\n"
        "    assert list(inspect.signature(_sq).parameters) == ['v']\n"
        "    assert 'return v * v' in inspect.getsource(_sq)\n"
        "    assert inspect.isfunction(_sq.__wrapped__) and _sq.__name__ == '_sq'\n"
        "    return _sq(x)\n"
    ),
    "dataclass-namedtuple-enum": (
        "import collections, dataclasses, enum\n"
        "@dataclasses.dataclass(frozen=True)\n"
        "class P:\n    v: int\n    def sq(self):\n        return self.v * self.v\n"
        "Pair = collections.namedtuple('Pair', 'a b', defaults=(0,))\n"
        "class Kind(enum.Enum):\n    SQUARE = 2\n"
        "def task_func(x):\n"
        "    assert Pair(1) == (1, 0) and Kind.SQUARE.value == 2\n"
        "    return P(x).sq()\n"
    ),
    "process-pool": (
        "from multiprocessing import Pool\n"
        "def _sq(v):\n    return v * v\n"
        "def task_func(x):\n"
        "    with Pool(2) as pool:\n        return pool.map(_sq, [x])[0]\n"
    ),
    "thread-pool-and-threads": (
        "import threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def task_func(x):\n"
        "    box = []\n"
        "    t = threading.Thread(target=lambda: box.append(x * x))\n"
        "    t.start(); t.join()\n"
        "    with ThreadPoolExecutor(2) as ex:\n"
        "        assert ex.submit(lambda: x * x).result() == box[0]\n"
        "    return box[0]\n"
    ),
    "weakrefs-and-gc": (
        "import gc, weakref\n"
        "class Node:\n    pass\n"
        "def task_func(x):\n"
        "    n = Node()\n    r = weakref.ref(n)\n    cache = weakref.WeakValueDictionary(a=n)\n"
        "    assert r() is n and cache['a'] is n\n"
        "    del n\n    gc.collect()\n"
        "    assert r() is None and gc.isenabled()\n"
        "    return x * x\n"
    ),
    "generator-returned": (
        "def _gen(x):\n    yield x * x\n"
        "def task_func(x):\n    return next(iter(_gen(x)))\n"
    ),
    "stdout-redirect-and-recursion": (
        "import contextlib, io, sys\n"
        "def task_func(x):\n"
        "    sys.setrecursionlimit(max(sys.getrecursionlimit(), 2000))\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n        print(x * x)\n"
        "    return int(buf.getvalue())\n"
    ),
    "pickle-own-class": (
        "import pickle\n"
        "class Box:\n    def __init__(self, v):\n        self.v = v\n"
        "def task_func(x):\n    return pickle.loads(pickle.dumps(Box(x * x))).v\n"
    ),
}


#: Frame access the static screen reports (it is a construct honest solutions essentially never
#: use: zero of the project's 6,902), which the layers behind it allow: the candidate's own
#: frames lead to nothing of the tests'.
FRAMES = (
    "import inspect, sys\n"
    "def _depth():\n    return len(inspect.stack(0))\n"
    "def task_func(x):\n"
    "    assert sys._getframe(0).f_code.co_name == 'task_func'\n"
    "    f = inspect.currentframe()\n"
    "    while f.f_back is not None:\n        f = f.f_back\n"
    "    assert f.f_code.co_filename == '<vibecheck-call>'\n"
    "    assert _depth() >= 2\n"
    "    return x * x\n"
)


def test_frame_walks_reach_only_the_candidates_own_frames() -> None:
    unscreened = SETTINGS.replace(screen=False)
    ok, screened = run_many([(FRAMES, bcb_problem())], unscreened, None) + run_many(
        [(FRAMES, bcb_problem())], SETTINGS, None)
    assert (ok.status, ok.tamper, ok.message) == ("passed", (), "")
    assert screened.status == "tampered"
    assert screened.tamper[0].startswith("line 3, column ") and screened.tamper[0].endswith(
        "[frame-stack]")


#: A trace function of its own (a hook the static screen reports) sees only its own thread.
SETTRACE = (
    "import sys\n"
    "def task_func(x):\n"
    "    calls = []\n"
    "    sys.settrace(lambda f, e, a: calls.append(e))\n"
    "    (lambda: None)()\n"
    "    sys.settrace(None)\n"
    "    return x * x\n"
)


def test_a_trace_function_of_its_own_is_allowed_behind_the_screen() -> None:
    (res,) = run_many([(SETTRACE, bcb_problem())], SETTINGS.replace(screen=False), None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


@pytest.fixture(scope="module")
def results() -> dict[str, ExecResult]:
    names = sorted(HONEST)
    got = run_many([(HONEST[n], bcb_problem()) for n in names], SETTINGS, None, workers=2)
    return dict(zip(names, got, strict=True))


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_introspection_passes(name: str, results: dict[str, ExecResult]) -> None:
    res = results[name]
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_a_real_library_that_subclasses_protocol_with_an_abc_imports() -> None:
    """narwhals (which scikit-learn 1.9 loads) subclasses ``Protocol`` together with ABCs at
    import; ``typing`` reads its caller's frame for that (``typing._caller``). The decoy frame
    the harness used to hand out made it raise ``TypeError`` at import."""
    pytest.importorskip("narwhals")
    code = "import narwhals as nw\ndef task_func(x):\n    return x * x\n"
    (res,) = run_many([(code, bcb_problem(libs=("narwhals",)))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_honest_code_in_the_judged_kinds() -> None:
    he = ("import inspect, sys\n"
          "def add(a, b):\n    assert sys._getframe().f_code.co_name == 'add'\n    return a + b\n")
    stdin = "import sys, inspect\nprint(int(sys.stdin.readline()) * 2)\n"
    got = run_many([(he, humaneval_problem()), (stdin, stdin_problem([("3\n", "6\n")]))],
                   SETTINGS, None, workers=2)
    assert [(r.status, r.message) for r in got] == [("passed", "")] * 2


#: Tests that import ``math``, which the candidates below use without importing it.
MATH_TEST = """
import math
import unittest

class TestCases(unittest.TestCase):
    def test_small(self):
        self.assertEqual(task_func(2), 4)
"""


def test_the_tests_imports_reach_the_candidates_functions_but_not_its_module_code() -> None:
    """As upstream, which runs the candidate's source and then the tests' in one module: a
    function may use a module only the tests import (``math``), but module code that calls it
    at import fails with ``NameError``, as it does there (BigCodeBench/330 of the shipped 0.5B
    replay, multi-turn turn 1: ``random`` at import)."""
    in_function = "def task_func(x):\n    return int(math.pow(x, 2))\n"
    at_import = in_function + "result = task_func(3)\n"
    ok, bad = run_many([(in_function, bcb_problem(MATH_TEST)), (at_import, bcb_problem(MATH_TEST))],
                       SETTINGS, None, workers=2)
    assert (ok.status, ok.tamper) == ("passed", ())
    assert (bad.status, bad.failed_tests, bad.tamper) == ("failed", ("<import>",), ())
    assert "NameError: name 'math' is not defined" in bad.message


#: Tests that compare what ``task_func`` returns with a tuple and read its exception's text.
TUPLE_TEST = """
import unittest

class TestCases(unittest.TestCase):
    def test_pair(self):
        self.assertEqual(task_func(2), (4, 2))
        self.assertEqual(str(task_func(3)), "Pair(square=9, root=3)")
"""


@pytest.mark.parametrize("code", [
    "import collections\nPair = collections.namedtuple('Pair', 'square root')\n"
    "def task_func(x):\n    return Pair(x * x, x)\n",
    "from typing import NamedTuple\nclass Pair(NamedTuple):\n    square: int\n    root: int\n"
    "def task_func(x):\n    return Pair(x * x, x)\n",
], ids=["collections.namedtuple", "typing.NamedTuple"])
def test_a_returned_named_tuple_is_honest(code: str) -> None:
    """A named tuple's ``__repr__`` is the library's code with the class's module; the check
    of returned values once took it for a steering slot (found by an outside red team)."""
    (res,) = run_many([(code, bcb_problem(TUPLE_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_a_library_changing_its_own_functions_while_it_loads_is_not_tampering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """numpy 1.23 (the bigvibebench environment's) sets ``__code__`` of its own functions
    (``empty_like``) as it is imported; when the candidate's ``import numpy`` is what loads it,
    the audit policy took that for tampering (BigCodeBench/667, found by an outside red team).
    A package counts as loading while its top-level module's spec is ``_initializing``."""
    from pytest_vibecheck.execute._child import audit

    pkg = tmp_path / "vibe_loading_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def f():\n    return 1\n"
        "import pytest_vibecheck.execute._child.audit as _a\n"
        "WHILE_LOADING = _a._importing(f)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("vibe_loading_pkg")
    assert module.WHILE_LOADING is True
    assert audit._importing(module.f) is False  # loaded: a change now is the candidate's


#: BigCodeBench/833's test_case_6: a returned generator the tests never consume.
UNCONSUMED_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_kind(self):
        square, numbers = task_func(2)
        self.assertEqual(square, 4)
        self.assertIsInstance(numbers, type((x for x in range(1))))
"""


def test_a_returned_generator_the_tests_drop_unfinished_is_honest() -> None:
    """CPython 3.11 closes a dropped generator by running its frame (to throw
    ``GeneratorExit``); on the test thread that frame was the candidate's code, so the
    reference solution of BigCodeBench/833 was ``tampered``. The harness keeps the
    candidate's generators alive until the process ends."""
    code = ("def task_func(x):\n    counts = {1: 2, 3: 4}\n"
            "    return x * x, ((k, v) for k, v in counts.items())\n")
    (res,) = run_many([(code, bcb_problem(UNCONSUMED_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_a_library_changing_its_own_functions_when_first_used_is_not_tampering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pyparsing sets ``__kwdefaults__`` of its own functions when first used, which
    matplotlib's text layout does under a candidate's call (the references of BigCodeBench/70,
    86 and 9 more were ``tampered`` in the bigvibebench environment). A write from the same
    package as the function is the library's; one from another package is not."""
    from pytest_vibecheck.execute._child import audit

    pkg = tmp_path / "vibe_selfpatch_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import pytest_vibecheck.execute._child.audit as _a\n"
        "def f(*, x=1):\n    return x\n"
        "def own_write():\n    return _a._own_package_writes(f)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("vibe_selfpatch_pkg")
    assert module.own_write() is True
    assert audit._own_package_writes(module.f) is False  # this test's file is another package
    assert audit._package_of(str(pkg / "__init__.py")) == "vibe_selfpatch_pkg"


#: BigCodeBench/566's tests, in small: ``task_func`` introspects a function the tests hand it.
HANDED_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_function(self):
        def probe(a, b=1, *, c=2): pass
        self.assertEqual(task_func(probe), (['a', 'b'], (1,), {'c': 2}))
    def test_lambda_in_a_list(self):
        self.assertEqual(task_func([lambda x, y=2: x + y])[:2], (['x', 'y'], (2,)))
"""

#: BigCodeBench/509's tests, in small: the tests' own classmethod sets an attribute of their
#: class, and the tests patch ``builtins.open`` and then set an attribute of the name ``open``
#: (BigCodeBench/579).
OWN_CLASS_AND_BUILTINS_TEST = """
import unittest
from unittest.mock import mock_open, patch
class TestCases(unittest.TestCase):
    @classmethod
    def make(cls):
        cls.path = 'data.txt'
    def setUp(self):
        self.make()
    def test_reads(self):
        with patch('builtins.open', mock_open(read_data='3')):
            self.assertEqual(task_func(self.path), 9)
    def test_io_error(self):
        with patch('builtins.open', mock_open(read_data='3')):
            open.side_effect = IOError
            with self.assertRaises(IOError):
                task_func(self.path)
"""


def test_the_tests_functions_handed_to_the_candidate_are_its_to_inspect() -> None:
    """The references of BigCodeBench/566-571 call ``inspect.getfullargspec`` on the function
    the tests hand them; the audit hook refused the ``__code__`` read as the tests' code. The
    tests' functions handed as arguments (also inside a list) are the candidate's to read;
    the tests' other functions stay refused."""
    code = ("import inspect\n"
            "def task_func(f):\n"
            "    f = f[0] if isinstance(f, list) else f\n"
            "    spec = inspect.getfullargspec(f)\n"
            "    return spec.args, spec.defaults, spec.kwonlydefaults\n")
    (res,) = run_many([(code, bcb_problem(HANDED_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_a_test_function_not_handed_over_stays_refused() -> None:
    """The tests' code the tests did not hand over (a test method reached through a handed
    function's globals) is still refused: reading its ``__code__`` is tampering."""
    code = ("def task_func(f):\n"
            "    f = f[0] if isinstance(f, list) else f\n"
            "    method = f.__globals__['TestCases'].test_lambda_in_a_list\n"
            "    method.__code__\n"
            "    return ['x', 'y'], (2,), None\n")
    (res,) = run_many([(code, bcb_problem(HANDED_TEST))], UNSCREENED, None)
    assert res.status == "tampered"
    assert "read __code__ of TestCases.test_lambda_in_a_list (the tests' code)" in res.message


def test_the_tests_change_their_own_class_and_patch_builtins_as_in_plain_python() -> None:
    """The tests' own classmethod setting ``cls.path`` raised ``TypeError`` once their class
    was frozen (BigCodeBench/509's reference failed), and ``open.side_effect = ...`` after
    ``patch('builtins.open')`` reached the real built-in through the tests' private copy of
    the built-ins (BigCodeBench/579). Both pass as in plain Python."""
    code = "def task_func(path):\n    with open(path) as fh:\n        return int(fh.read()) ** 2\n"
    (res,) = run_many([(code, bcb_problem(OWN_CLASS_AND_BUILTINS_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


#: The layers behind the static screen (which flags ``__globals__`` and ``__code__`` first).
UNSCREENED = ExecSettings(time_limit_s=20.0, startup_s=20.0, screen=False)

#: Tests the candidate goes for through the globals of the function they hand it.
HANDED_CLASS_TEST = """
import unittest
class TestCases(unittest.TestCase):
    limit = 5
    def test_a(self):
        self.assertEqual(task_func(lambda: 0), 1)
    def test_b(self):
        self.assertEqual(task_func(lambda: 0), 2)
"""


@pytest.mark.parametrize(("attack", "why"), [
    ("tests.test_b = tests.test_a", "replaced the tests' class TestCases.test_b"),
    ("tests.limit = 0", "replaced the tests' class TestCases.limit"),
    ("tests.maxDiff = 0", "added the tests' class TestCases.maxDiff"),
    ("del tests.limit", "deleted the tests' class TestCases.limit"),
], ids=["replace-method", "replace-value", "add", "delete"])
def test_a_change_of_the_tests_class_by_the_candidate_is_tampering(attack: str, why: str) -> None:
    """The tests' classes are no longer frozen (their own code may change them), so the hot
    snapshots keep their namespaces: the candidate's change during a call is named."""
    code = ("def task_func(f):\n"
            "    tests = f.__globals__['TestCases']\n"
            f"    {attack}\n"
            "    return 1\n")
    (res,) = run_many([(code, bcb_problem(HANDED_CLASS_TEST))], UNSCREENED, None)
    assert res.status == "tampered"
    assert f"{why} during a call of the candidate" in res.message



#: BigCodeBench/273's tests, in small: the tests build a handler from the class the candidate
#: returns and call its method themselves.
RETURNED_CLASS_TEST = """
import unittest
from unittest.mock import MagicMock
class TestCases(unittest.TestCase):
    def test_handler(self):
        Handler = task_func()
        self.assertEqual(Handler.__mro__[1].__name__, 'Base')
        handler = Handler(MagicMock())
        handler.send = MagicMock()
        handler.do_post({'data': 1})
        handler.send.assert_called_with(200, 'ok')
        self.assertEqual(handler.reply_count, 1)
        self.assertEqual(Handler.kind(), 'json')
"""


def test_methods_of_a_class_the_candidate_returns_run_for_the_tests() -> None:
    """The references of BigCodeBench/273 and 274 return a request-handler class; the tests
    call its ``do_POST`` themselves, which ran the candidate's code on their thread (reported
    as tampering). Its ordinary methods now run on call threads, also when they call each
    other, a property and a class method included."""
    code = (
        "class Base:\n"
        "    def __init__(self, request):\n        self.request = request\n"
        "def task_func():\n"
        "    class Handler(Base):\n"
        "        count = 0\n"
        "        def do_post(self, body):\n"
        "            self.count += 1\n"
        "            self.send(*self._answer(body))\n"
        "        def _answer(self, body):\n"
        "            return (200, 'ok') if 'data' in body else (400, 'no data')\n"
        "        @property\n"
        "        def reply_count(self):\n            return self.count\n"
        "        @classmethod\n"
        "        def kind(cls):\n            return 'json'\n"
        "    return Handler\n"
    )
    problem = bcb_problem(RETURNED_CLASS_TEST)
    (res,) = run_many([(code, problem)], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


#: Tests that name a class of the candidate's and call its methods themselves.
NAMED_CLASS_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_account(self):
        secret = 7
        account = Account(3)
        self.assertEqual(account.doubled(), secret - 1)
"""


def test_a_named_classs_methods_cannot_reach_the_tests_frames() -> None:
    """A class the tests name is theirs to construct; its ordinary methods run on call threads,
    so one that walks up to the test's frame to read its locals finds no such frame (it ran on
    the test's own thread before, where the audit hook trusts the thread)."""
    reach = ("import sys\n"
             "class Account:\n"
             "    def __init__(self, n):\n        self.n = n\n"
             "    def doubled(self):\n"
             "        frame = sys._getframe(1)\n"
             "        return frame.f_locals['secret'] - 1\n")
    honest = ("class Account:\n"
              "    def __init__(self, n):\n        self.n = n\n"
              "    def doubled(self):\n        return self.n * 2\n")
    bad, good = run_many([(reach, bcb_problem(NAMED_CLASS_TEST)),
                          (honest, bcb_problem(NAMED_CLASS_TEST))], UNSCREENED, None, workers=2)
    assert (bad.status, bad.tamper) == ("failed", ())
    assert "KeyError: secret" in bad.message
    assert (good.status, good.tamper) == ("passed", ())


#: Tests in the shapes of BigCodeBench/190 (the tests open the connection the candidate uses),
#: 388 (a mock's side effect, the tests' lambda, makes a DataFrame, and pandas reads the stack
#: under it), 1085 (a name the test source imports, used by the candidate) and 760 (the tests'
#: ``import datetime`` over the prompt's ``from datetime import datetime``).
SHARED_STATE_TEST = """
import unittest
import sqlite3
from unittest.mock import patch
from string import punctuation
import datetime
import pandas as pd
class TestCases(unittest.TestCase):
    def setUp(self):
        self.conn = sqlite3.connect(':memory:')
        self.conn.execute('CREATE TABLE t (x INTEGER)')
    @patch('sqlite3.connect')
    def test_connection_of_the_tests(self, connect):
        connect.return_value = self.conn
        self.assertEqual(task_func('rows'), 2)
    @patch('pandas.read_csv')
    def test_a_side_effect_of_the_tests(self, read_csv):
        read_csv.side_effect = lambda path: pd.DataFrame({'a': [1, 2, 3]})
        self.assertEqual(task_func('frame'), 6)
    def test_names_the_tests_import(self):
        self.assertEqual(task_func('names'), ('!', 2001))
"""


def test_state_the_tests_share_with_the_candidate_works_as_in_plain_python() -> None:
    """A connection the tests open is used by the candidate on its call thread, and one it
    opens in one call in the next (``sqlite3.connect`` defaults to ``check_same_thread=False``
    in the sandbox); pandas reading the stack under the tests' own callback is not a reach
    for the tests' frames; the test source's imports (a string constant, a module over a
    class of the same name) reach the candidate's functions, as upstream."""
    code = (
        "import sqlite3\nimport pandas as pd\nfrom datetime import datetime\n"
        "def task_func(what):\n"
        "    if what == 'rows':\n"
        "        conn = sqlite3.connect('db')\n"
        "        conn.executemany('INSERT INTO t VALUES (?)', [(1,), (2,)])\n"
        "        return conn.execute('SELECT COUNT(*) FROM t').fetchone()[0]\n"
        "    if what == 'frame':\n"
        "        return int(pd.read_csv('x.csv')['a'].sum())\n"
        "    return punctuation[0], datetime.date(2001, 1, 1).year\n"
    )
    (res,) = run_many([(code, bcb_problem(SHARED_STATE_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


#: Tests that call a view the candidate registered in the library object it returns, as a
#: Flask test client calls ``app.view_functions[...]`` (BigCodeBench/80, 83).
HELD_VIEW_TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_view(self):
        app = task_func()
        self.assertEqual(app.views['index'](3), 'page 3')
        self.assertEqual(app.name, 'demo')
"""


def test_a_view_the_candidate_registers_in_a_returned_library_object_runs_for_the_tests() -> None:
    """The candidate's functions a returned library object holds for later (Flask's
    ``view_functions``) get proxies in place, so the library's later call of one runs it on a
    call thread instead of the test's (reported as tampering before)."""
    code = ("import types\n"
            "def task_func():\n"
            "    def index(n):\n        return f'page {n}'\n"
            "    return types.SimpleNamespace(name='demo', views={'index': index})\n")
    (res,) = run_many([(code, bcb_problem(HELD_VIEW_TEST))], SETTINGS, None)
    assert (res.status, res.tamper, res.message) == ("passed", (), "")


def test_the_sandboxs_sqlite_connect_is_not_the_candidates_to_change() -> None:
    """``sqlite3.connect``'s stand-in keeps the real one in defaults the audit hook guards:
    reading them to swap the connection the tests get is tampering."""
    code = ("import sqlite3\n"
            "def task_func(what):\n"
            "    sqlite3.connect.__kwdefaults__['_connect'] = lambda *a, **k: None\n"
            "    return 2\n")
    (res,) = run_many([(code, bcb_problem(SHARED_STATE_TEST))], UNSCREENED, None)
    assert res.status == "tampered"
    assert "read __kwdefaults__ of connect" in res.message
