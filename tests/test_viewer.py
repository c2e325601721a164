"""What the model wrote, in the report and on the command line (issue 12 point 8, issue 13):

- the JSON report carries each turn's messages (only the new ones in multi-turn), reply and
  extracted code with the chosen block, valid against report/schema.json;
- ``--vibe-report-replies no`` leaves them out; ``vibecheck show`` and ``vibecheck view`` then
  read them back from the generation cache (and so do reports written before the fields existed);
- ``vibecheck show`` prints each turn with the violated lines marked;
- the viewer's status counts are read generically (``timeout``, ``tampered``, any other).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from plugin_helpers import write_script, write_tiny_suite

from pytest_vibecheck.cli.main import main
from pytest_vibecheck.plugin.run.record import chosen_block, new_messages
from pytest_vibecheck.report.json_report import load_report
from pytest_vibecheck.report.records import ReportItem, VibeReport
from pytest_vibecheck.report.viewer.replies import fill_replies
from pytest_vibecheck.report.viewer.site import page_blob, status_counts
from pytest_vibecheck.verify.extract import extract_code

REPO = Path(__file__).resolve().parent.parent
PUBLISHED = REPO / "docs" / "results" / "qwen2.5-coder-0.5b.json"

#: a reply with a line too long for style_3 (line_length=79) on line 2 and prose around it
LONG = "def add(a, b):\n    return a + b  # " + "x" * 80 + "\n"
REPLY = "Here you go:\n\n```python\n" + LONG + "```\nDone."


def _pytest(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "PYTHONSAFEPATH": "1"}
    full.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd, env=full, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _run(work: Path, *extra: str) -> VibeReport:
    write_tiny_suite(work / "suite")
    script = write_script(work / "script.json", "bot", rules=[{"task_id": "t/add", "reply": REPLY}])
    proc = _pytest(
        work, "--vibe-model=scripted:bot", "--vibe-suite=./suite", "--vibe-k=3",
        "--vibe-cache=c.sqlite", "--vibe-report=r.json", *extra,
        env={"VIBECHECK_SCRIPTED": str(script)},
    )  # fmt: skip
    assert (work / "r.json").is_file(), proc.stdout + proc.stderr
    return load_report(work / "r.json")  # validated against schema.json


@pytest.fixture(scope="module")
def with_replies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, VibeReport]:
    work = tmp_path_factory.mktemp("replies")
    return work, _run(work)


def _item(report: VibeReport, task: str, protocol: str) -> ReportItem:
    return next(i for i in report["items"] if i["task_id"] == task and i["protocol"] == protocol)


def test_report_carries_messages_reply_and_code(with_replies: tuple[Path, VibeReport]) -> None:
    _work, report = with_replies
    single = _item(report, "t/add", "single")
    (turn,) = single["turns"]
    assert turn["reply"] == REPLY
    assert turn["code"] == LONG
    assert turn["extraction"]["method"] == "fenced-first" and turn["extraction"]["block"] == 0
    assert [m["role"] for m in turn["messages"]] == ["system", "user"]
    assert "add(a, b)" in turn["messages"][1]["content"]
    multi = _item(report, "t/add", "multi")
    assert [len(t["messages"]) for t in multi["turns"]] == [2, 1, 1, 1]  # only what each turn added
    assert [t["messages"][0]["role"] for t in multi["turns"][1:]] == ["user", "user", "user"]
    assert all(t["reply"] == REPLY for t in multi["turns"])
    assert report["run"]["settings"]["report_replies"] is True


def test_show_marks_violated_lines(with_replies: tuple[Path, VibeReport], capsys: pytest.CaptureFixture[str]) -> None:
    work, report = with_replies
    single = _item(report, "t/add", "single")
    assert main(["show", single["nodeid"], "--report", str(work / "r.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(single["nodeid"] + "\n")
    assert "    Here you go:\n" in out  # the reply as sent
    assert ">   2 | " + LONG.split("\n")[1] in out  # the violated line, marked
    assert f"^ E501 Line too long ({len(LONG.split(chr(10))[1])} > 79) [style_3, column 80]" in out
    assert "FAIL 3 style_3 (line_length=79)\n         line 2:80 E501 Line too long" in out


def test_show_task_filters_and_unknown_target(with_replies: tuple[Path, VibeReport], capsys: pytest.CaptureFixture[str]) -> None:
    work, _report = with_replies
    assert main(["show", "tiny::t/add", "--report", str(work / "r.json"), "--protocol", "multi"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n--- turn ") == 4 and "code (fenced-first, 1 fenced block(s), block 1): unchanged from turn 0" in out
    assert main(["show", "tiny::t/ad", "--report", str(work / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "no item tiny::t/ad" in err and "close matches: tiny::t/add" in err
    assert len(err.strip().splitlines()) == 1


def test_without_replies_falls_back_to_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(tmp_path, "--vibe-report-replies=no")
    single = _item(report, "t/add", "single")
    assert not {"reply", "code", "messages"} & set(single["turns"][0])
    assert report["run"]["settings"]["report_replies"] is False
    # the run's own cache (run.settings.cache) gives the replies back, code checked by sha256;
    # the messages are rebuilt from the suite and checked against the cached request's sha256
    items = json.loads((tmp_path / "r.json").read_text())["items"]
    settings = report["run"]["settings"]
    res = fill_replies(items, settings["cache"], suites=settings["suites"])
    n_turns = sum(len(i["turns"]) for i in items)
    assert (res.missing, res.filled, res.code_mismatch) == (n_turns, n_turns, 0)
    filled = next(i for i in items if i["nodeid"] == single["nodeid"])["turns"][0]
    assert filled["reply"] == REPLY and filled["code"] == LONG and len(filled["messages"]) == 2
    assert main(["show", single["nodeid"], "--report", str(tmp_path / "r.json")]) == 0
    assert "    Here you go:\n" in capsys.readouterr().out
    # without the cache: said, not guessed
    assert main(["show", single["nodeid"], "--report", str(tmp_path / "r.json"), "--cache", str(tmp_path / "none.sqlite")]) == 0
    cap = capsys.readouterr()
    assert "reply: not in the report" in cap.out and "hold no reply" in cap.err


def test_published_report_without_replies_still_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A report written before the reply fields existed (schema version 1; the published
    report with its replies and code taken out) still loads, with a note; the published report
    itself shows every reply."""
    old = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    for item in old["items"]:
        for turn in item["turns"]:
            turn.pop("reply", None)
            turn.pop("code", None)
    stripped = tmp_path / "old.json"
    stripped.write_text(json.dumps(old), encoding="utf-8")
    assert main(["view", str(stripped), "--out", str(tmp_path / "site"), "--no-browser", "--bootstrap", "0",
                 "--cache", str(tmp_path / "absent.sqlite")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    data = page_blob((tmp_path / "site" / "index.html").read_text(encoding="utf-8"))
    assert len(data["items"]) == 210 and "reply" not in data["items"][0]["turns"][0]
    assert "480 turns of these reports hold no reply; 0 were read from" in out
    assert main(["view", str(PUBLISHED), "--out", str(tmp_path / "pub"), "--no-browser", "--bootstrap", "0",
                 "--cache", str(tmp_path / "absent.sqlite")]) == 0  # fmt: skip
    assert "hold no reply" not in capsys.readouterr().out
    data = page_blob((tmp_path / "pub" / "index.html").read_text(encoding="utf-8"))
    assert all("reply" in t for it in data["items"] for t in it["turns"])


def test_view_item_unknown_is_one_line(with_replies: tuple[Path, VibeReport], capsys: pytest.CaptureFixture[str]) -> None:
    work, report = with_replies
    nodeid = report["items"][0]["nodeid"]
    assert main(["view", str(work / "r.json"), "--out", str(work / "s"), "--no-browser", "--bootstrap", "0",
                 "--item", nodeid[:-2]]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert f"--item {nodeid[:-2]}: no such item in the reports; close matches: " in err
    assert main(["view", str(work / "r.json"), "--out", str(work / "s"), "--no-browser", "--bootstrap", "0",
                 "--item", nodeid]) == 0  # fmt: skip
    assert capsys.readouterr().out.strip().endswith("index.html#/item/" + nodeid.replace("::", "%3A%3A").replace("/", "%2F").replace("[", "%5B").replace("]", "%5D"))


def test_new_messages_and_chosen_block() -> None:
    sys_m, user = {"role": "system", "content": "s"}, {"role": "user", "content": "q"}
    reply, edit = {"role": "assistant", "content": "a"}, {"role": "user", "content": "e"}
    assert new_messages([], [sys_m, user]) == [sys_m, user]
    assert new_messages([sys_m, user], [sys_m, user, reply, edit]) == [edit]
    assert new_messages([sys_m, user], [sys_m, edit]) == [sys_m, edit]  # not an extension: all
    two = extract_code("```python\nx = 1\n```\n```python\ny = 2\n```", mode="first")
    assert chosen_block(two) == 0
    best = extract_code("```python\nx = 1\n```\n```python\ndef f():\n    pass\n```", mode="best", entry_point="f")
    assert chosen_block(best) == 1
    assert chosen_block(extract_code("x = 1\n")) is None  # whole reply


def _result_item(nodeid: str, status: str, *, outcome: str = "failed", error: dict[str, str] | None = None) -> ReportItem:
    """A report item with the fields status_counts() reads."""
    turns = [] if error else [{"turn": 0, "k": 1, "tests": {"status": status}, "verdicts": [
        {"position": 1, "id": "style_1", "passed": True, "error": None, "violations": []}],
        "extraction": {"no_code": False}, "generation": {}}]  # fmt: skip
    return cast(ReportItem, {
        "nodeid": nodeid, "suite": "s", "task_id": nodeid, "model": "m", "protocol": "single", "k": 1,
        "sample": 0, "outcome": outcome, "passed": None if error else False, "error": error,
        "instructions": [{"position": 1, "id": "style_1", "category": "style", "params": {}}],
        "turns": turns, "no_code": False,
    })  # fmt: skip


def test_status_counts_are_generic() -> None:
    items = [
        _result_item("a", "timeout"), _result_item("b", "tampered"), _result_item("c", "tampered"),
        _result_item("d", "failed"), _result_item("e", "memory_limit"),
        _result_item("f", "", outcome="error", error={"kind": "api_error", "message": "x"}),
    ]  # fmt: skip
    counts = status_counts(items)[("s", "m", "single", 1)]
    assert dict(counts) == {"timeout": 1, "tampered": 2, "memory_limit": 1, "error": 1, "error:api_error": 1}
