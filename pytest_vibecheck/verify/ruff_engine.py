"""The batch Ruff engine: all Ruff-backed checks of many code samples in few Ruff processes.

The paper's pipeline (Vibe Checker, arXiv 2510.07315, §2.2; github.com/maszhongming/SWE-IF)
runs one ``ruff check`` per (code, instruction), about 4 ms each. This engine writes every
sample into a private temporary tree and lints the whole tree with **one**
``ruff check --ignore-noqa --output-format=concise --quiet --no-cache`` process:

* a few configuration folders, each holding its configuration as its own ``ruff.toml``
  (Ruff's hierarchical configuration picks the nearest file, so each folder is linted with
  its own rules and settings);
* one file per (sample, configuration group) in a folder whose configuration holds that
  group's checks; the files of one sample in different folders are hard links of one file
  (one write per sample).

:meth:`RuffEngine.start` returns while Ruff runs (its output goes to files in the tree, so it
never waits on a pipe), so a caller can do other work meanwhile; :meth:`RuffEngine.run` waits.

**Suppressions.** ``--ignore-noqa`` makes Ruff report what every suppression comment it
honours would hide: line ``# noqa`` / ``# noqa: CODE``, file-level ``# ruff: noqa`` /
``# flake8: noqa`` / ``# ruff: noqa: CODE`` / ``# ruff: file-ignore[...]``, the line form
``# ruff: ignore[...]`` and the block form ``# ruff: disable[...]`` ... ``# ruff: enable[...]``
(Ruff 0.15+; codes or, in preview, rule names); measured with Ruff 0.17.6. A suppression never
excuses a violation of an instruction (issue 23); the gate reports the comments themselves
(:mod:`pytest_vibecheck.ci.suppressions`).

**Output.** Ruff's concise output (``PATH:ROW:COL: CODE MESSAGE``, one line per diagnostic,
about a fifth of the size of its JSON) carries every field a verdict needs: rule code,
1-based row and character column, and the message, printed as in the JSON ``message`` field.
It is parsed with one regular expression; a line that does not start a diagnostic continues
the previous message, and output that cannot be read that way is asked for again in JSON.

**Grouping.** The Ruff-backed checks of one sample are packed into as few configuration groups
as possible, but two checks share a group only when that provably gives the same verdicts as
running each alone (:func:`compatible`):

1. same preview flag (preview mode changes which rules a selector such as ``E`` selects, and
   changes the behaviour of some stable rules);
2. no overlapping rule selectors (``E`` and ``E501`` overlap, ``W`` and ``W505`` overlap;
   ``E`` and ``EM101`` do not: a selector covers a code when it is a prefix of the code within
   the same linter, see :func:`selector_covers`);
3. no setting of one check may affect a rule selected by the other
   (:data:`SETTING_SCOPES`: ``lint.pycodestyle.max-line-length`` affects only E501,
   ``lint.pycodestyle.max-doc-length`` only W505, ``lint.pydocstyle.convention`` only D and
   DOC, each ``lint.pylint.max-*`` only its PLR rule, ``lint.mccabe.max-complexity`` only
   C901). A setting not in that table is assumed to affect every rule, so a check with such a
   setting is never grouped. Both checks may set the same key only to the same value.

A batch of at most :data:`SOLO_UP_TO` checks in all (one file verified against a few
instructions) is not grouped: each check gets an exact folder of its own.

In a batch of more than :data:`PACK_ABOVE` distinct groups, the groups of all samples are
then packed into shared folders: a group joins the first folder (same preview flag) whose
checks are all compatible with its own, so a folder's configuration holds the union of its
groups' checks. Each file names the folder's checks that apply to it (``-k3-``), and
``lint.per-file-ignores`` turns every other check's rules off for it, so Ruff neither runs nor
reports them (and by :func:`compatible` their settings change no verdict of the group). Ruff
resolves each folder's configuration anew (about 0.2 ms of CPU each with Ruff 0.17); a batch
of 1,140 samples with 5 random instructions each has about 1,080 distinct groups, and packs
into a handful of folders. A check whose selectors cover no rule Ruff has (removed,
redirected) never shares a configuration (:meth:`RuffEngine.packable`).

Ruff's diagnostics are attributed back to the check whose selector covers the rule code. A
code that no selector of a shared folder covers (a redirected rule, say) cannot be told
apart from another sample's finding, so that file is linted again in an exact folder of its
own group, where a group of one check owns every code.

**Isolation.** Every folder has its own ``ruff.toml`` (no ``extend``), the tree's root has one
too, Ruff runs with the tree as its working directory and without any ``RUFF_*`` environment
variable, so no user configuration (a ``ruff.toml``/``pyproject.toml`` in the current
folder, a user-level config, ``RUFF_*`` variables) can change a verdict. One leak remains in
Ruff itself: a ``pyproject.toml`` with ``project.requires-python`` in an *ancestor* of the tree
sets the target version. The tree is therefore created under a base folder that has no such
ancestor (:func:`safe_temp_base`); if none exists, ``target-version = "py311"`` (Ruff 0.17's
default for rules) is written explicitly, and a warning says that syntax newer than 3.11 is then
reported as a syntax error.

**Syntax errors.** Ruff reports code that does not parse as ``invalid-syntax`` diagnostics
(code ``"invalid-syntax"`` in Ruff 0.17's JSON, ``null`` in older versions), whatever rules are
selected. Each becomes a violation with rule ``"invalid-syntax"`` of every check of that
sample's group, so unparseable code fails every Ruff-backed instruction (paper §2.2).

**Failures.** A Ruff run that exits with status 2 or prints nothing readable (an unknown or
removed rule such as ``PD901``, a bad setting, a crash) is never a verdict. The engine then
isolates the cause by splitting the work (configuration folders by halves, then a probe of the
configuration alone, then the folder's files by halves), so one bad configuration or one file
that crashes Ruff gives an error outcome for exactly the checks involved, and every other
sample is still judged.

Source of the rule behaviours relied on: Ruff 0.17 documentation (configuration discovery,
``--output-format`` concise and json, rule selection); the tested version range is pinned in
``pyproject.toml`` (``ruff>=0.17.0,<0.18``) and the version is recorded in every outcome.
"""

# ruff: noqa: PTH102, PTH106, PTH108, PTH118, PTH123
# (os.path and os-level file calls on purpose: a batch writes thousands of files, and string
#  paths with plain system calls cost a fraction of pathlib objects on that path.)

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vibecheck.verify.verdict import Violation

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "SETTING_SCOPES",
    "SYNTAX_ERROR_RULE",
    "TESTED_RUFF_RANGE",
    "RuffCheck",
    "RuffEngine",
    "RuffJob",
    "RuffOutcome",
    "compatible",
    "default_engine",
    "plan_groups",
    "safe_temp_base",
    "selector_covers",
    "selectors_overlap",
]

