"""Running items end to end (pytester, the real sandbox and verifiers, scripted test models):
outcomes, failure texts, error outcomes, exact messages, cache modes, --lf, reports."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from plugin_helpers import ADD, fenced, report_items, write_script, write_tiny_suite

from pytest_vibecheck.generate.protocols import SYSTEM_PROMPT
from pytest_vibecheck.report.json_report import load_report
from pytest_vibecheck.report.records import AggregateRecord, VibeReport

XSD = Path(__file__).parent / "data" / "junit-common.xsd"
SUITE = ("--vibe-suite", "suite", "-p", "no:randomly")


@pytest.fixture
def tiny(pytester: pytest.Pytester) -> pytest.Pytester:
    write_tiny_suite(pytester.path / "suite")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    return pytester


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _groups(report: VibeReport) -> dict[tuple[str, int], AggregateRecord]:
    return {(g["protocol"], g["k"]): g for g in report["aggregates"]}


def test_reference_model_outcomes_failure_text_and_reports(tiny: pytest.Pytester) -> None:
    result = tiny.runpytest(
        "--vibe-model", "reference", *SUITE, "--vibe-protocol", "baseline,single", "--vibe-k", "1",
        "--vibe-report", "out/report.json", "--vibe-junitxml", "out/junit.xml",
    )
    # only t/sign single-k1 follows its instruction (logic_3, 2 branches); every test passes
    result.assert_outcomes(passed=1, failed=5)
    result.stdout.fnmatch_lines([
        "*_ tiny::t/add[[]reference-single-k1[]] _*",
        "t/add with reference (single, k=1): failed",
        "  tests: passed",
        "  instructions: 0 of 1 followed",
        "    FAIL doc_1 (position 1)",
        "         1:5 ANN201 Missing return type annotation for public function `add`",
        "         1:9 ANN001 Missing type annotation for function argument `a`",
        "         1:12 ANN001 Missing type annotation for function argument `b`",
        "  extraction: fenced-first, 1 fenced block(s)",
    ])
    result.stdout.fnmatch_lines([
        "*= vibecheck summary =*",
        "suite*model*protocol*k*n*pass@1*FR_k*instr-IF*task-IF*errors*no-code*timeouts*cache-hit",
        "tiny*reference*baseline*0*3*100.0%*-*",
        "tiny*reference*single*1*3*100.0%*+0.0%*33.3%*33.3%*0*0*0*-",
        "generations: 6 requested, 0 from the cache, 6 from offline models (replay/reference)*",
        "JSON report: *out/report.json",
        "JUnit XML: *out/junit.xml",
    ])
    report = load_report(tiny.path / "out" / "report.json")  # validates against schema.json
    groups = _groups(report)
    assert groups[("baseline", 0)]["pass_at_1"] == 1.0
    # lazy calibration, stored beside the cache: every candidate ended within the floor, so
    # no reference was timed; each task's observed time is kept for scheduling
    calibration = tiny.path / ".vibecheck" / "calibration.sqlite"
    assert calibration.exists()
    with sqlite3.connect(calibration) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        assert tables == {"reference_times", "reference_bounds", "task_times"}
        assert conn.execute("select count(*) from reference_times").fetchone()[0] == 0
        assert conn.execute("select count(*) from reference_bounds").fetchone()[0] == 0
        assert conn.execute("select count(*) from task_times").fetchone()[0] == 3  # 3 tasks
    assert groups[("single", 1)]["pass_at_1"] == 1.0
    assert groups[("single", 1)]["fr"] == 0.0
    # baseline judges all three instructions of each task: add 2/3, sign 2/3 (doc_1 fails),
    # squares 1/3 (logic_8 and doc_1 fail)
    assert groups[("baseline", 0)]["instruction_if"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3) / 3)
    assert groups[("single", 1)]["if_by_instruction"] == {
        "doc_1": {"if": 0.0, "passed": 0, "n": 1},
        "logic_3": {"if": 1.0, "passed": 1, "n": 1},
        "logic_8": {"if": 0.0, "passed": 0, "n": 1},
    }
    assert report["run"]["ruff_version"]
    assert report["suites"][0]["name"] == "tiny"
    (item,) = [i for i in report_items(report) if i["nodeid"] == "tiny::t/sign[reference-single-k1]"]
    assert item["outcome"] == "passed"
    assert item["passed"] is True
    assert item["turns"][0]["tests"]["status"] == "passed"
    assert item["turns"][0]["verdicts"] == [
        {"position": 1, "id": "logic_3", "passed": True, "error": None, "violations": []}
    ]
    xmlschema.XMLSchema(str(XSD)).validate(str(tiny.path / "out" / "junit.xml"))


def test_error_outcomes_are_errors_and_no_code_is_a_failure(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    script = write_script(
        tiny.path / "script.json",
        "bot",
        rules=[
            {"task_id": "t/add", "error": "rate_limit"},
            {"task_id": "t/sign", "error": "api"},
            {"task_id": "t/squares", "reply": "I am sorry, I cannot write that function."},
        ],
    )
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest(
        "--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline", "--vibe-report", "r.json",
    )
    result.assert_outcomes(failed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*_ ERROR at setup of tiny::t/add[[]bot-baseline[]] _*",
        "vibecheck infrastructure error (rate_limit): scripted:bot: rate limited (HTTP 429) for task 't/add' (baseline)",
        "(not a model failure: this item is left out of the metrics)",
    ])
    result.stdout.fnmatch_lines([
        "vibecheck infrastructure error (api_error): scripted:bot: HTTP 500 for task 't/sign' (baseline)",
    ])
    result.stdout.fnmatch_lines([
        "t/squares with scripted:bot (baseline): failed",
        "  the reply has no code (extraction: whole-reply): the tests fail and every instruction counts as not followed",
        "  tests: failed*",
    ])
    result.stdout.fnmatch_lines([
        "tiny*scripted:bot*baseline*0*1/3*0.0%*-*0.0%*0.0%*2*1*0*0.0%",
        "infrastructure errors (not in the metrics): 2 (api_error 1, rate_limit 1)",
    ])
    report = load_report(tiny.path / "r.json")
    g = report["aggregates"][0]
    assert (g["items"], g["evaluated"], g["errors"], g["no_code"]) == (3, 1, 2, 1)
    assert g["error_kinds"] == {"api_error": 1, "rate_limit": 1}
    assert g["pass_at_1"] == 0.0
    errors = {i["task_id"]: i["error"]["kind"] for i in report_items(report) if i["error"]}
    assert errors == {"t/add": "rate_limit", "t/sign": "api_error"}
    (sq,) = [i for i in report_items(report) if i["task_id"] == "t/squares"]
    assert sq["no_code"] is True
    assert {v["violations"][0]["rule"] for v in sq["turns"][0]["verdicts"]} == {"NO-CODE"}


DEEP = "x = " + "-" * 200_000 + "1\n"  # too deep for CPython's parser (MemoryError/RecursionError)


def test_code_too_deep_for_the_parser_is_no_code_not_a_crash(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    script = write_script(
        tiny.path / "script.json",
        "bot",
        rules=[
            {"task_id": "t/add", "reply": DEEP},
            {"task_id": "t/sign", "reply": fenced(DEEP)},
        ],
        default="@reference",
    )
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest(
        "--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline", "--vibe-report", "r.json",
    )
    result.assert_outcomes(failed=3)  # no error: t/squares (the reference) misses instructions
    result.stdout.fnmatch_lines([
        "t/add with scripted:bot (baseline): failed",
        "  the reply has no code (extraction: whole-reply): the tests fail and every instruction counts as not followed",
    ])
    result.stdout.fnmatch_lines([
        "t/sign with scripted:bot (baseline): failed",
        "  the reply has no code (extraction: fenced-first): the tests fail and every instruction counts as not followed",
    ])
    report = load_report(tiny.path / "r.json")
    assert {i["task_id"]: i["no_code"] for i in report["items"]} == {"t/add": True, "t/sign": True, "t/squares": False}
    assert [i["turns"][0]["tests"]["status"] for i in report["items"]] == ["failed"] * 2 + ["passed"]
    assert report["aggregates"][0]["errors"] == 0


def test_exact_single_and_multi_turn_messages(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tiny.path / "requests.jsonl"
    script = write_script(
        tiny.path / "script.json",
        "bot",
        rules=[
            {"label": "baseline", "reply": "REPLY-0\n" + fenced(ADD)},
            {"label": "multi-k1", "reply": "REPLY-1\n" + fenced(ADD)},
            {"label": "multi-k2", "reply": "REPLY-2\n" + fenced(ADD)},
            {"label": "single-k2", "reply": fenced(ADD)},
        ],
        default=None,
        log=log,
    )
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest(
        "--vibe-model", "scripted:bot", *SUITE, "--vibe-tasks", "t/add", "--vibe-k", "2",
    )
    result.assert_outcomes(failed=3)
    requests = _log(log)
    prompt = "Write a Python function add(a, b) that returns a + b."
    by_label = {r["label"]: r for r in requests}
    # the baseline request is made once: multi-turn turn 0 is served from the cache
    assert sorted(r["label"] for r in requests) == ["baseline", "multi-k1", "multi-k2", "single-k2"]
    assert by_label["baseline"]["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]
    assert by_label["single-k2"]["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            "content": prompt
            + "\n\nAdditionally, ensure your code meets the following requirements:\n"
            "1. Add type annotations to all function arguments and return values, and do not use typing.Any.\n"
            "2. Ensure each function has at most 2 branches.",
        },
    ]
    assert by_label["multi-k2"]["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "REPLY-0\n" + fenced(ADD)},
        {"role": "user", "content": "Add type annotations to all function arguments and return values, without using typing.Any."},
        {"role": "assistant", "content": "REPLY-1\n" + fenced(ADD)},
        {"role": "user", "content": "Refactor the code so that each function has at most 2 branches."},
    ]
    assert by_label["multi-k1"]["messages"] == by_label["multi-k2"]["messages"][:4]
    assert {r["temperature"] for r in requests} == {0.0}
    assert {r["max_tokens"] for r in requests} == {4096}


def test_cache_modes(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tiny.path / "requests.jsonl"
    script = write_script(tiny.path / "script.json", "bot", log=log, usage={"input_tokens": 11, "output_tokens": 7})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    args = ("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline,multi", "--vibe-k", "1")
    # use, empty cache: baseline and multi turn 0 share a generation -> 3 + 3 requests, 3 hits
    result = tiny.runpytest(*args, "--vibe-report", "use1.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert len(_log(log)) == 6
    gen = load_report(tiny.path / "use1.json")["generation"]
    assert (gen["requested"], gen["cached"], gen["input_tokens"]) == (9, 3, 66)
    result.stdout.fnmatch_lines([
        "generations: 9 requested, 3 from the cache (33.3% of 9 looked up)",
        "vibecheck: spent 66 input + 42 output tokens on 6 model requests",
    ])
    assert "tokens spent" not in result.stdout.str()
    # use again: everything from the cache, nothing spent
    tiny.runpytest(*args, "--vibe-report", "use2.json")
    assert len(_log(log)) == 6
    gen = load_report(tiny.path / "use2.json")["generation"]
    assert (gen["requested"], gen["cached"], gen["input_tokens"]) == (9, 9, 0)
    # only: a full cache works offline
    tiny.runpytest(*args, "--vibe-cache-mode", "only", "--vibe-report", "only.json")
    assert len(_log(log)) == 6
    assert load_report(tiny.path / "only.json")["generation"]["cached"] == 9
    # refresh: regenerated once per run (turn 0 still shared within the run)
    tiny.runpytest(*args, "--vibe-cache-mode", "refresh", "--vibe-report", "refresh.json")
    assert len(_log(log)) == 12
    assert load_report(tiny.path / "refresh.json")["generation"]["cached"] == 3
    # off: no cache at all, so the baseline and turn 0 are generated separately
    tiny.runpytest(*args, "--vibe-cache-mode", "off", "--vibe-report", "off.json")
    assert len(_log(log)) == 21
    gen = load_report(tiny.path / "off.json")["generation"]
    assert (gen["requested"], gen["looked_up"], gen["cached"], gen["hit_rate"]) == (9, 0, 0, None)
    # only with an empty cache: every item is a cache_miss error, never a failure
    result = tiny.runpytest(*args, "--vibe-cache-mode", "only", "--vibe-cache", "empty.sqlite", "--vibe-report", "miss.json")
    result.assert_outcomes(errors=6)
    assert len(_log(log)) == 21
    result.stdout.fnmatch_lines(["vibecheck infrastructure error (cache_miss): cache mode 'only': no cached reply for task 't/add' (baseline)*"])
    kinds = {i["error"]["kind"] if i["error"] else None for i in report_items(load_report(tiny.path / "miss.json"))}
    assert kinds == {"cache_miss"}


def test_last_failed_reruns_only_the_failed_items(tiny: pytest.Pytester) -> None:
    args = ("--vibe-model", "reference", "--vibe-suite", "suite", "--vibe-protocol", "single", "--vibe-k", "1")
    tiny.runpytest(*args).assert_outcomes(passed=1, failed=2)
    result = tiny.runpytest(*args, "--lf", "-v")
    result.assert_outcomes(failed=2, deselected=1)
    result.stdout.fnmatch_lines(["*run-last-failure: rerun previous 2 failures*"])
    assert "t/sign" not in "\n".join(ln for ln in result.outlines if "FAILED" in ln or "PASSED" in ln)


def test_skip_when_k_exceeds_the_instructions(tiny: pytest.Pytester) -> None:
    result = tiny.runpytest("--vibe-model", "reference", *SUITE, "--vibe-protocol", "single", "--vibe-k", "4",
                            "--vibe-tasks", "t/add", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*vibecheck: t/add has 3 instructions, fewer than k = 4*"])


def test_progress_lines_and_what_was_spent(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    script = write_script(tiny.path / "script.json", "bot", usage={"input_tokens": 1200, "output_tokens": 300})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline,multi",
                            "--vibe-k", "1", "--vibe-progress", "always")
    # multi-turn turn 0 is the baseline's request (from the cache): tokens count once; which
    # of the two items got the reply and which the cache hit depends on the prefetch threads
    result.stdout.fnmatch_lines([
        "vibecheck: 1/6 items (17%); generations 1 requested, * from the cache; tokens * in / * out; elapsed *, ETA *",
        "vibecheck: 2/6 items (33%); generations 3 requested, 1 from the cache; tokens * in / * out; *",
        "vibecheck: 6/6 items (100%); generations 9 requested, 3 from the cache; tokens 7.2k in / 1.8k out; elapsed *, ETA 0m00s",
    ])
    result.stdout.fnmatch_lines(["*vibecheck summary*", "vibecheck: spent 7,200 input + 1,800 output tokens on 6 model requests"])
    assert "_get_progress_information_message" not in Path(__file__).parent.parent.joinpath(
        "pytest_vibecheck", "report", "session.py").read_text(encoding="utf-8")


def test_progress_off_prints_no_progress_lines(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(write_script(tiny.path / "script.json", "bot")))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline",
                            "--vibe-progress", "off")
    assert result.ret == 1
    assert not [ln for ln in result.outlines if ln.startswith("vibecheck: 1/3 items")]


def test_budget_stops_new_requests_and_the_rest_is_not_run(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tiny.path / "log.jsonl"
    script = write_script(tiny.path / "script.json", "bot", log=log, usage={"input_tokens": 1000, "output_tokens": 500})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline,multi",
                            "--vibe-k", "1", "--vibe-concurrency", "1", "--vibe-budget", "3k", "-rs",
                            "--vibe-report", "r.json")
    # t/add baseline (1,500 tokens) and multi-turn (turn 0 cached, turn 1: 3,000 in all); then stop
    assert len(_log(log)) == 2
    result.assert_outcomes(passed=0, failed=2, skipped=4)
    assert result.ret == 1
    reason = "--vibe-budget 3k reached (3,000 tokens spent, budget 3,000): no further requests are sent"
    result.stdout.fnmatch_lines([
        f"SKIPPED [[]4[]] *: vibecheck: not run: {reason}",
        "*= vibecheck summary =*",
        "vibecheck: spent 2,000 input + 1,000 output tokens on 2 model requests; budget 3k, reached",
        f"vibecheck: stopped the run: {reason}; 4 items not run",
    ])
    report = load_report(tiny.path / "r.json")
    skipped = [i for i in report_items(report) if i["outcome"] == "skipped"]
    assert {i["skip_reason"] for i in skipped} == {f"vibecheck: not run: {reason}"}
    # the JSON report says what the summary line says, and that the budget stopped the run
    assert report["run"]["spend"] == {
        "requests": 2, "input_tokens": 2000, "output_tokens": 1000, "cache_hits": 1, "usd": None,
        "prices_as_of": "2025-10", "price": "list", "budget": "3k", "budget_stopped": True,
        "models": {"scripted:bot": {"requests": 2, "input_tokens": 2000, "output_tokens": 1000, "usd": None}},
    }


def test_the_json_report_states_what_was_spent_in_dollars(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model with a list price (scripted under gpt-5's name: $1.25 / $10 per 1M tokens)."""
    script = write_script(tiny.path / "script.json", "gpt-5", usage={"input_tokens": 1000, "output_tokens": 500})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:gpt-5", *SUITE, "--vibe-protocol", "baseline",
                            "--vibe-budget", "$5", "--vibe-report", "r.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "vibecheck: spent 3,000 input + 1,500 output tokens on 3 model requests ($0.0187 at list prices); budget $5",
    ])
    usd = (3000 * 1.25 + 1500 * 10.0) / 1_000_000  # 0.01875
    assert load_report(tiny.path / "r.json")["run"]["spend"] == {
        "requests": 3, "input_tokens": 3000, "output_tokens": 1500, "cache_hits": 0, "usd": usd,
        "prices_as_of": "2025-10", "price": "list", "budget": "$5", "budget_stopped": False,
        "models": {"scripted:gpt-5": {"requests": 3, "input_tokens": 3000, "output_tokens": 1500, "usd": usd}},
    }


