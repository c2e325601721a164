"""A static screen of a candidate's source for reflective constructs that reach the grader.

Runs in the evaluator, with the standard library's :mod:`ast` only: the code is parsed, never
run. Where the tests share the candidate's interpreter (``bigcodebench-unittest``), verdict
integrity is partly by detection, and this screen is one of those layers: it flags constructs
that honest solutions essentially never use and that an adversary holding the harness's
source would use to reach it. The rules are data (:data:`RULES`: id -> reason; the construct
tables below map names to rule ids). ``benchmarks/screen_false_positives.py`` measures them
on every real solution the project has (6,902; zero findings).

API::

    screen(code, *, task_modules=(), rules=DEFAULT_RULES) -> tuple[Finding, ...]

``Finding(line, column, rule, reason)``: ``line`` and ``column`` 1-based, the column in
characters (as Ruff counts), at the flagged name; ``rule`` an id of :data:`RULES`; ``reason``
a sentence for a reviewer (``"reads the caller's frame (sys._getframe)"``). Findings are
sorted by position, each (position, rule, reason) once. ``task_modules``: the modules the
task itself names (BigCodeBench's ``libs``); a rule whose ``exempt_by`` is among them is not
reported. ``rules``: the rule ids to report; :data:`DEFAULT_RULES` are the active ones,
:data:`MEASURED_RULES` the judgement calls the benchmark measures. ``ValueError`` for an
unknown rule id, ``TypeError`` for ``code`` that is not a ``str``.

The text below is the section for ``docs/sandbox.md`` ("Verdict integrity"), in its Markdown.

### Static screen of the candidate's source

Before a `bigcodebench-unittest` candidate runs, the evaluator parses its source (never runs
it, `pytest_vibecheck/screen.py`, which the verifiers' hidden-code rule shares) and flags each
use of a reflective construct that reaches the grader.
Each finding is a `tampered` reason: `line 3, column 9: reads the caller's frame
(sys._getframe) [frame-getframe]`. Names are resolved through the code's imports, aliases
(`s = sys`, `from sys import _getframe as g`, `__import__('sys')`, `sys.modules['sys']`) and
Python's scopes (a parameter named `compile` is not the builtin); `sys` and `os` are
predefined, as in BigCodeBench's test module.

| rule | flags |
|---|---|
| `frame-getframe`, `frame-threads` | `sys._getframe`; `sys._current_frames`, `sys._current_exceptions` |
| `frame-stack` | `inspect.currentframe`, `stack`, `trace`, `getouterframes`, `getinnerframes`, `getargvalues`; `traceback.extract_stack`, `format_stack`, `print_stack`, `walk_stack`; a true `capture_locals=` or `stack_info=` |
| `frame-attr`, `frame-suspended` | `f_back`, `f_globals`, `f_locals`, `f_builtins`, `f_trace`; `gi_frame`, `cr_frame`, `ag_frame`, `inspect.getgeneratorlocals`, `getcoroutinelocals` (one's own traceback's `tb_frame`, `tb_next`, `f_code`, `f_lineno` are not flagged) |
| `function-globals`, `function-code`, `function-closure` | `__globals__`, `inspect.getclosurevars`; `__code__`, `co_consts`, `co_code`, `import dis`; `__closure__`, `cell_contents`, `types.CellType` |
| `function-defaults`, `function-build` | assigning `__defaults__` / `__kwdefaults__`; `types.CodeType`, `.replace(co_...=)`, calling `types.FunctionType` / `LambdaType`, `marshal.loads` |
| `gc-walk`, `gc-hook` | `gc.get_objects`, `get_referrers`, `get_referents`; `gc.callbacks`, `gc.set_threshold` |
| `signal` | `signal.signal`, `setitimer`, `set_wakeup_fd`, `raise_signal`, `pthread_kill`, `_thread.interrupt_main` (signal constants, `os.kill(pid, signal.SIGTERM)`, are not flagged) |
| `ctypes` | importing `ctypes`, `_ctypes` or `cffi`, unless the task names `ctypes` (BigCodeBench/562-565) |
| `sys-modules-write`, `import-hook` | assigning, deleting or mutating `sys.modules` or its entries (also `dict.__setitem__(sys.modules, ...)`); `sys.meta_path`, `path_hooks`, `path_importer_cache` |
| `import-dynamic` | `__import__` / `importlib.import_module` of a name that is not a literal, `importlib.reload`, `importlib.util.spec_from_file_location` / `module_from_spec` / `spec_from_loader`, `SourceFileLoader`, `runpy`, unless the task names `importlib` (BigCodeBench/541); a literal name is screened as an import (`__import__('ctypes')`) |
| `class-assign` | assigning `__class__` or `__bases__` (also by `setattr` / `object.__setattr__`) |
| `builtins-write`, `builtins-reach` | assigning or deleting an attribute of `builtins` (`setattr` too) or an item of `__builtins__` / `builtins.__dict__` / `vars(builtins)`, or `__builtins__` itself; any other use of `__builtins__` |
| `interpreter-hook` | `sys.settrace`, `setprofile`, `addaudithook`, `call_tracing`, `monitoring`, `unraisablehook`; `threading.settrace` / `setprofile` (and `_all_threads`); assigning `sys.excepthook`, `displayhook`, `breakpointhook`, `threading.excepthook`; `breakpoint()`; importing `pdb`, `bdb`, `profile`, `trace` |
| `exec-dynamic` | `exec` / `eval` / `compile` of a string that is neither a literal nor read from standard input (`eval(input())` is not flagged; a literal is screened as code, three levels deep); passing one on as a value (`map(eval, ...)`); `timeit` of a built string; importing `code`, `codeop` |
| `unpickle-literal` | `pickle.loads` of bytes written in the source |
| `mock-patch` | calling `unittest.mock.patch` (or `mock.patch`) in any form |
| `module-write` | assigning or deleting an attribute of an imported module or of an object imported from one (`np.testing.assert_array_equal = ...`, `TestCase.assertEqual = ...`), also through `setattr`, `__setattr__`, `__dict__`, `vars()`, and with a name built at run time; not `sys.stdout`, `stderr`, `stdin`, `argv`, `path`, `executable`, `tracebacklimit`, `dont_write_bytecode`, `pandas.options.*`, `ssl._create_default_https_context`, `mpmath.mp.dps` / `prec` |
| `globals-write`, `globals-read`, `import-rebind` | `globals()[...] =`, `globals().update(...)` and the like; any other `globals()`, module-level `vars()`, `sys.modules[<not a literal>]`; rebinding at module level a name an import bound (`import pandas as pd`, then `pd = ...`; a fallback in `except ImportError` is not flagged) |
| `linecache`, `tests-reference`, `proc-self` | importing `linecache` (it holds the tests' source); naming `TestCases`, importing `__main__` or `__test__`; a string naming `/proc/self`, `/proc/thread-self`, `/proc/<pid>`, `/proc/{...}` or `/dev/fd/` |
| `subclasses-walk`, `always-equal`, `lying-subclass` | `__subclasses__`; an `__eq__` whose every `return` is a true constant (or `__ne__` false); `__eq__`, `__ne__`, `equals`, `__array_function__` or `__array_ufunc__` defined in a subclass of a library type or of a built-in value type |
| `string-name` | a string, or an expression the screen evaluates statically (`+`, `%`, `str.format`, `join`, f-strings, slices such as `[::-1]`, `chr`, `map(chr, [...])`, `bytes([...])`, `bytes.fromhex`, `base64` / `binascii` / rot13 decoding, names assigned once), that names one of the attributes, functions or modules above (`'__glob' + 'als__'`); inside `getattr`, `setattr`, `delattr`, `hasattr`, `operator.attrgetter`, `__getattribute__`, `__setattr__` the name is checked as the attribute itself; docstrings are not screened |
| `screen-limit` | source over 1,000,000 characters, or nested past the parser's own limits (`RecursionError` / `MemoryError`, which `compile` raises too): one finding, nothing screened |
| `exec-any` (off here) | every `exec` / `eval` / `compile` of a string that is not read from standard input, literals too, and `timeit` of a literal: not a route to the grader, so the sandbox's screen does not report it; the verifiers' hidden-code rule does (docs/verifiers.md) |

Source that does not parse (`SyntaxError`, a null byte) gives no finding; the run reports the
error. Measured on every real solution the project has (`benchmarks/screen_false_positives.py`:
the 1,140 BigCodeBench reference solutions, Qwen2.5-Coder-7B's 1,140 + 1,140 replies,
Qwen2.5-Coder-0.5B's 164 HumanEval replies, o1-mini's and o1-preview's 880 + 880
LiveCodeBench programs, the 1,558 shipped replay replies): no finding.

**What the screen cannot see** (the other layers must hold there):

- names built by code it does not evaluate: loops, comprehensions other than `chr` over
  literal integers, arithmetic on character codes, values read from files, the environment
  or the tests' arguments, names assigned more than once; `getattr` / `setattr` with such a
  name on an object it cannot type (measured, off: `getattr-dynamic`, which flags honest
  `getattr(obj, attr)` in BigCodeBench/233, 846, 848);
- objects reached through containers, arguments or return values (`m = [np.testing][0]`,
  `def patch(m): m.f = g` then `patch(np.testing)`), `type(f)(code, globals)`;
- code in a file the candidate writes and then imports through `sys.path`, or runs in a
  subprocess;
- finalizers, weakref callbacks and `atexit` handlers (measured, off: `finalizer`), builtins
  shadowed at module level (measured, off: `builtin-shadow`; `input = sys.stdin.readline` is
  honest), a module-level name that shadows a library the tests use without importing it
  (`pd = Fake()`), a subclass whose `__len__`, `__iter__` or `__bool__` lies, an `__eq__`
  that is true for all but some values;
- syntax newer than the evaluator's Python: it does not parse there, so it is not screened
  (run the screen under a Python at least as new as the sandbox's).
"""

