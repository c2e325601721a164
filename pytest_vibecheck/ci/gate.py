"""The pull-request gate: check a repository's changed Python files against declared instructions.

``pytest --vibe-gate`` (see :mod:`pytest_vibecheck.ci.plugin` and ``docs/ci.md``) runs one item
per (changed Python file, instruction). This module holds everything that is not a pytest hook:

* the ``[tool.vibecheck.gate]`` configuration (:func:`load_gate_config`);
* the diff against the base ref (:func:`compute_diff`): ``git merge-base BASE HEAD``, then
  ``git diff --unified=0 --find-renames MERGE_BASE`` (on a clean checkout, as in CI, this is the
  same as ``git diff BASE...HEAD``; locally it also includes uncommitted changes, and untracked,
  not ignored Python files count as added), parsed into the *added* line numbers of each file
  (:func:`parse_unified_diff`). Only added lines count as changed, as in reviewdog's
  ``diff_context`` filter and diff-cover: a pure deletion changes no line of the new file;
* the syntax check (:func:`check_syntax`), the filter of violations to changed lines
  (:func:`counted`), and the outputs for GitHub Actions: workflow-command annotations
  (:func:`annotation_line`, escaped as in ``@actions/core``'s ``command.ts``) and the Markdown
  step summary (:func:`render_step_summary`).

Files are handled explicitly: deleted files are skipped (a note), renamed files are checked under
their new path with only their changed lines counting, non-Python files are ignored (a note),
binary files are ignored (a note) and a Python file that does not parse gives one failing item
with the syntax error's location instead of one item per instruction.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_vibecheck.ci.suppressions import POLICIES, SuppressionPolicy
from pytest_vibecheck.config.limits import MAX_INPUT_BYTES, too_large
from pytest_vibecheck.errors import UnknownIdError, VibecheckError
from pytest_vibecheck.report.records import GateRecord, GateViolationRecord
from pytest_vibecheck.verify.instructions import get_instruction
from pytest_vibecheck.verify.params import validate_params

if TYPE_CHECKING:
    from pytest_vibecheck.verify.verdict import Verdict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "GateConfig",
    "GateConfigError",
    "GateDiff",
    "GateError",
    "GateInstruction",
    "GitError",
    "SkippedFile",
    "SyntaxProblem",
    "annotation_line",
    "check_syntax",
    "classify_entries",
    "compute_diff",
    "counted",
    "escape_data",
    "escape_property",
    "gate_view",
    "load_gate_config",
    "new_gate_record",
    "parse_gate_table",
    "parse_unified_diff",
    "render_step_summary",
    "violation_records",
]

#: Keys allowed in ``[tool.vibecheck.gate]``.
GATE_KEYS = ("instructions", "include", "exclude", "base", "suppressions", "max_file_bytes")
#: Instructions that judge a model's whole reply, not a file: meaningless in the gate.
REPLY_ONLY = ("doc_4", "doc_6")


class GateError(VibecheckError):
    """The gate cannot run (git missing, not a repository, unknown base ref)."""


class GitError(GateError):
    """A git command failed; the message has the command and git's own error text."""


class GateConfigError(VibecheckError):
    """``[tool.vibecheck.gate]`` is missing or malformed; the message names the file and key."""


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True)
class GateInstruction:
    """One declared instruction: its id and its validated parameters (all of them).

    ``sources`` says where each parameter's value came from: ``[tool.vibecheck.gate]``, the
    repository's Ruff configuration (:mod:`pytest_vibecheck.ci.ruff_config`), or ``default``.
    """

    id: str
    params: Mapping[str, int | str]
    sources: Mapping[str, str] = field(default_factory=dict)

    def label(self) -> str:
        """``logic_3`` or, with non-default parameters, ``logic_3:max_branches=3``."""
        defaults = get_instruction(self.id).defaults()
        extra = {k: v for k, v in self.params.items() if defaults.get(k) != v}
        if not extra:
            return self.id
        return self.id + ":" + ",".join(f"{k}={v}" for k, v in sorted(extra.items()))


