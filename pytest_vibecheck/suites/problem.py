"""The problem record: one augmented benchmark task (paper §3.1).

A suite is a JSONL file of these records (see ``docs/suites.md`` for the versioned schema);
loaders turn the source benchmarks into them, the augmenter fills ``instructions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pytest_vibecheck.errors import DataFileError
from pytest_vibecheck.execute.spec import TEST_KINDS, TestCase, TestKind, TestSpec
from pytest_vibecheck.types import ParamValue

#: Version of the suite JSONL schema; bump on any incompatible change.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class InstructionRef:
    """An instruction selected for a problem, with validated parameters."""

    id: str
    params: dict[str, ParamValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Problem:
    """One (augmented) benchmark problem.

    ``prompt`` is the query given to the model (BigCodeBench ``instruct_prompt``, or the
    LiveCodeBench question with its format instructions). ``canonical_solution`` is a full
    runnable program that passes the tests, when the source has one. ``libs`` are the
    top-level import names the task needs. ``instructions`` are ordered (position 1..k).
    ``requires`` are the top-level third-party modules its tests need to run (``libs`` plus the
    test code's imports, standard library left out, sorted), computed when the suite is built
    so a run never parses test code for it; None when the record does not say (then
    :func:`pytest_vibecheck.execute.envcheck.required_modules` derives them).
    """

    suite: str
    task_id: str
    prompt: str
    test: TestSpec
    entry_point: str | None = None
    canonical_solution: str | None = None
    starter_code: str | None = None
    libs: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    instructions: tuple[InstructionRef, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record of ``docs/suites.md`` (schema version :data:`SCHEMA_VERSION`).

        Every key is always present (``None``/empty when unset), so records diff cleanly.
        """
        return {
            "suite": self.suite,
            "task_id": self.task_id,
            "prompt": self.prompt,
            "entry_point": self.entry_point,
            "test": {
                "kind": self.test.kind,
                "code": self.test.code,
                "cases": [{"input": c.input, "output": c.output} for c in self.test.cases],
                "entry_point": self.test.entry_point,
            },
            "canonical_solution": self.canonical_solution,
            "starter_code": self.starter_code,
            "libs": list(self.libs),
            "metadata": dict(self.metadata),
            "instructions": [{"id": i.id, "params": dict(i.params)} for i in self.instructions],
            "provenance": dict(self.provenance),
            "requires": None if self.requires is None else list(self.requires),
        }

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        source: str | Path = "<record>",
        line: int | None = None,
    ) -> Problem:
        """Build a problem from a record of ``docs/suites.md``, checking every field.

        Raises :class:`~pytest_vibecheck.errors.DataFileError` naming ``source``, ``line``
        and the field (e.g. ``test.cases[2].output``) for a missing field, a wrong type, an
        unknown test kind or an unknown key. Instruction ids and parameters are not checked
        here (see :func:`pytest_vibecheck.suites.store.load_suite`).
        """
        chk = _Checker(source, line)
        chk.keys(data, RECORD_FIELDS, "", optional=OPTIONAL_FIELDS)
        test = chk.mapping(data, "test", "")
        chk.keys(test, ("kind", "code", "cases", "entry_point"), "test.")
        kind = chk.string(test, "kind", "test.")
        if kind not in TEST_KINDS:
            raise DataFileError(
                source,
                f"unknown test kind {kind!r}; use one of {list(TEST_KINDS)}",
                field="test.kind",
                line=line,
            )
        raw_cases = chk.array(test, "cases", "test.")
        cases = []
        for n, case in enumerate(raw_cases):
            where = f"test.cases[{n}]"
            if not isinstance(case, Mapping):
                raise DataFileError(
                    source, "expected an object with input and output", field=where, line=line
                )
            chk.keys(case, ("input", "output"), where + ".")
            cases.append(
                TestCase(
                    chk.string(case, "input", where + "."), chk.string(case, "output", where + ".")
                )
            )
        refs = []
        for n, ref in enumerate(chk.array(data, "instructions", "")):
            where = f"instructions[{n}]"
            if not isinstance(ref, Mapping):
                raise DataFileError(
                    source, "expected an object with id and params", field=where, line=line
                )
            chk.keys(ref, ("id", "params"), where + ".")
            refs.append(
                InstructionRef(
                    chk.string(ref, "id", where + "."),
                    dict(chk.mapping(ref, "params", where + ".")),
                )
            )
        libs = chk.array(data, "libs", "")
        for n, lib in enumerate(libs):
            if not isinstance(lib, str):
                raise DataFileError(
                    source, f"expected a string, got {lib!r}", field=f"libs[{n}]", line=line
                )
        requires: tuple[str, ...] | None = None
        if data.get("requires") is not None:
            raw = chk.array(data, "requires", "")
            for n, mod in enumerate(raw):
                if not isinstance(mod, str) or not mod:
                    raise DataFileError(
                        source,
                        f"expected a module name, got {mod!r}",
                        field=f"requires[{n}]",
                        line=line,
                    )
            requires = tuple(raw)
        return cls(
            suite=chk.string(data, "suite", ""),
            task_id=chk.string(data, "task_id", ""),
            prompt=chk.string(data, "prompt", ""),
            test=TestSpec(
                kind=cast(TestKind, kind),
                code=chk.string(test, "code", "test."),
                cases=tuple(cases),
                entry_point=chk.opt_string(test, "entry_point", "test."),
            ),
            entry_point=chk.opt_string(data, "entry_point", ""),
            canonical_solution=chk.opt_string(data, "canonical_solution", ""),
            starter_code=chk.opt_string(data, "starter_code", ""),
            libs=tuple(libs),
            metadata=dict(chk.mapping(data, "metadata", "")),
            instructions=tuple(refs),
            provenance=dict(chk.mapping(data, "provenance", "")),
            requires=requires,
        )