from __future__ import annotations

import ast
import base64
import binascii
import builtins
import codecs
import re
import threading
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: Source longer than this (in characters) is not parsed: one ``screen-limit`` finding.
MAX_SOURCE_CHARS = 1_000_000
#: Literal code run by ``exec`` / ``eval`` / ``compile`` is screened down to this depth.
MAX_EXEC_DEPTH = 3
#: Static string evaluation gives up (no finding) beyond this expression depth or length.
MAX_FOLD_DEPTH = 40
MAX_FOLD_CHARS = 10_000
#: Name resolution follows at most this many attributes and aliases.
MAX_CHAIN = 30


@dataclass(frozen=True)
class Rule:
    """One construct the screen flags.

    ``reason`` is a sentence with ``{name}`` standing for the construct found; ``exempt_by``
    a module that, when the task itself names it, makes the construct the task's;
    ``active`` False for the judgement rules that are measured, not reported by default.
    """

    id: str
    reason: str
    exempt_by: str = ""
    active: bool = True


_RULE_LIST: tuple[Rule, ...] = (
    Rule("frame-getframe", "reads the caller's frame ({name})"),
    Rule("frame-threads", "reads every thread's current frame ({name})"),
    Rule("frame-stack", "walks the live call stack ({name}), which holds the harness's and the tests' frames"),
    Rule("frame-attr", "reads a frame's {name}, which leads to its callers' frames and names"),
    Rule("frame-suspended", "reads a suspended generator's or coroutine's frame ({name})"),
    Rule("function-globals", "reaches a function's module globals ({name})"),
    Rule("function-code", "reads or replaces a code object ({name})"),
    Rule("function-closure", "reads a function's closure cells ({name})"),
    Rule("function-defaults", "replaces a function's default arguments ({name})"),
    Rule("function-build", "builds a function or code object at run time ({name})"),
    Rule("gc-walk", "walks the interpreter's live objects ({name})"),
    Rule("gc-hook", "runs code at garbage collection ({name})"),
    Rule("signal", "installs a signal handler or interrupts the main thread ({name})"),
    Rule("ctypes", "loads a foreign-function interface ({name}), which reads and writes raw memory", exempt_by="ctypes"),
    Rule("sys-modules-write", "changes the interpreter's module table ({name})"),
    Rule("import-hook", "hooks the import system ({name})"),
    Rule("import-dynamic", "imports or loads a module chosen at run time ({name})", exempt_by="importlib"),
    Rule("class-assign", "changes an object's class ({name})"),
    Rule("builtins-write", "changes the builtins ({name})"),
    Rule("builtins-reach", "reaches the builtins through {name}"),
    Rule("interpreter-hook", "installs an interpreter hook ({name})"),
    Rule("exec-dynamic", "runs code the screen cannot read ({name})"),
    Rule("unpickle-literal", "unpickles bytes written in the source ({name}), which can call any function"),
    Rule("mock-patch", "patches objects with unittest.mock ({name})"),
    Rule("module-write", "changes the imported module or class {name}"),
    Rule("globals-write", "rebinds module names at run time ({name}), which the tests look up"),
    Rule("import-rebind", "rebinds the imported name {name} at module level"),
    Rule("linecache", "reads the source cache ({name}), which holds the tests' source"),
    Rule("tests-reference", "refers to the tests' or the harness's module or class ({name})"),
    Rule("proc-self", "names the process's own /proc files ({name})"),
    Rule("subclasses-walk", "walks every subclass ({name}), which reaches the harness's classes"),
    Rule("always-equal", "defines a comparison that ignores its operand ({name})"),
    Rule("lying-subclass", "overrides the comparison {name} in a subclass of a library or built-in type"),
    Rule("globals-read", "reads the module namespace as a mapping ({name}), which holds the tests' names"),
    Rule("string-name", "names {name} in a string: {route}"),
    Rule("screen-limit", "cannot be screened: {name}"),
    # judgement calls: measured by benchmarks/screen_false_positives.py, off by default
    Rule("getattr-dynamic", "looks up an attribute whose name is built at run time ({name})", active=False),
    Rule("finalizer", "runs code when an object is collected or at exit ({name})", active=False),
    Rule("builtin-shadow", "defines the builtin name {name} at module level", active=False),
    # not a tampering route: what the verifiers' hidden-code rule adds (verify/substance.py)
    Rule("exec-any", "runs code held in a string ({name})", active=False),
)

#: Every rule, by id.
RULES: Mapping[str, Rule] = MappingProxyType({r.id: r for r in _RULE_LIST})
#: The rules the screen reports by default.
DEFAULT_RULES: frozenset[str] = frozenset(r.id for r in _RULE_LIST if r.active)
#: The judgement rules: measured, not reported by default.
MEASURED_RULES: frozenset[str] = frozenset(r.id for r in _RULE_LIST if not r.active)


@dataclass(frozen=True, order=True)
class Finding:
    """One flagged construct: ``line`` and ``column`` 1-based (column in characters),
    ``rule`` an id of :data:`RULES`, ``reason`` the sentence a reviewer reads."""

    line: int
    column: int
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.reason} [{self.rule}]"


# --- the construct tables -------------------------------------------------------------------

