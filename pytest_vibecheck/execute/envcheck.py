"""Which tasks can the current environment run? (``vibecheck env-check SUITE``)

A task needs every third-party module it imports: its ``libs`` field plus the top-level
imports of its test code (BigCodeBench tests import e.g. ``faker`` or ``requests_mock``
that ``libs`` does not list). A module is *available* when
:func:`importlib.util.find_spec` finds it in the interpreter the sandbox runs
(``sys.executable`` by default). Tasks with a missing module are ``skipped`` with the reason
``environment: missing module X (pip install Y)``, never failed.

Install tiers (extras of ``pytest-vibecheck``, see ``docs/sandbox.md``):

- base: the standard library only (300 of BigCodeBench's 1,140 tasks);
- ``exec-core``: + numpy, pandas, matplotlib, scipy, scikit-learn, seaborn;
- ``exec-full``: every one of the 62 third-party libraries BigCodeBench's ``libs`` field
  names, plus the two its tests import (``requests-mock``, ``pyfakefs``).
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from pytest_vibecheck.suites.problem import Problem

#: Import name -> PyPI distribution, for every third-party module BigCodeBench uses (its
#: ``libs`` field: 62 names; plus ``requests_mock`` and ``pyfakefs`` from its tests). PyPI
#: names follow BigCodeBench's ``Requirements/requirements-eval.txt``.
IMPORT_TO_PYPI: dict[str, str] = {
    "Crypto": "pycryptodome",
    "Levenshtein": "Levenshtein",
    "PIL": "Pillow",
    "blake3": "blake3",
    "bs4": "beautifulsoup4",
    "chardet": "chardet",
    "cryptography": "cryptography",
    "cv2": "opencv-python-headless",
    "dateutil": "python-dateutil",
    "django": "Django",
    "docx": "python-docx",
    "faker": "Faker",
    "flask": "Flask",
    "flask_login": "Flask-Login",
    "flask_mail": "Flask-Mail",
    "flask_restful": "Flask-RESTful",
    "flask_wtf": "Flask-WTF",
    "folium": "folium",
    "gensim": "gensim",
    "geopandas": "geopandas",
    "geopy": "geopy",
    "holidays": "holidays",
    "keras": "keras",
    "librosa": "librosa",
    "lxml": "lxml",
    "matplotlib": "matplotlib",
    "mechanize": "mechanize",
    "mpl_toolkits": "matplotlib",
    "natsort": "natsort",
    "nltk": "nltk",
    "numpy": "numpy",
    "openpyxl": "openpyxl",
    "pandas": "pandas",
    "prettytable": "prettytable",
    "psutil": "psutil",
    "pyquery": "pyquery",
    "pytesseract": "pytesseract",
    "python_http_client": "python-http-client",
    "pytz": "pytz",
    "regex": "regex",
    "requests": "requests",
    "rsa": "rsa",
    "scipy": "scipy",
    "seaborn": "seaborn",
    "sendgrid": "sendgrid",
    "shapely": "shapely",
    "skimage": "scikit-image",
    "sklearn": "scikit-learn",
    "soundfile": "soundfile",
    "statsmodels": "statsmodels",
    "sympy": "sympy",
    "tensorflow": "tensorflow",
    "textblob": "textblob",
    "texttable": "texttable",
    "werkzeug": "Werkzeug",
    "wikipedia": "wikipedia",
    "wordcloud": "wordcloud",
    "wordninja": "wordninja",
    "wtforms": "WTForms",
    "xlwt": "xlwt",
    "xmltodict": "xmltodict",
    "yaml": "PyYAML",
    # imported by BigCodeBench tests only
    "requests_mock": "requests-mock",
    "pyfakefs": "pyfakefs",
}

#: The ``exec-core`` tier's import names.
CORE_IMPORTS: tuple[str, ...] = ("numpy", "pandas", "matplotlib", "scipy", "sklearn", "seaborn")

TIERS: dict[str, tuple[str, ...]] = {
    "base": (),
    "exec-core": CORE_IMPORTS,
    "exec-full": tuple(sorted(IMPORT_TO_PYPI)),
}

STDLIB: frozenset[str] = frozenset(getattr(sys, "stdlib_module_names", ()))


def pypi_name(module: str) -> str:
    """The PyPI distribution that provides top-level ``module`` (``sklearn`` -> ``scikit-learn``).

    Unknown names map to themselves.
    """
    return IMPORT_TO_PYPI.get(module, module)


#: ``ast.parse`` is not thread-safe in CPython 3.11/3.12 ("AST constructor recursion depth
#: mismatch", CPython issue gh-106905); the parallel runner calls this from threads.
_AST_LOCK = threading.Lock()


@lru_cache(maxsize=4096)
def _imports(code: str) -> frozenset[str]:
    with _AST_LOCK:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return frozenset(names)


def derive_required_modules(problem: Problem) -> tuple[str, ...]:
    """Top-level non-standard-library modules ``problem`` needs (``libs`` + the test code's
    imports, parsed), sorted. The suite build stores this as the record's ``requires``."""
    names = set(problem.libs) | _imports(problem.test.code)
    return tuple(sorted(n for n in names if n and n not in STDLIB and n != "__future__"))


