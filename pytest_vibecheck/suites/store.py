"""Suites: augmented problems in ``problems/<suite>/`` (JSONL + manifest + licence).

A suite folder holds

- ``problems.jsonl.gz`` (or ``problems.jsonl``): one :class:`~pytest_vibecheck.suites.problem.Problem`
  record per line (``Problem.to_dict()``, keys sorted);
- ``manifest.json``: name, description, source, licence, attribution, counts, schema
  version, sha256 of the data file, taxonomy version, selector, seed, k;
- the source's licence file(s) (``LICENSE*``).

The format is documented and versioned in ``docs/suites.md`` (JSON Schemas in
``pytest_vibecheck/suites/schemas/``). Shipped suites are found with
:func:`~pytest_vibecheck.verify.instructions.data_dir` (wheel and editable installs alike); any
folder in the same format can be loaded by path.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vibecheck.errors import DataFileError, ParameterError, UnknownIdError, VibecheckError
from pytest_vibecheck.execute.spec import TEST_KINDS
from pytest_vibecheck.suites.jsonl import read_jsonl
from pytest_vibecheck.suites.problem import SCHEMA_VERSION, Problem
from pytest_vibecheck.verify.instructions import (
    TAXONOMY_VERSION,
    InstructionRegistry,
    data_dir,
    default_registry,
)
from pytest_vibecheck.verify.params import validate_params

MANIFEST_NAME = "manifest.json"
DATA_NAMES = ("problems.jsonl.gz", "problems.jsonl")

#: Keys every manifest has (``docs/suites.md``); others are allowed (e.g. ``notes``).
MANIFEST_REQUIRED: tuple[str, ...] = (
    "name",
    "description",
    "source",
    "licence",
    "attribution",
    "counts",
    "schema_version",
    "data_file",
    "sha256",
    "taxonomy_version",
    "selector",
    "seed",
    "k",
)


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its manifest, its problems (file order) and its folder."""

    manifest: Mapping[str, Any]
    problems: tuple[Problem, ...]
    path: Path

    @property
    def name(self) -> str:
        """The suite's name (``manifest["name"]``)."""
        return str(self.manifest["name"])

    def __len__(self) -> int:
        return len(self.problems)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.problems)

    def get(self, task_id: str) -> Problem:
        """The problem with this task id; :class:`UnknownIdError` with suggestions if absent."""
        for prob in self.problems:
            if prob.task_id == task_id:
                return prob
        raise UnknownIdError(
            f"task of suite {self.name!r}", task_id, (p.task_id for p in self.problems)
        )


# ---------------------------------------------------------------- finding


def suites_root() -> Path:
    """The folder of shipped suites (``problems/`` in a checkout, ``_data/problems`` in a wheel)."""
    return data_dir("problems")


def list_suites(root: Path | None = None) -> list[str]:
    """Names of the suites under ``root`` (default: the shipped ones), sorted.

    A suite is a sub-folder with a ``manifest.json``.
    """
    base = root if root is not None else suites_root()
    if not base.is_dir():
        return []
    return sorted(d.name for d in base.iterdir() if (d / MANIFEST_NAME).is_file())


def find_suite(name_or_path: str | Path) -> Path:
    """The folder of a suite given by shipped name (``"bigvibebench"``) or by path.

    A value containing a path separator, or naming an existing folder, is a path.
    Raises :class:`UnknownIdError` (with suggestions) for an unknown name and
    :class:`DataFileError` for a folder without a manifest.
    """
    text = str(name_or_path)
    candidate = Path(text).expanduser()
    is_path = isinstance(name_or_path, Path) or "/" in text or "\\" in text or candidate.is_dir()
    if is_path:
        if not candidate.is_dir():
            raise DataFileError(candidate, "suite folder does not exist")
        if not (candidate / MANIFEST_NAME).is_file():
            raise DataFileError(
                candidate / MANIFEST_NAME,
                "no manifest: a suite folder needs manifest.json (see docs/suites.md)",
            )
        return candidate
    root = suites_root()
    folder = root / text
    if not (folder / MANIFEST_NAME).is_file():
        raise UnknownIdError("suite", text, list_suites(root))
    return folder