@dataclass(frozen=True)
class GateConfig:
    """The parsed ``[tool.vibecheck.gate]`` table.

    ``include``/``exclude`` are ``fnmatch`` patterns on repository-relative POSIX paths
    (``*`` also matches ``/``); a file is checked if it matches some ``include`` and no
    ``exclude`` pattern. ``base`` is the default base ref (``--vibe-base`` overrides it).
    ``suppressions``: ``"forbid"`` (default) reports every suppression comment on a changed
    line that hides a declared instruction's rule; ``"with-reason"`` allows one that states a
    reason (:mod:`pytest_vibecheck.ci.suppressions`).
    ``max_file_bytes``: files larger than this are not verified (an error item that names it;
    default :data:`~pytest_vibecheck.config.limits.MAX_INPUT_BYTES`).
    """

    instructions: tuple[GateInstruction, ...]
    include: tuple[str, ...] = ("*.py",)
    exclude: tuple[str, ...] = ()
    base: str | None = None
    source: str = "pyproject.toml"
    suppressions: SuppressionPolicy = "forbid"
    #: the largest file verified (bytes); a larger one is an error item naming the key
    max_file_bytes: int = MAX_INPUT_BYTES

    def selects(self, path: str) -> bool:
        """True if the repository-relative ``path`` is included and not excluded."""
        inc = any(fnmatch.fnmatchcase(path, pat) for pat in self.include)
        return inc and not any(fnmatch.fnmatchcase(path, pat) for pat in self.exclude)