def required_modules(problem: Problem) -> tuple[str, ...]:
    """Top-level non-standard-library modules ``problem`` needs, sorted: the suite record's
    ``requires`` when it has one (no parsing at run time), else
    :func:`derive_required_modules`."""
    if problem.requires is not None:
        return problem.requires
    return derive_required_modules(problem)


@cache
def _available_here(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=8)
def _available_in(python: str, modules: tuple[str, ...]) -> frozenset[str]:
    code = (
        "import importlib.util,json,sys\n"
        "ok=[]\n"
        "for m in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        ok.append(m) if importlib.util.find_spec(m) else None\n"
        "    except Exception:\n"
        "        pass\n"
        "print(json.dumps(ok))\n"
    )
    import json

    done = subprocess.run(
        [python, "-s", "-c", code, json.dumps(list(modules))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        return frozenset()
    return frozenset(json.loads(done.stdout))


def available(modules: Iterable[str], python: str | None = None) -> frozenset[str]:
    """The subset of ``modules`` importable by ``python`` (default: this interpreter)."""
    mods = tuple(sorted(set(modules)))
    if python is None or python == sys.executable:
        return frozenset(m for m in mods if _available_here(m))
    return _available_in(python, mods)


def missing_modules(problem: Problem, python: str | None = None) -> tuple[str, ...]:
    """Modules ``problem`` needs that are not installed, sorted (empty when it can run)."""
    need = required_modules(problem)
    if not need:
        return ()
    have = available(need, python)
    return tuple(m for m in need if m not in have)


def skip_reason(missing: Sequence[str]) -> str:
    """``environment: missing module scipy (pip install scipy)`` for ``missing``."""
    mods = ", ".join(missing)
    pkgs = " ".join(sorted({pypi_name(m) for m in missing}))
    word = "module" if len(missing) == 1 else "modules"
    return f"environment: missing {word} {mods} (pip install {pkgs})"


@dataclass(frozen=True)
class EnvReport:
    """Result of :func:`check_environment` for one suite.

    ``runnable`` / ``skipped`` are task ids; ``reasons`` maps each skipped task to its
    reason; ``missing`` counts, per missing module, the tasks that need it.
    """

    suite: str
    total: int
    runnable: tuple[str, ...]
    skipped: tuple[str, ...]
    reasons: dict[str, str] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    python: str = sys.executable

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "suite": self.suite,
            "python": self.python,
            "total": self.total,
            "runnable": len(self.runnable),
            "skipped": len(self.skipped),
            "missing_modules": {
                m: {"tasks": n, "pip": pypi_name(m)} for m, n in sorted(self.missing.items())
            },
            "runnable_tasks": list(self.runnable),
            "skipped_tasks": [{"task_id": t, "reason": self.reasons[t]} for t in self.skipped],
        }


def check_environment(
    problems: Sequence[Problem], suite: str = "", python: str | None = None
) -> EnvReport:
    """Split ``problems`` into runnable and skipped ones for this environment."""
    need_all = sorted({m for p in problems for m in required_modules(p)})
    have = available(need_all, python)
    runnable: list[str] = []
    skipped: list[str] = []
    reasons: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for p in problems:
        miss = [m for m in required_modules(p) if m not in have]
        if miss:
            skipped.append(p.task_id)
            reasons[p.task_id] = skip_reason(miss)
            counts.update(miss)
        else:
            runnable.append(p.task_id)
    return EnvReport(
        suite=suite,
        total=len(problems),
        runnable=tuple(runnable),
        skipped=tuple(skipped),
        reasons=reasons,
        missing=dict(counts),
        python=python or sys.executable,
    )
