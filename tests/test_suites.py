"""Suites: every shipped suite loads (exact counts), checks on load, deterministic writing."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_vibecheck.errors import DataFileError, UnknownIdError
from pytest_vibecheck.execute.spec import TestCase, TestSpec
from pytest_vibecheck.suites.problem import SCHEMA_VERSION, InstructionRef, Problem
from pytest_vibecheck.suites.store import (
    Suite,
    deterministic_gzip,
    encode_records,
    find_suite,
    list_suites,
    load_suite,
    suites_root,
    write_suite,
)
from pytest_vibecheck.verify.instructions import default_registry
from pytest_vibecheck.verify.params import validate_params

SCHEMAS = Path(__file__).resolve().parents[1] / "pytest_vibecheck" / "suites" / "schemas"

# name: (tasks, tasks by test kind, tasks by number of instructions)
SHIPPED = {
    "bigvibebench": (1140, {"bigcodebench-unittest": 1140}, {"5": 1140}),
    "bigvibebench-hard": (148, {"bigcodebench-unittest": 148}, {"5": 148}),
    "bigvibebench-lite": (50, {"bigcodebench-unittest": 50}, {"5": 50}),
    "livevibebench": (879, {"stdin": 498, "functional": 381}, {"5": 879}),
    "humaneval": (164, {"humaneval": 164}, {"5": 164}),
}


@pytest.fixture(scope="module")
def shipped() -> dict[str, Suite]:
    return {name: load_suite(name) for name in SHIPPED}


def test_shipped_suites_are_listed() -> None:
    assert set(SHIPPED) <= set(list_suites())
    assert find_suite("bigvibebench") == suites_root() / "bigvibebench"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_task_loads_with_valid_instructions(shipped: dict[str, Suite], name: str) -> None:
    suite = shipped[name]
    count, kinds, per_task = SHIPPED[name]
    assert len(suite) == count
    assert suite.manifest["counts"]["tasks"] == count
    assert suite.manifest["counts"]["by_test_kind"] == kinds
    assert suite.manifest["counts"]["tasks_by_instruction_count"] == per_task
    assert suite.manifest["k"] == 5
    assert suite.manifest["selector"] == "rules"
    assert suite.manifest["schema_version"] == SCHEMA_VERSION
    reg = default_registry()
    for prob in suite:
        assert prob.suite == name
        ids = [ref.id for ref in prob.instructions]
        assert len(ids) == len(set(ids))
        assert (len(ids) < 5) == ("fewer_than_k" in prob.provenance)
        for i, a in enumerate(ids):  # no task has two conflicting instructions
            assert not any(reg.conflict(a, b) for b in ids[i + 1 :]), (prob.task_id, ids)
        for ref in prob.instructions:  # every parameter is valid, and all are present
            assert validate_params(ref.id, ref.params, strict=True, warn=False).params == ref.params
        decisions = prob.provenance["decisions"]
        assert [d["id"] for d in decisions if d["decision"] == "kept"] == ids
        assert all(d["reason"] and d["rule"] for d in decisions)
    for lic in suite.manifest["licence_files"]:
        assert (suite.path / lic).read_text().strip()
    assert suite.manifest["attribution"]


def test_subsets_share_instructions_with_bigvibebench(shipped: dict[str, Suite]) -> None:
    big = {p.task_id: p for p in shipped["bigvibebench"]}
    for name in ("bigvibebench-hard", "bigvibebench-lite"):
        for prob in shipped[name]:
            assert prob.instructions == big[prob.task_id].instructions, prob.task_id
    lite = shipped["bigvibebench-lite"]
    assert all(p.metadata["stdlib_only"] and p.metadata["network_free"] for p in lite)
    assert lite.manifest["lite_selection"]["task_ids"] == [p.task_id for p in lite]


def test_livevibebench_manifest_says_private_tests_are_absent(shipped: dict[str, Suite]) -> None:
    manifest = shipped["livevibebench"].manifest
    assert manifest["private_tests"].startswith("absent")
    assert manifest["excluded"] == [
        {"line": 462, "reason": "no public test cases", "task_id": "abc350_c"}
    ]


def test_shipped_records_and_manifests_match_the_json_schemas(shipped: dict[str, Suite]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    record_schema = json.loads((SCHEMAS / "suite-record-v1.schema.json").read_text())
    manifest_schema = json.loads((SCHEMAS / "suite-manifest-v1.schema.json").read_text())
    record_validator = jsonschema.Draft202012Validator(record_schema)
    for suite in shipped.values():
        jsonschema.validate(dict(suite.manifest), manifest_schema)
        for prob in suite.problems[:200]:
            record_validator.validate(prob.to_dict())


# ---------------------------------------------------------------- writing


def _problems(suite: str = "mini") -> list[Problem]:
    return [
        Problem(
            suite=suite,
            task_id=f"T/{n}",
            prompt=f"Return {n}.",
            test=TestSpec(kind="stdin", cases=(TestCase("", f"{n}\n"),)),
            instructions=(
                InstructionRef("logic_3", {"max_branches": 3}),
                InstructionRef("doc_4", {}),
            ),
            provenance={"selector": "manual"},
        )
        for n in range(3)
    ]


def _write(
    folder: Path,
    problems: list[Problem],
    *,
    name: str = "mini",
    compress: bool = True,
    licence_files: Sequence[str | Path] = (),
) -> Path:
    return write_suite(
        folder,
        problems,
        name=name,
        description="d",
        source="tests",
        licence="Apache-2.0",
        attribution="a",
        selector="manual",
        seed=None,
        k=2,
        licence_files=licence_files,
        compress=compress,
    )


def test_write_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    _write(tmp_path / "a", _problems())
    _write(tmp_path / "b", _problems())
    for name in ("problems.jsonl.gz", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    raw = (tmp_path / "a" / "problems.jsonl.gz").read_bytes()
    assert raw[4:8] == b"\x00\x00\x00\x00"  # gzip mtime 0
    assert raw[3] & 0x08 == 0  # no file name in the header
    suite = load_suite(tmp_path / "a")
    assert list(suite.problems) == _problems()
    assert suite.manifest["sha256"] == hashlib.sha256(raw).hexdigest()
    assert suite.manifest["counts"]["instructions_by_category"] == {"doc": 3, "logic": 3}
    first_line = gzip.decompress(raw).decode().splitlines()[0]
    assert first_line.startswith(
        '{"canonical_solution":null,"entry_point":null,"instructions":['
    )  # sorted keys


def test_uncompressed_suite_and_licence_copy(tmp_path: Path) -> None:
    lic = tmp_path / "COPYING.txt"
    lic.write_text("licence text\n")
    _write(tmp_path / "s", _problems(), compress=False, licence_files=[lic])
    assert (tmp_path / "s" / "LICENSE").read_text() == "licence text\n"
    assert load_suite(str(tmp_path / "s")).manifest["data_file"] == "problems.jsonl"


def test_sha256_mismatch_is_reported(tmp_path: Path) -> None:
    _write(tmp_path / "s", _problems(), compress=False)
    data = tmp_path / "s" / "problems.jsonl"
    data.write_text(data.read_text().replace("Return 1.", "Return 7."))
    with pytest.raises(DataFileError) as err:
        load_suite(tmp_path / "s")
    assert err.value.field == "sha256"
    assert "was modified or corrupted" in str(err.value)
    assert len(load_suite(tmp_path / "s", verify_sha256=False)) == 3


def test_unknown_suite_name_suggests() -> None:
    with pytest.raises(UnknownIdError) as err:
        load_suite("bigvibebnch")
    assert err.value.suggestions[0] == "bigvibebench"
    with pytest.raises(DataFileError, match="suite folder does not exist"):
        load_suite("./no/such/folder")


def _rewrite_record(folder: Path, line: int, edit: Callable[[dict[str, Any]], object]) -> None:
    data = folder / "problems.jsonl"
    lines = data.read_text().splitlines()
    record = json.loads(lines[line - 1])
    edit(record)
    lines[line - 1] = json.dumps(record)
    data.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda r: r.pop("prompt"), "prompt", "required field is missing"),
        (lambda r: r.update(extra=1), "extra", "unknown field"),
        (lambda r: r["test"].update(kind="pytest"), "test.kind", "unknown test kind 'pytest'"),
        (
            lambda r: r["test"]["cases"][0].update(output=3),
            "test.cases[0].output",
            "expected a string, got int 3",
        ),
        (
            lambda r: r["instructions"][0].update(id="logic_33"),
            "instructions[0].id",
            "unknown instruction 'logic_33'; did you mean 'logic_3'",
        ),
        (
            lambda r: r["instructions"][0]["params"].update(max_branches=9),
            "instructions[0].params",
            "max_branches=9 is not int in [2, 4]",
        ),
        (
            lambda r: r["instructions"][0].update(params={}),
            "instructions[0].params",
            "parameters ['max_branches'] are missing",
        ),
        (
            lambda r: r["instructions"].append({"id": "doc_6", "params": {}}),
            "instructions[2].id",
            "'doc_6' conflicts with 'doc_4'",
        ),
        (lambda r: r.update(suite="other"), "suite", "record belongs to suite 'other'"),
        (lambda r: r.update(task_id="T/0"), "task_id", "task id 'T/0' already used on line 1"),
    ],
)
def test_record_errors_name_file_line_and_field(
    tmp_path: Path, edit: Callable[[dict[str, Any]], object], field: str, message: str
) -> None:
    folder = tmp_path / "s"
    _write(folder, _problems(), compress=False)
    _rewrite_record(folder, 2, edit)
    with pytest.raises(DataFileError) as err:
        load_suite(folder, verify_sha256=False)
    assert (err.value.path, err.value.line, err.value.field) == (
        str(folder / "problems.jsonl"),
        2,
        field,
    )
    assert message in str(err.value)


def test_manifest_errors(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    _write(folder, _problems(), compress=False)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(
        json.dumps({**manifest, "schema_version": SCHEMA_VERSION + 1})
    )
    with pytest.raises(DataFileError, match="newer than this pytest-vibecheck understands"):
        load_suite(folder)
    (folder / "manifest.json").write_text(
        json.dumps({k: v for k, v in manifest.items() if k != "licence"})
    )
    with pytest.raises(DataFileError) as err:
        load_suite(folder)
    assert err.value.field == "licence"
    (folder / "manifest.json").write_text(
        json.dumps({**manifest, "counts": {**manifest["counts"], "tasks": 4}})
    )
    with pytest.raises(DataFileError, match=r"says 4 tasks, problems\.jsonl has 3"):
        load_suite(folder)
    (folder / "manifest.json").write_text("{")
    with pytest.raises(DataFileError, match="not valid JSON"):
        load_suite(folder)


def test_write_refuses_invalid_problems(tmp_path: Path) -> None:
    bad = _problems()
    bad[1] = Problem(
        **{
            **bad[1].__dict__,
            "instructions": (InstructionRef("doc_4", {}), InstructionRef("doc_6", {})),
        }
    )
    with pytest.raises(DataFileError, match="conflicts with 'doc_4'"):
        _write(tmp_path / "s", bad)
    assert not (tmp_path / "s").exists()
    with pytest.raises(DataFileError, match="has suite 'mini', expected 'other'"):
        _write(tmp_path / "s", _problems(), name="other")


def test_user_suite_copy_loads_by_path(tmp_path: Path) -> None:
    shutil.copytree(suites_root() / "bigvibebench-lite", tmp_path / "mine")
    suite = load_suite(tmp_path / "mine")
    assert len(suite) == 50
    assert suite.get("BigCodeBench/1").task_id == "BigCodeBench/1"
    with pytest.raises(UnknownIdError, match="did you mean 'BigCodeBench/1'"):
        suite.get("BigCodeBench/1x")


def test_encode_and_gzip_helpers() -> None:
    raw = encode_records(_problems())
    assert raw.count(b"\n") == 3
    assert deterministic_gzip(raw) == deterministic_gzip(raw)
    assert gzip.decompress(deterministic_gzip(raw)) == raw
