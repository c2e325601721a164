"""``vibecheck export-dataset``: the TRL JSONL and the verl parquet, read back the frameworks' way
and scored with the reward."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.generate.protocols import SINGLE_TURN_HEADER, SYSTEM_PROMPT
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
    assert set(ds.column_names) == {"prompt", "problem", "task_id", "provenance"}
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
