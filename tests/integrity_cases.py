"""Hostile candidates: wrong solutions with code added that goes for the grader.

Each case is a *wrong* solution of one of the tiny problems of ``exec_helpers`` (one per test
kind) plus a few lines of hostile code written with the harness's source in hand, and the
exact status the evaluator must give it. None may ever be ``passed``; none may move itself
into ``error`` or ``skipped``. The families are those of the verdict-integrity issue:

- ``channel``: writing a fake result record into the channel the harness reports through;
- ``framework``: replacing or patching the test framework, or returning an object that
  compares equal to anything;
- ``introspection``: finding the harness's own objects (frames, the garbage collector,
  ``ctypes``, ``/proc``, hooks) to read or change them;
- ``serializer``: patching the serializer the harness writes its result with;
- ``fork``: a forked child that writes into the harness's pipes;
- ``error``: routes that used to move a wrong solution into ``error`` (a fake
  ``ModuleNotFoundError``, ``KeyboardInterrupt``, ``SystemExit``, ``os._exit``, a skip, a fake
  boot failure, a suite without tests);
- ``evaluator``: records meant to break the evaluator (deep nesting, a huge integer, tens of
  MiB);
- ``host``: filling the disk, reaching the project folder, home folders and host sockets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from exec_helpers import bcb_problem, functional_problem, humaneval_problem, stdin_problem

from pytest_vibecheck.suites.problem import Problem

KINDS = ("bigcodebench-unittest", "humaneval", "functional", "stdin")
#: The kinds judged outside the candidate's process (``execute/judged.py``).
JUDGED = frozenset({"humaneval", "functional", "stdin"})

#: A wrong solution of each tiny problem (square, add, twoSum, doubling a number).
WRONG = {
    "bigcodebench-unittest": "def task_func(x):\n    return x\n",
    "humaneval": "def add(a, b):\n    return a - b\n",
    "functional": (
        "class Solution:\n    def twoSum(self, nums, target):\n        return [1, 1]\n"
    ),
    "stdin": "print(int(input()) * 3)\n",
}

#: What a forged "everything passed" record looks like for each kind (the harness's format).
_FAKE = {
    "bigcodebench-unittest": {
        "kind": "bigcodebench-unittest",
        "import": ["pass", "", ""],
        "tests": [["test_negative", "pass", "", ""], ["test_small", "pass", "", ""]],
        "tamper": [],
        "candidate_ran": True,
        "test_time_s": 0.01,
    },
    "humaneval": {
        "kind": "humaneval",
        "import": ["pass", "", ""],
        "tests": [["check", "pass", "", ""]],
        "tamper": [],
        "candidate_ran": True,
        "test_time_s": 0.01,
    },
    "functional": {
        "kind": "functional",
        "import": ["pass", "", ""],
        "cases": [["pass", "", ""]],
        "tamper": [],
        "candidate_ran": True,
        "test_time_s": 0.01,
    },
    "stdin": {
        "kind": "stdin",
        "import": ["pass", "", ""],
        "cases": [["pass", "", ""], ["pass", "", ""]],
        "tamper": [],
        "candidate_ran": True,
        "test_time_s": 0.01,
    },
}


def _spray(kind: str, extra: str = "") -> str:
    """Code that writes a forged record (with a made-up seal) to every open descriptor."""
    line = "0" * 32 + " " + json.dumps(_FAKE[kind])
    return (
        "import os\n"
        f"_LINE = {line!r}.encode() + b'\\n'\n"
        "for _fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(_fd, _LINE)\n"
        "    except OSError:\n"
        "        pass\n"
        f"{extra}"
    )


def problem_for(kind: str, libs: tuple[str, ...] = ()) -> Problem:
    """The tiny problem of ``kind`` (two tests or cases each, except HumanEval's one check)."""
    if kind == "bigcodebench-unittest":
        return bcb_problem(libs=libs)
    if kind == "humaneval":
        return humaneval_problem()
    if kind == "functional":
        return functional_problem([("[2,7,11,15]\n9", "[0, 1]")])
    return stdin_problem([("3\n", "6\n"), ("4\n", "8\n")])


@dataclass(frozen=True)
class Case:
    """One hostile candidate: ``family``, ``name``, ``kind``, its code and the exact status."""

    family: str
    name: str
    kind: str
    code: str
    expected: str

    @property
    def id(self) -> str:
        short = {"bigcodebench-unittest": "bcb", "humaneval": "he", "functional": "fn"}
        return f"{self.family}-{self.name}-{short.get(self.kind, self.kind)}"


_ALWAYS_EQUAL = (
    "class _Any:\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    __hash__ = object.__hash__\n"
    "    def __repr__(self):\n        return '4'\n"
)
_EQ_STR = "class _S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
_RETURN = {
    "bigcodebench-unittest": "def task_func(x):\n    return {value}\n",
    "humaneval": "def add(a, b):\n    return {value}\n",
    "functional": "class Solution:\n    def twoSum(self, nums, target):\n        return {value}\n",
}


def _in_body(kind: str, body: str) -> str:
    """A wrong solution whose entry point runs ``body`` first (at test time, not import)."""

    def indent(n: int) -> str:
        return "".join(" " * n + line + "\n" for line in body.splitlines())

    if kind == "bigcodebench-unittest":
        return "def task_func(x):\n" + indent(4) + "    return x\n"
    if kind == "humaneval":
        return "def add(a, b):\n" + indent(4) + "    return a - b\n"
    if kind == "functional":
        return (
            "class Solution:\n    def twoSum(self, nums, target):\n" + indent(8)
            + "        return [1, 1]\n"
        )
    return body + "\n" + WRONG["stdin"]


def _cases() -> list[Case]:
    out: list[Case] = []

    def add(family: str, name: str, code_by_kind: dict[str, str], expected: dict[str, str]) -> None:
        for kind, code in code_by_kind.items():
            # the judged kinds run the candidate where nothing of the verdict is: whatever
            # it goes for is not there, so a wrong solution is simply wrong
            status = "failed" if kind in JUDGED else expected[kind]
            out.append(Case(family, name, kind, code, status))

    every = dict.fromkeys(KINDS, "tampered")
    fails_stdin = {**every, "stdin": "failed"}
    failed = dict.fromkeys(KINDS, "failed")

    # --- channel: a forged record on every descriptor, at import and at test time
    add("channel", "spray-import", {k: _spray(k) + WRONG[k] for k in KINDS}, fails_stdin)
    add(
        "channel",
        "spray-test-time",
        {k: _in_body(k, _spray(k)) for k in KINDS},
        fails_stdin,
    )
    add(
        "channel",
        "spray-then-exit",
        {k: _spray(k, "os._exit(0)\n") + WRONG[k] for k in KINDS},
        fails_stdin,
    )
    reopen = (
        "for _n in range(3, 40):\n"
        "    try:\n"
        "        open(f'/proc/self/fd/{_n}', 'w').write('x\\n')\n"
        "    except (OSError, RuntimeError):\n"
        "        pass\n"
    )
    add("channel", "reopen-proc-fd", {k: reopen + WRONG[k] for k in KINDS}, every)

    # --- framework: patching unittest, sys.modules, class building; always-equal values
    patch_assert = (
        "import unittest\n"
        "try:\n    unittest.TestCase.assertEqual = lambda self, *a, **k: None\n"
        "except RuntimeError:\n    pass\n"
    )
    # the classes of unittest and json are immutable in the sandbox: the patch raises
    add("framework", "patch-assertEqual", {k: patch_assert + WRONG[k] for k in KINDS}, failed)
    fake_unittest = (
        "import sys, types, unittest\n"
        "_fake = types.ModuleType('unittest')\n"
        "class _TC:\n"
        "    def __init__(self, name='runTest'):\n        self._n = name\n"
        "    def __getattr__(self, name):\n        return lambda *a, **k: None\n"
        "_fake.TestCase = _TC\n"
        "sys.modules['unittest'] = _fake\n"
    )
    add(
        "framework",
        "fake-unittest-module",
        {k: fake_unittest + WRONG[k] for k in KINDS},
        fails_stdin,
    )
    build_class = (
        "import builtins\n"
        "_real = builtins.__build_class__\n"
        "def _bc(func, name, *bases, **kw):\n"
        "    cls = _real(func, name, *bases, **kw)\n"
        "    for k in list(vars(cls)):\n"
        "        if k.startswith('test'):\n"
        "            setattr(cls, k, lambda self: None)\n"
        "    return cls\n"
        "builtins.__build_class__ = _bc\n"
    )
    add(
        "framework", "patch-build-class", {k: build_class + WRONG[k] for k in KINDS}, fails_stdin
    )
    outcome = (
        "import unittest.case\n"
        "class _O:\n"
        "    def __init__(self, *a, **k):\n        self.success = True\n"
        "unittest.case._Outcome = _O\n"
    )
    add("framework", "patch-outcome-global", {k: outcome + WRONG[k] for k in KINDS}, fails_stdin)
    add(
        "framework",
        "always-equal",
        {k: _ALWAYS_EQUAL + _RETURN[k].format(value="_Any()") for k in _RETURN},
        every,
    )
    add(
        "framework",
        "always-equal-str",
        {k: _EQ_STR + _RETURN[k].format(value="_S('x')") for k in _RETURN},
        every,
    )
    add(
        "framework",
        "always-equal-nested",
        {k: _ALWAYS_EQUAL + _RETURN[k].format(value="[_Any(), _Any()]") for k in _RETURN},
        every,
    )
    loader = (
        "import unittest\n"
        "try:\n    unittest.TestLoader.getTestCaseNames = lambda self, cls: []\n"
        "except RuntimeError:\n    pass\n"
    )
    add("error", "no-tests-loader", {k: loader + WRONG[k] for k in KINDS}, failed)
    stdout_trick = (
        "import sys\n"
        "class _W:\n"
        "    def write(self, s):\n        return len(s)\n"
        "    def flush(self):\n        pass\n"
        "sys.stdout = _W()\n"
    )
    add("framework", "swallow-stdout", {"stdin": stdout_trick + WRONG["stdin"]}, failed)

    # --- introspection: frames, gc, ctypes, /proc, hooks
    gc_scan = "import gc\ntry:\n    gc.get_objects()\nexcept RuntimeError:\n    pass\n"
    add("introspection", "gc-get-objects", {k: gc_scan + WRONG[k] for k in KINDS}, every)
    add(
        "introspection",
        "gc-referrers-at-test",
        {k: _in_body(k, "import gc\ngc.get_referrers(gc)") for k in KINDS},
        every,
    )
    frames = (
        "import sys\n"
        "_f = sys._getframe(0)\n"
        "_seen = []\n"
        "while _f is not None:\n"
        "    _seen.append(_f.f_locals)\n"
        "    _f = _f.f_back\n"
    )
    add("introspection", "walk-frames", {k: frames + WRONG[k] for k in KINDS}, failed)
    walk = (
        "import sys\n"
        "_f = sys._getframe(1)\n"
        "while _f is not None:\n"
        "    _l = _f.f_locals\n"
        "    _s = _l.get('self')\n"
        "    if _s is not None and hasattr(_s, 'assertEqual'):\n"
        "        _s.assertEqual = lambda *a, **k: None\n"
        "    if 'expected' in _l:\n"
        "        RESULT = _l['expected']\n"
        "    _f = _f.f_back\n"
    )
    add(
        "introspection",
        "walk-frames-at-test",
        {k: _in_body(k, walk) for k in KINDS if k != "stdin"},
        failed,
    )
    tb = (
        "try:\n    1 / 0\n"
        "except ZeroDivisionError as _e:\n"
        "    _frame = _e.__traceback__.tb_frame.f_back\n"
    )
    add("introspection", "traceback-frame", {k: tb + WRONG[k] for k in KINDS}, failed)
    current = "import sys\ntry:\n    sys._current_frames()\nexcept RuntimeError:\n    pass\n"
    add("introspection", "current-frames", {k: current + WRONG[k] for k in KINDS}, every)
    cast = (
        "import ctypes\n"
        "try:\n    ctypes.cast(id(ctypes), ctypes.py_object)\n"
        "except RuntimeError:\n    pass\n"
    )
    # tasks that do not need ctypes run without it (import fails); see also CTYPES_CASES
    add("introspection", "ctypes-cast", {k: cast + WRONG[k] for k in KINDS}, failed)
    string_at = (
        "import ctypes\n"
        "try:\n    ctypes.string_at(id(ctypes), 64)\n"
        "except RuntimeError:\n    pass\n"
    )
    add("introspection", "ctypes-string-at", {k: string_at + WRONG[k] for k in KINDS}, failed)
    mem = (
        "try:\n    open('/proc/self/mem', 'rb')\n"
        "except (OSError, RuntimeError):\n    pass\n"
    )
    add("introspection", "proc-self-mem", {k: mem + WRONG[k] for k in KINDS}, every)
    trace = "import sys\ntry:\n    sys.settrace(lambda *a: None)\nexcept RuntimeError:\n    pass\n"
    # a trace function of its own sees the candidate's own thread only: allowed
    add("introspection", "settrace", {k: trace + WRONG[k] for k in KINDS}, failed)
    audit = "import sys\nsys.addaudithook(lambda *a: None)\n"
    add("introspection", "addaudithook", {k: audit + WRONG[k] for k in KINDS}, every)
    unraisable = "import sys\nsys.unraisablehook = lambda u: None\n"
    add(
        "introspection",
        "replace-unraisablehook",
        {k: unraisable + WRONG[k] for k in ("bigcodebench-unittest", "humaneval")},
        every,
    )

    # --- serializer: json, the harness's record format
    dumps = "import json\njson.dumps = lambda *a, **k: '{}'\n"
    add("serializer", "patch-json-dumps", {k: dumps + WRONG[k] for k in KINDS}, fails_stdin)
    encoder = (
        "import json\n"
        "try:\n    json.JSONEncoder.encode = lambda self, o: '[0, 1]'\n"
        "except RuntimeError:\n    pass\n"
    )
    # in the harness's process the class's methods are behaviour the snapshots compare
    add("serializer", "patch-json-encoder", {k: encoder + WRONG[k] for k in KINDS},
        {**failed, "bigcodebench-unittest": "tampered"})
    basestring = "import json.encoder\njson.encoder.encode_basestring_ascii = lambda s: '\"x\"'\n"
    add(
        "serializer",
        "patch-encode-basestring",
        {k: basestring + WRONG[k] for k in KINDS},
        fails_stdin,
    )

    # --- fork: a child process writes into the pipes while the harness works
    fork_spray = {
        k: "import os, time\n"
        "if os.fork() == 0:\n"
        + "".join("    " + line + "\n" for line in _spray(k).splitlines())
        + "    os._exit(0)\n"
        "time.sleep(0.3)\n" + WRONG[k]
        for k in KINDS
    }
    # a forked child has none of the harness's descriptors (closed at fork)
    add("fork", "child-sprays", fork_spray, failed)
    fork_late = {
        k: "import os, time\n"
        "if os.fork() == 0:\n"
        "    time.sleep(2)\n"
        + "".join("    " + line + "\n" for line in _spray(k).splitlines())
        + "    os._exit(0)\n" + WRONG[k]
        for k in KINDS
    }
    add("fork", "child-writes-after-the-end", fork_late, failed)
    tokens = {
        k: _in_body(
            k,
            "import os, stat\n"
            "if os.fork() == 0:\n"
            "    for _fd in range(3, 64):\n"
            "        try:\n"
            "            if stat.S_ISFIFO(os.fstat(_fd).st_mode):\n"
            # a first byte of 0xff: on a framed channel (the judged kinds) the frame's
            # size reads over wire.MAX_FRAME, a protocol break (failed) every time, never a
            # frame that waits for bytes that do not come (timeout, once in 256 runs)
            "                os.write(_fd, b'\\xff' + os.urandom(15) + b'E')\n"
            "        except OSError:\n"
            "            pass\n"
            "    os._exit(0)\n"
            "os.wait()",
        )
        for k in KINDS
    }
    add("fork", "child-writes-tokens", tokens, failed)

    # --- error: routes that used to take a wrong solution out of the metrics
    mnf = "raise ModuleNotFoundError(\"No module named 'sqlite3'\", name='sqlite3')"
    add("error", "fake-missing-module", {k: _in_body(k, mnf) for k in KINDS}, failed)
    add("error", "fake-missing-at-import", {k: mnf + "\n" + WRONG[k] for k in KINDS}, failed)
    add("error", "keyboard-interrupt", {k: _in_body(k, "raise KeyboardInterrupt") for k in KINDS},
        failed)
    add("error", "system-exit", {k: "import sys\nsys.exit(0)\n" + WRONG[k] for k in KINDS}, failed)
    add("error", "os-exit-in-test", {k: _in_body(k, "import os\nos._exit(0)") for k in KINDS},
        failed)
    add(
        "error",
        "skip-test",
        {k: _in_body(k, "import unittest\nraise unittest.SkipTest('later')") for k in KINDS},
        failed,
    )
    boot = (
        "import os\n"
        "for _fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(_fd, b'0' * 32 + b' {\"boot_error\": \"no namespaces\"}\\n')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    add("error", "fake-boot-failure", {k: boot + WRONG[k] for k in KINDS}, fails_stdin)
    vanish = (
        "import sys\n"
        "sys.modules.pop('__test__', None)\n"
        "sys.modules.pop('__candidate__', None)\n"
    )
    add("error", "module-disappears", {k: vanish + WRONG[k] for k in KINDS}, failed)

    # --- evaluator: records meant to break the reader
    def junk(payload: str) -> str:
        return (
            "import os, stat\n"
            f"_J = {payload}\n"
            "for _fd in range(3, 64):\n"
            "    try:\n"
            "        if stat.S_ISFIFO(os.fstat(_fd).st_mode):\n"
            "            os.write(_fd, _J)\n"
            "    except OSError:\n"
            "        pass\n"
        )

    add("evaluator", "deep-nesting",
        {k: junk("b'0' * 32 + b' ' + b'[' * 200000 + b'\\n'") + WRONG[k] for k in KINDS},
        fails_stdin)
    add("evaluator", "huge-integer",
        {k: junk("b'0' * 32 + b' ' + b'9' * 200000 + b'\\n'") + WRONG[k] for k in KINDS},
        fails_stdin)
    add("evaluator", "tens-of-mib",
        {k: junk("b'x' * (17 << 20) + b'\\n'") + WRONG[k] for k in ("bigcodebench-unittest",
                                                                   "stdin")},
        fails_stdin)

    # --- host: disk, project folder, home folders
    fill = (
        "_blob = b'\\0' * (1 << 20)\n"
        "with open('big.bin', 'wb') as _fh:\n"
        "    for _ in range(400):\n"
        "        _fh.write(_blob)\n"
    )
    add("host", "fill-work-folder", {k: fill + WRONG[k] for k in KINDS}, failed)
    add(
        "host",
        "fill-tmp",
        {k: fill.replace("'big.bin'", "'/tmp/big.bin'") + WRONG[k] for k in KINDS},
        failed,
    )
    # entries of the home folders other than the folders the interpreter lives in
    home = (
        "[n for d in ('/root', '/home') if os.path.isdir(d) for n in os.listdir(d)"
        " if not __import__('sys').base_prefix.startswith(os.path.join(d, n))"
        " and not __import__('sys').prefix.startswith(os.path.join(d, n))]"
    )
    add("host", "home-folders-are-empty", {k: reachability_code(k, probe=home) for k in KINDS},
        failed)
    return out


def reachability_code(kind: str, path: str = "", probe: str = "") -> str:
    """A solution that is *right* only when ``path`` (a host file or socket) is reachable, or
    when the Python expression ``probe`` is true."""
    test = f"_reach({path!r})" if not probe else f"bool({probe})"
    probe = (
        "import os, socket\n"
        "def _reach(p):\n"
        "    if os.path.exists(p):\n"
        "        return True\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX)\n"
        "        s.connect(p)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        f"_OK = {test}\n"
    )
    right = {
        "bigcodebench-unittest": "def task_func(x):\n    return x * x if _OK else x\n",
        "humaneval": "def add(a, b):\n    return a + b if _OK else a - b\n",
        "functional": (
            "class Solution:\n    def twoSum(self, nums, target):\n"
            "        return [0, 1] if _OK else [1, 1]\n"
        ),
        "stdin": "print(int(input()) * (2 if _OK else 3))\n",
    }
    return probe + right[kind]


CASES: list[Case] = _cases()

#: Cases on a task that needs ``ctypes`` (it stays importable there): raw memory reads are
#: refused by the audit hook and recorded.
CTYPES_CASES: list[Case] = [
    Case(
        "introspection",
        "ctypes-string-at-allowed",
        "bigcodebench-unittest",
        "import ctypes\ntry:\n    ctypes.string_at(id(ctypes), 64)\nexcept RuntimeError:\n    pass\n"
        + WRONG["bigcodebench-unittest"],
        "tampered",
    ),
    Case(
        "introspection",
        "ctypes-from-address-allowed",
        "bigcodebench-unittest",
        "import ctypes\ntry:\n    ctypes.c_char.from_address(id(ctypes))\n"
        "except RuntimeError:\n    pass\n" + WRONG["bigcodebench-unittest"],
        "tampered",
    ),
    Case(
        "introspection",
        "ctypes-pythonapi-allowed",
        "bigcodebench-unittest",
        "import ctypes\ntry:\n    ctypes.pythonapi.PyObject_GetAttr\n"
        "except RuntimeError:\n    pass\n" + WRONG["bigcodebench-unittest"],
        "tampered",
    ),
]
