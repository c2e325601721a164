"""The gate's instruction check on the staged changes: what the pre-commit hook runs.

``vibecheck gate-staged [FILES]`` (``.pre-commit-hooks.yaml``: hook ``vibecheck-gate``) checks
what is about to be committed against the repository's declared instructions
(:func:`pytest_vibecheck.ci.declared.load_declared`), exactly as ``pytest --vibe-gate`` checks a
pull request, with the same file rules (:func:`pytest_vibecheck.ci.gate.classify_entries`),
syntax check, counting (:func:`pytest_vibecheck.ci.gate.violation_records`) and records:

* the diff is the index against ``HEAD`` (``git diff --cached --unified=0 --find-renames``; on
  a branch with no commit yet, every staged line is added), and the text checked is the staged
  blob (``git cat-file --batch`` on ``:PATH``), not the work tree, so unstaged edits never count;
* under ``pre-commit run --from-ref A --to-ref B`` (and at the ``pre-push`` stage) pre-commit
  sets ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF``: the diff is then ``merge-base(A, B)``
  against ``B`` and the text is ``B``'s;
* only added lines count, as in the gate; ``all_lines`` counts every line of each file checked
  (also of named files without a staged change: ``pre-commit run --all-files`` with
  ``args: [--all-lines]`` audits the whole repository);
* all files are verified in one :func:`~pytest_vibecheck.verify.api.verify_batch` (one or a few
  Ruff processes for the whole commit, not one per file).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vibecheck.ci import gate as gatemod
from pytest_vibecheck.config.limits import too_large
from pytest_vibecheck.report.records import GateRecord

__all__ = ["StagedCheck", "check_staged", "read_blobs", "report_lines", "staged_entries"]


@dataclass
class StagedCheck:
    """The outcome of :func:`check_staged`: the files checked, the ones skipped and why, one
    record per (file, instruction) or per file that does not parse (the gate's
    ``GateRecord``), and the text of each file as checked (for SARIF fingerprints)."""

    repo: Path
    revision: str
    files: list[gatemod.ChangedFile]
    skipped: list[gatemod.SkippedFile]
    records: list[GateRecord] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    all_lines: bool = False

    @property
    def failed(self) -> list[GateRecord]:
        return [r for r in self.records if r["status"] in ("failed", "syntax")]

    @property
    def errors(self) -> list[GateRecord]:
        return [r for r in self.records if r["status"] == "error"]


def _git(root: Path, *args: str) -> str:
    return gatemod._git(root, *args).stdout


_DIFF = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--unified=0", "--find-renames",
         "--src-prefix=a/", "--dst-prefix=b/")


def staged_entries(
    root: Path, environ: Mapping[str, str] | None = None
) -> tuple[list[gatemod.DiffEntry], str]:
    """The diff entries to check and the revision their text is read from: ``""`` (the index)
    for staged changes, or ``PRE_COMMIT_TO_REF`` when pre-commit sets both refs."""
    env = os.environ if environ is None else environ
    from_ref, to_ref = env.get("PRE_COMMIT_FROM_REF", ""), env.get("PRE_COMMIT_TO_REF", "")
    if from_ref and to_ref:
        base = _git(root, "merge-base", from_ref, to_ref).strip()
        return gatemod.parse_unified_diff(_git(root, *_DIFF, base, to_ref, "--")), to_ref
    return gatemod.parse_unified_diff(_git(root, *_DIFF, "--cached", "--")), ""


def read_blobs(root: Path, revision: str, paths: Sequence[str]) -> dict[str, bytes]:
    """The bytes of ``paths`` at ``revision`` (``""``: the index), in one ``git cat-file
    --batch``; a path git does not have is left out."""
    wanted = [p for p in paths if "\n" not in p]
    if not wanted:
        return {}
    spec = "".join(f"{revision}:{p}\n" for p in wanted).encode("utf-8", "surrogateescape")
    try:
        proc = subprocess.run(["git", "cat-file", "--batch"], cwd=root, input=spec,
                              capture_output=True, check=False)
    except FileNotFoundError:
        raise gatemod.GateError("the gate needs git on PATH, and git was not found") from None
    if proc.returncode != 0:
        raise gatemod.GitError(f"`git cat-file --batch` failed in {root}: "
                               f"{proc.stderr.decode(errors='replace').strip()}")
    out: dict[str, bytes] = {}
    data, pos = proc.stdout, 0
    for path in wanted:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        pos = nl + 1
        if len(header) != 3 or header[-1] == b"missing":
            continue
        size = int(header[2])
        out[path] = data[pos:pos + size]
        pos += size + 1  # the content, then a newline
    return out


def check_staged(
    root: Path,
    config: gatemod.GateConfig,
    paths: Sequence[str] | None = None,
    *,
    all_lines: bool = False,
    environ: Mapping[str, str] | None = None,
) -> StagedCheck:
    """Check the staged changes of the repository at ``root`` against ``config``.

    ``paths`` (repository-relative, as pre-commit passes them) limits the check to those files;
    with ``all_lines`` a named file without a staged change is checked whole. Verifier
    failures become records with status ``error`` (never violations). Raises
    :class:`~pytest_vibecheck.ci.gate.GateError` when git fails.
    """
    entries, revision = staged_entries(root, environ)
    named = None if paths is None else {Path(p).as_posix().removeprefix("./") for p in paths}
    if named is not None:
        entries = [e for e in entries if e.path in named]
        if all_lines:
            seen = {e.path for e in entries}
            entries += [gatemod.DiffEntry(path=p) for p in sorted(named - seen)]
    files, skipped = gatemod.classify_entries(entries, config, root)
    if named is not None and not all_lines:
        staged = {e.path for e in entries} | {s.path for s in skipped}
        skipped += [gatemod.SkippedFile(p, "no staged change (--all-lines checks it whole)")
                    for p in sorted(named - staged) if p.endswith(".py")]
    result = StagedCheck(root, revision, files, skipped, all_lines=all_lines)
    blobs = read_blobs(root, revision, [f.path for f in files])
    todo: list[tuple[gatemod.ChangedFile, str]] = []
    for cf in files:
        data = blobs.get(cf.path)
        if data is None:
            result.skipped.append(gatemod.SkippedFile(cf.path, "not in the index"))
            continue
        refusal = too_large(
            cf.path, len(data), config.max_file_bytes,
            f"not verified: raise max_file_bytes in [tool.vibecheck.gate] ({config.source}) or "
            "exclude the file",
        )  # fmt: skip
        if refusal is not None:
            for gi in config.instructions:
                rec = gatemod.new_gate_record(cf, gi)
                rec["status"], rec["error"] = "error", refusal
                result.records.append(rec)
            continue
        problem = gatemod.check_syntax(data, cf.path)
        if problem is not None:
            rec = gatemod.new_gate_record(cf, None)
            rec["status"], rec["error"] = "syntax", problem.message
            rec["line"], rec["column"] = problem.line, problem.column
            result.records.append(rec)
            continue
        text = data.decode("utf-8")
        result.texts[cf.path] = text
        todo.append((cf, text))
    _verify(result, config, todo)
    result.records.sort(key=lambda r: (r["file"], r["status"] != "syntax"))
    return result


def _verify(result: StagedCheck, config: gatemod.GateConfig,
            todo: list[tuple[gatemod.ChangedFile, str]]) -> None:
    if not todo:
        return
    from pytest_vibecheck.errors import VibecheckError
    from pytest_vibecheck.verify.api import VerifyItem, verify_batch

    declared = [(gi.id, dict(gi.params)) for gi in config.instructions]
    try:
        verdicts = verify_batch([VerifyItem(instructions=declared, code=text) for _, text in todo])
    except VibecheckError as exc:
        for cf, _ in todo:
            for gi in config.instructions:
                rec = gatemod.new_gate_record(cf, gi)
                rec["status"], rec["error"] = "error", f"verification failed: {exc}"
                result.records.append(rec)
        return
    for (cf, text), file_verdicts in zip(todo, verdicts, strict=True):
        added = cf.added if not result.all_lines else frozenset()
        for gi, verdict in zip(config.instructions, file_verdicts, strict=True):
            rec = gatemod.new_gate_record(cf, gi)
            if verdict.passed is None:
                rec["status"], rec["error"] = "error", f"verifier error: {verdict.error}"
            else:
                seen = gatemod.gate_view(verdict, text, config)  # suppression comments judged
                rec["violations"] = gatemod.violation_records(seen, added, result.all_lines)
                rec["status"] = "failed" if any(v["counted"] for v in rec["violations"]) else "passed"
            result.records.append(rec)


def report_lines(check: StagedCheck, config: gatemod.GateConfig) -> list[str]:
    """What the hook prints: one ``PATH:LINE:COL: RULE message [label]`` line per counted
    violation (and per file that does not parse), the verifier errors, the wording of each
    instruction not followed (what the agent or author was asked), and a last verdict line."""
    out: list[str] = []
    found: list[tuple[str, int, int, str]] = []
    hidden = 0
    not_followed: dict[str, gatemod.GateInstruction] = {}
    by_id = {gi.id: gi for gi in config.instructions}
    for rec in check.records:
        if rec["status"] == "syntax":
            loc = ":".join(str(x) for x in (rec["file"], rec["line"], rec["column"]) if x)
            out.append(f"{loc}: {rec['error']} (the file cannot be checked against any "
                       "instruction)")
            continue
        if rec["status"] == "error":
            out.append(f"error: {rec['file']} [{rec['label']}]: {rec['error']} (not a violation)")
            continue
        for v in rec["violations"]:
            if not v["counted"]:
                hidden += 1
                continue
            found.append((rec["file"], v["line"], v["column"],
                          f"{v['rule']} {v['message']} [{rec['label']}]"))
            if rec["instruction"] in by_id:
                not_followed[rec["instruction"]] = by_id[rec["instruction"]]
    out += [f"{path}:{line}:{col}: {what}" for path, line, col, what in sorted(found)]
    if not_followed:
        from pytest_vibecheck.ci.prompt import instruction_text

        out.append("instructions not followed:")
        out += [f"  {gi.label()}: {instruction_text(gi)}" for gi in not_followed.values()]
    reasons: dict[str, list[str]] = {}
    for s in check.skipped:
        reasons.setdefault(s.reason, []).append(s.path)
    for reason, paths in reasons.items():
        if len(paths) <= 5:
            out += [f"skipped {p}: {reason}" for p in paths]
        else:
            out.append(f"skipped {len(paths)} files: {reason}")
    scope = "all lines" if check.all_lines else (
        "staged lines only" if not check.revision else f"lines changed up to {check.revision}")
    verdict = "failed" if check.failed else ("errored" if check.errors else "passed")
    out.append(
        f"vibecheck gate {verdict}: {len(check.files)} Python file(s), {len(check.records)} "
        f"check(s): {len(check.failed)} failed, {len(check.errors)} error(s); violations "
        f"counted on {scope}" + (f" ({hidden} on unchanged lines not counted)" if hidden else "")
    )
    return out
