"""Which tasks can the current environment run? (``vibecheck env-check SUITE``)

A task needs every third-party module it imports: its ``libs`` field plus the top-level
imports of its test code (BigCodeBench tests import e.g. ``faker`` or ``requests_mock``
that ``libs`` does not list). A module is *available* when
:func:`importlib.util.find_spec` finds it in the interpreter the sandbox runs
(``sys.executable`` by default). Tasks with a missing module are ``skipped`` with the reason
``environment: missing module X (pip install Y)``, never failed.

Some tasks also need *NLTK data* (corpora and models that ``nltk.download`` fetches at run
time, which the sandbox cannot: it has no network). :data:`NLTK_DATA_TASKS` names, for each
BigCodeBench task, the NLTK resources its reference solution loads; a task whose resources
``nltk.data.find`` does not find in the sandbox's interpreter is skipped the same way, with the
reason ``environment: missing NLTK data stopwords (...)``. A candidate that loads NLTK data the
environment lacks gets ``error``, never ``failed`` (:mod:`pytest_vibecheck.execute.verdict`).

Install tiers (extras of ``pytest-vibecheck``, see ``docs/sandbox.md``):

- base: the standard library only (300 of BigCodeBench's 1,140 tasks);
- ``exec-core``: + numpy, pandas, matplotlib, scipy, scikit-learn, seaborn;
- ``exec-full``: every one of the 62 third-party libraries BigCodeBench's ``libs`` field
  names, plus the two its tests import (``requests-mock``, ``pyfakefs``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from pytest_vibecheck.execute.spec import Task

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


#: Prefix of a missing-requirement entry that names NLTK data rather than a module
#: (``nltk_data:stopwords``), in :func:`missing_modules` and a verdict's missing module.
NLTK_DATA_PREFIX = "nltk_data:"

#: NLTK resource (``nltk.download`` id) -> the path ``nltk.data.find`` looks for.
NLTK_RESOURCES: dict[str, str] = {
    "averaged_perceptron_tagger": "taggers/averaged_perceptron_tagger",
    "punkt": "tokenizers/punkt",
    "stopwords": "corpora/stopwords",
    "words": "corpora/words",
}

#: BigCodeBench task -> the NLTK resources its reference solution loads. Measured by running
#: every reference solution of the tasks that import ``nltk`` or ``textblob`` (28) in the
#: bigvibebench environment without NLTK data: these 16 fail with NLTK's ``LookupError``
#: (``Resource ... not found``), the other 12 pass (656 and 657 name ``vader_lexicon`` and
#: ``stopwords`` but their tests pass a mock or their own list). Reproduce with
#: ``benchmarks/agreement_qwen.py --nltk-data``.
NLTK_DATA_TASKS: dict[str, tuple[str, ...]] = {
    **{f"BigCodeBench/{n}": ("punkt",) for n in (177, 334, 940, 1109)},
    **{
        f"BigCodeBench/{n}": ("stopwords",)
        for n in (290, 332, 376, 633, 635, 655, 658, 806, 808, 849)
    },
    "BigCodeBench/726": ("words",),
    "BigCodeBench/734": ("averaged_perceptron_tagger",),
}


def is_nltk_data(name: str) -> bool:
    """Whether a missing-requirement entry names NLTK data (``nltk_data:punkt``)."""
    return name.startswith(NLTK_DATA_PREFIX)


def required_data(problem: Task) -> tuple[str, ...]:
    """The NLTK data ``problem`` needs, as ``nltk_data:ID`` entries (:data:`NLTK_DATA_TASKS`;
    empty for other tasks)."""
    if problem.test.kind != "bigcodebench-unittest":
        return ()
    return tuple(NLTK_DATA_PREFIX + r for r in NLTK_DATA_TASKS.get(problem.task_id, ()))


@lru_cache(maxsize=8)
def _data_found_in(python: str, paths: tuple[str, ...]) -> tuple[frozenset[str], str | None]:
    """The ``paths`` that ``nltk.data.find`` finds in ``python``, and the real path of that
    interpreter's ``nltk/data.py`` (None when it has no ``nltk``)."""
    code = (
        "import json,os,sys\n"
        "ok=[]\n"
        "try:\n"
        "    import nltk.data\n"
        "    where=os.path.realpath(nltk.data.__file__)\n"
        "except Exception:\n"
        "    nltk=where=None\n"
        "for p in json.loads(sys.argv[1]) if nltk else ():\n"
        "    try:\n"
        "        nltk.data.find(p)\n"
        "        ok.append(p)\n"
        "    except LookupError:\n"
        "        pass\n"
        "print(json.dumps([ok, where]))\n"
    )
    found = _probe(python, code, paths)
    if found is None:
        return frozenset(), None
    ok, where = found
    return frozenset(ok), where