def _str_list(value: object, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise GateConfigError(
            f"{source}: [tool.vibecheck.gate] {key} must be a list of glob patterns "
            f"(strings), got {value!r}"
        )
    return tuple(value)


def parse_gate_table(table: Mapping[str, Any], source: str = "pyproject.toml") -> GateConfig:
    """Validate a ``[tool.vibecheck.gate]`` table (already parsed TOML) into a :class:`GateConfig`.

    ``instructions`` is a non-empty list whose entries are an id string (``"doc_1"``), an
    ``"id:key=value,..."`` string, or a table ``{id = "logic_3", params = {max_branches = 3}}``.
    Parameters are validated strictly with :func:`~pytest_vibecheck.verify.params.validate_params`
    (paper §3.1 ranges): an out-of-range value is an error here, not a silent reset, because a
    gate must check what the team declared.

    Raises :class:`GateConfigError` for a malformed table and
    :class:`~pytest_vibecheck.errors.UnknownIdError` (with suggestions) for an unknown id.
    """
    unknown = sorted(set(table) - set(GATE_KEYS))
    if unknown:
        raise GateConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)} in [tool.vibecheck.gate]; "
            f"allowed: {', '.join(GATE_KEYS)}"
        )
    raw = table.get("instructions")
    if not isinstance(raw, list) or not raw:
        raise GateConfigError(
            f"{source}: [tool.vibecheck.gate] needs a non-empty list 'instructions', e.g. "
            'instructions = ["doc_1", {id = "logic_3", params = {max_branches = 3}}]'
        )
    out: list[GateInstruction] = []
    seen: set[str] = set()
    for n, entry in enumerate(raw, 1):
        where = f"{source}: [tool.vibecheck.gate] instructions entry {n}"
        params: Mapping[str, object]
        if isinstance(entry, str):
            iid, _, rest = entry.partition(":")
            iid = iid.strip()
            params = {}
            if rest:
                parsed: dict[str, str] = {}
                for part in rest.split(","):
                    key, eq, value = part.partition("=")
                    if not eq or not key.strip():
                        raise GateConfigError(
                            f"{where}: {entry!r}: expected ID[:key=value,...], got part {part!r}"
                        )
                    parsed[key.strip()] = value.strip()
                params = parsed
        elif isinstance(entry, dict):
            extra = sorted(set(entry) - {"id", "params"})
            if extra or not isinstance(entry.get("id"), str):
                raise GateConfigError(
                    f"{where}: a table needs a string 'id' and an optional table 'params' "
                    f"(and nothing else), got {entry!r}"
                )
            iid = entry["id"]
            p = entry.get("params", {})
            if not isinstance(p, dict):
                raise GateConfigError(f"{where}: 'params' must be a table, got {p!r}")
            params = p
        else:
            raise GateConfigError(
                f"{where}: expected an id string or a table {{id = ..., params = {{...}}}}, "
                f"got {entry!r}"
            )
        try:
            inst = get_instruction(iid)
        except UnknownIdError as exc:
            raise UnknownIdError("instruction", iid, exc.available) from None
        if iid in REPLY_ONLY:
            raise GateConfigError(
                f"{where}: {iid} judges a model's whole reply (Markdown around the code), "
                "not a source file; it cannot be used in the gate"
            )
        if iid in seen:
            raise GateConfigError(f"{where}: instruction {iid!r} is declared twice")
        seen.add(iid)
        try:
            validated = validate_params(inst, params, strict=True, warn=False)
        except VibecheckError as exc:  # strict: nothing is reset, so drop that part
            raise GateConfigError(f"{where}: {str(exc).split('; reset to')[0]}") from None
        given = {k for k in params if k in validated.params}
        sources = {k: ("[tool.vibecheck.gate]" if k in given else "default") for k in validated.params}
        out.append(GateInstruction(iid, dict(validated.params), sources))
    base = table.get("base")
    if base is not None and (not isinstance(base, str) or not base.strip()):
        raise GateConfigError(f"{source}: [tool.vibecheck.gate] base must be a git ref string")
    policy = table.get("suppressions", "forbid")
    if policy not in POLICIES:
        raise GateConfigError(
            f"{source}: [tool.vibecheck.gate] suppressions must be one of "
            f"{', '.join(repr(p) for p in POLICIES)}, got {policy!r}"
        )
    cap = table.get("max_file_bytes", MAX_INPUT_BYTES)
    if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
        raise GateConfigError(
            f"{source}: [tool.vibecheck.gate] max_file_bytes must be a number of bytes >= 1, "
            f"got {cap!r}"
        )
    return GateConfig(
        instructions=tuple(out),
        include=_str_list(table.get("include", ["*.py"]), "include", source),
        exclude=_str_list(table.get("exclude", []), "exclude", source),
        base=base.strip() if isinstance(base, str) else None,
        source=source,
        suppressions=policy,
        max_file_bytes=cap,
    )


def oversize(path: Path, rel: str, config: GateConfig) -> str | None:
    """The refusal of a file larger than ``config.max_file_bytes`` (with the cap and the key
    that raises it), or None."""
    try:
        size = path.stat().st_size
    except OSError:
        return None
    return too_large(
        rel, size, config.max_file_bytes,
        f"not verified: raise max_file_bytes in [tool.vibecheck.gate] ({config.source}) or "
        "exclude the file",
    )  # fmt: skip