#: Attribute names flagged on any object, in any context.
_ATTR_ANY: Mapping[str, str] = {
    **dict.fromkeys(("_getframe", "_getframemodulename"), "frame-getframe"),
    **dict.fromkeys(("_current_frames", "_current_exceptions"), "frame-threads"),
    **dict.fromkeys(
        ("currentframe", "getouterframes", "getinnerframes", "getargvalues", "extract_stack",
         "format_stack", "print_stack", "walk_stack"),
        "frame-stack",
    ),
    **dict.fromkeys(
        ("f_back", "f_globals", "f_locals", "f_builtins", "f_trace", "f_trace_lines",
         "f_trace_opcodes"),
        "frame-attr",
    ),
    **dict.fromkeys(
        ("gi_frame", "cr_frame", "ag_frame", "getgeneratorlocals", "getcoroutinelocals"),
        "frame-suspended",
    ),
    **dict.fromkeys(("__globals__", "func_globals", "getclosurevars"), "function-globals"),
    **dict.fromkeys(("__code__", "func_code", "co_consts", "co_code"), "function-code"),
    **dict.fromkeys(("__closure__", "func_closure", "cell_contents", "CellType"), "function-closure"),
    "CodeType": "function-build",
    **dict.fromkeys(("get_referrers", "get_referents"), "gc-walk"),
    **dict.fromkeys(
        ("set_wakeup_fd", "setitimer", "interrupt_main", "raise_signal", "pthread_kill"), "signal"
    ),
    **dict.fromkeys(("meta_path", "path_hooks", "path_importer_cache"), "import-hook"),
    **dict.fromkeys(
        ("settrace", "setprofile", "addaudithook", "unraisablehook", "settrace_all_threads",
         "setprofile_all_threads", "call_tracing"),
        "interpreter-hook",
    ),
    "__subclasses__": "subclasses-walk",
    "TestCases": "tests-reference",
}

#: Qualified names flagged in any context (where the name alone is too common to flag).
_QUAL_ANY: Mapping[str, str] = {
    "inspect.stack": "frame-stack",
    "inspect.trace": "frame-stack",
    "gc.get_objects": "gc-walk",
    "gc.callbacks": "gc-hook",
    "gc.set_threshold": "gc-hook",
    "signal.signal": "signal",
    "sys.monitoring": "interpreter-hook",
    "importlib.reload": "import-dynamic",
    "imp.reload": "import-dynamic",
    "marshal.loads": "function-build",
    "marshal.load": "function-build",
}

#: Qualified-name prefixes flagged in any context.
_QUAL_PREFIX: tuple[tuple[str, str], ...] = (
    ("importlib.util.spec_from_file_location", "import-dynamic"),
    ("importlib.util.spec_from_loader", "import-dynamic"),
    ("importlib.util.module_from_spec", "import-dynamic"),
    ("importlib.machinery.SourceFileLoader", "import-dynamic"),
    ("importlib.machinery.SourcelessFileLoader", "import-dynamic"),
    ("imp.load_source", "import-dynamic"),
    ("imp.load_module", "import-dynamic"),
    ("runpy.", "import-dynamic"),
)

#: Attribute names flagged only when assigned or deleted.
_ATTR_STORE: Mapping[str, str] = {
    "__defaults__": "function-defaults",
    "__kwdefaults__": "function-defaults",
    "__class__": "class-assign",
    "__bases__": "class-assign",
}

#: Qualified names flagged only when assigned or deleted.
_QUAL_STORE: Mapping[str, str] = {
    "sys.excepthook": "interpreter-hook",
    "sys.displayhook": "interpreter-hook",
    "sys.breakpointhook": "interpreter-hook",
    "threading.excepthook": "interpreter-hook",
    "sys.modules": "sys-modules-write",
}

#: Functions flagged when called (their names are honest in ``isinstance`` checks).
_QUAL_CALL: Mapping[str, str] = {
    "types.FunctionType": "function-build",
    "types.LambdaType": "function-build",
    "builtins.breakpoint": "interpreter-hook",
}
#: Functions that run a statement given as a string (``timeit.timeit("...")``).
_STATEMENT_FUNCS = frozenset({"timeit.timeit", "timeit.repeat", "timeit.Timer"})

#: Modules whose import is flagged.
_MODULES: Mapping[str, str] = {
    "ctypes": "ctypes",
    "_ctypes": "ctypes",
    "cffi": "ctypes",
    "linecache": "linecache",
    "dis": "function-code",
    "__main__": "tests-reference",
    "__test__": "tests-reference",
    # debuggers and pure-Python profilers and tracers: their callbacks receive every frame
    "pdb": "interpreter-hook",
    "bdb": "interpreter-hook",
    "profile": "interpreter-hook",
    "trace": "interpreter-hook",
    # interpreters of source text
    "code": "exec-dynamic",
    "codeop": "exec-dynamic",
}

#: Names in strings: the attribute and function names above, and the flagged modules.
_STRING_NAMES: Mapping[str, str] = {
    **{k: v for k, v in _ATTR_ANY.items() if k != "TestCases"},
    **{q.rsplit(".", 1)[1]: v for q, v in _QUAL_ANY.items() if q.count(".") == 1
       and q.rsplit(".", 1)[1] not in ("stack", "trace", "signal", "callbacks", "monitoring",
                                      "reload", "loads", "load")},
    "__defaults__": "function-defaults",
    "__kwdefaults__": "function-defaults",
    "__bases__": "class-assign",
    "__builtins__": "builtins-reach",
    "__import__": "import-dynamic",
    "TestCases": "tests-reference",
    # the modules with names no ordinary text uses (not ``code``, ``trace``, ``profile``,
    # ``pdb``, ``dis``, nor ``__main__``: ``if __name__ == "__main__"`` is everywhere)
    **{m: _MODULES[m] for m in ("ctypes", "_ctypes", "cffi", "linecache", "codeop", "bdb")},
}

#: Assigning these is not a module write: output redirection, the interpreter's own settings
#: that honest code sets (``sys.executable = ...`` in a Qwen2.5-Coder reply to BigCodeBench/715)
#: and no harness or test reads for a verdict, library options.
_WRITE_ALLOWED: tuple[str, ...] = (
    "sys.stdout", "sys.stderr", "sys.stdin", "sys.argv", "sys.path", "sys.executable",
    "sys.tracebacklimit", "sys.dont_write_bytecode",
    # configuration honest scripts set (certificate checks off for a download; precision)
    "ssl._create_default_https_context", "mpmath.mp.dps", "mpmath.mp.prec",
)
_WRITE_ALLOWED_PREFIX: tuple[str, ...] = ("pandas.options.",)

_MUTATORS = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
)
_IMPORT_FUNCS = frozenset(
    {"builtins.__import__", "importlib.import_module", "importlib.__import__"}
)
_ATTR_FUNCS = {
    "builtins.getattr": "load", "builtins.hasattr": "load",
    "builtins.setattr": "store", "builtins.delattr": "del",
}
_DUNDER_ATTR_FUNCS = {"__getattribute__": "load", "__getattr__": "load",
                      "__setattr__": "store", "__delattr__": "del"}
_EXEC_FUNCS = frozenset({"builtins.exec", "builtins.eval", "builtins.compile"})
_PICKLE_LOADS = frozenset({"pickle.loads", "_pickle.loads", "cPickle.loads", "dill.loads",
                           "cloudpickle.loads", "pickle._loads"})
_MOCK_PREFIXES = ("unittest.mock.patch", "mock.patch", "unittest.mock._patch", "mock._patch")
#: Methods that steer how a returned value compares (``len``, ``iter`` and ``bool`` are
#: overridden by honest container subclasses, so they are not here).
_LYING_METHODS = frozenset({"__eq__", "__ne__", "equals", "__array_function__", "__array_ufunc__"})
_VALUE_TYPES = frozenset(
    f"builtins.{n}" for n in ("list", "dict", "str", "int", "float", "tuple", "set",
                              "frozenset", "bytes", "complex", "bool")
)
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})

#: Names predefined in BigCodeBench's test module (``sys``, ``os``, ``environ``).
_DEFAULT_NAMES: Mapping[str, str] = {"sys": "sys", "os": "os", "environ": "os.environ",
                                      "__builtins__": "builtins"}
_BUILTIN_NAMES = frozenset(dir(builtins))

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROC = re.compile(r"/proc/(?:self|thread-self|\d+|\{)|/dev/fd/")
#: Format strings the screen evaluates: plain fields only (no width that could make it huge).
_SIMPLE_FORMAT = re.compile(r"(?:[^{}%]|\{\d*\}|\{\{|\}\}|%%|%s|%d|%r)*", re.DOTALL)
#: Decoders the screen evaluates on a literal argument.
_DECODERS: Mapping[str, Callable[[bytes], bytes]] = {
    **dict.fromkeys(
        ("builtins.bytes.fromhex", "builtins.bytearray.fromhex"),
        lambda b: bytes.fromhex(b.decode("latin-1")),
    ),
    **{f"base64.{n}": getattr(base64, n) for n in (
        "b64decode", "b32decode", "b16decode", "a85decode", "b85decode", "urlsafe_b64decode",
        "standard_b64decode", "decodebytes")},
    **{f"binascii.{n}": getattr(binascii, n) for n in ("unhexlify", "a2b_hex", "a2b_base64")},
}
#: ``str`` methods the screen evaluates on a folded string.
_STR_METHODS = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "title", "casefold",
                          "swapcase", "capitalize"})