def _probe(python: str, code: str, names: Sequence[str]) -> Any:
    """Run ``code`` in ``python`` (``-s``) with ``names`` as JSON in ``sys.argv[1]``; the JSON
    it prints, or None when the interpreter failed."""
    import json

    done = subprocess.run(
        [python, "-s", "-c", code, json.dumps(list(names))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        return None
    return json.loads(done.stdout)


def _split(entry: str) -> tuple[str, str, str]:
    """``(id, path, file)`` of ``nltk_data:ID[=PATH][@FILE]`` (path from
    :data:`NLTK_RESOURCES` when absent; file ``""`` when absent)."""
    rest, _, file = entry[len(NLTK_DATA_PREFIX) :].partition("@")
    ident, _, path = rest.partition("=")
    return ident, path or NLTK_RESOURCES.get(ident, ident), file


def _data_path(entry: str) -> str:
    return _split(entry)[1]


def data_id(entry: str) -> str:
    """``stopwords`` for ``nltk_data:stopwords`` (or ``nltk_data:stopwords=corpora/stopwords``)."""
    return _split(entry)[0]


def data_available(entries: Iterable[str], python: str | None = None) -> frozenset[str]:
    """The subset of ``entries`` (``nltk_data:ID[=PATH]``) that ``nltk.data.find`` finds in
    ``python`` (default: this interpreter), checked by a fresh process that runs no candidate
    code. ``PATH`` defaults to :data:`NLTK_RESOURCES`."""
    wanted = sorted(set(entries))
    paths = {e: _data_path(e) for e in wanted}
    # one probe per interpreter: every known resource is asked for, whichever a task needs
    # (importing nltk.data takes about 2 s; a probe per task's set cost a cached run 25 s)
    asked = tuple(sorted(set(paths.values()) | set(NLTK_RESOURCES.values())))
    found, _ = _data_found_in(python or sys.executable, asked)
    return frozenset(e for e, path in paths.items() if path in found)


def data_missing(entry: str, python: str | None = None) -> bool:
    """Whether NLTK data ``entry`` (``nltk_data:ID=PATH@FILE``, as the sandbox reports NLTK's
    ``LookupError`` raised in ``FILE``) is really absent from ``python``: that interpreter has
    ``nltk``, ``FILE`` (when given) is its ``nltk/data.py`` (not a look-alike the candidate
    wrote), and ``nltk.data.find(PATH)`` fails there."""
    _ident, path, file = _split(entry)
    found, where = _data_found_in(python or sys.executable, (path,))
    if where is None or (file and os.path.realpath(file) != where):
        return False
    return path not in found


#: ``ast.parse`` is not thread-safe in CPython 3.11/3.12 ("AST constructor recursion depth
#: mismatch", CPython issue gh-106905); the parallel runner calls this from threads.
_AST_LOCK = threading.Lock()


@lru_cache(maxsize=4096)
def _imports(code: str) -> frozenset[str]:
    with _AST_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warnings about the code parsed are not the run's
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


def derive_required_modules(problem: Task) -> tuple[str, ...]:
    """Top-level non-standard-library modules ``problem`` needs (``libs`` + the test code's
    imports, parsed), sorted. The suite build stores this as the record's ``requires``."""
    names = set(problem.libs) | _imports(problem.test.code)
    return tuple(sorted(n for n in names if n and n not in STDLIB and n != "__future__"))


def task_modules(problem: Task) -> frozenset[str]:
    """Every top-level module ``problem`` itself needs, standard library included: its
    declared ``libs``, its test code's imports and :func:`required_modules`. Only these can be
    missing from the environment as an infrastructure failure; a module only the candidate
    imports is the candidate's (``import winreg`` on Linux fails, as upstream)."""
    return frozenset(problem.libs) | _imports(problem.test.code or "") | frozenset(
        required_modules(problem))


def required_modules(problem: Task) -> tuple[str, ...]:
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
    found = _probe(python, code, modules)
    return frozenset() if found is None else frozenset(found)


def available(modules: Iterable[str], python: str | None = None) -> frozenset[str]:
    """The subset of ``modules`` importable by ``python`` (default: this interpreter)."""
    mods = tuple(sorted(set(modules)))
    if python is None or python == sys.executable:
        return frozenset(m for m in mods if _available_here(m))
    # one probe per interpreter for every module BigCodeBench uses, whichever a task needs
    asked = tuple(sorted(set(mods) | set(IMPORT_TO_PYPI)))
    return _available_in(python, asked) & frozenset(mods)


def missing_modules(problem: Task, python: str | None = None) -> tuple[str, ...]:
    """Modules ``problem`` needs that are not installed, sorted, then the NLTK data it needs
    that is not there (``nltk_data:ID``, checked only when every module is); empty when it can
    run."""
    need = required_modules(problem)
    have = available(need, python) if need else frozenset()
    missing = tuple(m for m in need if m not in have)
    data = required_data(problem)
    if missing or not data:
        return missing
    found = data_available(data, python)
    return tuple(d for d in data if d not in found)


def missing_in_code(code: str, python: str | None = None) -> tuple[str, ...]:
    """The BigCodeBench libraries (:data:`IMPORT_TO_PYPI`) that ``code`` (a candidate's
    source) imports at top level and ``python`` (default: this interpreter) lacks, sorted.

    A reply may import a library its task does not need (``import numpy`` in a task of the
    standard library): BigCodeBench's environment has it, so the reply cannot be judged in one
    that does not. The run skips such a reply before its tests run (the reason names the
    library), as it skips a task whose own tests need one; ``()`` when it can run, or when the
    code does not parse (the tests judge that). Modules outside the benchmark's libraries are
    the candidate's own business: importing one is a model failure."""
    wanted = tuple(sorted(m for m in _imports(code) if m in IMPORT_TO_PYPI))
    if not wanted:
        return ()
    have = available(wanted, python)
    return tuple(m for m in wanted if m not in have)


def absent_libraries(python: str | None = None) -> tuple[str, ...]:
    """The BigCodeBench libraries (:data:`IMPORT_TO_PYPI`) ``python`` lacks, those of the
    ``exec-core`` tier first, each part sorted: what a reply cannot import here (the run's
    header names them)."""
    have = available(IMPORT_TO_PYPI, python)
    order = sorted(IMPORT_TO_PYPI, key=lambda m: (m not in CORE_IMPORTS, m))
    return tuple(m for m in order if m not in have)


def data_hint(ids: Sequence[str]) -> str:
    """What to do about missing NLTK data ``ids``: the bigvibebench environment writes some
    (:data:`pytest_vibecheck.execute.environments.DATA_WRITERS`); no registry package ships
    the others."""
    from pytest_vibecheck.execute.environments import DATA_WRITERS

    download = f"python -m nltk.downloader -d <environment>/nltk_data {' '.join(ids)}"
    if all(i in DATA_WRITERS for i in ids):
        return f"vibecheck env create bigvibebench writes it; or {download}"
    return f"{download} where there is network; no PyPI, Debian or npm package ships it"


def skip_reason(missing: Sequence[str]) -> str:
    """``environment: missing module scipy (pip install scipy)`` for ``missing``, or
    ``environment: missing NLTK data stopwords (python -m nltk.downloader ...)`` for NLTK data
    entries (``nltk_data:ID``)."""
    mods = [m for m in missing if not is_nltk_data(m)]
    data = [data_id(m) for m in missing if is_nltk_data(m)]
    parts = []
    if mods:
        pkgs = " ".join(sorted({pypi_name(m) for m in mods}))
        word = "module" if len(mods) == 1 else "modules"
        parts.append(f"missing {word} {', '.join(mods)} (pip install {pkgs})")
    if data:
        parts.append(f"missing NLTK data {', '.join(data)} ({data_hint(data)})")
    return "environment: " + "; ".join(parts)


@dataclass(frozen=True)
class EnvReport:
    """Result of :func:`check_environment` for one suite.

    ``runnable`` / ``skipped`` are task ids; ``reasons`` maps each skipped task to its
    reason; ``missing`` counts, per missing module (or ``nltk_data:ID`` entry), the tasks
    that need it.
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
                m: {"tasks": n, "pip": pypi_name(m)}
                for m, n in sorted(self.missing.items())
                if not is_nltk_data(m)
            },
            "missing_nltk_data": {
                data_id(m): {"tasks": n, "path": _data_path(m)}
                for m, n in sorted(self.missing.items())
                if is_nltk_data(m)
            },
            "runnable_tasks": list(self.runnable),
            "skipped_tasks": [{"task_id": t, "reason": self.reasons[t]} for t in self.skipped],
        }


def check_environment(
    problems: Sequence[Task], suite: str = "", python: str | None = None
) -> EnvReport:
    """Split ``problems`` into runnable and skipped ones for this environment."""
    need_all = sorted({m for p in problems for m in required_modules(p)})
    have = available(need_all, python)
    data_all = sorted({d for p in problems for d in required_data(p)})
    found = data_available(data_all, python) if data_all else frozenset()
    runnable: list[str] = []
    skipped: list[str] = []
    reasons: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for p in problems:
        miss = [m for m in required_modules(p) if m not in have]
        if not miss:
            miss = [d for d in required_data(p) if d not in found]
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
