"""The gate's pytest items: one :class:`GateItem` per (changed Python file, declared instruction),
collected under a :class:`GateFile`; :class:`GateRun` holds the per-process gate state (config,
diff, verdicts batched per file). The logic (config, diff, syntax, counting) is in
:mod:`pytest_vibecheck.ci.gate`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from pytest_vibecheck.ci import gate as gatemod
from pytest_vibecheck.ci.declared import default_config_path, load_declared
from pytest_vibecheck.ci.options import CISettings
from pytest_vibecheck.config.limits import SHOWN_VIOLATIONS
from pytest_vibecheck.errors import Picklable, VibecheckError
from pytest_vibecheck.report.records import GATE_PROP, GateRecord

if TYPE_CHECKING:
    from pytest_vibecheck.verify.verdict import Verdict

__all__ = ["GATE_RUN_KEY", "GateFile", "GateInfraError", "GateItem", "GateRun", "GateViolations"]


@dataclass
class GateRun:
    """Per-process gate state: the config, the diff, and verdicts cached per file."""

    config: gatemod.GateConfig
    diff: gatemod.GateDiff
    all_lines: bool
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, config: pytest.Config, settings: CISettings) -> GateRun:
        start = config.invocation_params.dir
        try:
            root = gatemod.repo_root(start)
            path = settings.gate_config or default_config_path(root, config.rootpath)
            gconf = load_declared(path, root)
            base = gatemod.resolve_base(root, settings.base, gconf.base)
            diff = gatemod.compute_diff(root, base, gconf)
        except VibecheckError as exc:
            raise pytest.UsageError(f"vibecheck gate: {exc}") from None
        return cls(gconf, diff, settings.all_lines)

    def file_verdicts(self, cf: gatemod.ChangedFile) -> list[Verdict]:
        """The verdicts of every declared instruction on file ``cf`` (one batch per file),
        in the order of the config. Raises whatever the verification engine raises."""
        if cf.path not in self.verdicts:
            from pytest_vibecheck.verify.api import VerifyItem, verify_batch

            refusal = gatemod.oversize(self.diff.repo / cf.path, cf.path, self.config)
            if refusal is not None:
                raise VibecheckError(refusal)
            code = (self.diff.repo / cf.path).read_text(encoding="utf-8")
            job = VerifyItem(
                instructions=[(gi.id, dict(gi.params)) for gi in self.config.instructions],
                code=code,
            )
            self.verdicts[cf.path] = list(verify_batch([job])[0])
            self.sources[cf.path] = code
        return self.verdicts[cf.path]


#: The gate's per-process state, with --vibe-gate (set by the gate's plugin at configure).
GATE_RUN_KEY: pytest.StashKey[GateRun] = pytest.StashKey()


class GateInfraError(Picklable, Exception):
    """The verifier could not judge (an error outcome, never a violation)."""


class GateViolations(Picklable, Exception):
    """Counted violations of one (file, instruction) item."""


class GateFile(pytest.File):
    """A changed Python file: one :class:`GateItem` per declared instruction, or one syntax item
    when the file does not parse."""

    def __init__(self, *, changed: gatemod.ChangedFile, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.changed = changed

    def collect(self) -> list[GateItem]:
        """Node ids ``PATH::gate[logic_3]`` (one per instruction) or ``PATH::gate[syntax]``."""
        run: GateRun = self.config.stash[GATE_RUN_KEY]
        cf = self.changed
        too_big = gatemod.oversize(self.path, cf.path, run.config) is not None
        problem = None if too_big else gatemod.check_syntax(self.path.read_bytes(), cf.path)
        if problem is not None:
            return [GateItem.from_parent(self, name="gate[syntax]", changed=cf,
                                         instruction=None, index=-1, syntax=problem)]
        return [
            GateItem.from_parent(self, name=f"gate[{gi.id}]", changed=cf, instruction=gi, index=n)
            for n, gi in enumerate(run.config.instructions)
        ]


class GateItem(pytest.Item):
    """One (changed file, instruction) check, or the file's syntax check (``instruction=None``)."""

    def __init__(
        self,
        *,
        changed: gatemod.ChangedFile,
        instruction: gatemod.GateInstruction | None,
        index: int,
        syntax: gatemod.SyntaxProblem | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.changed = changed
        self.instruction = instruction
        self.index = index
        self.syntax = syntax
        self.record: GateRecord = self._base_record()
        self.add_marker("vibe_gate")
        if instruction is not None:
            self.extra_keyword_matches.add(instruction.id)

    def _base_record(self) -> GateRecord:
        return gatemod.new_gate_record(self.changed, self.instruction)

    def setup(self) -> None:
        """Verify the file (batched per file); a verifier error is an *error* outcome."""
        self.record = self._base_record()
        if self.syntax is not None or self.instruction is None:
            return
        run: GateRun = self.config.stash[GATE_RUN_KEY]
        try:
            verdict = run.file_verdicts(self.changed)[self.index]
        except VibecheckError as exc:
            self._error(f"verification failed: {exc}")
        if verdict.passed is None:
            self._error(f"verifier error: {verdict.error}")
        verdict = gatemod.gate_view(verdict, run.sources[self.changed.path], run.config)
        self.record["violations"] = gatemod.violation_records(
            verdict, self.changed.added, run.all_lines
        )

    def _error(self, message: str) -> NoReturn:
        self.record["status"] = "error"
        self.record["error"] = message
        self.user_properties.append((GATE_PROP, self.record))
        raise GateInfraError(message)

    def runtest(self) -> None:
        """Fail on a syntax error, or on any counted violation."""
        rec = self.record
        if self.syntax is not None:
            rec["status"] = "syntax"
            rec["error"] = self.syntax.message
            rec["line"] = self.syntax.line
            rec["column"] = self.syntax.column
            self.user_properties.append((GATE_PROP, rec))
            raise GateViolations(self._syntax_text())
        bad = [v for v in rec["violations"] if v["counted"]]
        rec["status"] = "failed" if bad else "passed"
        self.user_properties.append((GATE_PROP, rec))
        if bad:
            raise GateViolations(self._violations_text(bad))

    def _syntax_text(self) -> str:
        s = self.syntax
        assert s is not None
        loc = self.changed.path + (f":{s.line}" if s.line else "") + (f":{s.column}" if s.column else "")
        return f"{loc}: {s.message} (the file cannot be checked against any instruction)"

    def _violations_text(self, bad: Sequence[Mapping[str, Any]]) -> str:
        label = self.record["label"]
        scope = "" if self.config.stash[GATE_RUN_KEY].all_lines else " on changed lines"
        lines = [f"{self.changed.path}: instruction {label} not followed{scope}:"]
        lines += [f"  {self.changed.path}:{v['line']}:{v['column']}: {v['rule']} {v['message']}"
                  for v in bad[:SHOWN_VIOLATIONS]]
        if len(bad) > SHOWN_VIOLATIONS:
            lines.append(f"  ... and {len(bad) - SHOWN_VIOLATIONS:,} more violations of {label} "
                         "in this file, not shown (the SARIF log, --vibe-sarif, lists them all)")
        hidden = len(self.record["violations"]) - len(bad)
        if hidden:
            lines.append(f"  ({hidden} more on unchanged lines, not counted; "
                         "--vibe-gate-all-lines counts them)")
        return "\n".join(lines)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (GateViolations, GateInfraError)):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.changed.path}::{self.name}"