# ---------------------------------------------------------------- loading


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any]:
    """Parse and check ``folder/manifest.json``; :class:`DataFileError` names the field."""
    path = folder / MANIFEST_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataFileError(path, f"cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DataFileError(path, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(doc, dict):
        raise DataFileError(path, "expected a JSON object")
    for key in MANIFEST_REQUIRED:
        if key not in doc:
            raise DataFileError(path, "required field is missing", field=key)
    version = doc["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise DataFileError(path, f"expected an integer, got {version!r}", field="schema_version")
    if version > SCHEMA_VERSION:
        raise DataFileError(
            path,
            f"schema version {version} is newer than this pytest-vibecheck understands "
            f"({SCHEMA_VERSION}); upgrade pytest-vibecheck",
            field="schema_version",
        )
    if version < 1:
        raise DataFileError(
            path, f"schema version must be >= 1, got {version}", field="schema_version"
        )
    for key in ("name", "data_file", "sha256"):
        if not isinstance(doc[key], str) or not doc[key]:
            raise DataFileError(path, f"expected a non-empty string, got {doc[key]!r}", field=key)
    if doc["data_file"] not in DATA_NAMES:
        raise DataFileError(
            path, f"expected one of {list(DATA_NAMES)}, got {doc['data_file']!r}", field="data_file"
        )
    counts = doc["counts"]
    if not isinstance(counts, dict) or not isinstance(counts.get("tasks"), int):
        raise DataFileError(path, "expected an object with an integer 'tasks'", field="counts")
    return doc


def load_suite(
    name_or_path: str | Path,
    *,
    verify_sha256: bool = True,
    registry: InstructionRegistry | None = None,
) -> Suite:
    """Load a suite by shipped name or folder path, checking everything.

    Checks: the manifest's fields and schema version; the data file's sha256 against the
    manifest (a mismatch means the file was edited or corrupted: regenerate it or fix the
    manifest); every record's fields (:meth:`Problem.from_dict`); each record's ``suite``
    equals the manifest's name; unique task ids; instruction ids known to ``registry``
    (default: the shipped taxonomy), parameters valid (strict), no two conflicting or
    duplicate instructions in a task; ``counts.tasks`` equals the number of records.

    Raises :class:`UnknownIdError` for an unknown suite name and :class:`DataFileError`
    (file, line, field) for anything malformed.
    """
    folder = find_suite(name_or_path)
    manifest = read_manifest(folder)
    data_path = folder / str(manifest["data_file"])
    if not data_path.is_file():
        raise DataFileError(
            data_path, "data file named by the manifest does not exist", field="data_file"
        )
    if verify_sha256:
        actual = file_sha256(data_path)
        if actual != manifest["sha256"]:
            raise DataFileError(
                folder / MANIFEST_NAME,
                f"sha256 of {data_path.name} is {actual}, the manifest says {manifest['sha256']}: "
                "the data file was modified or corrupted; regenerate the suite with "
                "`vibecheck augment` or restore the file",
                field="sha256",
            )
    reg = registry if registry is not None else default_registry()
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(data_path):
        prob = Problem.from_dict(record, source=data_path, line=line)
        if prob.suite != manifest["name"]:
            raise DataFileError(
                data_path,
                f"record belongs to suite {prob.suite!r}, the manifest names {manifest['name']!r}",
                field="suite",
                line=line,
            )
        if prob.task_id in seen:
            raise DataFileError(
                data_path,
                f"task id {prob.task_id!r} already used on line {seen[prob.task_id]}",
                field="task_id",
                line=line,
            )
        seen[prob.task_id] = line
        check_instructions(prob, reg, source=data_path, line=line)
        problems.append(prob)
    if manifest["counts"]["tasks"] != len(problems):
        raise DataFileError(
            folder / MANIFEST_NAME,
            f"says {manifest['counts']['tasks']} tasks, {data_path.name} has {len(problems)}",
            field="counts.tasks",
        )
    return Suite(manifest=manifest, problems=tuple(problems), path=folder)


def check_instructions(
    prob: Problem,
    registry: InstructionRegistry,
    *,
    source: str | Path = "<problem>",
    line: int | None = None,
) -> None:
    """Check a problem's instructions: known ids, valid parameters, no duplicates or conflicts.

    Raises :class:`DataFileError` naming ``source``, ``line`` and the field
    (``instructions[i].id`` / ``instructions[i].params``).
    """
    kept: list[str] = []
    for n, ref in enumerate(prob.instructions):
        field = f"instructions[{n}]"
        if ref.id not in registry:
            err = UnknownIdError("instruction", ref.id, registry.ids())
            raise DataFileError(source, str(err), field=field + ".id", line=line)
        if ref.id in kept:
            raise DataFileError(
                source, f"instruction {ref.id!r} appears twice", field=field + ".id", line=line
            )
        for other in kept:
            if registry.conflict(ref.id, other):
                raise DataFileError(
                    source,
                    f"instruction {ref.id!r} conflicts with {other!r} in the same task",
                    field=field + ".id",
                    line=line,
                )
        inst = registry.get(ref.id)
        try:
            full = validate_params(inst, ref.params, strict=True, warn=False).params
        except ParameterError as exc:
            raise DataFileError(source, str(exc), field=field + ".params", line=line) from None
        if full != ref.params:
            missing = sorted(set(full) - set(ref.params))
            raise DataFileError(
                source,
                f"parameters {missing} are missing (write every parameter)",
                field=field + ".params",
                line=line,
            )
        kept.append(ref.id)


# ---------------------------------------------------------------- writing


def encode_records(problems: Iterable[Problem]) -> bytes:
    """The JSONL bytes of ``problems``: one ``to_dict()`` per line, keys sorted, UTF-8."""
    out = io.StringIO()
    for prob in problems:
        out.write(
            json.dumps(prob.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        )
        out.write("\n")
    return out.getvalue().encode("utf-8")


def deterministic_gzip(data: bytes) -> bytes:
    """Gzip ``data`` with no file name and mtime 0, so equal input gives equal bytes."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return buf.getvalue()


def suite_counts(
    problems: Sequence[Problem], registry: InstructionRegistry | None = None
) -> dict[str, Any]:
    """Counts for the manifest: tasks, tasks by test kind, instructions, instructions by category."""
    reg = registry if registry is not None else default_registry()
    kinds: Counter[str] = Counter(p.test.kind for p in problems)
    cats: Counter[str] = Counter()
    for prob in problems:
        for ref in prob.instructions:
            cats[reg.get(ref.id).category if ref.id in reg else "unknown"] += 1
    per_task = Counter(len(p.instructions) for p in problems)
    return {
        "tasks": len(problems),
        "by_test_kind": {k: kinds[k] for k in TEST_KINDS if kinds[k]},
        "instructions": sum(cats.values()),
        "instructions_by_category": dict(sorted(cats.items())),
        "tasks_by_instruction_count": {str(n): per_task[n] for n in sorted(per_task)},
        "with_canonical_solution": sum(p.canonical_solution is not None for p in problems),
    }


def write_suite(
    folder: str | Path,
    problems: Sequence[Problem],
    *,
    name: str,
    description: str,
    source: Mapping[str, Any] | str,
    licence: str,
    attribution: str,
    selector: str,
    seed: int | None,
    k: int,
    licence_files: Sequence[str | Path] = (),
    compress: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a suite folder deterministically and return the manifest's path.

    Records are written in the given order with sorted keys; the gzip stream has no file
    name and mtime 0, so the same problems give byte-identical files. Every problem's
    ``suite`` must equal ``name`` and its instructions must pass :func:`check_instructions`
    (:class:`DataFileError` otherwise, before anything is written). ``licence_files`` are
    copied into the folder under their own names (``LICENSE`` when there is exactly one
    file and it is not already named ``LICENSE*``). ``extra`` adds manifest keys (e.g.
    ``excluded``, ``notes``).
    """
    out = Path(folder)
    reg = default_registry()
    seen: set[str] = set()
    for n, prob in enumerate(problems):
        if prob.suite != name:
            raise DataFileError(
                out,
                f"problem {prob.task_id!r} has suite {prob.suite!r}, expected {name!r}",
                field="suite",
                line=n + 1,
            )
        if prob.task_id in seen:
            raise DataFileError(
                out, f"task id {prob.task_id!r} appears twice", field="task_id", line=n + 1
            )
        seen.add(prob.task_id)
        check_instructions(prob, reg, source=out, line=n + 1)
    out.mkdir(parents=True, exist_ok=True)
    raw = encode_records(problems)
    data_name = DATA_NAMES[0] if compress else DATA_NAMES[1]
    data = deterministic_gzip(raw) if compress else raw
    for stale in DATA_NAMES:
        if stale != data_name and (out / stale).exists():
            (out / stale).unlink()
    (out / data_name).write_bytes(data)
    copied: list[str] = []
    for lic in licence_files:
        src = Path(lic)
        target = (
            src.name if (len(licence_files) > 1 or src.name.startswith("LICENSE")) else "LICENSE"
        )
        shutil.copyfile(src, out / target)
        copied.append(target)
    manifest: dict[str, Any] = {
        "name": name,
        "description": description,
        "source": source,
        "licence": licence,
        "licence_files": sorted(copied),
        "attribution": attribution,
        "counts": suite_counts(problems, reg),
        "schema_version": SCHEMA_VERSION,
        "data_file": data_name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "content_sha256": hashlib.sha256(raw).hexdigest(),
        "taxonomy_version": TAXONOMY_VERSION,
        "selector": selector,
        "seed": seed,
        "k": k,
    }
    if extra:
        for key, value in extra.items():
            if key in manifest:
                raise VibecheckError(f"extra manifest key {key!r} would overwrite a standard field")
            manifest[key] = value
    path = out / MANIFEST_NAME
    path.write_text(
        json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return path
