"""``vibecheck export-dataset``: the TRL JSONL and the verl parquet, read back the frameworks' way
and scored with the reward."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from plugin_helpers import write_script

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.generate.protocols import (
    PAPER_LIVE_SYSTEM_PROMPT,
    PAPER_SYSTEM_PROMPT,
    SINGLE_TURN_HEADER,
    SYSTEM_PROMPT,
)
from pytest_vibecheck.reward.dataset import export_dataset
from pytest_vibecheck.reward.trl import vibecheck_reward
from pytest_vibecheck.reward.verl import compute_score
from pytest_vibecheck.suites.store import load_suite

TASKS = ["BigCodeBench/3", "BigCodeBench/5"]


def _export(tmp_path: Path, fmt: str, *extra: str) -> Path:
    out = tmp_path / fmt
    args = ["export-dataset", "bigvibebench", "--format", fmt, "--out", str(out)]
    for task in TASKS:
        args += ["--task", task]
    assert main([*args, *extra]) == 0
    return out


def test_trl_file_loads_with_datasets_and_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = _export(tmp_path, "trl", "--k", "2")
    ds = datasets.load_dataset("json", data_files=str(out / "train.jsonl"), split="train",
                               cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == 2
    assert set(ds.column_names) == {"prompt", "problem", "task_id", "provenance", "prompt_chars"}
    row = ds[0]
    assert row["task_id"] == "bigvibebench::BigCodeBench/3"
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][0]["content"] == SYSTEM_PROMPT
    user = row["prompt"][1]["content"]
    assert SINGLE_TURN_HEADER in user and "\n2. " in user and "\n3. " not in user
    record = json.loads(row["problem"])
    prob = load_suite("bigvibebench").get("BigCodeBench/3")
    assert [i["id"] for i in record["instructions"]] == [i.id for i in prob.instructions[:2]]
    assert record["canonical_solution"] is None  # the answer does not travel with the data
    assert row["provenance"]["k"] == 2 and row["provenance"]["suite"] == "bigvibebench"
    # what GRPOTrainer passes: every column but prompt, one value per completion
    kwargs = {k: ds[k] for k in ds.column_names if k != "prompt"}
    solutions = [load_suite("bigvibebench").get(t).canonical_solution for t in TASKS]
    rewards = vibecheck_reward(prompts=ds["prompt"], completions=solutions,
                               completion_ids=[[0], [0]], **kwargs)
    assert all(r is not None and 0.6 <= r <= 1.0 for r in rewards)  # tests pass: func = 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rows"] == 2 and manifest["files"] == ["train.jsonl"]
    assert manifest["provenance"]["suite_sha256"] == load_suite("bigvibebench").manifest["sha256"]
    assert "LICENSE.bigcodebench" in manifest["licence_files"]
    assert (out / "LICENSE.bigcodebench").is_file()


def test_verl_parquet_has_verls_columns_and_scores(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = _export(tmp_path, "verl", "--split", "test")
    table = pq.read_table(out / "test.parquet")
    assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    rows = table.to_pylist()
    assert [r["data_source"] for r in rows] == ["vibecheck/bigvibebench"] * 2
    assert rows[1]["extra_info"]["task_id"] == "bigvibebench::BigCodeBench/5"
    assert rows[1]["extra_info"]["split"] == "test" and rows[1]["extra_info"]["k"] == 5
    assert rows[0]["reward_model"]["style"] == "rule"
    prob = load_suite("bigvibebench").get("BigCodeBench/3")
    assert prob.canonical_solution is not None
    score = compute_score(data_source=rows[0]["data_source"], solution_str=prob.canonical_solution,
                          ground_truth=rows[0]["reward_model"]["ground_truth"],
                          extra_info=rows[0]["extra_info"])
    assert score["func"] == 1.0 and score["exec_status"] == "passed"
    assert (out / "vibecheck_reward.py").read_text().count("compute_score_batch") >= 2


def test_missing_pyarrow_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    status = main(["export-dataset", "bigvibebench", "--format", "verl", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip().splitlines() == [
        "vibecheck export-dataset: error: --format verl writes parquet and needs pyarrow: "
        "pip install 'pytest-vibecheck[rl]'"]
    assert not (tmp_path / "o").exists()  # nothing written


def test_bad_suite_task_and_k(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["export-dataset", "--format", "trl", "--out", str(tmp_path / "o")]
    assert main([*base[:1], "bigvibebnch", *base[1:]]) == 2
    assert "did you mean 'bigvibebench'" in capsys.readouterr().err
    assert main([*base[:1], "bigvibebench", *base[1:], "--task", "BigCodeBench/99999"]) == 2
    assert "unknown task of suite 'bigvibebench'" in capsys.readouterr().err
    assert main([*base[:1], "bigvibebench", *base[1:], "--k", "6", "--limit", "1"]) == 2
    assert "k = 6 but the task has only 5 instructions" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("suite", ["bigvibebench", "livevibebench"])
def test_export_sends_the_messages_the_plugin_sends_under_paper(
    suite: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each suite's own system prompt and query wording: the exported prompt of a task is
    exactly the request the plugin makes for it under ``--vibe-profile paper`` (the old export
    gave LiveVibeBench BigVibeBench's system prompt)."""
    log = pytester.path / "requests.jsonl"
    script = write_script(pytester.path / "script.json", "bot", default="No code today.", log=log)
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.runpytest("--vibe-model", "scripted:bot", "--vibe-suite", suite, "--vibe-limit", "3",
                       "--vibe-protocol", "single", "--vibe-k", "2", "--vibe-profile", "paper",
                       "--vibe-cache-mode", "off", "-p", "no:randomly")
    sent = {r["task_id"]: r["messages"] for r in map(json.loads, log.read_text().splitlines())
            if r["label"] == "single-k2"}
    assert len(sent) >= 2
    rows = {}
    out = pytester.path / "out"
    manifest = export_dataset(suite, "trl", out, k=2, tasks=sorted(sent))
    for line in (out / "train.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows[row["task_id"].split("::", 1)[1]] = row
    assert {t: r["prompt"] for t, r in rows.items()} == sent
    system = {r["prompt"][0]["content"] for r in rows.values()}
    want = PAPER_LIVE_SYSTEM_PROMPT if suite == "livevibebench" else PAPER_SYSTEM_PROMPT
    assert system == {want}
    assert all(r["prompt_chars"] == sum(len(m["content"]) for m in r["prompt"]) for r in rows.values())
    assert manifest["prompt_chars"]["max"] == max(r["prompt_chars"] for r in rows.values())
    assert manifest["provenance"]["profile"] == "paper"


def test_prompt_tokens_are_recorded_with_a_token_counter(tmp_path: Path) -> None:
    def words(messages: Sequence[Mapping[str, str]]) -> int:  # a stand-in tokenizer: words
        return sum(len(m["content"].split()) for m in messages)

    manifest = export_dataset("bigvibebench", "verl", tmp_path, k=1, tasks=TASKS, tokens=words)
    pq = pytest.importorskip("pyarrow.parquet")
    rows = pq.read_table(tmp_path / "train.parquet").to_pylist()
    counts = [r["extra_info"]["prompt_tokens"] for r in rows]
    assert counts == [words(r["prompt"]) for r in rows]
    assert all(r["extra_info"]["prompt_chars"] > c for r, c in zip(rows, counts, strict=True))
    assert manifest["prompt_tokens"] == {"min": min(counts), "median": int(statistics.median(counts)),
                                         "max": max(counts)}