#: Ruff versions the verdicts were validated with (``pyproject.toml`` pins the same range).
TESTED_RUFF_RANGE: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 17, 0), (0, 18, 0))

#: Rule given to the violation for code that does not parse.
SYNTAX_ERROR_RULE = "invalid-syntax"

#: Ruff setting (dotted ``ruff.toml`` key) -> the rule selectors whose behaviour it can change.
#: Settings not listed are treated as affecting every rule.
SETTING_SCOPES: Mapping[str, tuple[str, ...]] = {
    "lint.pycodestyle.max-line-length": ("E501",),
    "lint.pycodestyle.max-doc-length": ("W505",),
    "lint.pydocstyle.convention": ("D", "DOC"),
    "lint.pylint.max-branches": ("PLR0912",),
    "lint.pylint.max-statements": ("PLR0915",),
    "lint.pylint.max-locals": ("PLR0914",),
    "lint.pylint.max-nested-blocks": ("PLR1702",),
    "lint.pylint.max-bool-expr": ("PLR0916",),
    "lint.pylint.max-args": ("PLR0913",),
    "lint.pylint.max-positional-args": ("PLR0917",),
    "lint.pylint.max-returns": ("PLR0911",),
    "lint.pylint.max-public-methods": ("PLR0904",),
    "lint.mccabe.max-complexity": ("C901",),
}

#: Distinct configuration groups in a batch above which they are packed into shared folders
#: (:meth:`_Batch.add_unit`); a smaller batch (the plugin's, of up to 32 items) gets one exact
#: folder per group, as cheap there as a few shared ones.
PACK_ABOVE = 16

#: Checks in a batch (all its jobs together) up to which each check gets an exact folder of its
#: own, unless the batch packs: no grouping, so no :meth:`RuffEngine.packable` and no
#: ``ruff rule --all`` (a 1.6 MB JSON listing, about a third of a one-file ``vibecheck verify``);
#: a handful of folders costs Ruff nothing measurable, and alone is how every check is defined.
SOLO_UP_TO = 8

#: Ruff's fallback target version for rules when none is configured (Ruff 0.17).
_FALLBACK_TARGET_VERSION = "py311"

SettingValue = int | str | bool