def load_gate_config(path: str | Path) -> GateConfig:
    """Read ``[tool.vibecheck.gate]`` from the TOML file ``path`` (a pyproject.toml or any TOML).

    Raises :class:`GateConfigError` when the file is missing, is not valid TOML (with the
    parser's line and column) or has no ``[tool.vibecheck.gate]`` table.
    """
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateConfigError(
            f"gate config {str(p)!r} does not exist; pass --vibe-gate-config PATH to a TOML "
            "file with a [tool.vibecheck.gate] table"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GateConfigError(f"gate config {str(p)!r} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise GateConfigError(f"gate config {str(p)!r} is not valid TOML: {exc}") from None
    table = doc.get("tool", {}).get("vibecheck", {}).get("gate")
    if not isinstance(table, dict):
        raise GateConfigError(
            f"{p}: no [tool.vibecheck.gate] table; add one, e.g.\n"
            "[tool.vibecheck.gate]\n"
            'instructions = ["doc_1", {id = "logic_3", params = {max_branches = 3}}]'
        )
    return parse_gate_table(table, str(p))


# ---------------------------------------------------------------- git


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["git", "-c", "core.quotePath=false", *args]
    env = dict(os.environ)
    env.pop("GIT_EXTERNAL_DIFF", None)
    env["LC_ALL"] = "C"
    try:
        proc = subprocess.run(
            cmd, cwd=repo, capture_output=True, text=True, encoding="utf-8",
            errors="surrogateescape", env=env, check=False,
        )
    except FileNotFoundError:
        raise GateError("the gate needs git on PATH, and git was not found") from None
    if check and proc.returncode != 0:
        raise GitError(f"`{' '.join(cmd)}` failed in {repo}: {proc.stderr.strip()}")
    return proc


def repo_root(start: str | Path) -> Path:
    """The top folder of the git work tree containing ``start``; :class:`GateError` if none."""
    proc = _git(Path(start), "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0:
        raise GateError(
            f"{start} is not inside a git work tree; the gate compares git revisions "
            f"({proc.stderr.strip()})"
        )
    return Path(proc.stdout.strip())


def _ref_exists(repo: Path, ref: str) -> bool:
    return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).returncode == 0


def resolve_base(
    repo: Path,
    explicit: str | None,
    configured: str | None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Choose the base ref: ``--vibe-base`` > the pull request's base branch
    (``origin/$GITHUB_BASE_REF``, else ``$GITHUB_BASE_REF``; GitHub Actions sets it on pull
    requests) > ``base`` in the config > ``origin/main`` > ``main`` > ``origin/master`` >
    ``master``.

    The pull request's own base wins over the config because it is what the change will be
    merged into: a pull request into ``release`` diffed against a configured ``develop`` would
    count every difference between the two branches as changed. The config's ``base`` is the
    default outside pull requests (pushes, local runs). An explicit or configured ref, and a
    pull request base that is set, must exist; :class:`GateError` otherwise.
    """
    env = os.environ if environ is None else environ
    if explicit:
        return _existing(repo, explicit, "--vibe-base")
    pr_base = env.get("GITHUB_BASE_REF", "").strip()
    if pr_base:
        for ref in (f"origin/{pr_base}", pr_base):
            if _ref_exists(repo, ref):
                return ref
        raise GateError(
            f"the pull request's base branch {pr_base!r} (GITHUB_BASE_REF) is not fetched in "
            f"{repo}: fetch it first (actions/checkout with fetch-depth: 0) or pass --vibe-base REF"
        )
    if configured:
        return _existing(repo, configured, "[tool.vibecheck.gate] base")
    candidates = ["origin/main", "main", "origin/master", "master"]
    for ref in candidates:
        if _ref_exists(repo, ref):
            return ref
    raise GateError(
        f"no base ref found (tried {', '.join(candidates)}); pass --vibe-base REF or set "
        "base in [tool.vibecheck.gate]"
    )


def _existing(repo: Path, ref: str, where: str) -> str:
    if not _ref_exists(repo, ref):
        raise GateError(
            f"base ref {ref!r} (from {where}) is not a commit in {repo}; fetch it "
            "first (in GitHub Actions: actions/checkout with fetch-depth: 0)"
        )
    return ref


_UNQUOTE = {"a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r",
            '"': '"', "\\": "\\"}


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of a path (``"a\\tb.py"``); unquoted paths pass through."""
    if not (len(path) >= 2 and path[0] == '"' and path[-1] == '"'):
        return path
    body = path[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out += _UNQUOTE.get(nxt, nxt).encode("utf-8")
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(path: str, prefix: str) -> str:
    path = _unquote(path)
    return path[len(prefix):] if path.startswith(prefix) else path


@dataclass
class DiffEntry:
    """One file of a unified diff.

    ``status`` is ``added``, ``modified``, ``renamed``, ``copied`` or ``deleted``; ``path`` is the
    new path (the old one for a deletion); ``added`` holds the 1-based line numbers of the new file
    that the diff adds; ``binary`` is True for "Binary files ... differ".
    """

    path: str
    status: Literal["added", "modified", "renamed", "copied", "deleted"] = "modified"
    old_path: str | None = None
    added: set[int] = field(default_factory=set)
    binary: bool = False


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def parse_unified_diff(text: str) -> list[DiffEntry]:
    """Parse ``git diff --unified=0 --find-renames --src-prefix=a/ --dst-prefix=b/`` output.

    Returns one :class:`DiffEntry` per file, in diff order. Line numbers come from the hunk
    headers ``@@ -a,b +c,d @@``: lines ``c .. c+d-1`` of the new file are added (``d`` defaults to
    1; ``d = 0`` is a pure deletion, which adds no line).
    """
    entries: list[DiffEntry] = []
    cur: DiffEntry | None = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            rest = line[len("diff --git "):]
            if rest.startswith('"'):
                m = re.match(r'^("(?:[^"\\]|\\.)*")', rest)
                new = rest[m.end() + 1:] if m else rest
                path = _strip_prefix(new.strip(), "b/")
            else:
                # "a/P b/P": both halves are equal when there is no rename line to say otherwise.
                half = (len(rest) - 5) // 2
                path = rest[2 + half + 3:] if len(rest) >= 5 else rest
            cur = DiffEntry(path=path)
            entries.append(cur)
            continue
        if cur is None:
            continue
        if line.startswith("new file mode"):
            cur.status = "added"
        elif line.startswith("deleted file mode"):
            cur.status = "deleted"
        elif line.startswith("rename from "):
            cur.status = "renamed"
            cur.old_path = _unquote(line[len("rename from "):])
        elif line.startswith("rename to "):
            cur.path = _unquote(line[len("rename to "):])
        elif line.startswith("copy from "):
            cur.status = "copied"
            cur.old_path = _unquote(line[len("copy from "):])
        elif line.startswith("copy to "):
            cur.path = _unquote(line[len("copy to "):])
        elif line.startswith("--- "):
            src = line[4:]
            if src != "/dev/null" and cur.status == "deleted":
                cur.path = _strip_prefix(src, "a/")
        elif line.startswith("+++ "):
            dst = line[4:]
            if dst != "/dev/null":
                cur.path = _strip_prefix(dst, "b/")
        elif line.startswith("Binary files "):
            cur.binary = True
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if m:
                start = int(m.group(1))
                count = 1 if m.group(2) is None else int(m.group(2))
                cur.added.update(range(start, start + count))
    return entries


@dataclass(frozen=True)
class SkippedFile:
    """A changed file the gate does not check, and why (shown in the summary)."""

    path: str
    reason: str


@dataclass(frozen=True)
class ChangedFile:
    """A changed Python file to check: repository-relative ``path`` (the new path of a rename),
    its ``status``, the ``old_path`` of a rename or copy, and the added line numbers."""

    path: str
    status: str
    added: frozenset[int]
    old_path: str | None = None


@dataclass(frozen=True)
class GateDiff:
    """The result of :func:`compute_diff`."""

    repo: Path
    base: str
    merge_base: str
    files: tuple[ChangedFile, ...]
    skipped: tuple[SkippedFile, ...]


def compute_diff(
    repo: str | Path,
    base: str,
    config: GateConfig,
    *,
    include_untracked: bool = True,
) -> GateDiff:
    """The changed Python files of the work tree at ``repo`` relative to ``merge-base(base, HEAD)``.

    Runs ``git merge-base BASE HEAD`` and ``git diff --unified=0 --find-renames MERGE_BASE``
    (work tree against the merge base), plus ``git ls-files --others --exclude-standard`` for
    untracked files when ``include_untracked``. Raises :class:`GitError` if git fails (for
    example when the base and HEAD share no history: fetch with ``fetch-depth: 0``).
    """
    root = Path(repo)
    mb = _git(root, "merge-base", base, "HEAD", check=False)
    if mb.returncode != 0:
        raise GitError(
            f"`git merge-base {base} HEAD` found no common ancestor in {root}"
            f"{': ' + mb.stderr.strip() if mb.stderr.strip() else ''}; with a shallow clone, "
            "fetch the full history (actions/checkout: fetch-depth: 0)"
        )
    merge_base = mb.stdout.strip()
    diff = _git(
        root, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--unified=0",
        "--find-renames", "--src-prefix=a/", "--dst-prefix=b/", merge_base, "--",
    ).stdout
    entries = parse_unified_diff(diff)
    if include_untracked:
        others = _git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout
        for rel in (p for p in others.split("\0") if p):
            if environment_root(root, rel) is not None:  # left out below, never read
                entries.append(DiffEntry(path=rel, status="added", added=set()))
                continue
            try:
                n = len((root / rel).read_bytes().splitlines()) if rel.endswith(".py") else 0
            except OSError:
                continue
            entries.append(DiffEntry(path=rel, status="added", added=set(range(1, n + 1))))
    files, skipped = classify_entries(entries, config, root)
    return GateDiff(root, base, merge_base, tuple(files), tuple(skipped))


def environment_root(root: Path, rel: str) -> str | None:
    """The folder of a Python environment that the repository-relative ``rel`` lies in (POSIX,
    ending in ``/``): the first folder on its path that holds ``pyvenv.cfg`` (a virtual
    environment: venv, virtualenv, uv) or ``conda-meta`` (a conda environment), or is named
    ``site-packages``; None when it lies in none. Installed code is not the repository's: the
    gate leaves it out (one note per environment)."""
    parts = rel.split("/")[:-1]
    for n in range(1, len(parts) + 1):
        folder = "/".join(parts[:n])
        if parts[n - 1] == "site-packages" or _is_environment(root / folder):
            return folder + "/"
    return None


@functools.lru_cache(maxsize=4096)
def _is_environment(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def classify_entries(
    entries: Iterable[DiffEntry], config: GateConfig, root: Path
) -> tuple[list[ChangedFile], list[SkippedFile]]:
    """The changed Python files to check (sorted by path) and the skipped files with why: a
    deletion, a non-Python or binary file, a file ``include``/``exclude`` leave out, a path
    that is not a regular file in the work tree at ``root``, or the files of a Python
    environment (:func:`environment_root`; one entry per environment, with the count). Shared by :func:`compute_diff`
    and the pre-commit check (:mod:`pytest_vibecheck.ci.staged`)."""
    files: list[ChangedFile] = []
    skipped: list[SkippedFile] = []
    environments: dict[str, int] = {}
    for e in entries:
        env = environment_root(root, e.path)
        if env is not None:
            environments[env] = environments.get(env, 0) + 1
            continue
        if e.status == "deleted":
            if e.path.endswith(".py"):
                skipped.append(SkippedFile(e.path, "deleted"))
            continue
        if not e.path.endswith(".py"):
            skipped.append(SkippedFile(e.path, "not a Python file"))
            continue
        if e.binary:
            skipped.append(SkippedFile(e.path, "binary file"))
            continue
        if not config.selects(e.path):
            skipped.append(SkippedFile(e.path, "excluded by [tool.vibecheck.gate] include/exclude"))
            continue
        if not (root / e.path).is_file():
            skipped.append(SkippedFile(e.path, "not a regular file in the work tree"))
            continue
        files.append(ChangedFile(e.path, e.status, frozenset(e.added), e.old_path))
    files.sort(key=lambda f: f.path)
    for env, n in sorted(environments.items()):
        skipped.append(SkippedFile(
            env, f"a Python environment ({n:,} changed or untracked files): installed code is "
            "left out; add it to .gitignore",
        ))  # fmt: skip
    return files, skipped


# ---------------------------------------------------------------- checks


@dataclass(frozen=True)
class SyntaxProblem:
    """Why a file cannot be checked: the Python syntax error (1-based line, column) or a
    decoding problem (line and column None)."""

    message: str
    line: int | None
    column: int | None


def check_syntax(source: bytes, path: str) -> SyntaxProblem | None:
    """``None`` if ``source`` decodes as UTF-8 and parses as Python (the running interpreter's
    grammar), else the problem with its location (``SyntaxError.lineno``/``offset``)."""
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError as exc:
        return SyntaxProblem(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", None, None)
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        return SyntaxProblem(f"{type(exc).__name__}: {exc.msg}", exc.lineno, exc.offset)
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return SyntaxProblem(str(exc), None, None)
    return None


def counted(line: int | None, added: Iterable[int] | frozenset[int], all_lines: bool) -> bool:
    """Whether a violation at ``line`` counts: always with ``all_lines``, else only on an added
    line. A violation without a line (file-level) counts only with ``all_lines``."""
    if all_lines:
        return True
    if line is None:
        return False
    return line in (added if isinstance(added, frozenset) else frozenset(added))


def new_gate_record(changed: ChangedFile, instruction: GateInstruction | None) -> GateRecord:
    """The record of one gate check before it runs (``status`` ``passed``, no violations): the
    file ``changed`` against ``instruction``, or its syntax check when ``instruction`` is None.
    ``pytest --vibe-gate`` items and the pre-commit check fill in the same shape."""
    return {
        "file": changed.path,
        "status_in_diff": changed.status,
        "old_path": changed.old_path,
        "instruction": instruction.id if instruction else "syntax",
        "label": instruction.label() if instruction else "syntax",
        "params": dict(instruction.params) if instruction else {},
        "status": "passed",
        "violations": [],
        "error": None,
        "line": None,
        "column": None,
    }


def gate_view(verdict: Verdict, source: str, config: GateConfig) -> Verdict:
    """``verdict`` of one declared instruction on a file's ``source`` as the gate judges it:
    suppression comments reported, or excused under ``config.suppressions``
    (:func:`pytest_vibecheck.ci.suppressions.gate_verdict`)."""
    from pytest_vibecheck.ci.suppressions import find_suppressions, gate_verdict

    low = source.lower()
    if "noqa" not in low and "ruff" not in low:
        return verdict
    selectors = get_instruction(verdict.instruction).verifier.rules
    return gate_verdict(verdict, find_suppressions(source), selectors, config.suppressions)


def violation_records(
    verdict: Verdict, added: frozenset[int], all_lines: bool
) -> list[GateViolationRecord]:
    """A verdict's violations as gate records, each marked ``counted`` by :func:`counted`."""
    return [
        {
            "rule": v.rule,
            "line": v.line,
            "column": v.column,
            "message": v.message,
            "counted": counted(v.line, added, all_lines),
        }
        for v in verdict.violations
    ]


# ---------------------------------------------------------------- GitHub Actions


def escape_data(text: str) -> str:
    """Escape a workflow-command message (``@actions/core`` ``escapeData``: ``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (``escapeProperty``: also ``:`` and ``,``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_line(
    path: str,
    line: int | None,
    column: int | None,
    title: str,
    message: str,
    level: Literal["error", "warning", "notice"] = "error",
) -> str:
    """One workflow command, e.g.
    ``::error file=src/a.py,line=3,col=1,title=vibecheck PLR0912 (logic_3)::Too many branches``.

    ``line``/``col`` are omitted when unknown. Spec: GitHub Docs, "Workflow commands for GitHub
    Actions" (setting an error message), escaping as in ``@actions/core``.
    """
    props = [f"file={escape_property(path)}"]
    if line is not None:
        props.append(f"line={line}")
        if column is not None:
            props.append(f"col={column}")
    props.append(f"title={escape_property(title)}")
    return f"::{level} {','.join(props)}::{escape_data(message)}"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_step_summary(
    records: Sequence[Mapping[str, Any]],
    *,
    base: str,
    merge_base: str,
    skipped: Sequence[SkippedFile],
    all_lines: bool,
    max_rows: int = 100,
    instructions: Sequence[GateInstruction] = (),
    notes: Sequence[str] = (),
) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY`` from the gate items' records.

    ``notes`` are Markdown lines put right after the counts (what was not annotated and where
    every finding is, an agent file that no longer matches the declared instructions).

    Each record is the builtins dict an item stores (``file``, ``instruction``, ``label``,
    ``status`` in ``passed``/``failed``/``error``/``syntax``, ``violations`` with ``rule``,
    ``line``, ``column``, ``message``, ``counted``, and ``error``). At most ``max_rows`` violation
    rows are listed; the rest are counted.
    """
    files = sorted({str(r["file"]) for r in records})
    failed = [r for r in records if r["status"] in ("failed", "syntax")]
    errors = [r for r in records if r["status"] == "error"]
    verdict = "failed" if failed else ("errored" if errors else "passed")
    scope = "all lines" if all_lines else "changed lines only"
    lines = [
        f"## vibecheck gate: {verdict}",
        "",
        f"Base `{_md(base)}` (merge base `{merge_base[:12]}`), {len(files)} changed Python "
        f"file(s), {len(records)} check(s): {len(records) - len(failed) - len(errors)} passed, "
        f"{len(failed)} failed, {len(errors)} error(s). Violations counted on {scope}.",
        "",
        *notes,
    ]
    rows: list[str] = []
    hidden = 0
    for r in sorted(records, key=lambda r: (str(r["file"]), str(r["instruction"]))):
        if r["status"] == "syntax":
            loc = f"{r['file']}:{r.get('line') or '?'}"
            rows.append(f"| `{_md(loc)}` | syntax | — | {_md(str(r.get('error') or ''))} |")
            continue
        for v in r.get("violations", []):
            if not v.get("counted"):
                hidden += 1
                continue
            loc = f"{r['file']}:{v.get('line') or '?'}:{v.get('column') or '?'}"
            rows.append(
                f"| `{_md(loc)}` | {_md(str(r['label']))} | {_md(str(v['rule']))} "
                f"| {_md(str(v['message']))} |"
            )
    if rows:
        lines += ["| location | instruction | rule | message |", "|---|---|---|---|"]
        lines += rows[:max_rows]
        if len(rows) > max_rows:
            lines.append(f"| … | | | {len(rows) - max_rows} more violation(s) |")
        lines.append("")
    if hidden:
        lines += [f"{hidden} violation(s) on unchanged lines were not counted.", ""]
    for r in errors:
        lines.append(f"- error (not counted as a violation): `{_md(str(r['file']))}` "
                     f"{_md(str(r['label']))}: {_md(str(r.get('error') or ''))}")
    if errors:
        lines.append("")
    if skipped:
        lines.append("Skipped files:")
        lines += [f"- `{_md(s.path)}`: {_md(s.reason)}" for s in skipped]
        lines.append("")
    lines += parameter_lines(instructions)
    return "\n".join(lines) + "\n"


def parameter_lines(instructions: Sequence[GateInstruction]) -> list[str]:
    """Markdown lines: each instruction's parameters and where each value came from."""
    rows = [
        f"| {_md(gi.id)} | {_md(name)} | `{_md(str(value))}` | {_md(gi.sources.get(name, 'default'))} |"
        for gi in instructions
        for name, value in sorted(gi.params.items())
    ]
    if not rows:
        return []
    return ["Instruction parameters:", "", "| instruction | parameter | value | from |",
            "|---|---|---|---|", *rows, ""]