#: ``ast.parse`` is not thread-safe in CPython 3.11/3.12 (gh-106905: "AST constructor
#: recursion depth mismatch", a ``SystemError``); screens run from threads.
_AST_LOCK = threading.Lock()

class _Scope:
    __slots__ = ("global_names", "is_class", "names", "parent")

    def __init__(self, parent: _Scope | None, is_class: bool = False) -> None:
        self.parent = parent
        self.is_class = is_class
        #: name -> qualified name (a module or an object imported from one), or None
        self.names: dict[str, str | None] = {}
        self.global_names: set[str] = set()

    def module(self) -> _Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def bind(self, name: str, qual: str | None) -> None:
        target = self.module() if name in self.global_names else self
        if qual is not None or name not in target.names:
            target.names[name] = qual


_SCOPE_NODES = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
)


#: Nodes with nothing to screen in them (contexts and operators).
_INERT = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
#: Nodes the checks look at.
_CHECKED = (
    ast.Attribute, ast.Name, ast.Call, ast.Subscript, ast.Import, ast.ImportFrom,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.keyword, ast.Assign, ast.AnnAssign,
    ast.Constant, ast.JoinedStr, ast.BinOp, ast.Module,
)


def screen(
    code: str,
    *,
    task_modules: Collection[str] = (),
    rules: Collection[str] = DEFAULT_RULES,
) -> tuple[Finding, ...]:
    """Screen ``code`` (a candidate's whole source) for reflective constructs.

    Returns the findings sorted by position; ``()`` for clean code and for code that does not
    parse (``SyntaxError``, a null byte: the test run reports the error). Source over
    :data:`MAX_SOURCE_CHARS` characters, or nested past the parser's limits, gives one
    ``screen-limit`` finding. ``task_modules``: the modules the task names (exempts the rules
    whose ``exempt_by`` is among them); ``rules``: the rule ids to report (unknown ids raise
    ``ValueError`` naming them). Raises ``TypeError`` when ``code`` is not a ``str``.
    """
    if not isinstance(code, str):
        raise TypeError(f"screen: code must be a str, got {type(code).__name__}")
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        raise ValueError(f"screen: unknown rule ids {unknown}; the rules are {sorted(RULES)}")
    wanted = frozenset(
        r for r in rules if not (RULES[r].exempt_by and RULES[r].exempt_by in task_modules)
    )
    return _screen(code, wanted, 0)


def _screen(code: str, wanted: frozenset[str], depth: int) -> tuple[Finding, ...]:
    if len(code) > MAX_SOURCE_CHARS:
        return _limit(wanted, f"{len(code):,} characters (at most {MAX_SOURCE_CHARS:,} are screened)")
    tree = _parse(code)
    if isinstance(tree, str):
        return _limit(wanted, tree)
    if tree is None:
        return ()
    screener = _Screener(code, wanted, depth)
    screener.run(tree)
    return tuple(sorted(set(screener.findings)))


def _limit(wanted: frozenset[str], why: str) -> tuple[Finding, ...]:
    if "screen-limit" not in wanted:
        return ()
    return (Finding(1, 1, "screen-limit", RULES["screen-limit"].reason.format(name=why)),)


def _parse(code: str) -> ast.Module | str | None:
    """The tree; None when the code does not parse; a reason when it is past the limits."""
    for _ in range(3):
        with _AST_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the code's own warnings are not the screen's
            try:
                return ast.parse(code)
            except (SyntaxError, ValueError):
                return None
            except (RecursionError, MemoryError):
                return "nested too deeply for the parser"
            except SystemError:  # gh-106905 under a parse outside this lock: parse again
                continue
    return "the parser failed (SystemError)"