# ----------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class RuffCheck:
    """One Ruff-backed check: pass iff Ruff reports nothing for ``rules``.

    ``rules`` are Ruff rule selectors (codes or prefixes, e.g. ``("E", "W")``); ``preview``
    turns on Ruff's preview mode; ``settings`` are ``(dotted ruff.toml key, value)`` pairs,
    sorted (use :meth:`make`).
    """

    rules: tuple[str, ...]
    preview: bool = False
    settings: tuple[tuple[str, SettingValue], ...] = ()
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        # Checks are dictionary keys many times per sample: hash once.
        object.__setattr__(self, "_hash", hash((self.rules, self.preview, self.settings)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def make(
        cls,
        rules: Iterable[str],
        preview: bool = False,
        settings: Mapping[str, SettingValue] | None = None,
    ) -> RuffCheck:
        """Build a check with normalised (sorted) settings; raises ValueError on no rules."""
        rs = tuple(rules)
        if not rs:
            raise ValueError("a Ruff check needs at least one rule selector")
        return cls(rs, bool(preview), tuple(sorted((settings or {}).items())))


@dataclass(frozen=True, slots=True)
class RuffJob:
    """One code sample and the Ruff checks to run on it (the code is linted as given)."""

    code: str
    checks: Sequence[RuffCheck]


@dataclass(frozen=True, slots=True)
class RuffOutcome:
    """Result of one :class:`RuffCheck` on one sample.

    ``error`` is set when Ruff could not judge (then ``violations`` is empty);
    ``syntax_error`` is True when Ruff reported that the code does not parse.
    """

    violations: tuple[Violation, ...] = ()
    error: str | None = None
    syntax_error: bool = False
    ruff_version: str | None = None


# ----------------------------------------------------------------------------- selectors


_LETTERS = re.compile(r"[A-Z]*")
_PYLINT_CATEGORIES = frozenset({"PLC", "PLE", "PLR", "PLW"})


def _letters(code: str) -> str:
    m = _LETTERS.match(code)
    return m.group(0) if m else ""


def selector_covers(selector: str, code: str) -> bool:
    """True if Ruff's rule ``selector`` selects rule ``code`` (or the narrower selector).

    A selector covers a code when it is a prefix of it within the same linter: the
    leading letters must be equal (``E`` covers ``E501`` but not ``EM101``), except that the
    pylint prefix ``PL`` covers its categories ``PLC``/``PLE``/``PLR``/``PLW``. ``ALL``
    covers everything.
    """
    if selector == "ALL":
        return True
    if not code.startswith(selector):
        return False
    ls, lc = _letters(selector), _letters(code)
    return ls == lc or (ls == "PL" and lc in _PYLINT_CATEGORIES)


def selectors_overlap(a: str, b: str) -> bool:
    """True if selectors ``a`` and ``b`` can select a common rule (``E`` and ``E501``)."""
    return selector_covers(a, b) or selector_covers(b, a)


def _setting_scope(key: str) -> tuple[str, ...]:
    return SETTING_SCOPES.get(key, ("ALL",))


def _settings_touch(settings: Iterable[tuple[str, SettingValue]], other: RuffCheck) -> bool:
    other_settings = dict(other.settings)
    for key, value in settings:
        if key in other_settings:
            if other_settings[key] != value:
                return True
            continue
        for scope in _setting_scope(key):
            if any(selectors_overlap(scope, sel) for sel in other.rules):
                return True
    return False


@functools.lru_cache(maxsize=1 << 16)
def compatible(a: RuffCheck, b: RuffCheck) -> bool:
    """True if ``a`` and ``b`` can run in one Ruff configuration with the verdicts of two runs.

    See the module docstring: same preview flag, no overlapping selectors, and no setting
    of one affects a rule of the other (same key only with the same value). Memoized
    (checks are immutable, and a batch asks about the same few pairs thousands of times).
    """
    if a.preview != b.preview:
        return False
    if any(selectors_overlap(x, y) for x in a.rules for y in b.rules):
        return False
    return not (_settings_touch(a.settings, b) or _settings_touch(b.settings, a))


@functools.lru_cache(maxsize=4096)
def plan_groups(checks: tuple[RuffCheck, ...]) -> tuple[tuple[int, ...], ...]:
    """Pack distinct ``checks`` into configuration groups (greedy first fit, in order).

    Returns tuples of indices into ``checks``; every pair inside a group is
    :func:`compatible`. Deterministic: the same checks always give the same groups (so a
    batch's samples, which mostly share their checks, plan them once: the answer is cached).
    """
    groups: list[list[int]] = []
    for i, check in enumerate(checks):
        for group in groups:
            if all(compatible(check, checks[j]) for j in group):
                group.append(i)
                break
        else:
            groups.append([i])
    return tuple(tuple(g) for g in groups)


def _toml_value(value: SettingValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)  # a TOML basic string for any JSON-escaped text


@functools.lru_cache(maxsize=4096)
def _config_text(members: tuple[RuffCheck, ...], target_version: str | None, shared: bool = False) -> str:
    """The ``ruff.toml`` of a folder of ``members``. ``shared``: files of several groups
    share it, each naming the checks that apply to it (``-k3-`` for ``members[3]``), and
    ``lint.per-file-ignores`` turns every other check's rules off for a file whose name does
    not carry its token (a negated pattern, ``"!*-k3-*"``): Ruff then neither runs them on
    that file nor reports them (measured with Ruff 0.17: a third of the CPU and a seventh of
    the output of the union of the rules on every file)."""
    selectors: list[str] = []
    settings: dict[str, SettingValue] = {}
    for check in members:
        for sel in check.rules:
            if sel not in selectors:
                selectors.append(sel)
        settings.update(check.settings)
    lines = [
        "# Written by pytest-vibecheck (ruff_engine.py); one configuration group.",
        "respect-gitignore = false",
    ]
    if target_version:
        lines.append(f"target-version = {json.dumps(target_version)}")
    lines.append("lint.select = [" + ", ".join(json.dumps(s) for s in selectors) + "]")
    # Fixes are never applied: without them Ruff's JSON output is a third smaller.
    lines.append("lint.fixable = []")
    if members[0].preview:
        lines.append("lint.preview = true")
    lines.extend(f"{key} = {_toml_value(value)}" for key, value in sorted(settings.items()))
    if shared:
        lines.extend(
            f"lint.per-file-ignores.{json.dumps(f'!*-k{k}-*')} = ["
            + ", ".join(json.dumps(sel) for sel in check.rules) + "]"
            for k, check in enumerate(members)
        )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- environment


def _has_requires_python(folder: Path) -> bool:
    pyproject = folder / "pyproject.toml"
    try:
        if not pyproject.is_file():
            return False
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    project = doc.get("project")
    return isinstance(project, dict) and isinstance(project.get("requires-python"), str)


def _base_is_safe(base: Path) -> bool:
    try:
        resolved = base.resolve()
    except OSError:
        return False
    if not (resolved.is_dir() and os.access(resolved, os.W_OK | os.X_OK)):
        return False
    return not any(_has_requires_python(p) for p in (resolved, *resolved.parents))


def safe_temp_base(preferred: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """A writable base folder for the temporary tree, and whether it is isolated.

    Isolated means no ancestor holds a ``pyproject.toml`` with ``project.requires-python``
    (Ruff would take its target version from it). Tries ``preferred``, then ``/dev/shm``
    (memory-backed on Linux: creating thousands of small files there is much faster than on
    a disk), then the system temp folder, ``/tmp`` and ``/var/tmp``; returns
    ``(tempfile.gettempdir(), False)`` if none is isolated.
    """
    candidates = [Path(tempfile.gettempdir()), Path("/dev/shm"), Path("/tmp"), Path("/var/tmp")]
    candidates.insert(0, Path("/dev/shm"))
    if preferred is not None:
        candidates.insert(0, Path(preferred))
    for base in candidates:
        if _base_is_safe(base):
            return base.resolve(), True
    return Path(tempfile.gettempdir()).resolve(), False


def _ruff_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("RUFF_")}


def _parse_version(text: str) -> tuple[int, int, int] | None:
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _condense_stderr(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith("warning:")]
    causes = [ln.removeprefix("Cause:").strip() for ln in lines if ln.startswith("Cause:")]
    text = "; ".join(causes or lines)
    return text[:500] if text else "no message"


# ----------------------------------------------------------------------------- engine
# ----------------------------------------------------------------------------- output

#: One diagnostic line of ``ruff check --output-format=concise --quiet`` (Ruff 0.17):
#: ``PATH:ROW:COL: CODE MESSAGE`` (``CODE [*] MESSAGE`` when a fix is offered) or, for code
#: that does not parse, ``PATH:ROW:COL: invalid-syntax: MESSAGE`` (``SyntaxError:`` in older
#: Ruff). The message is Ruff's JSON ``message`` field, printed as is.
_CONCISE_LINE = (
    r"(?P<path>[^\n]+?):(?P<row>[0-9]+):(?P<col>[0-9]+): "
    r"(?:(?P<code>[A-Z]+[0-9]+) (?:\[\*\] )?|(?:invalid-syntax|SyntaxError): )"
    r"(?P<msg>[^\n]*)"
)
_CONCISE_ONE = re.compile(_CONCISE_LINE)
#: The same, for the engine's own relative paths (no colon in them): one ``findall`` over the
#: whole output, much faster than matching line by line.
_CONCISE_FAST = re.compile(
    r"^([^:\n]+):([0-9]+):([0-9]+): (?:([A-Z]+[0-9]+) (?:\[\*\] )?|(?:invalid-syntax|SyntaxError): )([^\n]*)$",
    re.MULTILINE,
)

#: One diagnostic: (path as Ruff printed it, row, column, rule code or None for a syntax
#: error, message). Rows and columns are 1-based; columns count characters.
_Diag = tuple[str, int, int, str | None, str]


def _parse_concise(text: str) -> list[_Diag] | None:
    """The diagnostics of concise output, or None when a line is not understood.

    Fast path: every line is a diagnostic (as many ``findall`` matches, each anchored at a
    line start, as lines). Otherwise line by line: a line that does not start a diagnostic
    continues the previous message (a message with a newline); output that does not start
    with a diagnostic is not understood.
    """
    found = _CONCISE_FAST.findall(text)
    lines = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
    if len(found) != lines:
        return _parse_concise_lines(text)
    return [(path, int(row), int(col), code or None, msg) for path, row, col, code, msg in found]


def _parse_concise_lines(text: str) -> list[_Diag] | None:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[_Diag] = []
    for line in lines:
        m = _CONCISE_ONE.fullmatch(line)
        if m is not None:
            path, row, col, code, msg = m.groups()
            out.append((path, int(row), int(col), code, msg))
        elif out:
            path, row_n, col_n, code, msg = out[-1]
            out[-1] = (path, row_n, col_n, code, msg + "\n" + line)
        else:
            return None
    return out


def _parse_json(stdout: str) -> list[_Diag] | None:
    """The diagnostics of ``--output-format=json``, or None when it is not a JSON list."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    out: list[_Diag] = []
    for d in data:
        loc = d.get("location") or {}
        code = d.get("code")
        out.append((
            str(d.get("filename", "")),
            int(loc.get("row") or 1),
            int(loc.get("column") or 1),
            None if _is_syntax(code) else str(code),
            str(d.get("message", "")),
        ))
    return out


def _is_syntax(code: object) -> bool:
    return code is None or code == SYNTAX_ERROR_RULE


# ----------------------------------------------------------------------------- engine


@dataclass(slots=True)
class _Unit:
    """One file to lint: sample ``job`` under group ``members`` (indices into its checks)."""

    job: int
    members: tuple[int, ...]
    folder: int
    name: str  # path relative to the tree's root, as Ruff prints it


@dataclass
class _RunResult:
    diagnostics: list[_Diag] | None
    error: str | None = None
    timed_out: bool = False


@dataclass
class _Folder:
    """One configuration folder: its checks (pairwise :func:`compatible`), written as its
    ``ruff.toml`` when the batch starts (a shared folder gains checks until then)."""

    index: int
    path: str
    name: str
    checks: list[RuffCheck]
    shared: bool  # groups of many samples pack into it (False: one exact group)
    units: list[int] = field(default_factory=list)
    config: str = ""  # the ruff.toml text, once written
    #: check -> how many of ``checks`` it is known to be compatible with (-1: not with all)
    fits: dict[RuffCheck, int] = field(default_factory=dict)
    position: dict[RuffCheck, int] = field(default_factory=dict)  # index in ``checks``

    def accepts(self, check: RuffCheck) -> bool:
        """True if ``check`` is in the folder or compatible with every check in it."""
        done = self.fits.get(check, 0)
        if done < 0:
            return False
        checks = self.checks
        for other in itertools.islice(checks, done, None):
            if other != check and not compatible(check, other):
                self.fits[check] = -1  # a folder only gains checks: never again
                return False
        self.fits[check] = len(checks)
        return True


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` (it must not exist) holding ``data``: three system calls."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


class RuffEngine:
    """Runs :class:`RuffJob` s in as few ``ruff check`` processes as possible.

    ``ruff_bin``: the Ruff executable (default: the one of the ``ruff`` Python package,
    ``ruff.find_ruff_bin()``). ``max_files_per_run`` bounds one process's input (and the
    size of its output); ``timeout`` (seconds) bounds one process; ``temp_base`` is
    the preferred folder for the temporary tree (see :func:`safe_temp_base`); a batch with
    more than ``pack_above`` distinct configuration groups packs them into shared folders
    (:data:`PACK_ABOVE`; the verdicts are the same either way).
    """

    def __init__(
        self,
        ruff_bin: str | os.PathLike[str] | None = None,
        *,
        max_files_per_run: int = 20_000,
        timeout: float = 600.0,
        temp_base: str | os.PathLike[str] | None = None,
        pack_above: int = PACK_ABOVE,
    ) -> None:
        self._ruff_bin = None if ruff_bin is None else str(ruff_bin)
        self.pack_above = pack_above
        self.temp_base = temp_base
        self.max_files_per_run = max_files_per_run
        self.timeout = timeout
        self._version: str | None = None
        self._version_error: str | None = None
        self.processes_run = 0  # Ruff processes started by this engine (for benchmarks)
        self._rule_codes: frozenset[str] | None = None
        self._rule_codes_read = False
        self._packable: dict[RuffCheck, bool] = {}

    # -- discovery ---------------------------------------------------------------------
    def ruff_bin(self) -> str:
        """Path of the Ruff executable; raises FileNotFoundError if there is none."""
        if self._ruff_bin is None:
            try:
                import ruff  # type: ignore[import-untyped]  # the package ships the binary

                self._ruff_bin = os.fsdecode(ruff.find_ruff_bin())
            except (ImportError, FileNotFoundError):
                found = shutil.which("ruff")
                if found is None:
                    raise FileNotFoundError(
                        "Ruff not found: install it with `pip install 'ruff>=0.17,<0.18'`"
                    ) from None
                self._ruff_bin = found
        return self._ruff_bin

    def version(self) -> str | None:
        """The Ruff version (``"0.17.6"``), or None if Ruff cannot run (see :meth:`problem`)."""
        if self._version is None and self._version_error is None:
            try:
                proc = subprocess.run(
                    [self.ruff_bin(), "--version"],
                    capture_output=True,
                    text=True,
                    env=_ruff_env(),
                    timeout=60,
                    check=False,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                self._version_error = f"Ruff cannot run: {exc}"
                return None
            parsed = _parse_version(proc.stdout)
            if proc.returncode != 0 or parsed is None:
                self._version_error = (
                    f"Ruff cannot run: `ruff --version` exited {proc.returncode}: "
                    f"{_condense_stderr(proc.stderr or proc.stdout)}"
                )
                return None
            self._version = ".".join(map(str, parsed))
            lo, hi = TESTED_RUFF_RANGE
            if not lo <= parsed < hi:
                warnings.warn(
                    f"Ruff {self._version} is outside the tested range "
                    f">={'.'.join(map(str, lo))},<{'.'.join(map(str, hi))}: "
                    "verdicts may differ (rules change between Ruff versions)",
                    RuntimeWarning,
                    stacklevel=2,
                )
        return self._version

    def rule_codes(self) -> frozenset[str] | None:
        """Every rule code this Ruff has, preview and deprecated rules included, removed
        rules not (``ruff rule --all --output-format json``, read once), or None when Ruff
        cannot list them."""
        if not self._rule_codes_read:
            self._rule_codes_read = True
            try:
                proc = subprocess.run(
                    [self.ruff_bin(), "rule", "--all", "--output-format", "json"],
                    capture_output=True, env=_ruff_env(), timeout=60, check=False,
                )
                rules = json.loads(proc.stdout) if proc.returncode == 0 else None
                # (a few entries have no code in Ruff 0.17; a removed rule's status is
                # {"Removed": ...}: selecting it is an error, or a redirect to another rule)
                codes = [
                    r.get("code") for r in rules
                    if isinstance(r, dict) and not (isinstance(r.get("status"), dict) and "Removed" in r["status"])
                ] if isinstance(rules, list) else []
            except (OSError, subprocess.SubprocessError, ValueError, TypeError, AttributeError):
                codes = []
            found = frozenset(c for c in codes if isinstance(c, str) and c)
            if found:
                self._rule_codes = found
        return self._rule_codes

    def packable(self, check: RuffCheck) -> bool:
        """True if ``check`` may share a configuration with other checks: each of its
        selectors covers a rule this Ruff has (:meth:`rule_codes`). A selector that covers
        none is removed (``PD901``: an error), redirected (``TRY200`` reports ``B904``) or
        unknown: its findings, or its error, could be taken for another check's, so it runs
        alone. False for every check when Ruff cannot list its rules."""
        found = self._packable.get(check)
        if found is None:
            codes = self.rule_codes()
            found = codes is not None and all(
                any(selector_covers(sel, code) for code in codes) for sel in check.rules
            )
            self._packable[check] = found
        return found

    def problem(self) -> str | None:
        """Why Ruff cannot run, or None when it can."""
        self.version()
        return self._version_error

    # -- running -----------------------------------------------------------------------

    def run(self, jobs: Sequence[RuffJob]) -> list[list[RuffOutcome]]:
        """Run every job's checks; returns one outcome per check, in the jobs' order.

        Never raises for Ruff problems: those become outcomes with ``error`` set.
        """
        with self.start(jobs) as pending:
            return pending.outcomes()

    def start(self, jobs: Sequence[RuffJob]) -> RuffRun:
        """Write the jobs' files and start Ruff on them without waiting for it.

        The caller can do other work while Ruff lints (the verifiers that are not Ruff
        rules, say), then call :meth:`RuffRun.outcomes` (same result as :meth:`run`). Use the
        returned run as a context manager, or call :meth:`RuffRun.close`, so that an
        abandoned run's process is stopped and its temporary tree removed.
        """
        version = self.version()
        if version is None:
            err = self._version_error or "Ruff cannot run"
            return RuffRun.failed([[RuffOutcome(error=err) for _ in job.checks] for job in jobs])
        base, isolated = safe_temp_base(self.temp_base)
        target_version = None if isolated else _FALLBACK_TARGET_VERSION
        if not isolated:
            warnings.warn(
                f"every temp folder candidate has a pyproject.toml with requires-python above "
                f"it; linting with target-version {target_version} (syntax newer than Python "
                "3.11 is reported as a syntax error). Set TMPDIR to a folder outside any "
                "Python project.",
                RuntimeWarning,
                stacklevel=2,
            )
        return RuffRun(self, jobs, version, base, target_version)

    def _launch(self, cwd: str, targets: list[str], *, concise: bool = True) -> _Process:
        """Start one ``ruff check`` over ``targets`` (paths relative to ``cwd``)."""
        self.processes_run += 1
        return _Process(self, cwd, targets, concise)

    def _invoke(self, cwd: str, targets: list[str]) -> _RunResult:
        """One ``ruff check`` over ``targets``, waited for."""
        return self._launch(cwd, targets).result()


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """``proc.wait(timeout)`` that returns as soon as the process ends: Popen.wait with a
    timeout polls with sleeps of up to 50 ms; a Linux pidfd (Python 3.9+) wakes at once."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None and proc.returncode is None:
        try:
            fd = pidfd_open(proc.pid)
        except OSError:  # an old kernel, or a process already reaped
            pass
        else:
            try:
                # poll, never select: select() refuses descriptors >= 1024 (FD_SETSIZE), which
                # a run with many sandboxes, pipes and SQLite files open does reach
                poller = select.poll()
                poller.register(fd, select.POLLIN)
                ready = poller.poll(max(0, int(timeout * 1000)))
            finally:
                os.close(fd)
            if not ready:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            return proc.wait()
    return proc.wait(timeout=timeout)


class _Process:
    """One ``ruff check`` process, its output written to files in its working folder
    (a pipe would stall Ruff while the caller is busy)."""

    _serial = itertools.count(1)

    def __init__(self, engine: RuffEngine, cwd: str, targets: list[str], concise: bool) -> None:
        self.engine = engine
        self.cwd = cwd
        self.targets = targets
        self.concise = concise
        stem = os.path.join(cwd, f"ruff-{os.getpid()}-{next(_Process._serial)}")
        self.out_path, self.err_path = stem + ".out", stem + ".err"
        fmt = ["--output-format=concise", "--quiet"] if concise else ["--output-format=json"]
        cmd = [engine.ruff_bin(), "check", "--no-cache", "--ignore-noqa", *fmt, "--no-fix", *targets]
        self.started = time.monotonic()
        self.proc: subprocess.Popen[bytes] | None = None
        self.launch_error: str | None = None
        try:
            with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
                self.proc = subprocess.Popen(
                    cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=_ruff_env()
                )
        except OSError as exc:
            self.launch_error = f"Ruff cannot run: {exc}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def result(self) -> _RunResult:
        if self.proc is None:
            return _RunResult(None, self.launch_error or "Ruff cannot run")
        remaining = self.engine.timeout - (time.monotonic() - self.started)
        try:
            returncode = _wait(self.proc, max(remaining, 0.0))
        except subprocess.TimeoutExpired:
            self.kill()
            return _RunResult(None, f"Ruff timed out after {self.engine.timeout:g} s", timed_out=True)
        try:
            with open(self.out_path, "rb") as fh:
                stdout = fh.read().decode("utf-8", "replace")
            with open(self.err_path, "rb") as fh:
                stderr = fh.read().decode("utf-8", "replace")
        except OSError as exc:
            return _RunResult(None, f"Ruff's output cannot be read: {exc}")
        finally:
            for path in (self.out_path, self.err_path):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        if returncode not in (0, 1):
            return _RunResult(None, f"Ruff failed (exit {returncode}): {_condense_stderr(stderr)}")
        if self.concise:
            diags = _parse_concise(stdout)
            if diags is None:  # not understood: ask again in JSON, the documented format
                again = self.engine._launch(self.cwd, self.targets, concise=False)
                return again.result()
            return _RunResult(diags)
        diags = _parse_json(stdout)
        if diags is None:
            return _RunResult(None, f"Ruff printed no valid JSON list: {_condense_stderr(stderr)}")
        return _RunResult(diags)


class RuffRun:
    """Ruff at work on the jobs given to :meth:`RuffEngine.start`.

    The jobs are cut into chunks of at most ``max_files_per_run`` files; the first chunk's
    process starts at once, and each later chunk's process starts before the previous
    chunk's output is read.
    """

    def __init__(
        self,
        engine: RuffEngine | None,
        jobs: Sequence[RuffJob],
        version: str,
        base: Path,
        target_version: str | None,
    ) -> None:
        self._ready: list[list[RuffOutcome]] | None = None
        self._engine = engine
        self._jobs = jobs
        self._version = version
        self._base = base
        self._target_version = target_version
        self._batches: list[_Batch] = []
        # Deduplicate checks within each job and cut the jobs into chunks of files.
        self._distinct: list[tuple[RuffCheck, ...]] = []
        self._index_of: list[list[int]] = []
        canonical: dict[tuple[RuffCheck, ...], tuple[RuffCheck, ...]] = {}
        for job in jobs:
            seen: dict[RuffCheck, int] = {}
            self._index_of.append([seen.setdefault(c, len(seen)) for c in job.checks])
            distinct = tuple(seen)
            # one tuple object for equal checks, so the batch plans each once (_Batch.add_job)
            self._distinct.append(canonical.setdefault(distinct, distinct))
        self._outcomes: list[list[RuffOutcome | None]] = [[None] * len(d) for d in self._distinct]
        self._chunks: list[list[int]] = []
        self._pack = False
        self._solo = False
        if engine is None:
            return
        chunk: list[int] = []
        files_in_chunk = 0
        groups: set[tuple[RuffCheck, ...]] = set()
        for i, checks in enumerate(self._distinct):
            if not checks:
                continue
            planned = plan_groups(checks)
            if len(groups) <= engine.pack_above:
                groups.update(tuple(checks[k] for k in members) for members in planned)
            n = len(planned)
            if chunk and files_in_chunk + n > engine.max_files_per_run:
                self._chunks.append(chunk)
                chunk, files_in_chunk = [], 0
            chunk.append(i)
            files_in_chunk += n
        if chunk:
            self._chunks.append(chunk)
        self._pack = len(groups) > engine.pack_above
        self._solo = not self._pack and sum(len(d) for d in self._distinct) <= SOLO_UP_TO
        if self._chunks:
            self._launch(0)

    @classmethod
    def failed(cls, outcomes: list[list[RuffOutcome]]) -> RuffRun:
        """A run that never started: every outcome is already known (Ruff cannot run)."""
        run = cls(None, (), "", Path(), None)
        run._ready = outcomes
        return run

    def __enter__(self) -> RuffRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _launch(self, k: int) -> None:
        assert self._engine is not None
        batch = _Batch(self._engine, self._base, self._version, self._target_version, pack=self._pack)
        self._batches.append(batch)
        try:
            for i in self._chunks[k]:
                if self._solo:
                    for c in range(len(self._distinct[i])):
                        batch.add_unit(i, self._distinct[i], (c,), self._jobs[i].code)
                else:
                    batch.add_job(i, self._distinct[i], self._jobs[i].code)
            batch.write_configs()
        except OSError as exc:
            batch.broken = f"the temporary tree cannot be written: {exc}"
            return
        batch.start()

    def outcomes(self) -> list[list[RuffOutcome]]:
        """Wait for Ruff; one outcome per check of every job, in the jobs' order."""
        if self._ready is not None:
            return self._ready
        try:
            for k in range(len(self._chunks)):
                if k + 1 < len(self._chunks):
                    self._launch(k + 1)
                self._collect(self._batches[k])
        finally:
            self.close()
        results: list[list[RuffOutcome]] = []
        missing = RuffOutcome(error="internal error: no outcome")
        for row, index in zip(self._outcomes, self._index_of, strict=True):
            results.append([row[k] or missing for k in index])
        self._ready = results
        return results

    def close(self) -> None:
        """Stop Ruff if it still runs and remove the temporary trees (idempotent)."""
        for batch in self._batches:
            batch.close()

    def _collect(self, batch: _Batch) -> None:
        version = self._version
        batch.finish()
        empty = RuffOutcome((), None, False, version)
        for u, unit in enumerate(batch.units):
            if u in batch.replaced:
                continue
            checks = self._distinct[unit.job]
            row = self._outcomes[unit.job]
            error = batch.unit_errors.get(u)
            if error is not None:
                failed = RuffOutcome(error=error, ruff_version=version)
                for k in unit.members:
                    row[k] = failed
                continue
            diags = batch.diags.get(u)
            if not diags:
                for k in unit.members:
                    row[k] = empty
                continue
            group = {checks[k]: i for i, k in enumerate(unit.members)}  # check -> group position
            found = _attribute(diags, batch.attributor(unit.folder), group, version, empty)
            for k, outcome in zip(unit.members, found, strict=True):
                row[k] = outcome


class _Batch:
    """The temporary tree of one chunk, its Ruff run, and the isolation of failures."""

    def __init__(
        self, engine: RuffEngine, base: Path, version: str, target_version: str | None, *, pack: bool = True
    ) -> None:
        self.engine = engine
        self.pack = pack  # groups share folders (else: one exact folder per distinct group)
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="vibecheck-ruff-", dir=base))
        self.version = version
        self.target_version = target_version
        self.folders: list[_Folder] = []
        self.folder_of: dict[str, int] = {}  # exact folders (split), by configuration
        self.shared_folders: dict[bool, list[_Folder]] = {}  # by preview flag
        self.units: list[_Unit] = []
        self.unit_of_name: dict[str, int] = {}
        self.diags: dict[int, list[tuple[str | None, int, int, str]]] = {}
        self.unit_errors: dict[int, str] = {}
        self.replaced: set[int] = set()  # units split into one unit per check
        self.attributors: dict[int, _Attributor] = {}  # by folder
        self.codes_of_folder: dict[int, set[str | None]] = {}  # the rule codes Ruff reported there
        self.job_checks: dict[int, tuple[RuffCheck, ...]] = {}
        self.job_code: dict[int, str] = {}
        self.job_file: dict[int, str] = {}  # the first file written with the job's code
        #: id(checks) -> (checks, the groups add_job gives them): planned once per distinct checks
        self.unit_plans: dict[int, tuple[tuple[RuffCheck, ...], tuple[tuple[int, ...], ...]]] = {}
        #: (id(checks), members, split) -> (checks, folder, the file name's tokens) (add_unit)
        self.placements: dict[tuple[int, tuple[int, ...], bool], tuple[tuple[RuffCheck, ...], int, str]] = {}
        self.broken: str | None = None
        self.process: _Process | None = None
        self.closed = False
        # What the tree holds, removed one by one at the end (cheaper than walking it).
        self.created: list[str] = []
        self.dirs: list[str] = []
        self._write_text(os.path.join(self.root, "ruff.toml"), "respect-gitignore = false\nlint.select = []\n")

    def _write_text(self, path: str, text: str) -> None:
        _write_new(path, text.encode("utf-8"))
        self.created.append(path)

    def _mkdir(self, path: str) -> None:
        os.mkdir(path)
        self.dirs.append(path)

    # -- the tree

    def add_job(self, job: int, checks: tuple[RuffCheck, ...], code: str) -> None:
        """One file per configuration group of the job's checks (hard links of one file); a
        check that may not share a configuration (:meth:`RuffEngine.packable`) is a group of
        its own."""
        hit = self.unit_plans.get(id(checks))
        if hit is None or hit[0] is not checks:
            packable = self.engine.packable
            plan: list[tuple[int, ...]] = []
            for members in plan_groups(checks):
                alone = [k for k in members if not packable(checks[k])] if len(members) > 1 else []
                plan.extend((k,) for k in alone)
                rest = tuple(k for k in members if k not in alone)
                if rest:
                    plan.append(rest)
            hit = self.unit_plans[id(checks)] = (checks, tuple(plan))
        for members in hit[1]:
            self.add_unit(job, checks, members, code)

    def add_unit(
        self, job: int, checks: tuple[RuffCheck, ...], members: tuple[int, ...], code: str, *, split: bool = False
    ) -> int:
        """Put ``code`` into a folder whose configuration holds the checks of ``members``;
        returns the unit.

        When the batch packs, a group goes into the first shared folder whose checks are all
        compatible with its own (:meth:`_Folder.accepts`); the file's name carries the
        positions of its group's checks, and the folder's ``lint.per-file-ignores`` keeps
        every other check's rules off it (:func:`_config_text`). Packing keeps the folders
        few (Ruff resolves each folder's configuration anew, about 0.2 ms of CPU each with
        Ruff 0.17). Units made by splitting a rejected group (``split``) get exact folders of
        their own, written at once; so do groups with a check that may not share
        (:meth:`RuffEngine.packable`), and every group of a batch that does not pack.
        """
        placed = self.placements.get((id(checks), members, split))
        if placed is not None and placed[0] is checks:
            folder = self.folders[placed[1]]
            tokens = placed[2]
        else:
            folder = self._place(checks, members, split)
            tokens = ""
            if folder.shared:  # the name says which of the folder's checks apply (_config_text)
                tokens = "".join(f"-k{k}-" for k in sorted(folder.position[checks[m]] for m in members))
            self.placements[(id(checks), members, split)] = (checks, folder.index, tokens)
        f = folder.index
        u = len(self.units)
        fname = f"s{job:07d}_{u}{tokens}.py"
        path = os.path.join(folder.path, fname)
        first = self.job_file.get(job)
        linked = False
        if first is not None:
            try:
                os.link(first, path)
                linked = True
            except OSError:
                pass
        if not linked:
            _write_new(path, code.encode("utf-8", "surrogatepass"))
            self.job_file[job] = path
        self.created.append(path)
        name = f"{folder.name}{os.sep}{fname}"
        self.unit_of_name[name] = u
        folder.units.append(u)
        self.units.append(_Unit(job, members, f, name))
        self.job_checks[job] = checks
        self.job_code[job] = code
        return u

    def _place(self, checks: tuple[RuffCheck, ...], members: tuple[int, ...], split: bool) -> _Folder:
        """The folder for the group ``members`` of ``checks`` (:meth:`add_unit`); a shared
        folder takes the group's checks in. The same group always lands in the same folder (a
        folder only gains checks, so one that refused a group refuses it again, and one that
        holds a group's checks keeps them), which lets :meth:`add_unit` remember it."""
        group = tuple(checks[k] for k in members)
        folder: _Folder | None = None
        if split or not self.pack or not all(self.engine.packable(c) for c in group):
            key = ("split:" if split else "exact:") + _config_text(group, self.target_version)
            f = self.folder_of.get(key)
            if f is None:
                f = self.folder_of[key] = self._new_folder(list(group), shared=False)
                if split:  # linted at once; the others are written with the shared ones
                    self._write_config(self.folders[f])
            folder = self.folders[f]
        else:
            preview = group[0].preview
            for candidate in self.shared_folders.get(preview, ()):
                if all(candidate.accepts(c) for c in group):
                    folder = candidate
                    break
            if folder is None:
                folder = self.folders[self._new_folder([], shared=True)]
                self.shared_folders.setdefault(preview, []).append(folder)
            position = folder.position
            for c in group:
                if c not in position:
                    position[c] = len(folder.checks)
                    folder.checks.append(c)
                    folder.fits[c] = len(folder.checks)
        return folder

    def _new_folder(self, checks: list[RuffCheck], *, shared: bool) -> int:
        f = len(self.folders)
        name = f"c{f:05d}"
        fpath = os.path.join(self.root, name)
        self._mkdir(fpath)
        self.folders.append(_Folder(f, fpath, name, checks, shared))
        return f

    def _write_config(self, folder: _Folder) -> None:
        folder.config = _config_text(tuple(folder.checks), self.target_version, folder.shared)
        self._write_text(os.path.join(folder.path, "ruff.toml"), folder.config)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.process is not None:
            self.process.kill()
        try:
            for path in self.created:
                os.unlink(path)
            for path in reversed(self.dirs):
                os.rmdir(path)
            os.rmdir(self.root)
        except OSError:  # something else is in the tree (a killed run's output): walk it
            shutil.rmtree(self.root, ignore_errors=True)

    # -- running

    def write_configs(self) -> None:
        """Write the ``ruff.toml`` of every folder not yet written (the shared ones, whose
        checks are known once every job is in)."""
        for folder in self.folders:
            if not folder.config:
                self._write_config(folder)

    def start(self) -> None:
        self.process = self.engine._launch(self.root, ["."])

    def finish(self) -> None:
        """Wait for the chunk's run; on failure, isolate the cause (more runs)."""
        if self.broken is not None:
            for u in range(len(self.units)):
                self.unit_errors[u] = self.broken
            return
        assert self.process is not None
        result = self.process.result()
        self._handle(result, ["."], list(range(len(self.folders))))
        self._relint_unowned()

    def attributor(self, f: int) -> _Attributor:
        """The rule-code owners of folder ``f``'s checks (made once per folder)."""
        found = self.attributors.get(f)
        if found is None:
            found = self.attributors[f] = _Attributor(tuple(self.folders[f].checks))
        return found

    def _relint_unowned(self) -> None:
        """A rule code that no selector of a shared folder covers (a redirected code, say)
        cannot be told apart from another sample's finding: lint each file that has one
        again, in an exact folder of its own group, where the group's only check owns it."""
        unowned: dict[int, set[str]] = {}  # shared folder -> codes none of its selectors covers
        for f, codes in self.codes_of_folder.items():
            folder = self.folders[f]
            if folder.shared and len(folder.checks) > 1:
                attributor = self.attributor(f)
                missing = {c for c in codes if c is not None and c != "E902" and attributor.owner(c) is None}
                if missing:
                    unowned[f] = missing
        if not unowned:
            return
        again: list[int] = []
        for u, found in self.diags.items():
            unit = self.units[u]
            wanted = unowned.get(unit.folder)
            if wanted and u not in self.unit_errors and any(code in wanted for code, _r, _c, _m in found):
                again.append(u)
        if not again:
            return
        before = len(self.folders)
        for u in again:
            unit = self.units[u]
            self.replaced.add(u)
            self.add_unit(unit.job, self.job_checks[unit.job], unit.members, self.job_code[unit.job], split=True)
        new = list(range(before, len(self.folders)))
        if new:
            self._lint([self.folders[g].name for g in new], new)

    def _unit_for(self, path: str) -> int | None:
        u = self.unit_of_name.get(path)
        if u is None:  # another spelling of the same path (absolute, through a link)
            full = os.path.realpath(os.path.join(self.root, path))
            u = self.unit_of_name.get(os.path.relpath(full, self.root))
        return u

    def _gather(self, diagnostics: list[_Diag]) -> None:
        diags = self.diags
        unit_of_name = self.unit_of_name
        units = self.units
        codes_of_folder = self.codes_of_folder
        for path, row, col, code, message in diagnostics:
            u = unit_of_name.get(path)
            if u is None:
                u = self._unit_for(path)
                if u is None:
                    continue
            found = diags.get(u)
            if found is None:
                found = diags[u] = []
            found.append((code, row, col, message))
            f = units[u].folder
            seen = codes_of_folder.get(f)
            if seen is None:
                seen = codes_of_folder[f] = set()
            seen.add(code)

    def _lint(self, targets: list[str], folder_ids: list[int]) -> None:
        """Lint ``targets`` (holding the folders ``folder_ids``); on failure, isolate the cause."""
        self._handle(self.engine._invoke(self.root, targets), targets, folder_ids)

    def _handle(self, result: _RunResult, targets: list[str], folder_ids: list[int]) -> None:
        if result.diagnostics is not None:
            self._gather(result.diagnostics)
            return
        if result.timed_out:
            for f in folder_ids:
                for u in self.folders[f].units:
                    self.unit_errors[u] = f"Ruff {self.version}: {result.error}"
            return
        if len(folder_ids) > 1:
            half = len(folder_ids) // 2
            for part in (folder_ids[:half], folder_ids[half:]):
                self._lint([self.folders[f].name for f in part], part)
            return
        if not folder_ids:
            return
        self._isolate_folder(folder_ids[0], result.error or "Ruff failed")

    def _isolate_folder(self, f: int, error: str) -> None:
        """One folder failed: its configuration (probe it alone), or one of its files?"""
        folder = self.folders[f]
        probe_name = folder.name + "_probe"
        probe_dir = os.path.join(self.root, probe_name)
        self._mkdir(probe_dir)
        self._write_text(os.path.join(probe_dir, "ruff.toml"), folder.config)
        self._write_text(os.path.join(probe_dir, "probe.py"), "x = 1\n")
        probe = self.engine._invoke(self.root, [probe_name])
        if probe.diagnostics is not None:
            self._bisect_files(list(folder.units), error)
            return
        if len(folder.checks) == 1:
            msg = f"Ruff {self.version} rejected the configuration: {probe.error}"
            for u in folder.units:
                self.unit_errors[u] = msg
            return
        # A folder of several checks was rejected: judge each check of each of its files in
        # its own configuration, so a bad check (an unknown or removed rule, a bad setting)
        # only errors itself, never the samples that merely shared its folder.
        before = len(self.folders)
        for u in list(folder.units):
            unit = self.units[u]
            self.replaced.add(u)
            for k in unit.members:
                self.add_unit(unit.job, self.job_checks[unit.job], (k,), self.job_code[unit.job], split=True)
        new = list(range(before, len(self.folders)))
        self._lint([self.folders[g].name for g in new], new)

    def _bisect_files(self, unit_ids: list[int], error: str) -> None:
        result = self.engine._invoke(self.root, [self.units[u].name for u in unit_ids])
        if result.diagnostics is not None:
            self._gather(result.diagnostics)
            return
        if len(unit_ids) == 1:
            self.unit_errors[unit_ids[0]] = f"Ruff {self.version} failed on this code: {result.error}"
            return
        half = len(unit_ids) // 2
        for part in (unit_ids[:half], unit_ids[half:]):
            self._bisect_files(part, result.error or error)


