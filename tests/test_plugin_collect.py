"""Collection: node ids, markers, -k / -m selection, samples, task filters, ordinary suites untouched."""

from __future__ import annotations

import pytest
from plugin_helpers import write_tiny_suite

from pytest_vibecheck.plugin.items import item_param, model_labels

BASE = ("--vibe-model", "reference", "--vibe-suite", "suite", "-p", "no:cacheprovider")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    write_tiny_suite(pytester.path / "suite")
    return pytester


def _ids(result: pytest.RunResult) -> list[str]:
    return [ln for ln in result.outlines if "::" in ln]


def test_without_a_model_ordinary_tests_run_and_nothing_else(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "vibecheck summary" not in out
    assert "vibecheck:" not in out
    assert "collected 1 item" in out


def test_node_ids_are_stable_and_readable(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q")
    assert _ids(result) == [
        f"tiny::{task}[reference-{p}]"
        for task in ("t/add", "t/sign", "t/squares")
        for p in ("baseline", "single-k1", "single-k3", "multi-k1", "multi-k3")
    ]


def test_keyword_selects_by_instruction_id(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-k", "logic_8")
    # logic_8 is position 1 of t/squares only: every t/squares item judges it
    assert _ids(result) == [
        f"tiny::t/squares[reference-{p}]"
        for p in ("baseline", "single-k1", "single-k3", "multi-k1", "multi-k3")
    ]
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-k", "doc_1 and vibe_single_turn")
    assert _ids(result) == [
        "tiny::t/add[reference-single-k1]",
        "tiny::t/add[reference-single-k3]",
        "tiny::t/sign[reference-single-k3]",
        "tiny::t/squares[reference-single-k3]",
    ]


def test_protocol_and_category_markers(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-m", "vibe_multi_turn")
    assert len(_ids(result)) == 6
    assert all("-multi-" in i for i in _ids(result))
    # style_3 (t/add) and style_5 (t/sign) are at position 3: judged by baseline and k = 3
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-m", "vibe_style")
    assert _ids(result) == [
        "tiny::t/add[reference-baseline]",
        "tiny::t/add[reference-single-k3]",
        "tiny::t/add[reference-multi-k3]",
        "tiny::t/sign[reference-baseline]",
        "tiny::t/sign[reference-single-k3]",
        "tiny::t/sign[reference-multi-k3]",
    ]
    # one marker per judged instruction id, too: style_3 is judged by t/add's baseline and k = 3
    result = suite.runpytest(*BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-m", "vibe_style_3",
                             "--strict-markers")
    assert _ids(result) == [f"tiny::t/add[reference-{p}]" for p in ("baseline", "single-k3", "multi-k3")]
    result = suite.runpytest(
        *BASE, "--vibe-k", "1,3", "--collect-only", "-q", "-m", "vibecheck(protocol='single', k=1)"
    )
    assert _ids(result) == [f"tiny::{t}[reference-single-k1]" for t in ("t/add", "t/sign", "t/squares")]


def test_samples_tasks_and_limit(suite: pytest.Pytester) -> None:
    result = suite.runpytest(
        *BASE, "--vibe-protocol", "single", "--vibe-k", "2", "--vibe-samples", "2",
        "--vibe-tasks", "t/s*", "--vibe-limit", "1", "--collect-only", "-q",
    )
    assert _ids(result) == ["tiny::t/sign[reference-single-k2-s0]", "tiny::t/sign[reference-single-k2-s1]"]


def test_explicit_paths_are_collected_beside_the_benchmark(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_plain="def test_one():\n    assert True\n")
    suite.makeini("[pytest]\ntestpaths = .\n")
    # from testpaths: only the benchmark
    result = suite.runpytest(*BASE, "--vibe-protocol", "baseline", "--collect-only", "-q")
    assert "test_plain.py::test_one" not in result.stdout.str()
    assert len(_ids(result)) == 3
    # given explicitly: both
    result = suite.runpytest(*BASE, "--vibe-protocol", "baseline", "--collect-only", "-q", "test_plain.py")
    assert _ids(result)[0] == "test_plain.py::test_one"
    assert len(_ids(result)) == 4


def test_header_lines(suite: pytest.Pytester) -> None:
    result = suite.runpytest(*BASE, "--vibe-protocol", "baseline", "--collect-only")
    result.stdout.fnmatch_lines([
        "vibecheck: models reference; suites suite; profile paper; protocols baseline; k 5; samples 1; generation cache *cache.sqlite (use)",
        "*vibecheck: 3 items*",
    ])


def test_model_labels() -> None:
    assert model_labels(["openai:gpt-5", "reference", "replay:/data/rec/qwen.jsonl.gz"]) == {
        "openai:gpt-5": "gpt-5",
        "reference": "reference",
        "replay:/data/rec/qwen.jsonl.gz": "qwen",
    }
    # colliding short labels keep the full spec
    assert model_labels(["openai:m", "anthropic:m"]) == {"openai:m": "openai:m", "anthropic:m": "anthropic:m"}
    assert item_param("gpt-5", "single", 5, 0, 1) == "gpt-5-single-k5"
    assert item_param("gpt-5", "baseline", 0, 2, 3) == "gpt-5-baseline-s2"