class _Screener:
    def __init__(self, code: str, wanted: frozenset[str], depth: int) -> None:
        self.code = code
        self.wanted = wanted
        self.depth = depth
        self.findings: list[Finding] = []
        self.lines: list[str] | None = None
        #: name -> every value assigned to it (None: not a simple value), over all scopes
        self.values: dict[str, list[ast.expr | None]] = {}
        self.imported: set[str] = set()  # names an import binds at module level
        self.star_modules: set[str] = set()  # ``from M import *``
        self.loops: dict[str, list[ast.expr]] = {}  # name -> what loops over it iterate
        self.import_fallback: set[int] = set()  # nodes inside ``except ImportError``
        self.consumed: set[int] = set()
        self.fold_memo: dict[int, str | None] = {}
        self.token_memo: dict[int, frozenset[str]] = {}

    # --- reporting --------------------------------------------------------------------------

    def position(self, node: ast.AST) -> tuple[int, int]:
        """1-based line and column (in characters; ``ast`` counts UTF-8 bytes) of ``node``."""
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0)
        end = getattr(node, "end_col_offset", None)
        if isinstance(node, ast.Attribute) and end is not None and node.end_lineno is not None:
            line, col = node.end_lineno, max(0, end - len(node.attr.encode("utf-8")))
        if self.lines is None:  # the lines as Python counts them (not str.splitlines)
            self.lines = re.split(r"\r\n|\r|\n", self.code)
        if 0 < line <= len(self.lines):
            col = len(self.lines[line - 1].encode("utf-8")[:col].decode("utf-8", "replace"))
        return line, col + 1

    def report(self, node: ast.AST, rule: str, name: str, route: str = "") -> None:
        if rule in self.wanted:
            reason = RULES[rule].reason.format(name=name, route=route)
            self.findings.append(Finding(*self.position(node), rule, reason))

    def report_string_name(self, node: ast.AST, token: str) -> None:
        rule = _STRING_NAMES[token]
        if rule in self.wanted:  # the route's own exemption holds for its name in a string
            self.report(node, "string-name", token, RULES[rule].reason.format(name=token))

    # --- the pre-pass: scopes, imports, values ----------------------------------------------

    def run(self, tree: ast.Module) -> None:
        """Screen ``tree``: bind names first (scopes, imports, aliases, values), then check."""
        module = _Scope(None)
        aliases: list[tuple[_Scope, str, ast.expr]] = []
        order: list[tuple[ast.AST, _Scope, ast.AST | None]] = []  # pre-order, for the checks
        stack: list[tuple[ast.AST, _Scope, ast.AST | None]] = [(tree, module, None)]
        #: parts of a scope node that Python evaluates in the enclosing scope -> that scope
        outer: dict[int, _Scope] = {}
        while stack:  # iterative: a deeply nested tree costs no Python recursion
            node, scope, parent = stack.pop()
            scope = outer.get(id(node), scope)
            order.append((node, scope, parent))
            inner = scope
            if isinstance(node, _SCOPE_NODES):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    scope.bind(node.name, None)
                    if scope is module and node.name in self.imported and id(node) not in self.import_fallback:
                        self.report(node, "import-rebind", node.name)
                inner = _Scope(scope, isinstance(node, ast.ClassDef))
                outer.update(dict.fromkeys(_outer_parts(node), scope))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    args = node.args
                    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                        if a is not None:
                            inner.bind(a.arg, None)
                            self.values.setdefault(a.arg, []).append(None)
            self._bind(node, scope, aliases, module)
            if isinstance(node, ast.Try) or node.__class__.__name__ == "TryStar":
                for handler in getattr(node, "handlers", ()):
                    if _catches_import_error(handler):
                        self.import_fallback.update(id(n) for n in ast.walk(handler))
            children = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _INERT)]
            stack.extend([(c, inner, node) for c in reversed(children)])
        for _ in range(3):  # aliases of aliases (``s = sys; t = s``)
            for scope, name, value in aliases:
                qual = self.qual(value, scope)
                if qual is not None:
                    target = scope.module() if name in scope.global_names else scope
                    target.names[name] = qual
        for node, scope, parent in order:
            if isinstance(node, _CHECKED):
                self._check(node, scope, parent)

    def _bind(
        self, node: ast.AST, scope: _Scope, aliases: list[tuple[_Scope, str, ast.expr]],
        module: _Scope,
    ) -> None:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            if isinstance(node, ast.Global):
                scope.global_names.update(node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                scope.bind(name, a.name if a.asname else a.name.split(".")[0])
                self._note_import(scope, module, name)
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            for a in node.names:
                if a.name == "*":
                    if node.level == 0:
                        self.star_modules.add(base)
                    continue
                name = a.asname or a.name
                scope.bind(name, f"{base}.{a.name}" if node.level == 0 else None)
                self._note_import(scope, module, name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            scope.bind(node.id, None)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            scope.bind(node.name, None)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            scope.bind(node.rest, None)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for t in targets:
                if isinstance(t, ast.Name) and value is not None:
                    self.values.setdefault(t.id, []).append(value)
                    aliases.append((scope, t.id, value))
                else:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.values.setdefault(n.id, []).append(None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.values.setdefault(node.target.id, []).append(None)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    self.values.setdefault(n.id, []).append(None)
                    self.loops.setdefault(n.id, []).append(node.iter)
        if (
            isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            and node.id in self.imported
            and (scope is module or node.id in scope.global_names)
            and id(node) not in self.import_fallback
        ):
            self.report(node, "import-rebind", node.id)

    def _note_import(self, scope: _Scope, module: _Scope, name: str) -> None:
        if scope is module or name in scope.global_names:
            self.imported.add(name)  # (importing a name twice is not rebinding it)

    # --- name resolution --------------------------------------------------------------------

    def resolve(self, name: str, scope: _Scope) -> str | None:
        s: _Scope | None = scope
        first = True
        while s is not None:
            if s.is_class and not first:
                s = s.parent
                continue
            if name in s.names:
                return s.names[name]
            first = False
            s = s.parent
        if name in _DEFAULT_NAMES:
            return _DEFAULT_NAMES[name]
        if name in _BUILTIN_NAMES:
            return f"builtins.{name}"
        return None

    def bound(self, name: str, scope: _Scope) -> bool:
        """Whether the code binds ``name`` where ``scope`` sees it."""
        s: _Scope | None = scope
        first = True
        while s is not None:
            if (first or not s.is_class) and name in s.names:
                return True
            first = False
            s = s.parent
        return False

    def qual(self, node: ast.AST, scope: _Scope, depth: int = 0) -> str | None:
        """The qualified name ``node`` stands for (``sys._getframe``), or None."""
        if depth > MAX_CHAIN:
            return None
        if isinstance(node, ast.Name):
            return self.resolve(node.id, scope)
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value, scope, depth + 1)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Call) and node.args:
            func = self.qual(node.func, scope, depth + 1)
            if func in _IMPORT_FUNCS:
                name = self.fold(node.args[0], scope)
                return name if name else None
            if func == "builtins.getattr" and len(node.args) >= 2:
                base = self.qual(node.args[0], scope, depth + 1)
                attr = self.fold(node.args[1], scope)
                return f"{base}.{attr}" if base is not None and attr else None
        if isinstance(node, ast.Subscript):
            container = node.value
            if self.qual(container, scope, depth + 1) == "sys.modules":
                key = self.fold(node.slice, scope)
                return key if key else "sys.modules[...]"
            owner = None
            if isinstance(container, ast.Attribute) and container.attr == "__dict__":
                owner = container.value
            elif (isinstance(container, ast.Call) and len(container.args) == 1
                  and self.qual(container.func, scope, depth + 1) == "builtins.vars"):
                owner = container.args[0]
            if owner is not None:  # builtins.__dict__['exec'], vars(sys)['_getframe']
                base, key = self.qual(owner, scope, depth + 1), self.fold(node.slice, scope)
                return f"{base}.{key}" if base is not None and key else None
        return None

    # --- static strings ---------------------------------------------------------------------

    def fold(self, node: ast.AST, scope: _Scope, depth: int = 0) -> str | None:
        """The string ``node`` evaluates to where that is statically decidable, else None
        (bytes are read as Latin-1)."""
        key = id(node)
        if key in self.fold_memo:
            return self.fold_memo[key]
        if depth > MAX_FOLD_DEPTH:
            return None
        self.fold_memo[key] = None  # a cycle through names folds to nothing
        try:
            value = self._fold(node, scope, depth + 1)
        except (ValueError, TypeError, OverflowError, LookupError, binascii.Error):
            value = None  # what the code itself would raise on: nothing to screen
        if value is not None and len(value) > MAX_FOLD_CHARS:
            value = None
        self.fold_memo[key] = value
        return value

    def _fold(self, node: ast.AST, scope: _Scope, d: int) -> str | None:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            return node.value.decode("latin-1") if isinstance(node.value, bytes) else None
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    if v.format_spec is not None or v.conversion not in (-1, ord("s")):
                        return None
                    v = v.value
                part = self._fold_arg(v, scope, d)
                if part is None:
                    return None
                parts.append(part)
            return "".join(parts)
        if isinstance(node, ast.Name):
            values = self.values.get(node.id, [])
            return self.fold(values[0], scope, d) if len(values) == 1 and values[0] else None
        if isinstance(node, ast.BinOp):
            return self._fold_binop(node, scope, d)
        if isinstance(node, ast.Subscript):
            return self._fold_subscript(node, scope, d)
        if isinstance(node, ast.Call) and not node.keywords:
            return self._fold_call(node, scope, d)
        return None

    def _fold_arg(self, node: ast.AST, scope: _Scope, d: int) -> str | None:
        """A value formatted into a string (an integer literal is its digits)."""
        return str(node.value) if _is_int(node) and isinstance(node, ast.Constant) else self.fold(node, scope, d)

    def _fold_binop(self, node: ast.BinOp, scope: _Scope, d: int) -> str | None:
        if isinstance(node.op, ast.Add):
            parts = []
            for operand in _operands(node)[::-1]:  # a left-deep chain, flattened: no recursion
                part = self.fold(operand, scope, d)
                if part is None:
                    return None
                parts.append(part)
            return "".join(parts)
        if isinstance(node.op, ast.Mult):
            text, count = (node.right, node.left) if _is_int(node.left) else (node.left, node.right)
            n = _int_value(count)
            part = self.fold(text, scope, d)
            if part is None or n is None or len(part) * max(n, 0) > MAX_FOLD_CHARS:
                return None
            return part * n
        if isinstance(node.op, ast.Mod):
            fmt = self.fold(node.left, scope, d)
            if fmt is None or not _SIMPLE_FORMAT.fullmatch(fmt):
                return None
            items = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            args = [self._fold_arg(i, scope, d) for i in items]
            return fmt % tuple(args) if all(a is not None for a in args) else None
        return None

    def _fold_subscript(self, node: ast.Subscript, scope: _Scope, d: int) -> str | None:
        text = self.fold(node.value, scope, d)
        if text is None:
            return None
        if not isinstance(node.slice, ast.Slice):
            i = _int_value(node.slice)
            return text[i] if i is not None else None
        bounds = [None if b is None else _int_value(b) for b in
                  (node.slice.lower, node.slice.upper, node.slice.step)]
        given = [b for b in (node.slice.lower, node.slice.upper, node.slice.step) if b is not None]
        if sum(b is not None for b in bounds) != len(given) or bounds[2] == 0:
            return None
        return text[slice(*bounds)]

    def _fold_call(self, node: ast.Call, scope: _Scope, d: int) -> str | None:
        func = self.qual(node.func, scope)
        args = node.args
        if func is not None and func in _DECODERS and len(args) == 1:
            text = self.fold(args[0], scope, d)
            return _DECODERS[func](text.encode("latin-1")).decode("latin-1") if text is not None else None
        if func in ("codecs.decode", "codecs.encode") and len(args) == 2:
            text, codec = self.fold(args[0], scope, d), self.fold(args[1], scope, d)
            if text is None or codec is None or codec.lower().replace("-", "_") not in ("rot13", "rot_13"):
                return None
            return codecs.decode(text, "rot13")
        if func == "builtins.chr" and len(args) == 1:
            code = _int_value(args[0])
            return chr(code) if code is not None else None
        if func in ("builtins.str", "builtins.bytes", "builtins.bytearray") and args:
            if isinstance(args[0], (ast.List, ast.Tuple)) and func != "builtins.str":
                return _chars([_int_value(e) for e in args[0].elts], 256)
            return self.fold(args[0], scope, d)
        if not isinstance(node.func, ast.Attribute):
            return None
        method = node.func.attr
        text = self.fold(node.func.value, scope, d)
        if text is None:
            return None
        if method == "join" and len(args) == 1:
            items = self._fold_items(args[0], scope, d)
            return text.join(items) if items is not None else None
        vals = [self._fold_arg(a, scope, d) if method == "format" else self.fold(a, scope, d) for a in args]
        if any(v is None for v in vals):
            return None
        if method == "format" and _SIMPLE_FORMAT.fullmatch(text):
            return text.format(*vals)
        if method == "replace" and len(vals) == 2 and vals[0]:
            old, new = str(vals[0]), str(vals[1])
            if len(text) + text.count(old) * len(new) > MAX_FOLD_CHARS:
                return None
            return text.replace(old, new)
        if method in ("decode", "encode"):
            return text  # the screen reads bytes as Latin-1 text either way
        if method in _STR_METHODS:
            out: str = getattr(text, method)(*vals)
            return out
        return None

    def _fold_items(self, node: ast.AST, scope: _Scope, d: int) -> list[str] | None:
        """The strings the iterable of a ``join`` yields, where statically decidable: a list
        or tuple of them, ``map(chr, [...])``, ``chr(c) for c in [...]``, a string's characters."""
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.fold(e, scope, d) for e in node.elts]
            return [i for i in items if i is not None] if all(i is not None for i in items) else None
        codes: list[ast.expr] | None = None
        if isinstance(node, ast.Call) and len(node.args) == 2 and self.qual(node.func, scope) == "builtins.map":
            fn, seq = node.args
            if self.qual(fn, scope) == "builtins.chr" and isinstance(seq, (ast.List, ast.Tuple)):
                codes = seq.elts
        elif isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            gen, elt = node.generators[0], node.elt
            if (
                not gen.ifs and isinstance(gen.target, ast.Name)
                and isinstance(gen.iter, (ast.List, ast.Tuple))
                and isinstance(elt, ast.Call) and len(elt.args) == 1
                and self.qual(elt.func, scope) == "builtins.chr"
                and isinstance(elt.args[0], ast.Name) and elt.args[0].id == gen.target.id
            ):
                codes = gen.iter.elts
        if codes is not None:
            text = _chars([_int_value(c) for c in codes], 0x110000)
            return list(text) if text is not None else None
        text = self.fold(node, scope, d)
        return list(text) if text is not None else None

    def tokens(self, node: ast.AST, scope: _Scope) -> frozenset[str]:
        key = id(node)
        if key not in self.token_memo:
            s = self.fold(node, scope)
            self.token_memo[key] = frozenset(_TOKEN.findall(s)) if s else frozenset()
        return self.token_memo[key]

    # --- the checks -------------------------------------------------------------------------

    def _check(self, node: ast.AST, scope: _Scope, parent: ast.AST | None) -> None:
        if isinstance(node, ast.Attribute):
            self._attribute(node, node.value, node.attr, _ctx(node.ctx), scope)
        elif isinstance(node, ast.Name):
            self._name(node, scope, parent)
        elif isinstance(node, ast.Call):
            self._call(node, scope)
        elif isinstance(node, ast.Subscript):
            if not isinstance(node.ctx, ast.Load):
                self._item_write(node, node.value, scope)
            else:
                qual = self.qual(node, scope)
                if qual == "sys.modules[...]":
                    self.report(node, "globals-read", "sys.modules[...]")
                elif qual is not None and _MODULES.get(qual) == "tests-reference":
                    self.report(node, "tests-reference", f"sys.modules[{qual!r}]")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node, scope)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._method(node, scope, parent)
        elif isinstance(node, ast.ClassDef):
            self._class(node, scope, parent)
        elif isinstance(node, ast.keyword) and node.arg in ("capture_locals", "stack_info"):
            if not (isinstance(node.value, ast.Constant) and not node.value.value):
                self.report(node.value, "frame-stack", f"{node.arg}=")
        elif isinstance(node, ast.keyword) and node.arg is not None and node.arg.startswith("co_"):
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "replace":
                self.report(parent, "function-build", f".replace({node.arg}=)")
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(parent, ast.ClassDef):
            self._class_assign(node, scope, parent)
        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp, ast.Call, ast.Subscript)):
            if id(node) not in self.consumed:
                self._strings(node, scope, parent)
        elif isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                self.consumed.add(id(first.value))  # a docstring documents; it is not a name
        if (
            isinstance(node, (ast.Assign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and isinstance(parent, ast.Module)
        ):
            self._shadow(node, scope)

    def _attribute(
        self, node: ast.AST, value: ast.expr, attr: str | None, ctx: str, scope: _Scope
    ) -> None:
        """Attribute ``attr`` of ``value`` read (``ctx`` "load"), assigned or deleted; ``attr``
        None when its name is built at run time (``setattr(module, name, ...)``)."""
        base = self.qual(value, scope)
        if attr is None:
            if ctx != "load" and base is not None:
                shown = f"{base}.<a name built at run time>"
                if base == "builtins":
                    self.report(node, "builtins-write", shown)
                elif not base.startswith("builtins."):
                    self.report(node, "module-write", shown)
            return
        qual = f"{base}.{attr}" if base is not None else None
        shown = qual.removeprefix("builtins.") if qual else attr
        rule = _ATTR_ANY.get(attr)
        if rule is None and qual is not None:
            rule = _QUAL_ANY.get(qual) or next(
                (r for p, r in _QUAL_PREFIX if qual.startswith(p)), None
            )
        if rule is not None:
            self.report(node, rule, shown)
            return
        if ctx == "load":
            return
        rule = _ATTR_STORE.get(attr) or (_QUAL_STORE.get(qual) if qual else None)
        if rule is not None:
            self.report(node, rule, shown)
        elif base == "builtins":
            self.report(node, "builtins-write", f"builtins.{attr}")
        elif base is not None and not base.startswith("builtins.") and not _write_allowed(qual or ""):
            self.report(node, "module-write", shown)

    def _name(self, node: ast.Name, scope: _Scope, parent: ast.AST | None) -> None:
        if id(node) in self.consumed:
            return
        if node.id == "__builtins__" and self.resolve(node.id, scope) == "builtins":
            if isinstance(node.ctx, ast.Load):
                self.report(node, "builtins-reach", "__builtins__")
            else:
                self.report(node, "builtins-write", "__builtins__")
            return
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id == "TestCases":
            self.report(node, "tests-reference", "TestCases")
        qual = self.resolve(node.id, scope)
        if self.star_modules and not self.bound(node.id, scope):
            for m in sorted(self.star_modules):
                q = f"{m}.{node.id}"
                rule = _QUAL_ANY.get(q) or (_ATTR_ANY.get(node.id) if not node.id.startswith("__") else None)
                if rule is not None:
                    self.report(node, rule, q)
        if qual in _EXEC_FUNCS:
            callee = isinstance(parent, ast.Call) and parent.func is node
            aliased = isinstance(parent, (ast.Assign, ast.NamedExpr)) and parent.value is node
            if not callee and not aliased:
                self.report(node, "exec-dynamic", f"{node.id} passed on as a value")
        elif qual in ("builtins.globals", "builtins.vars") and not (
            isinstance(parent, ast.Call) and parent.func is node
        ):
            self.report(node, "globals-read", f"{node.id} passed on as a value")

    def _import(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self._module(node, a.name)
            return
        if node.level:
            return
        mod = node.module or ""
        self._module(node, mod)
        for a in node.names:
            if a.name == "*":
                continue
            qual = f"{mod}.{a.name}"
            self._module(node, qual)
            rule = _ATTR_ANY.get(a.name) or _QUAL_ANY.get(qual) or next(
                (r for p, r in _QUAL_PREFIX if qual.startswith(p)), None
            )
            if rule is not None:
                self.report(node, rule, qual)

    def _module(self, node: ast.AST, name: str) -> None:
        top = name.split(".")[0]
        rule = _MODULES.get(top)
        if rule is not None:
            self.report(node, rule, name)

    def _call(self, node: ast.Call, scope: _Scope) -> None:
        func = self.qual(node.func, scope)
        args = node.args
        attr_ctx = _ATTR_FUNCS.get(func or "")
        target: ast.expr | None = None
        name_arg: ast.expr | None = None
        if attr_ctx is not None and len(args) >= 2:
            target, name_arg = args[0], args[1]
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _DUNDER_ATTR_FUNCS:
            attr_ctx = _DUNDER_ATTR_FUNCS[node.func.attr]
            owner = self.qual(node.func.value, scope)
            if owner in ("builtins.object", "builtins.type") or (owner or "").endswith("ModuleType"):
                if len(args) >= 2:
                    target, name_arg = args[0], args[1]
            elif args:
                target, name_arg = node.func.value, args[0]
        elif func == "operator.attrgetter":
            for a in args:
                s = self.fold(a, scope)
                if s is None:
                    self.report(node, "getattr-dynamic", "operator.attrgetter")
                    continue
                self.consumed.add(id(a))
                for part in s.split("."):
                    rule = _ATTR_ANY.get(part)
                    if rule is not None:
                        self.report(node, rule, f".{part}")
        if target is not None and name_arg is not None and attr_ctx is not None:
            attr = self.fold(name_arg, scope)
            if attr is None:
                self.report(node, "getattr-dynamic", _call_name(node))
                if attr_ctx != "load":  # a write to a module is one whatever its name
                    self._attribute(node, target, None, attr_ctx, scope)
            else:
                self.consumed.add(id(name_arg))
                self._attribute(node, target, attr, attr_ctx, scope)
        if func in _EXEC_FUNCS:
            self._exec(node, func, scope)
        elif func in _IMPORT_FUNCS:
            self._dynamic_import(node, func, scope)
        elif func is not None and func in _QUAL_CALL:
            self.report(node, _QUAL_CALL[func], func)
        elif func in _PICKLE_LOADS and args and self.fold(args[0], scope) is not None:
            self.report(node, "unpickle-literal", func)
            self.consumed.add(id(args[0]))
        elif func is not None and func.startswith(_MOCK_PREFIXES):
            self.report(node, "mock-patch", func)
        elif func in ("atexit.register", "weakref.finalize") or (
            func in ("weakref.ref", "weakref.WeakMethod", "weakref.proxy") and len(args) >= 2
        ):
            self.report(node, "finalizer", func)
        elif id(node) not in self.consumed and (
            func == "builtins.globals" or (func == "builtins.vars" and not args and scope.parent is None)
        ):
            self.report(node, "globals-read", f"{func.split('.')[1]}()")
        elif func in _STATEMENT_FUNCS:
            for arg in [*args[:2], *(k.value for k in node.keywords if k.arg in ("stmt", "setup"))]:
                self._statement(node, arg, func, scope)
        if isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            if func is not None and func.startswith("builtins.dict.") and args:
                self._item_write(node, args[0], scope, f".{node.func.attr}()")  # dict.pop(sys.modules, ...)
            else:
                self._item_write(node, node.func.value, scope, f".{node.func.attr}()")

    def _item_write(self, node: ast.AST, container: ast.expr, scope: _Scope, how: str = "[...] =") -> None:
        """An item of ``container`` assigned, deleted or changed through a mutating method."""
        qual = self.qual(container, scope)
        if qual == "sys.modules":
            self.report(node, "sys-modules-write", f"sys.modules{how}")
            return
        if qual == "builtins" and isinstance(container, ast.Name):
            self.report(node, "builtins-write", f"__builtins__{how}")
            self.consumed.add(id(container))
            return
        owner: ast.expr | None = None
        if isinstance(container, ast.Attribute) and container.attr == "__dict__":
            owner = container.value
        elif isinstance(container, ast.Call) and not container.keywords:
            cq = self.qual(container.func, scope)
            if cq in ("builtins.globals", "builtins.vars", "builtins.locals") and not container.args:
                if cq != "builtins.locals":
                    self.report(node, "globals-write", f"{cq.split('.')[1]}(){how}")
                    self.consumed.add(id(container))
                return
            if cq == "builtins.vars" and len(container.args) == 1:
                owner = container.args[0]
        if owner is not None:
            oq = self.qual(owner, scope)
            if oq == "builtins":
                self.report(node, "builtins-write", f"builtins.__dict__{how}")
            elif oq is not None and not oq.startswith("builtins."):
                self.report(node, "module-write", f"{oq}.__dict__{how}")

    def _exec(self, node: ast.Call, func: str, scope: _Scope) -> None:
        name = func.split(".", 1)[1]
        source = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg in ("source", "object")), None
        )
        if source is None:
            return
        if "exec-any" in self.wanted and not self._from_stdin(source, scope, 0):
            self.report(node, "exec-any", name)
        text = self.fold(source, scope)
        if text is not None:
            self.consumed.add(id(source))
            self._screen_literal(node, text, name)
            return
        if self._literal_code(source, scope) or self._from_stdin(source, scope, 0):
            return
        self.report(node, "exec-dynamic", f"{name} of a string that is not a literal")

    def _screen_literal(self, node: ast.Call, text: str, what: str) -> None:
        """Screen the literal source ``text`` that the call ``node`` runs; its findings are
        reported at the call."""
        if self.depth >= MAX_EXEC_DEPTH:
            self.report(node, "screen-limit", f"{what} nested more than {MAX_EXEC_DEPTH} deep")
            return
        where = self.position(node)
        self.findings.extend(
            Finding(*where, f.rule, f.reason) for f in _screen(text, self.wanted, self.depth + 1)
        )

    def _statement(self, node: ast.Call, arg: ast.expr, func: str, scope: _Scope) -> None:
        """A statement ``timeit`` runs: a literal is screened, text built otherwise is not
        readable (a callable is the honest form and is screened where it is defined)."""
        text = self.fold(arg, scope)
        if text is not None:
            self.consumed.add(id(arg))
            self.report(node, "exec-any", func)
            self._screen_literal(node, text, func)
        elif isinstance(arg, (ast.JoinedStr, ast.BinOp)) or (
            isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute)
            and arg.func.attr in ("join", "format", "decode")
        ):
            self.report(node, "exec-dynamic", f"{func} of a string that is not a literal")

    def _literal_code(self, node: ast.expr, scope: _Scope) -> bool:
        """``compile(<literal>, ...)`` (screened where it is compiled)."""
        return (
            isinstance(node, ast.Call)
            and self.qual(node.func, scope) == "builtins.compile"
            and bool(node.args)
            and self.fold(node.args[0], scope) is not None
        )

    def _from_stdin(self, node: ast.expr, scope: _Scope, depth: int) -> bool:
        """Whether ``node`` is text read from standard input (``input().strip()``)."""
        if depth > MAX_CHAIN:
            return False
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not _is_stdin_attr(self.qual(node.func, scope)):
                node = node.func.value
            else:
                break
        if isinstance(node, ast.Call):
            q = self.qual(node.func, scope)
            if q == "builtins.input" or _is_stdin_attr(q):
                return True
            if q == "builtins.next" and node.args:
                return _is_stdin_attr(self.qual(node.args[0], scope))
            if q == "builtins.open" and node.args and isinstance(node.args[0], ast.Constant):
                return node.args[0].value in (0, "/dev/stdin")
            return False
        if isinstance(node, ast.Name):  # every value it is given is read from stdin
            loops = self.loops.get(node.id, [])
            vals = [v for v in self.values.get(node.id, []) if v is not None]
            given = len(self.values.get(node.id, []))
            return given > 0 and len(vals) + len(loops) == given and all(
                self._from_stdin(v, scope, depth + 1) for v in [*vals, *loops]
            )
        return _is_stdin_attr(self.qual(node, scope))

    def _dynamic_import(self, node: ast.Call, func: str, scope: _Scope) -> None:
        if not node.args:
            return
        name = self.fold(node.args[0], scope)
        if name is None:
            self.report(node, "import-dynamic", func.replace("builtins.", ""))
            return
        self.consumed.add(id(node.args[0]))
        self._module(node, name)

    def _method(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, parent: ast.AST | None) -> None:
        if not isinstance(parent, ast.ClassDef):
            return
        if node.name == "__del__":
            self.report(node, "finalizer", "__del__")
        if node.name in ("__eq__", "__ne__") and _constant_returns(node, node.name == "__eq__"):
            self.report(node, "always-equal", node.name)

    def _class_assign(self, node: ast.Assign | ast.AnnAssign, scope: _Scope, parent: ast.ClassDef) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            if isinstance(t, ast.Name) and t.id in ("__eq__", "__ne__") and isinstance(node.value, ast.Lambda):
                body = node.value.body
                if isinstance(body, ast.Constant) and bool(body.value) == (t.id == "__eq__"):
                    self.report(node, "always-equal", t.id)

    def _class(self, node: ast.ClassDef, scope: _Scope, parent: ast.AST | None) -> None:
        bases = [self.qual(b, scope) for b in node.bases]
        if not any(b is not None and (b in _VALUE_TYPES or not b.startswith("builtins.")) for b in bases):
            return
        defined = set()
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                defined.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        for name in sorted(defined & _LYING_METHODS):
            self.report(node, "lying-subclass", name)

    def _shadow(
        self, node: ast.Assign | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        scope: _Scope,
    ) -> None:
        """A builtin's name bound at module level to something callable: a ``def`` or
        ``class``, a ``lambda``, another name or attribute, a call's result (not data such as
        ``dir = [(0, 1)]``, nor the fast-I/O idiom ``input = sys.stdin.readline``)."""
        if isinstance(node, ast.Assign):
            value = node.value
            if not isinstance(value, (ast.Lambda, ast.Name, ast.Attribute, ast.Call)):
                return
            root = value.func if isinstance(value, ast.Call) else value
            qual = self.qual(root, scope) or ""
            if qual.startswith(("sys.stdin", "sys.stdout", "sys.stderr")):
                return
            names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:
            names = [node.name]
        for n in names:
            if n in _BUILTIN_NAMES and not n.startswith("__"):
                self.report(node, "builtin-shadow", n)

    def _strings(self, node: ast.AST, scope: _Scope, parent: ast.AST | None) -> None:
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
                and isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add)
                and parent.left is node):
            return  # folded with the whole chain
        if isinstance(node, ast.Constant) and isinstance(parent, ast.JoinedStr):
            return  # folded with the f-string
        text = self.fold(node, scope)
        if text is None and isinstance(node, ast.JoinedStr):
            # an f-string with a value the screen cannot evaluate: its literal parts, each
            # value standing as "{" (f'/proc/self/fd/{n}', f'/proc/{pid}/mem')
            text = "".join(
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{"
                for v in node.values
            )
            found = frozenset(_TOKEN.findall(text))
        elif text is None:
            return
        else:
            found = self.tokens(node, scope)
            if not isinstance(node, ast.Constant):
                for c in _operands(node):
                    found = found - self.tokens(c, scope)
        for token in sorted(found & _STRING_NAMES.keys()):
            self.report_string_name(node, token)
        if isinstance(node, (ast.Constant, ast.JoinedStr)) or not any(
            _PROC.search(self.fold(c, scope) or "") for c in _operands(node)
        ):  # (an f-string's literal parts are screened with it, not on their own)
            m = _PROC.search(text)
            if m:
                self.report(node, "proc-self", m.group(0).replace("{", "{...}"))


def _operands(node: ast.AST) -> list[ast.AST]:
    """The sub-expressions a fold of ``node`` reads directly (their names are their own)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        out: list[ast.AST] = []
        cur: ast.AST = node
        while isinstance(cur, ast.BinOp) and isinstance(cur.op, ast.Add):  # a flattened chain
            out.append(cur.right)
            cur = cur.left
        out.append(cur)
        return out
    if isinstance(node, ast.BinOp):
        return [node.left, node.right, *(node.right.elts if isinstance(node.right, ast.Tuple) else [])]
    if isinstance(node, ast.JoinedStr):
        return [v.value if isinstance(v, ast.FormattedValue) else v for v in node.values]
    if isinstance(node, ast.Subscript):
        return [node.value]
    if isinstance(node, ast.Call):
        receiver = [node.func.value] if isinstance(node.func, ast.Attribute) else []
        elements = [e for a in node.args if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
        return [*receiver, *node.args, *elements]
    return []


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def _chars(codes: list[int | None], limit: int) -> str | None:
    """The characters of integer literals (None where one is not a literal below ``limit``)."""
    if any(c is None or not 0 <= c < limit for c in codes) or len(codes) > MAX_FOLD_CHARS:
        return None
    return "".join(chr(c) for c in codes if c is not None)


def _int_value(node: ast.AST) -> int | None:
    """An integer literal's value (``-1``, ``2 + 3`` too), within 32 bits; else None."""
    if _is_int(node):
        v = node.value if isinstance(node, ast.Constant) else None
        return v if isinstance(v, int) and abs(v) < 1 << 31 else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v2 = _int_value(node.operand)
        return -v2 if v2 is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        a, b = _int_value(node.left), _int_value(node.right)
        if a is None or b is None:
            return None
        return a + b if isinstance(node.op, ast.Add) else a - b
    return None


def _ctx(ctx: ast.expr_context) -> str:
    if isinstance(ctx, ast.Store):
        return "store"
    if isinstance(ctx, ast.Del):
        return "del"
    return "load"


def _call_name(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f".{f.attr}"
    return "a call"


def _write_allowed(qual: str) -> bool:
    return qual in _WRITE_ALLOWED or qual.startswith(_WRITE_ALLOWED_PREFIX)


def _is_stdin_attr(qual: str | None) -> bool:
    return qual is not None and (qual == "sys.stdin" or qual.startswith("sys.stdin."))


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(handler.type)
             if isinstance(n, (ast.Name, ast.Attribute))]
    return any(n in _IMPORT_ERRORS for n in names)


def _outer_parts(node: ast.AST) -> set[int]:
    """Ids of the parts of a scope node that Python evaluates in the enclosing scope:
    decorators, bases, defaults, annotations of the return, a comprehension's first iterable."""
    parts: list[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        parts.append(node.generators[0].iter)
    elif isinstance(node, ast.ClassDef):
        parts += [*node.bases, *node.keywords]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        args = node.args
        parts += [d for d in (*args.defaults, *args.kw_defaults) if d is not None]
        if not isinstance(node, ast.Lambda) and node.returns is not None:
            parts.append(node.returns)
    return {id(p) for p in parts}


def _constant_returns(node: ast.FunctionDef | ast.AsyncFunctionDef, truthy: bool) -> bool:
    """Whether every ``return`` of ``node`` (not of nested functions) gives a constant that is
    true (``truthy``) or false, and there is at least one."""
    returns: list[ast.Return] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        n = stack.pop()
        if isinstance(n, _SCOPE_NODES):
            continue
        if isinstance(n, ast.Return):
            returns.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return bool(returns) and all(
        isinstance(r.value, ast.Constant) and bool(r.value.value) == truthy for r in returns
    )