class _Attributor:
    """Maps Ruff rule codes to the check (index in a folder's checks) whose selector covers
    them."""

    def __init__(self, members: tuple[RuffCheck, ...]) -> None:
        self.members = members
        self.owners: dict[str, int | None] = {}

    def owner(self, code: str) -> int | None:
        try:
            return self.owners[code]
        except KeyError:
            pass
        owners = [k for k, m in enumerate(self.members) if any(selector_covers(s, code) for s in m.rules)]
        if not owners and len(self.members) == 1:
            owners = [0]  # e.g. a redirected rule code: the only check owns everything
        found = owners[0] if len(owners) == 1 else None
        self.owners[code] = found
        return found


def _attribute(
    diagnostics: list[tuple[str | None, int, int, str]],
    attributor: _Attributor,
    group: Mapping[RuffCheck, int],
    version: str,
    empty: RuffOutcome,
) -> list[RuffOutcome]:
    """Split one file's diagnostics among the checks of its group (by selector).

    ``group`` maps each check of the file's group to its position; a finding of another
    check of the folder (one of another sample, which ``lint.per-file-ignores`` normally keeps
    off this file) is dropped.
    """
    size = len(group)
    found: list[list[Violation]] = [[] for _ in range(size)]
    syntax: list[Violation] = []
    owners = attributor.owners
    members = attributor.members
    for code, row, col, message in diagnostics:
        if code is None:
            syntax.append(Violation(SYNTAX_ERROR_RULE, row, col, "syntax error: " + message))
            continue
        if code == "E902":  # io-error: Ruff could not read the file
            err = f"Ruff {version} could not read the code: {message}"
            return [RuffOutcome(error=err, ruff_version=version) for _ in range(size)]
        owner = owners[code] if code in owners else attributor.owner(code)
        if owner is None:
            err = (
                f"Ruff {version} reported rule {code}, which cannot be attributed to one of "
                f"the selectors {[list(m.rules) for m in members]}"
            )
            return [RuffOutcome(error=err, ruff_version=version) for _ in range(size)]
        k = group.get(members[owner], -1)
        if k >= 0:
            found[k].append(Violation(code, row, col, message))
    if syntax:
        return [RuffOutcome(tuple(syntax + vs), None, True, version) for vs in found]
    return [RuffOutcome(tuple(vs), None, False, version) if vs else empty for vs in found]


@functools.lru_cache(maxsize=1)
def default_engine() -> RuffEngine:
    """The process-wide engine using the ``ruff`` package's binary."""
    return RuffEngine()