def test_one_account_of_spend_when_a_budget_cuts_a_conversation_short(
    tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget stops a multi-turn item after two paid turns: its turns are not in the report,
    but they were paid for; the terminal (progress, last line), the JSON report and the budget
    check give the same 3,000 tokens, and no item-sum figure is shown as spent beside them."""
    script = write_script(tiny.path / "script.json", "bot", usage={"input_tokens": 1000, "output_tokens": 500})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "multi",
                            "--vibe-k", "2", "--vibe-concurrency", "1", "--vibe-budget", "3k",
                            "--vibe-progress", "always", "--vibe-report", "r.json")
    out = result.stdout.str()
    reason = "--vibe-budget 3k reached (3,000 tokens spent, budget 3,000): no further requests are sent"
    result.stdout.fnmatch_lines([
        "vibecheck: spent 2,000 input + 1,000 output tokens on 2 model requests; budget 3k, reached",
        f"vibecheck: stopped the run: {reason}; * items not run",
    ])
    assert "tokens spent:" not in out  # today's item sum ("0 input, 0 output") is gone
    progress = [ln for ln in result.outlines if ln.startswith("vibecheck: ") and " items (" in ln]
    assert progress and all("tokens 2.0k in / 1.0k out" in ln or "tokens 0 in" in ln for ln in progress)
    spend = load_report(tiny.path / "r.json")["run"]["spend"]
    assert (spend["input_tokens"], spend["output_tokens"], spend["requests"]) == (2000, 1000, 2)


def test_a_small_dollar_budget_is_shown_to_its_precision(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """$0.0001 against gpt-5's list price ($1.25 / $10 per 1M): one request of 1,000 + 500
    tokens costs $0.00625; neither amount reads as $0.00."""
    script = write_script(tiny.path / "script.json", "gpt-5", usage={"input_tokens": 1000, "output_tokens": 500})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:gpt-5", *SUITE, "--vibe-protocol", "baseline",
                            "--vibe-concurrency", "1", "--vibe-budget", "$0.0001")
    reason = ("--vibe-budget $0.0001 reached ($0.00625 spent at list prices, budget $0.0001): "
              "no further requests are sent")
    result.stdout.fnmatch_lines([
        "vibecheck: spent 1,000 input + 500 output tokens on 1 model requests ($0.00625 at list prices); "
        "budget $0.0001, reached",
        f"vibecheck: stopped the run: {reason}; 2 items not run",
    ])
    assert "$0.00 " not in result.stdout.str()


def test_dollar_budget_needs_a_known_price(tiny: pytest.Pytester) -> None:
    result = tiny.runpytest("--vibe-model", "reference", *SUITE, "--vibe-budget", "$5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: vibecheck: --vibe-budget $5: no list price is known for reference, so a dollar budget "
        "cannot be checked; give it in tokens (e.g. --vibe-budget 2M)",
    ])


def test_max_errors_stops_the_run(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tiny.path / "log.jsonl"
    script = write_script(tiny.path / "script.json", "bot", log=log, rules=[{"error": "api"}])
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline,single",
                            "--vibe-k", "1", "--vibe-concurrency", "1", "--vibe-max-errors", "1")
    assert len(_log(log)) == 2
    result.assert_outcomes(errors=2, skipped=4)
    result.stdout.fnmatch_lines([
        "vibecheck: stopped the run: 2 infrastructure errors, more than --vibe-max-errors 1 (1 of 6 "
        "items): no further requests are sent; 4 items not run",
    ])


def test_a_replay_run_spends_nothing(pytester: pytest.Pytester) -> None:
    """Regression (fresh-clone trial): a replay of a real recording carries that run's token
    counts, and the end of the run said 'vibecheck: spent 494 input + 270 output tokens on 2
    model requests' for a run that sent nothing. Offline backends spend nothing."""
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--vibe-model=replay:qwen2.5-coder-0.5b-instruct-q4",
        "--vibe-suite=bigvibebench-lite", "--vibe-protocol=baseline", "--vibe-limit=2",
        "--vibe-max-tokens=1024", "-q", "--tb=no", "--vibe-no-fail-items", "--vibe-report=r.json",
    )
    assert result.ret == 0
    out = result.stdout.str()
    assert "2 from offline models" in out
    assert not [ln for ln in result.outlines if ln.startswith("vibecheck: spent")]
    assert load_report(pytester.path / "r.json")["run"]["spend"] == {
        "requests": 0, "input_tokens": 0, "output_tokens": 0, "cache_hits": 0, "usd": 0.0,
        "prices_as_of": "2025-10", "price": "list", "budget": None, "budget_stopped": False, "models": {},
    }


