"""``--vibe-shard I/N`` and ``vibecheck merge``.

The merge tests use reports built from known items with the plugin's own report builder
(``report.json_report.build_report``; valid against ``schema.json``), split into three shards
by :func:`pytest_vibecheck.config.shard.split` exactly as ``--vibe-shard`` splits items. The end-to-end
check with the real plugin (three ``pytest --vibe-shard`` runs merged) is
``test_three_plugin_shards_merge_to_the_unsharded_run``.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from ci_helpers import report_item
from junitparser import JUnitXml

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.config import shard
from pytest_vibecheck.report.json_report import build_report, validate_report, write_report
from pytest_vibecheck.report.merge import MergeError, merge_reports
from pytest_vibecheck.report.records import ModelSpendRecord, ReportItem, SpendRecord, VibeReport

SETTINGS: dict[str, Any] = {
    "models": ["scripted"], "suites": ["toy"], "protocols": ["baseline", "single", "multi"],
    "ks": [2], "tasks": [], "limit": None, "samples": 1, "cache": None, "cache_mode": "use",
    "temperature": 0.0, "max_tokens": 512, "concurrency": 4, "base_url": None,
    "extract": "first", "report": None, "junitxml": None,
}


def _items() -> list[ReportItem]:
    """12 tasks x (baseline, single k=2, multi k=2) with varied outcomes, one error, and tasks
    t10, t11 without a baseline item (their baseline results derive from the multi-turn turn 0)."""
    rng = random.Random(6)
    items: list[ReportItem] = []
    for n in range(12):
        task = f"t{n:02d}"
        if n < 10:
            items.append(report_item(task, tests_passed=rng.random() < 0.7,
                                     verdicts=[rng.random() < 0.6, rng.random() < 0.6]))
        if n == 3:
            items.append(report_item(task, protocol="single", k=2, outcome="error"))
        else:
            items.append(report_item(task, protocol="single", k=2, tests_passed=rng.random() < 0.6,
                                     verdicts=[rng.random() < 0.7, rng.random() < 0.5]))
        items.append(report_item(task, protocol="multi", k=2, turns=[
            (rng.random() < 0.7, []),
            (rng.random() < 0.6, [rng.random() < 0.7]),
            (rng.random() < 0.6, [rng.random() < 0.7, rng.random() < 0.6]),
        ]))
    return items


def _report(items: list[ReportItem], **extra: Any) -> VibeReport:
    return build_report(items, settings=SETTINGS, workers=2, duration_s=3.0, extra=extra)


def _shards(items: list[ReportItem], count: int = 3) -> list[VibeReport]:
    out = []
    for i in range(1, count + 1):
        kept, _ = shard.split(items, [str(it["nodeid"]) for it in items], i, count)
        out.append(_report(kept, shard={"index": i, "count": count}))
    return out


# ---------------------------------------------------------------- shard


def test_parse_shard() -> None:
    assert shard.parse_shard("2/3") == (2, 3)
    assert shard.parse_shard(" 1/1 ") == (1, 1)
    for bad, msg in [("3", "is not I/N"), ("0/2", "numbered from 1"), ("3/2", "needs 1 <= I <= N"),
                     ("a/b", "is not I/N"), ("1/0", "needs 1 <= I <= N")]:
        with pytest.raises(shard.ShardError, match=msg):
            shard.parse_shard(bad)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 100])
def test_split_is_even_disjoint_complete_and_order_free(count: int) -> None:
    ids = [f"suite::task{t}[m{m}-{p}]" for t in range(20) for m in range(2) for p in ("a", "b", "c")]
    parts = [shard.split(ids, ids, i, count)[0] for i in range(1, count + 1)]
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert sum(sizes) == len(ids) == len(set().union(*map(set, parts)))
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    for i, part in enumerate(parts, 1):
        assert set(shard.split(shuffled, shuffled, i, count)[0]) == set(part)


def test_split_keeps_groups_together() -> None:
    ids = [f"s::task{t}[{v}]" for t in range(30) for v in ("baseline", "single-k5", "multi-k5")]
    parts = [shard.split(ids, ids, i, 3)[0] for i in (1, 2, 3)]
    assert [len(p) for p in parts] == [30, 30, 30]
    groups = [{shard.group_key(x) for x in p} for p in parts]
    # 90 items in groups of 3 and cuts at multiples of 30: no group is split
    assert sum(len(g) for g in groups) == 30


def test_shard_option_on_collected_items(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_many="""
import pytest

@pytest.mark.parametrize("n", range(7))
@pytest.mark.parametrize("m", ["a", "b"])
def test_x(n, m):
    pass

@pytest.mark.parametrize("n", range(4))
def test_y(n):
    pass