#: The keys of a suite record, in the order :meth:`Problem.to_dict` writes them.
RECORD_FIELDS: tuple[str, ...] = (
    "suite",
    "task_id",
    "prompt",
    "entry_point",
    "test",
    "canonical_solution",
    "starter_code",
    "libs",
    "metadata",
    "instructions",
    "provenance",
)

#: Keys a record may leave out (older suite files): ``requires``.
OPTIONAL_FIELDS: tuple[str, ...] = ("requires",)


class _Checker:
    """Field checks that raise :class:`DataFileError` with file, line and field."""

    def __init__(self, source: str | Path, line: int | None) -> None:
        self.source = source
        self.line = line

    def _fail(self, msg: str, name: str) -> DataFileError:
        return DataFileError(self.source, msg, field=name, line=self.line)

    def keys(
        self,
        obj: Mapping[str, Any],
        required: tuple[str, ...],
        prefix: str,
        optional: tuple[str, ...] = (),
    ) -> None:
        for key in required:
            if key not in obj:
                raise self._fail("required field is missing", prefix + key)
        allowed = required + optional
        for key in obj:
            if key not in allowed:
                raise self._fail(
                    f"unknown field; a record has only {list(allowed)}", prefix + str(key)
                )

    def string(self, obj: Mapping[str, Any], key: str, prefix: str) -> str:
        value = obj[key]
        if not isinstance(value, str):
            raise self._fail(f"expected a string, got {_short(value)}", prefix + key)
        return value

    def opt_string(self, obj: Mapping[str, Any], key: str, prefix: str) -> str | None:
        value = obj[key]
        if value is not None and not isinstance(value, str):
            raise self._fail(f"expected a string or null, got {_short(value)}", prefix + key)
        return value

    def array(self, obj: Mapping[str, Any], key: str, prefix: str) -> list[Any]:
        value = obj[key]
        if not isinstance(value, list):
            raise self._fail(f"expected an array, got {_short(value)}", prefix + key)
        return value

    def mapping(self, obj: Mapping[str, Any], key: str, prefix: str) -> Mapping[str, Any]:
        value = obj[key]
        if not isinstance(value, Mapping):
            raise self._fail(f"expected an object, got {_short(value)}", prefix + key)
        return value


def _short(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"