def test_a_corrupt_execution_cache_stops_the_run_before_the_first_request(
    tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tiny.path / "log.jsonl"
    script = write_script(tiny.path / "script.json", "bot", log=log)
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    bad = tiny.path / ".vibecheck" / "exec-cache.sqlite"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not a database" * 100)
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _log(log) == []  # nothing was paid for
    assert (
        f"ERROR: vibecheck: execution cache {bad}: not a usable SQLite database (file is not a "
        "database); move it away or delete it (it only holds cached test results)"
    ) in result.errlines


def test_a_corrupt_calibration_store_is_one_warning_and_the_run_goes_on(tiny: pytest.Pytester) -> None:
    bad = tiny.path / ".vibecheck" / "calibration.sqlite"
    bad.parent.mkdir()
    bad.write_bytes(b"this is not a database" * 100)
    result = tiny.runpytest("--vibe-model", "reference", *SUITE, "--vibe-protocol", "baseline,single",
                            "--vibe-k", "1")
    result.assert_outcomes(passed=1, failed=5)
    lines = [ln for ln in result.outlines + result.errlines if "calibration store" in ln]
    assert lines == [
        f"vibecheck: warning: calibration store {bad}: not a usable SQLite database (file is not a "
        "database); move it away or delete it (it only holds measured reference times); this run "
        "uses the default time limits (uncalibrated)"
    ]


def test_a_reply_importing_a_library_missing_here_is_skipped_not_an_error(
    tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task of the standard library whose reply imports a BigCodeBench library this
    environment lacks (the 0.5B model imports numpy in BigCodeBench/8): the header names the
    absent libraries, the item is skipped with the library named, and --vibe-no-fail-items
    exits 0 (it was an infrastructure error, exit 1)."""
    from pytest_vibecheck.execute.envcheck import absent_libraries

    absent = absent_libraries()
    if not absent:
        pytest.skip("every BigCodeBench library is installed here")
    lib = absent[0]
    script = write_script(tiny.path / "script.json", "bot", rules=[
        {"task_id": "t/add", "reply": fenced(f"import {lib}\n\n\n" + ADD)},
    ])  # fmt: skip
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline",
                            "--vibe-no-fail-items", "-rs")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=0, failed=2, skipped=1)
    result.stdout.fnmatch_lines([
        f"vibecheck: execution environment *: 3 of 3 tiny tasks can run; a reply that imports a "
        f"BigCodeBench library not installed here ({lib}*) is skipped; executor local",
        f"SKIPPED [[]1[]] *: vibecheck: environment: missing module {lib} (pip install *) "
        "(imported by the reply)",
    ])


def test_after_a_fatal_stop_the_progress_shows_no_eta(tiny: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    script = write_script(tiny.path / "script.json", "bot", usage={"input_tokens": 1000, "output_tokens": 500})
    monkeypatch.setenv("VIBECHECK_SCRIPTED", str(script))
    result = tiny.runpytest("--vibe-model", "scripted:bot", *SUITE, "--vibe-protocol", "baseline,single",
                            "--vibe-k", "1", "--vibe-concurrency", "1", "--vibe-budget", "1500",
                            "--vibe-progress", "always")
    lines = [ln for ln in result.outlines if ln.startswith("vibecheck: ") and " items (" in ln]
    assert lines and lines[-1].startswith("vibecheck: 6/6 items (100%)")
    assert lines[-1].endswith(", stopped") and "ETA" not in lines[-1]