""")

    def ids(*args: str) -> list[str]:
        result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", *args)
        return [ln for ln in result.outlines if "::" in ln]

    everything = ids()
    assert len(everything) == 18
    parts = [ids("--vibe-shard", f"{i}/3") for i in (1, 2, 3)]
    assert [len(p) for p in parts] == [6, 6, 6]
    assert sorted(x for p in parts for x in p) == sorted(everything)
    again = ids("--vibe-shard", "2/3", "-p", "no:randomly")
    assert again == parts[1]
    # the split acts after -k: the selected items are split evenly
    sel = [ids("-k", "test_x", "--vibe-shard", f"{i}/4") for i in (1, 2, 3, 4)]
    assert sorted(len(p) for p in sel) == [3, 3, 4, 4]
    result = pytester.runpytest("-p", "no:cacheprovider", "--vibe-shard", "1/3")
    result.assert_outcomes(passed=6, deselected=12)


def test_an_empty_shard_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--vibe-shard", "1/2")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["vibecheck: this shard has no items"])


# ---------------------------------------------------------------- merge


def test_three_shards_merge_to_the_unsharded_aggregates(tmp_path: Path) -> None:
    items = _items()
    full = _report(items)
    validate_report(full)
    shards = _shards(items)
    assert sorted(len(s["items"]) for s in shards) == [11, 11, 12]
    # per shard the numbers differ from the whole run: the merge must recompute
    assert all(s["aggregates"] != full["aggregates"] for s in shards)
    paths = []
    for n, rep in enumerate(shards, 1):
        validate_report(rep, source=f"shard {n}")
        paths.append(str(write_report(tmp_path / f"shard-{n}.json", rep)))
    status = main(["merge", *paths, "--json", str(tmp_path / "merged.json"),
                   "--junitxml", str(tmp_path / "merged.xml"), "-q"])
    assert status == 0
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    validate_report(merged, source="merged")
    assert merged["aggregates"] == full["aggregates"]
    assert merged["generation"] == full["generation"]
    assert merged["suites"] == full["suites"]
    assert merged["items"] == full["items"]
    assert [m["shard"] for m in merged["merged_from"]] == [s["shard"] for s in shards]
    assert merged["run"]["workers"] == 6
    xml = JUnitXml.fromfile(str(tmp_path / "merged.xml"))
    cases = [case for suite in xml for case in suite]
    assert len(cases) == len(items)
    assert xml.failures == sum(it["outcome"] == "failed" for it in items)
    assert xml.errors == sum(it["outcome"] == "error" for it in items) == 1


def test_merge_applies_thresholds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = _items()
    full = _report(items)
    lowest = min(v for r in full["aggregates"] if r["protocol"] != "baseline" and (v := r["task_if"]) is not None)
    assert lowest == 1 / 3  # multi-turn k=2
    paths = [str(write_report(tmp_path / f"s{n}.json", rep)) for n, rep in enumerate(_shards(items))]
    assert main(["merge", *paths, "-q", "--fail-under", f"task_if={lowest}"]) == 0
    capsys.readouterr()
    assert main(["merge", *paths, "-q", "--fail-under", f"task_if={lowest + 0.001}"]) == 1
    out = capsys.readouterr().out
    assert ("FAILED task_if >= 0.3343: scripted multi k=2 (toy) = 0.3333, short by 0.0010 "
            "(0.10 points)") in out
    assert "thresholds: 1 of 3 check(s) failed" in out  # single k=2, multi k=1, multi k=2


def test_merge_refuses_reports_that_do_not_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = _shards(_items())

    def refuse(x: VibeReport, y: VibeReport, message: str) -> None:
        with pytest.raises(MergeError, match=message):
            merge_reports([("a.json", x), ("b.json", y)])

    refuse(a, a, r"item toy::t\S+ is in a.json and in b.json: the shards overlap")
    other = copy.deepcopy(b)
    other["schema_version"] = 2
    refuse(a, other, "b.json has report schema version 2 but a.json has 1")
    other = copy.deepcopy(b)
    other["suites"][0]["manifest_sha256"] = "f" * 64
    refuse(a, other, "suite 'toy' differs: manifest sha256 None in a.json but f{64} in b.json")
    other = copy.deepcopy(b)
    other["run"]["settings"]["ks"] = [5]
    refuse(a, other, r"setting 'ks' differs: \[2\] in a.json but \[5\] in b.json")
    other = copy.deepcopy(b)
    other["run"]["ruff_version"] = "0.11.13"
    refuse(a, other, "Ruff 0.17.6 judged a.json but Ruff 0.11.13 judged b.json")
    # the CLI: one line on stderr, exit status 2; a file that is not a report
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}', encoding="utf-8")
    good = write_report(tmp_path / "a.json", a)
    assert main(["merge", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"vibecheck merge: error: {bad}: not a pytest-vibecheck report (no \"schema\": \"pytest-vibecheck-report\")\n"
    assert main(["merge", str(good), str(good)]) == 2
    assert capsys.readouterr().err == f"vibecheck merge: error: {good} is given twice\n"


def test_merge_of_two_models(tmp_path: Path) -> None:
    a = [report_item(f"t{n}", model="m1", tests_passed=n < 2) for n in range(4)]
    b = [report_item(f"t{n}", model="m2", tests_passed=n < 3) for n in range(4)]
    ra = build_report(a, settings={**SETTINGS, "models": ["m1"]})
    rb = build_report(b, settings={**SETTINGS, "models": ["m2"]})
    merged = merge_reports([("a", ra), ("b", rb)])
    assert merged["run"]["settings"]["models"] == ["m1", "m2"]
    assert [(r["model"], r["pass_at_1"]) for r in merged["aggregates"]] == [("m1", 0.5), ("m2", 0.75)]


# ---------------------------------------------------------------- the real plugin


def test_three_plugin_shards_merge_to_the_unsharded_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Three ``pytest --vibe-shard I/3`` runs of the benchmark plugin (tiny suite, reference
    model, baseline + single + multi at k = 1 and 3) merged with ``vibecheck merge`` give
    exactly the aggregates of one unsharded run; so do two shards, which cut a task's items
    across shards."""
    from plugin_helpers import write_tiny_suite

    write_tiny_suite(pytester.path / "suite")
    base = ("--vibe-model", "reference", "--vibe-suite", "suite", "--vibe-k", "1,3",
            "--vibe-cache-mode", "off", "--vibe-no-fail-items", "-p", "no:cacheprovider")

    def run(*args: str) -> VibeReport:
        out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.json"
        result = pytester.runpytest(*base, "--vibe-report", str(out), *args)
        assert result.ret == 0, result.stdout.str()
        report: VibeReport = json.loads(out.read_text(encoding="utf-8"))
        return report

    full = run()
    assert len(full["items"]) == 15
    for count in (3, 2):
        shards = [run("--vibe-shard", f"{i}/{count}") for i in range(1, count + 1)]
        assert [s["shard"] for s in shards] == [{"index": i, "count": count} for i in range(1, count + 1)]
        sizes = sorted(len(s["items"]) for s in shards)
        assert sizes == ([5, 5, 5] if count == 3 else [7, 8])
        paths = []
        for n, rep in enumerate(shards):
            paths.append(str(write_report(tmp_path / f"shard{count}-{n}.json", rep)))
        merged_path = tmp_path / f"merged{count}.json"
        assert main(["merge", *paths, "--json", str(merged_path), "-q"]) == 0
        merged = json.loads(merged_path.read_text(encoding="utf-8"))
        assert merged["aggregates"] == full["aggregates"]
        assert merged["generation"] == full["generation"]
        assert merged["run"]["spend"] == full["run"]["spend"]  # the reference spends nothing
        assert [i["nodeid"] for i in merged["items"]] == [i["nodeid"] for i in full["items"]]
        if count == 2:  # one task's items are in both shards, and the shards differ from the whole
            tasks = [{i["task_id"] for i in s["items"]} for s in shards]
            assert tasks[0] & tasks[1]
            assert all(s["aggregates"] != full["aggregates"] for s in shards)


def test_merge_sums_what_the_shards_spent() -> None:
    from pytest_vibecheck.report.merge import merge_spend

    def spend(requests: int, tin: int, tout: int, usd: float | None, stopped: bool) -> SpendRecord:
        model: ModelSpendRecord = {"requests": requests, "input_tokens": tin, "output_tokens": tout, "usd": usd}
        return {"requests": requests, "input_tokens": tin, "output_tokens": tout, "cache_hits": 1,
                "usd": usd, "prices_as_of": "2025-10", "price": "list", "budget": "$5", "budget_stopped": stopped,
                "models": {"openai:gpt-5": model}}

    merged = merge_spend([spend(2, 1000, 500, 0.00625, False), spend(3, 3000, 100, 0.00475, True)])
    assert merged == {
        "requests": 5, "input_tokens": 4000, "output_tokens": 600, "cache_hits": 2, "usd": 0.011,
        "prices_as_of": "2025-10", "price": "list", "budget": "$5", "budget_stopped": True,
        "models": {"openai:gpt-5": {"requests": 5, "input_tokens": 4000, "output_tokens": 600, "usd": 0.011}},
    }
    assert merge_spend([spend(1, 1, 1, None, False), spend(1, 1, 1, 0.5, False)])["usd"] is None
