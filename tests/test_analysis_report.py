"""Report-based analyses (issue 7, items 2-3): hand-computed tables, the writers and the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from analysis_helpers import demo_items, item, write_demo_report

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.report.analysis.breakdowns import AnalysisSettings, build_tables
from pytest_vibecheck.report.analysis.load import load_reports, report_results, scores_from_reports
from pytest_vibecheck.report.analysis.report import build_report, render_html, write_report
from pytest_vibecheck.report.analysis.stats import wilson_interval
from pytest_vibecheck.report.analysis.tables import Table
from pytest_vibecheck.report.records import ReportItem
from pytest_vibecheck.report.viewer.site import page_blob

FAST = AnalysisSettings(n_resamples=200, seed=0)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    return write_demo_report(tmp_path / "demo.json")


def _rows(tables: list[Table], name: str) -> list[dict[str, Any]]:
    t = next(t for t in tables if t.name == name)
    return [dict(zip(t.csv_header(), r, strict=True)) for r in t.csv_rows()]


def test_tables_hand_computed(demo: Path) -> None:
    tables = build_tables(report_results(load_reports([demo])), FAST)
    over = {(r["protocol"], r["k"]): r for r in _rows(tables, "overview")}
    single = over[("single", 2)]
    assert (single["evaluated"], single["errors"]) == (4, 1)  # the api_error is not a failure
    assert single["pass_at_1"] == 0.5
    assert (single["pass_at_1_low"], single["pass_at_1_high"]) == wilson_interval(2, 4)
    assert single["fr"] == pytest.approx(1 / 3)
    assert single["instruction_if"] == 0.5
    assert single["task_if"] == 0.25
    assert (single["task_if_low"], single["task_if_high"]) == wilson_interval(1, 4)
    assert over[("baseline", 0)]["pass_at_1"] == 0.75
    assert over[("multi", 2)]["fr"] == pytest.approx(-1 / 3)

    pos = {r["protocol"]: r for r in _rows(tables, "if_by_position")}
    assert (pos["single"]["pos1"], pos["single"]["pos2"]) == (0.75, 0.25)
    assert (pos["single"]["pos2_low"], pos["single"]["pos2_high"]) == wilson_interval(1, 4)
    assert [r["protocol"] for r in _rows(tables, "if_by_position")] == ["single", "multi"]

    cats = {r["protocol"]: r for r in _rows(tables, "if_by_category")}
    assert (cats["single"]["logic"], cats["single"]["style"], cats["single"]["n"]) == (
        0.25,
        0.75,
        8,
    )
    assert (cats["single"]["logic_low"], cats["single"]["logic_high"]) == wilson_interval(1, 4)
    assert cats["baseline"]["style"] == 0.0
    insts = {
        (r["protocol"], r["instruction"]): (r["passed"], r["n"])
        for r in _rows(tables, "if_by_instruction")
    }
    assert insts[("single", "logic_3")] == (1, 4)
    assert insts[("multi", "style_1")] == (3, 4)

    fr = {r["protocol"]: r for r in _rows(tables, "fr_by_k")}
    assert fr["single"]["s0"] == 0.75 and fr["single"]["k1"] is None
    assert fr["single"]["k0"] == 0.0 and fr["single"]["k0_low"] is None
    assert fr["single"]["k2"] == pytest.approx(1 / 3)
    assert fr["multi"]["k1"] == pytest.approx(-1 / 3)  # derived from turn 1 of the conversations

    co = {r["protocol"]: r for r in _rows(tables, "cofailure")}
    # single k=2: logic_3 fails on 3 of 4, style_1 on 1 of 4, both on 1: expected 3*1/4
    assert (co["single"]["a"], co["single"]["b"]) == ("logic_3", "style_1")
    assert (co["single"]["both_fail"], co["single"]["expected"]) == (1, 0.75)
    assert co["single"]["lift"] == pytest.approx(4 / 3)
    assert co["single"]["p_value"] == pytest.approx(0.75)  # P(X >= 1), hypergeometric by hand

    ret = {r["turn"]: r for r in _rows(tables, "retention")}
    assert ret[2]["retention"] == pytest.approx(2 / 3)
    assert (ret[2]["retention_low"], ret[2]["retention_high"]) == wilson_interval(2, 3)
    assert ret[2]["recovery"] == 1.0
    assert ret[1]["acquisition"] == 0.75 and ret[2]["acquisition"] == 0.75


def test_tables_agree_with_report_aggregates(demo: Path) -> None:
    data = json.loads(demo.read_text())
    tables = build_tables(report_results(load_reports([demo])), FAST)
    over = {(r["protocol"], r["k"]): r for r in _rows(tables, "overview")}
    for g in data["aggregates"]:
        row = over[(g["protocol"], g["k"])]
        assert row["pass_at_1"] == g["pass_at_1"]
        assert row["instruction_if"] == g["instruction_if"]
        assert row["task_if"] == g["task_if"]
        assert row["fr"] == g["fr"]


def test_write_report_files(demo: Path, tmp_path: Path) -> None:
    rep = build_report(load_reports([demo]), settings=FAST, plots=False)
    out = tmp_path / "out"
    written = write_report(rep, out)
    names = sorted(p.name for p in written)
    assert names == sorted([
        "overview.csv", "fr_by_k.csv", "if_by_position.csv", "if_by_category.csv",
        "if_by_instruction.csv", "cofailure.csv", "retention.csv", "analysis.json",
        "report.md", "report.html",
    ])  # fmt: skip
    with (out / "overview.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[1]["protocol"] == "single" and rows[1]["pass_at_1"] == "0.5"
    md = (out / "report.md").read_text()
    assert "## Instruction following by position" in md
    assert "| demo | m1 | single | 2 | 75.0% [30.1, 95.4] | 25.0% [4.6, 69.9] |" in md
    html = (out / "report.html").read_text()
    # the viewer's page (one HTML renderer): the tables are data in the page, drawn by its script
    data = page_blob(html)
    assert [t["name"] for t in data["tables"]] == [
        "fr_by_k", "if_by_position", "retention", "if_by_category", "if_by_instruction", "cofailure",
    ]  # fmt: skip
    row = next(r for r in data["overview"]["rows"] if r[2] == "single" and r[3] == 2)
    task_if = [c["key"] for c in data["overview"]["columns"]].index("task_if")
    assert [round(100 * x, 1) for x in row[task_if]] == [25.0, 4.6, 69.9]
    assert "src=\"http" not in html and "href=\"http" not in html and "default-src 'none'" in html
    payload = json.loads((out / "analysis.json").read_text())
    assert payload["tables"][0]["name"] == "overview"


def test_html_escapes_names(tmp_path: Path) -> None:
    items = [item("<b>evil</b>", "T0", "single", 1, ids=["style_1"], verdicts=[True])]
    path = write_demo_report(tmp_path / "r.json", items)
    text = render_html(build_report(load_reports([path]), settings=FAST, plots=False))
    assert "<b>evil</b>" not in text and "\\u003cb>evil\\u003c/b>" in text
    assert page_blob(text)["items"][0]["model"] == "<b>evil</b>"


def test_without_matplotlib_tables_only(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_vibecheck.report.analysis.report.matplotlib_available", lambda: False)
    rep = build_report(load_reports([demo]), settings=FAST)
    assert rep.figures == []
    assert "matplotlib is not installed" in rep.notes[0]
    assert "matplotlib is not installed" in render_html(rep)


def test_figures_with_matplotlib(demo: Path) -> None:
    pytest.importorskip("matplotlib")
    rep = build_report(load_reports([demo]), settings=FAST)
    assert [f.name for f in rep.figures] == ["fr_by_k", "if_by_position", "retention"]
    assert all(f.png.startswith(b"\x89PNG") for f in rep.figures)
    assert render_html(rep).count("data:image/png;base64,") == 3


def _elo_items() -> list[ReportItem]:
    out = []
    # m1: func 2/4, IF 3/4; m2: 3/4, 2/4; m3: 1/4, 1/4; m4 only baseline
    spec = {"m1": (2, 3), "m2": (3, 2), "m3": (1, 1), "m4": (4, None)}
    for model, (func, if1) in spec.items():
        for n in range(4):
            out.append(
                item(
                    model, f"T{n}", "baseline", 0, ids=["style_1"], verdicts=[True], tests=n < func
                )
            )
            if if1 is not None:
                out.append(item(model, f"T{n}", "single", 1, ids=["style_1"], verdicts=[n < if1]))
    return out


def test_scores_from_reports(tmp_path: Path) -> None:
    path = write_demo_report(tmp_path / "r.json", _elo_items())
    elo = tmp_path / "elo.csv"
    elo.write_text("model,elo\nm1,1400\nm2,1350\nm3,1200\nm4,1300\nm5,1500\n")
    t = scores_from_reports(load_reports([path]), elo, elo="elo")
    assert t.models == ("m1", "m2", "m3")
    assert t.func == (0.5, 0.75, 0.25) and t.if_ == (0.75, 0.5, 0.25)
    assert t.elo == (1400.0, 1350.0, 1200.0)
    reasons = [why for _, why in t.skipped]
    assert reasons == [
        "m4: no single-turn k=1 results in the reports",
        "m5: no baseline k=0 results in the reports; no single-turn k=1 results in the reports",
    ]


def test_cli_report_and_correlate_from_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_demo_report(tmp_path / "r.json", _elo_items())
    elo = tmp_path / "elo.csv"
    elo.write_text("model,elo\nm1,1400\nm2,1350\nm3,1200\n")
    assert main(["correlate", "--reports", str(path), "--elo-csv", str(elo), "--elo", "elo",
                 "--json", "--bootstrap", "0"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 3 and out["skipped"] == 1
    assert main(["report", str(path), "--out", str(tmp_path / "o"), "--elo-csv", str(elo),
                 "--bootstrap", "100", "--no-plots"]) == 0  # fmt: skip
    assert "report.html" in capsys.readouterr().out
    md = (tmp_path / "o" / "report.md").read_text()
    assert "## Composite score against Elo" in md
    assert (tmp_path / "o" / "correlation.csv").exists()


def test_cli_report_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert "cannot read the report" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "pytest-vibecheck-report", "schema_version": 99}))
    assert main(["report", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "schema version 99" in capsys.readouterr().err
    empty = write_demo_report(tmp_path / "empty.json", [])
    with pytest.raises(VibecheckError, match="no items"):
        build_report(load_reports([empty]))
    assert demo_items()  # the helper is importable and non-empty
