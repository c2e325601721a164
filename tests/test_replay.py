"""``replay:`` backends: the shipped Qwen2.5-Coder-7B-Instruct replays and replay files."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from pytest_vibecheck.errors import DataFileError, UnknownIdError
from pytest_vibecheck.generate.backends import (
    GenerationRequest,
    ReplayMissError,
    make_backend,
    messages_fingerprint,
)
from pytest_vibecheck.generate.backends.replay import (
    ReplayBackend,
    ReplayEntry,
    list_replays,
    read_entries,
    replays_dir,
    write_replay,
)
from pytest_vibecheck.generate.generator import Generator

NAME = "qwen2.5-coder-7b-instruct"
SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "samples" / "bigcodebench-qwen2.5-coder-7b-instruct"


def ask(task_id: str, label: str = "baseline", content: str = "any prompt", sample: int = 0) -> GenerationRequest:
    return GenerationRequest(({"role": "user", "content": content},), task_id=task_id, label=label, sample=sample)


@pytest.fixture(scope="module")
def qwen() -> ReplayBackend:
    b = make_backend(f"replay:{NAME}")
    assert isinstance(b, ReplayBackend)
    return b


def test_shipped_replays_are_listed() -> None:
    # qwen2.5-coder-0.5b-instruct-q4: the real local-model run of issue 8 (docs/results.md)
    assert list_replays() == ["qwen2.5-coder-0.5b-instruct-q4", NAME, f"{NAME}-hard"]
    assert (replays_dir() / NAME / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")


def test_shipped_replay_has_1140_baseline_entries(qwen: ReplayBackend) -> None:
    assert len(qwen) == 1140
    assert dict(qwen.labels) == {"baseline": 1140}
    ids = qwen.task_ids()
    assert ids[0] == "BigCodeBench/0" and len(ids) == 1140
    assert set(ids) == {f"BigCodeBench/{i}" for i in range(1140)}
    assert (qwen.spec, qwen.cacheable, qwen.recorded_model) == (f"replay:{NAME}", False, "Qwen2.5-Coder-7B-Instruct")


def test_manifest_records_provenance(qwen: ReplayBackend) -> None:
    m = qwen.manifest
    assert (m["format"], m["entries"], m["labels"], m["protocols"]) == (1, 1140, {"baseline": 1140}, ["baseline"])
    assert m["licence"].startswith("Apache-2.0")
    assert m["upstream"]["repository"] == "https://github.com/wyettzeng/bigcodebench"
    assert m["upstream"]["harness_status_counts"] == {"pass": 478, "fail": 659, "timeout": 3}
    assert m["empty_replies"] == 1
    data = replays_dir() / NAME / m["file"]
    assert hashlib.sha256(data.read_bytes()).hexdigest() == m["sha256"]


def test_reply_is_a_fenced_python_block(qwen: ReplayBackend) -> None:
    g = Generator(qwen).generate(ask("BigCodeBench/0"))
    assert g.text.startswith("```python\nimport itertools\nfrom random import shuffle\ndef task_func(")
    assert g.text.endswith("\n```")
    assert g.text.count("```") == 2
    assert (g.model, g.cached, g.input_tokens) == ("Qwen2.5-Coder-7B-Instruct", False, 0)
    assert qwen.generate(ask("BigCodeBench/764")).text == ""  # the upstream solution is empty


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="the shared upstream samples are not on this machine")
def test_replies_match_the_upstream_solutions(qwen: ReplayBackend) -> None:
    src = SAMPLES / "Qwen2.5-Coder-7B-Instruct--bigcodebench-instruct--sanitized_calibrated.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        upstream = {r["task_id"]: r["solution"] for r in map(json.loads, fh)}
    for task, solution in upstream.items():
        reply = qwen.generate(ask(task)).text
        assert reply == (f"```python\n{solution}\n```" if solution.strip() else "")


def test_extraction_recovers_every_solution(qwen: ReplayBackend) -> None:
    extract = pytest.importorskip("pytest_vibecheck.verify.extract")
    methods: dict[str, int] = {}
    for task in qwen.task_ids():
        reply = qwen.generate(ask(task)).text
        x = extract.extract_code(reply)
        methods[x.method] = methods.get(x.method, 0) + 1
        inner = reply[len("```python\n") : -len("```")] if reply else ""
        assert x.code.rstrip("\n") == inner.rstrip("\n")
    assert methods.get("fenced-first", 0) == 1139


def test_hard_replay_has_148_entries() -> None:
    hard = make_backend(f"replay:{NAME}-hard")
    assert isinstance(hard, ReplayBackend)
    assert len(hard) == 148
    assert hard.manifest["upstream"]["harness_status_counts"] == {"pass": 30, "fail": 118, "timeout": 0}


def test_miss_names_the_task_and_what_the_replay_has(qwen: ReplayBackend) -> None:
    with pytest.raises(ReplayMissError) as info:
        qwen.generate(ask("BigCodeBench/13", "single-k1"))
    assert str(info.value) == (
        "replay 'qwen2.5-coder-7b-instruct' has no reply for task 'BigCodeBench/13', label 'single-k1', "
        "sample 0; it has: baseline (1,140 replies). Run only the protocols it covers (e.g. "
        "--vibe-protocol=baseline) or record a replay that has them."
    )
    assert (info.value.task_id, info.value.label) == ("BigCodeBench/13", "single-k1")
    with pytest.raises(ReplayMissError, match=r"task 'LiveCodeBench/1'.*The task is not in this replay"):
        qwen.generate(ask("LiveCodeBench/1"))
    with pytest.raises(ReplayMissError, match="sample 1"):
        qwen.generate(ask("BigCodeBench/13", sample=1))


def test_unknown_replay_name_suggests() -> None:
    with pytest.raises(UnknownIdError, match=r"unknown replay 'qwen2.5-coder-7b'; did you mean 'qwen2.5-coder-7b-instruct'"):
        make_backend("replay:qwen2.5-coder-7b")
    with pytest.raises(DataFileError, match="replay file or folder not found"):
        make_backend("replay:./nowhere/replies.jsonl")


def test_exact_request_hash_wins_over_task_and_label(tmp_path: Path) -> None:
    msgs = ({"role": "system", "content": "s"}, {"role": "user", "content": "q"})
    entries = [
        ReplayEntry("T/1", "by-task", "multi-k1"),
        ReplayEntry("T/other", "by-hash", "recorded", request_hash=messages_fingerprint(msgs)),
    ]
    manifest = write_replay(tmp_path / "rec", entries, {"name": "rec", "model": "m"})
    assert manifest["labels"] == {"multi-k1": 1, "recorded": 1}
    b = make_backend(f"replay:{tmp_path / 'rec'}")
    assert b.generate(GenerationRequest(msgs, task_id="T/1", label="multi-k1")).text == "by-hash"
    assert b.generate(GenerationRequest(msgs[1:], task_id="T/1", label="multi-k1")).text == "by-task"


def test_bare_jsonl_file_and_deterministic_writer(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"task_id": "A", "reply": "x"}\n\n{"task_id": "A", "label": "single-k1", "reply": "y", "usage": {"input_tokens": 3, "output_tokens": 4}, "finish_reason": "length"}\n',
        encoding="utf-8",
    )
    b = make_backend(f"replay:{path}")
    assert b.generate(ask("A")).text == "x"
    g = b.generate(ask("A", "single-k1"))
    assert (g.text, g.input_tokens, g.output_tokens, g.finish_reason) == ("y", 3, 4, "length")
    write_replay(tmp_path / "one", read_entries(path), {"name": "one"})
    write_replay(tmp_path / "two", read_entries(path), {"name": "one"})
    assert (tmp_path / "one" / "replies.jsonl.gz").read_bytes() == (tmp_path / "two" / "replies.jsonl.gz").read_bytes()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"mine.jsonl:2: invalid JSON"),
        ('{"reply": "x"}', r"mine.jsonl:2: field 'task_id': required string"),
        ('{"task_id": "B", "reply": "x", "sample": -1}', r"mine.jsonl:2: field 'sample': expected an int >= 0"),
        ('{"task_id": "B", "reply": "x", "request_hash": "abc"}', r"field 'request_hash'"),
        ('{"task_id": "A", "reply": "again"}', r"duplicate entry for task 'A', label 'baseline', sample 0"),
    ],
)
def test_malformed_replay_files(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text('{"task_id": "A", "reply": "x"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=message):
        make_backend(f"replay:{path}")


def test_folder_without_manifest(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    with pytest.raises(DataFileError, match=r"a replay folder needs a manifest\.json"):
        make_backend(f"replay:{tmp_path / 'r'}")
