"""SARIF 2.1.0 logs of the gate's findings and of a benchmark run's instruction violations.

GitHub code scanning, Ruff, Semgrep and CodeQL speak SARIF (OASIS, "Static Analysis Results
Interchange Format Version 2.1.0", errata 01): uploaded with ``github/codeql-action/upload-sarif``,
each result shows inline in the pull request's diff and, across runs, in the Security tab with its
rule's help. ``pytest --vibe-gate --vibe-sarif PATH`` (and ``vibecheck gate-staged --sarif
PATH``) write :func:`gate_log`; a benchmark run with ``--vibe-sarif PATH`` writes
:func:`benchmark_log`. See ``docs/ci.md``.

Shape (one run; every object is from the SARIF 2.1.0 schema):

* ``tool.driver``: pytest-vibecheck, with one ``rules[]`` entry per declared instruction
  (:func:`rule_descriptor`): ``id`` is the instruction's label (``style_3`` or, with
  non-default parameters, ``style_3:line_length=100``), ``help.text`` is the instruction's own
  single-turn prompt with its parameters (:func:`pytest_vibecheck.verify.params.render_prompt`,
  the same text ``vibecheck gate-prompt`` hands an agent), ``properties`` hold the instruction
  id, its parameters, its category and the Ruff rules it checks. ``tool.extensions`` names Ruff
  and its version.
* ``results[]``: one per counted violation, ``ruleId`` the instruction's label, ``message`` the
  Ruff rule and Ruff's message, one location (repository-relative URI under ``%SRCROOT%``,
  1-based line and column in Unicode code points: ``columnKind`` ``unicodeCodePoints``),
  ``properties`` with the instruction id, its parameters and the Ruff rule, and
  ``partialFingerprints["vibecheck/v1"]`` (:func:`fingerprint`).
* ``invocations[0]``: ``executionSuccessful`` is False when a verifier could not judge; each
  such error is a ``toolExecutionNotifications`` entry (never a result: it is not a violation).

The log is built as typed dicts (:class:`SarifLog` and friends) and validated in the tests
against the OASIS schema and against the copy GitHub's upload action validates with. The SARIF
object models on PyPI were weighed: ``sarif-om`` (2019) serialises only through
``jschema-to-python`` and ``jsonpickle``, ``sarif-pydantic`` needs pydantic; either would add
more dependency to the gate's venv than this module has code, for the fifteen properties used.

GitHub's limits (docs "SARIF results exceed one or more limits"): at most 25,000 results per
run are accepted (:data:`RESULTS_PER_RUN`; the rest are dropped here, with a notification),
5,000 are shown; at most 20 tags per rule.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, TypedDict
from urllib.parse import quote

from pytest_vibecheck.ci.gate import GateInstruction
from pytest_vibecheck.errors import UnknownIdError
from pytest_vibecheck.report.json_report import write_report
from pytest_vibecheck.report.records import GateRecord, ReportItem
from pytest_vibecheck.verify.instructions import Instruction, get_instruction
from pytest_vibecheck.verify.params import render_prompt, validate_params

__all__ = [
    "FINGERPRINT_KEY",
    "RESULTS_PER_RUN",
    "SARIF_SCHEMA",
    "SYNTAX_RULE_ID",
    "SarifLog",
    "benchmark_log",
    "fingerprint",
    "gate_log",
    "rule_descriptor",
    "write_log",
]

#: ``$schema`` of the logs: the OASIS standard's schema (2.1.0 errata 01).
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
#: Where the project lives (``tool.driver.informationUri``).
INFORMATION_URI = "https://github.com/pytest-vibecheck/pytest-vibecheck"
#: The key of the fingerprint in ``partialFingerprints`` (versioned: a new scheme, a new key).
FINGERPRINT_KEY = "vibecheck/v1"
#: The rule of a changed file that does not parse.
SYNTAX_RULE_ID = "syntax-error"
#: GitHub code scanning rejects a run with more results than this.
RESULTS_PER_RUN = 25_000
#: The base of the gate's artifact URIs (the repository's root; GitHub resolves it to the checkout).
SRCROOT = "%SRCROOT%"

Level = Literal["error", "warning", "note"]


class Message(TypedDict):
    text: str


class MultiformatMessage(TypedDict, total=False):
    text: str
    markdown: str


class ArtifactLocation(TypedDict, total=False):
    uri: str
    uriBaseId: str
    index: int


class ArtifactContent(TypedDict):
    text: str


class Region(TypedDict, total=False):
    startLine: int
    startColumn: int
    snippet: ArtifactContent


class PhysicalLocation(TypedDict, total=False):
    artifactLocation: ArtifactLocation
    region: Region


class Location(TypedDict):
    physicalLocation: PhysicalLocation


class ReportingConfiguration(TypedDict):
    level: Level


class ReportingDescriptor(TypedDict, total=False):
    id: str
    shortDescription: MultiformatMessage
    fullDescription: MultiformatMessage
    help: MultiformatMessage
    defaultConfiguration: ReportingConfiguration
    properties: dict[str, object]


class ToolComponent(TypedDict, total=False):
    name: str
    version: str
    semanticVersion: str
    informationUri: str
    rules: list[ReportingDescriptor]


class Tool(TypedDict, total=False):
    driver: ToolComponent
    extensions: list[ToolComponent]


class Result(TypedDict, total=False):
    ruleId: str
    ruleIndex: int
    level: Level
    message: Message
    locations: list[Location]
    partialFingerprints: dict[str, str]
    properties: dict[str, object]


class Notification(TypedDict, total=False):
    level: Level
    message: Message
    locations: list[Location]


class Invocation(TypedDict, total=False):
    executionSuccessful: bool
    toolExecutionNotifications: list[Notification]


class Artifact(TypedDict, total=False):
    location: ArtifactLocation
    contents: ArtifactContent
    sourceLanguage: str


class Run(TypedDict, total=False):
    tool: Tool
    invocations: list[Invocation]
    columnKind: str
    originalUriBaseIds: dict[str, ArtifactLocation]
    artifacts: list[Artifact]
    results: list[Result]
    properties: dict[str, object]


SarifLog = TypedDict("SarifLog", {"$schema": str, "version": str, "runs": list[Run]})


# ---------------------------------------------------------------- pieces


def fingerprint(rule_id: str, rule: str, line_text: str, occurrence: int) -> str:
    """The ``partialFingerprints["vibecheck/v1"]`` of a finding: the first 32 hex digits of the
    SHA-256 of the instruction's label, the Ruff rule, the flagged line's text without leading
    and trailing whitespace, and ``occurrence`` (0 for the first finding of the same label, rule
    and line text in the file, 1 for the next, ...).

    Neither the line number nor the column nor the path is part of it, so a finding keeps its
    fingerprint when lines are added above it or the line is re-indented, and code scanning
    does not report it as new; a change to the flagged line itself makes a new finding.
    """
    key = "\0".join((FINGERPRINT_KEY, rule_id, rule, line_text.strip(), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _format(template: str, params: Mapping[str, int | str]) -> str:
    try:
        return template.format(**params)
    except (KeyError, IndexError, ValueError):
        return template


def _verifier_lines(inst: Instruction, markdown: bool = True) -> list[str]:
    spec = inst.verifier

    def names(values: Sequence[str]) -> str:
        return ", ".join(f"`{v}`" if markdown else v for v in values)

    out = []
    if spec.rules:
        out.append(f"Checked with Ruff: {names(spec.rules)}" + (" (preview)" if spec.preview else "") + ".")
    if spec.checks:
        out.append(f"Checked with the built-in checks: {names(spec.checks)}.")
    return out


def rule_descriptor(
    instruction_id: str,
    params: Mapping[str, int | str],
    level: Level = "error",
    sources: Mapping[str, str] | None = None,
) -> ReportingDescriptor:
    """The ``reportingDescriptor`` of one instruction with validated ``params``.

    ``id`` is the label (:meth:`GateInstruction.label`); ``shortDescription`` the instruction's
    description, ``help.text`` its single-turn prompt (the wording an agent is given), both with
    the parameters filled in; ``help.markdown`` adds the parameters (and, with ``sources``, where
    each value came from) and the Ruff rules. Raises :class:`~pytest_vibecheck.errors.UnknownIdError`.
    """
    inst = get_instruction(instruction_id)
    label = GateInstruction(instruction_id, dict(params)).label()
    prompt = render_prompt(inst, params, "single")
    description = _format(inst.description, params)
    md = [f"**{inst.id}** ({inst.category_name}): {prompt}", ""]
    if params:
        where = sources or {}
        md.append("Parameters: " + "; ".join(
            f"`{name}` = `{value}`" + (f" (from {where[name]})" if name in where else "")
            for name, value in sorted(params.items())
        ) + ".")
    md += _verifier_lines(inst)
    tags = ["vibecheck", "vericode", inst.category_name]
    return {
        "id": label,
        "shortDescription": {"text": description},
        "fullDescription": {"text": " ".join([description, *_verifier_lines(inst, False)])},
        "help": {"text": prompt, "markdown": "\n".join(md).strip()},
        "defaultConfiguration": {"level": level},
        "properties": {
            "instruction": inst.id,
            "parameters": dict(params),
            "category": inst.category,
            "ruffRules": list(inst.verifier.rules),
            "tags": tags,
            "precision": "very-high",
            "problem.severity": "error" if level == "error" else "warning",
        },
    }


def _syntax_rule(level: Level) -> ReportingDescriptor:
    text = ("Every changed Python file must parse (UTF-8, the gate's Python grammar): a file "
            "that does not parse cannot be checked against any instruction.")
    return {
        "id": SYNTAX_RULE_ID,
        "shortDescription": {"text": "The file does not parse as Python."},
        "fullDescription": {"text": text},
        "help": {"text": text},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["vibecheck"], "precision": "very-high",
                       "problem.severity": "error" if level == "error" else "warning"},
    }


def _location(uri: str, line: int | None, column: int | None, *, snippet: str = "",
              base: str | None = SRCROOT, index: int | None = None) -> Location:
    art: ArtifactLocation = {"uri": quote(uri, safe="/")}
    if base is not None:
        art["uriBaseId"] = base
    if index is not None:
        art["index"] = index
    phys: PhysicalLocation = {"artifactLocation": art}
    if line is not None and line >= 1:
        region: Region = {"startLine": line}
        if column is not None and column >= 1:
            region["startColumn"] = column
        if snippet:
            region["snippet"] = {"text": snippet}
        phys["region"] = region
    return {"physicalLocation": phys}


def _line(text: str | None, line: int | None) -> str:
    if text is None or line is None or line < 1:
        return ""
    lines = text.splitlines()
    return lines[line - 1] if line <= len(lines) else ""


class _Builder:
    """Rules, results and notifications of one run; fingerprints count occurrences per file."""

    def __init__(self, level: Level) -> None:
        self.level = level
        self.rules: list[ReportingDescriptor] = []
        self.rule_index: dict[str, int] = {}
        self.results: list[Result] = []
        self.notifications: list[Notification] = []
        self._seen: Counter[tuple[str, str, str, str]] = Counter()
        self.dropped = 0

    def rule(self, descriptor: ReportingDescriptor) -> int:
        rid = descriptor["id"]
        if rid not in self.rule_index:
            self.rule_index[rid] = len(self.rules)
            self.rules.append(descriptor)
        return self.rule_index[rid]

    def result(self, rule_id: str, rule: str, message: str, location: Location, line_text: str,
               file_key: str, properties: dict[str, object]) -> None:
        if len(self.results) >= RESULTS_PER_RUN:
            self.dropped += 1
            return
        n = self._seen[(file_key, rule_id, rule, line_text.strip())]
        self._seen[(file_key, rule_id, rule, line_text.strip())] += 1
        self.results.append({
            "ruleId": rule_id,
            "ruleIndex": self.rule_index[rule_id],
            "level": self.level,
            "message": {"text": message},
            "locations": [location],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint(rule_id, rule, line_text, n)},
            "properties": properties,
        })

    def error(self, message: str, location: Location | None = None) -> None:
        note: Notification = {"level": "error", "message": {"text": message}}
        if location is not None:
            note["locations"] = [location]
        self.notifications.append(note)

    def run(self, tool_version: str, ruff_version: str | None) -> Run:
        if self.dropped:
            self.notifications.append({"level": "warning", "message": {"text": (
                f"{self.dropped} more result(s) left out: GitHub code scanning accepts at most "
                f"{RESULTS_PER_RUN} results per run")}})
        driver: ToolComponent = {
            "name": "pytest-vibecheck",
            "version": tool_version,
            "informationUri": INFORMATION_URI,
            "rules": self.rules,
        }
        if _is_semver(tool_version):
            driver["semanticVersion"] = tool_version
        tool: Tool = {"driver": driver}
        if ruff_version:
            tool["extensions"] = [{"name": "ruff", "version": ruff_version,
                                   "informationUri": "https://docs.astral.sh/ruff/"}]
        invocation: Invocation = {
            "executionSuccessful": not any(n["level"] == "error" for n in self.notifications),
        }
        if self.notifications:
            invocation["toolExecutionNotifications"] = self.notifications
        return {"tool": tool, "invocations": [invocation], "columnKind": "unicodeCodePoints",
                "results": self.results}


def _is_semver(version: str) -> bool:
    core = version.split("+", 1)[0].split("-", 1)[0].split(".")
    return len(core) == 3 and all(p.isdigit() for p in core)


def _log(run: Run) -> SarifLog:
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


# ---------------------------------------------------------------- the gate


def gate_log(
    records: Iterable[GateRecord],
    instructions: Sequence[GateInstruction],
    *,
    text_of: Callable[[str], str | None],
    tool_version: str,
    ruff_version: str | None = None,
    level: Level = "error",
    repo: Path | None = None,
    properties: Mapping[str, object] | None = None,
) -> SarifLog:
    """The SARIF log of a gate run: one rule per declared instruction (in the config's order),
    one result per *counted* violation and per file that does not parse, in ``records`` order
    (violations on unchanged lines are what the gate ignores, so they are not results either).

    ``records`` are the gate's records (``report.records.GateRecord``); ``text_of(path)`` gives
    the text a file was checked as (for fingerprints; None when unknown). ``level`` is
    ``error`` (a failing gate) or ``warning`` (``--vibe-no-fail-items``). ``repo``, when given,
    becomes ``originalUriBaseIds["%SRCROOT%"]``. ``properties`` go under
    ``run.properties["vibecheck"]`` (base, merge base, which lines count).
    """
    b = _Builder(level)
    for gi in instructions:
        b.rule(rule_descriptor(gi.id, gi.params, level, gi.sources))
    texts: dict[str, str | None] = {}

    def text(path: str) -> str | None:
        if path not in texts:
            texts[path] = text_of(path)
        return texts[path]

    for rec in records:
        path = rec["file"]
        if rec["status"] == "syntax":
            b.rule(_syntax_rule(level))
            flagged = _line(text(path), rec.get("line"))
            where = _location(path, rec.get("line"), rec.get("column"), snippet=flagged)
            b.result(SYNTAX_RULE_ID, "syntax", f"{rec['error']} (the file cannot be checked "
                     "against any instruction)", where, flagged, path, {"instruction": None})
            continue
        if rec["status"] == "error":
            b.error(f"{rec['label']}: {rec['error']} (not a violation: the verifier could not "
                    "judge this file)", _location(path, None, None))
            continue
        if rec["label"] not in b.rule_index:  # a record of an instruction not declared here
            b.rule(rule_descriptor(rec["instruction"], rec["params"], level))
        for v in rec["violations"]:
            if not v["counted"]:
                continue
            flagged = _line(text(path), v["line"])
            b.result(
                rec["label"], v["rule"], f"{v['rule']} {v['message']}",
                _location(path, v["line"], v["column"], snippet=flagged), flagged, path,
                {"instruction": rec["instruction"], "parameters": dict(rec["params"]),
                 "rule": v["rule"]},
            )
    run = b.run(tool_version, ruff_version)
    if repo is not None:
        run["originalUriBaseIds"] = {SRCROOT: {"uri": repo.resolve().as_uri() + "/"}}
    run["properties"] = {"vibecheck": {"mode": "gate", **(properties or {})}}
    return _log(run)


# ---------------------------------------------------------------- a benchmark run


def _item_path(item: ReportItem) -> str:
    label = {"baseline": "baseline"}.get(item["protocol"], f"{item['protocol']}-k{item['k']}")
    sample = f"-s{item['sample']}" if item.get("sample") else ""
    return f"{item['suite']}/{item['task_id']}/{item['model']}/{label}{sample}.py"


def benchmark_log(
    items: Iterable[ReportItem],
    *,
    tool_version: str,
    ruff_version: str | None = None,
    level: Level = "error",
) -> SarifLog:
    """The SARIF log of a benchmark run: the instruction violations in the code of each item's
    last turn (the turn its verdict is judged on), one result per violation.

    The code a model wrote is no file of the repository: each item's code is an artifact with
    its text embedded (``artifacts[].contents.text``), named ``SUITE/TASK/MODEL/LABEL.py``
    (percent-encoded), so a SARIF viewer shows every finding in place. Rules are
    (instruction, parameters) pairs, as items draw different parameters. A verdict the verifier
    could not give is a notification, never a result; items without a judged turn (errors,
    skips, no code) add nothing.
    """
    b = _Builder(level)
    artifacts: list[Artifact] = []
    ruff: str | None = ruff_version
    for item in items:
        turns = item.get("turns") or []
        if not turns:
            continue
        turn = turns[-1]
        code = turn.get("code")
        by_position = {i["position"]: i for i in item.get("instructions") or []}
        failing = [v for v in turn["verdicts"] if v["passed"] is False and v["violations"]]
        errors = [v for v in turn["verdicts"] if v["passed"] is None]
        if not failing and not errors:
            continue
        ruff = ruff or item.get("ruff_version")
        path = _item_path(item)
        index = len(artifacts)
        art: Artifact = {"location": {"uri": quote(path, safe="/")}, "sourceLanguage": "python"}
        if code is not None:
            art["contents"] = {"text": code}
        artifacts.append(art)
        for verdict in errors:
            b.error(f"{item['task_id']} ({item['model']}) {verdict['id']}: {verdict['error']} "
                    "(not a violation: the verifier could not judge this code)")
        for verdict in failing:
            inst = by_position.get(verdict["position"])
            params = dict(inst["params"]) if inst and inst["id"] == verdict["id"] else {}
            try:
                descriptor = rule_descriptor(verdict["id"], _validated(verdict["id"], params), level)
            except UnknownIdError:
                b.error(f"{item['task_id']}: instruction {verdict['id']!r} is not registered in "
                        "this session; its violations are left out")
                continue
            rid = descriptor["id"]
            b.rule(descriptor)
            for v in verdict["violations"]:
                flagged = _line(code, v["line"])
                b.result(
                    rid, v["rule"], f"{v['rule']} {v['message']}",
                    _location(path, v["line"], v["column"], snippet=flagged, base=None,
                              index=index),
                    flagged, path,
                    {"instruction": verdict["id"], "parameters": params, "rule": v["rule"],
                     "task": item["task_id"], "model": item["model"],
                     "protocol": item["protocol"], "k": item["k"],
                     "nodeid": item.get("nodeid")},
                )
    run = b.run(tool_version, ruff)
    run["artifacts"] = artifacts
    run["properties"] = {"vibecheck": {"mode": "benchmark"}}
    return _log(run)


def _validated(instruction_id: str, params: Mapping[str, object]) -> dict[str, int | str]:
    return validate_params(instruction_id, params, warn=False).params


# ---------------------------------------------------------------- writing


def write_log(path: Path, log: SarifLog) -> Path:
    """Write ``log`` as compact UTF-8 JSON to ``path``, creating its folder; the file appears
    whole or not at all (:func:`pytest_vibecheck.report.json_report.write_report`). Raises
    OSError."""
    return write_report(path, log)
