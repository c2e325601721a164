"""Augmentation: seeding, the scan, the rules selector, the LLM selectors on recorded replies, CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from augment_helpers import (
    REPLY_BAD_IDS_AND_PARAMS,
    REPLY_FEWER,
    REPLY_OK,
    REPLY_UNPARSEABLE,
)
from generation_helpers import FakeAPI, Response, completion, fake_api, message

from pytest_vibecheck.cli import main as cli
from pytest_vibecheck.errors import UnknownIdError, VibecheckError
from pytest_vibecheck.execute.spec import TestCase, TestSpec
from pytest_vibecheck.generate.backends import BackendError, BackendSettings, RateLimitError
from pytest_vibecheck.generate.backends.anthropic_backend import AnthropicBackend
from pytest_vibecheck.generate.backends.openai_backend import OpenAIBackend
from pytest_vibecheck.generate.cache import cache_key
from pytest_vibecheck.generate.chat import ChatModel
from pytest_vibecheck.suites.augment import (
    SeedStream,
    augment,
    augment_problem,
    category_shares,
    draw_params,
    permutation,
    task_seed,
)
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.selectors import (
    Judgement,
    SelectorError,
    TaskJudgements,
    make_selector,
)
from pytest_vibecheck.suites.selectors.llm import (
    SYSTEM_PROMPT,
    LLMSelector,
    build_prompt,
    parse_reply,
)
from pytest_vibecheck.suites.selectors.rules import RulesSelector
from pytest_vibecheck.suites.store import encode_records, load_suite
from pytest_vibecheck.verify.instructions import Instruction, default_registry, get_instruction

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
IDS = default_registry().ids()


def bcb(
    code: str, *, libs: Sequence[str] = (), raises: Sequence[str] = (), task_id: str = "T/1"
) -> Problem:
    return Problem(
        suite="t",
        task_id=task_id,
        prompt="Do the task.",
        test=TestSpec(kind="bigcodebench-unittest", code="", entry_point="task_func"),
        entry_point="task_func",
        canonical_solution=code,
        libs=tuple(libs),
        metadata={"doc_struct": {"description": ["Short."], "raises": list(raises)}},
    )


def lcb_stdin(text: str, task_id: str = "abc1") -> Problem:
    return Problem(
        suite="t",
        task_id=task_id,
        prompt=text,
        test=TestSpec(kind="stdin", cases=(TestCase("1\n", "1\n"),)),
        metadata={"difficulty": "easy"},
    )


# ---------------------------------------------------------------- seeding


def test_seeds_and_permutations_are_fixed_values() -> None:
    assert task_seed(2510, "BigCodeBench/0") == "325d72d4884ccf69"
    assert permutation(IDS, 2510, "BigCodeBench/0")[:8] == [
        "error_2", "logic_4", "logic_2", "doc_2", "style_6", "logic_9", "logic_6", "style_2",
    ]  # fmt: skip
    assert sorted(permutation(IDS, 0, "x")) == sorted(IDS)
    stream = SeedStream("a")
    assert [stream.randbelow(10) for _ in range(8)] == [9, 4, 6, 3, 1, 3, 0, 4]
    conventions = [
        draw_params(get_instruction("doc_3"), 2510, f"T/{i}")["convention"] for i in range(4)
    ]
    assert conventions == ["google", "google", "pep257", "numpy"]
    assert draw_params(get_instruction("logic_3"), 2510, "T/0") == {
        "max_branches": 2
    }  # the default


def test_permutation_does_not_depend_on_hash_randomisation() -> None:
    code = "from pytest_vibecheck.suites.augment import permutation; from pytest_vibecheck.verify.instructions import default_registry; print(permutation(default_registry().ids(), 7, 'task'))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert outs == {repr(permutation(IDS, 7, "task")) + "\n"}


# ---------------------------------------------------------------- the scan


class AllRelevant:
    name = "all"
    version = "1"

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        return TaskJudgements({i.id: Judgement(True, "t", "test") for i in order})


class Only:
    name = "only"
    version = "1"

    def __init__(self, ids: set[str]) -> None:
        self.ids = ids

    def judge_task(self, problem: Problem, order: Sequence[Instruction], k: int) -> TaskJudgements:
        return TaskJudgements(
            {
                i.id: Judgement(
                    i.id in self.ids, "t", "listed" if i.id in self.ids else "not listed"
                )
                for i in order
            }
        )


def test_scan_keeps_first_k_relevant_and_records_conflicts() -> None:
    # seed 1, task T/0: logic_5, doc_5, doc_4, doc_3, library_1, logic_4, error_2, ...
    assert permutation(IDS, 1, "T/0")[:7] == [
        "logic_5",
        "doc_5",
        "doc_4",
        "doc_3",
        "library_1",
        "logic_4",
        "error_2",
    ]
    prob = augment_problem(bcb("x = 1\n", task_id="T/0"), k=5, seed=1, selector=AllRelevant())
    decisions = prob.provenance["decisions"]
    assert [(d["id"], d["decision"]) for d in decisions] == [
        ("logic_5", "kept"), ("doc_5", "kept"), ("doc_4", "kept"), ("doc_3", "conflict"),
        ("library_1", "kept"), ("logic_4", "kept"),
    ]  # fmt: skip
    assert decisions[3]["reason"] == "conflicts with doc_5, kept earlier"
    assert [r.id for r in prob.instructions] == [
        "logic_5",
        "doc_5",
        "doc_4",
        "library_1",
        "logic_4",
    ]
    assert prob.provenance["k"] == 5
    assert prob.provenance["task_seed"] == task_seed(1, "T/0")
    assert prob.provenance["taxonomy_version"] == "vericode-1"


def test_fewer_than_k_when_few_are_relevant() -> None:
    prob = augment_problem(bcb("x = 1\n"), k=5, seed=3, selector=Only({"style_1", "doc_4"}))
    assert [r.id for r in prob.instructions] == [
        i for i in permutation(IDS, 3, "T/1") if i in ("style_1", "doc_4")
    ]
    assert (
        prob.provenance["fewer_than_k"]
        == "kept 2 of 5: no more relevant, non-conflicting instructions"
    )
    assert len(prob.provenance["decisions"]) == 30  # the whole list was scanned once


def test_same_seed_gives_byte_identical_records_and_other_seeds_differ() -> None:
    problems = [
        bcb(f"import os\ndef task_func(p):\n    return os.listdir(p)[{n}]\n", task_id=f"T/{n}")
        for n in range(20)
    ]
    a = encode_records(augment(problems, k=5, seed=11, selector=RulesSelector()))
    b = encode_records(augment(problems, k=5, seed=11, selector=RulesSelector()))
    c = encode_records(augment(problems, k=5, seed=12, selector=RulesSelector()))
    assert a == b
    assert a != c


def test_k_out_of_range() -> None:
    with pytest.raises(VibecheckError, match="k must be between 1 and 30, got 0"):
        augment([bcb("x = 1\n")], k=0, seed=0, selector=RulesSelector())


def test_category_shares() -> None:
    probs = [
        augment_problem(
            bcb("x = 1\n"), k=5, seed=3, selector=Only({"style_1", "doc_4", "logic_5", "doc_1"})
        )
    ]
    assert category_shares(probs) == {
        "logic": 0.25,
        "style": 0.25,
        "doc": 0.5,
        "error": 0.0,
        "library": 0.0,
    }
    assert category_shares([]) == {
        "logic": 0.0,
        "style": 0.0,
        "doc": 0.0,
        "error": 0.0,
        "library": 0.0,
    }


# ---------------------------------------------------------------- the rules selector


def judge(prob: Problem, iid: str) -> Judgement:
    return RulesSelector().judge(prob, get_instruction(iid))


FS = "import os\ndef task_func(d):\n    return os.path.join(d, 'x')\n"
RAISING = """def task_func(x):
    try:
        return int(x)
    except TypeError as err:
        raise ValueError(f"bad value {x}")
"""
BRANCHY = """def task_func(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    if x == 0:
        return 0
    return None
"""


def test_rules_library_and_error_evidence() -> None:
    assert judge(bcb(FS), "library_1") == Judgement(
        True, "ref:fs-calls", "reference uses os.path.join (pathlib replaces them)"
    )
    assert judge(bcb("def task_func():\n    return 1\n"), "library_1").relevant is False
    pandas = bcb(
        "import pandas as pd\ndef task_func():\n    return pd.DataFrame()\n", libs=["pandas"]
    )
    assert judge(pandas, "library_2") == Judgement(
        True,
        "lib:pandas",
        "the task uses pandas; model code breaks it in 42% of such tasks: relevant",
    )
    idioms = bcb(
        "import pandas as pd\ndef task_func():\n    df = pd.DataFrame()\n    return df\n",
        libs=["pandas"],
    )
    assert judge(idioms, "library_2") == Judgement(
        True, "ref:pandas-idioms", "reference names a DataFrame df, uses inplace=True or .values"
    )
    assert judge(bcb(FS), "library_2") == Judgement(
        False,
        "lib:no-pandas",
        "the task does not use pandas; model code breaks it in 1% of such tasks: not relevant",
    )
    assert judge(bcb(RAISING), "error_1") == Judgement(
        True, "ref:raise-in-except", "reference raises inside 1 except clause(s)"
    )
    assert judge(bcb(RAISING), "error_2") == Judgement(
        True, "ref:raise-msg", "reference passes literal messages to 1 exception(s)"
    )
    assert judge(bcb(FS, raises=["ValueError: if d is empty"]), "error_4").rule == "doc:raises"
    assert judge(bcb(FS), "error_4").relevant is False
    assert (
        judge(
            bcb(
                "def task_func(p):\n    try:\n        open(p)\n    except IOError:\n        pass\n"
            ),
            "error_3",
        ).rule
        == "ref:alias"
    )


def test_rules_threshold_and_calibration() -> None:
    pandas = bcb(
        "import pandas as pd\ndef task_func():\n    return pd.DataFrame()\n", libs=["pandas"]
    )
    strict = RulesSelector(threshold=0.5)
    assert strict.judge(pandas, get_instruction("library_2")) == Judgement(
        False,
        "lib:pandas",
        "the task uses pandas; model code breaks it in 42% of such tasks: not relevant",
    )
    # a violation by the reference is relevant whatever the threshold
    assert (
        RulesSelector(threshold=1.0).judge(bcb(FS), get_instruction("library_1")).relevant is True
    )
    # buckets without measurements: not relevant, unless the rule states a prior (reply format)
    empty = RulesSelector(plausibility={})
    assert empty.judge(pandas, get_instruction("library_2")) == Judgement(
        False, "lib:pandas", "the task uses pandas; no evidence it would change the code"
    )
    assert empty.judge(pandas, get_instruction("doc_4")) == Judgement(
        True, "reply:format", "a default reply wraps code in Markdown fences with prose"
    )


def test_rules_logic_limits() -> None:
    assert judge(bcb(BRANCHY), "logic_3") == Judgement(
        True, "ref:branches", "task_func has 3 branches > 2"
    )
    two = "def task_func(x):\n    if x:\n        return 1\n    if x is None:\n        return 2\n    return 3\n"
    assert judge(bcb(two), "logic_3").rule == "ref:branches-at-limit"
    assert (
        judge(bcb("def task_func(x):\n    if x:\n        return 1\n    return 2\n"), "logic_3").rule
        == "ref:branches-ok"
    )
    nested = "def task_func(xs):\n    for x in xs:\n        if x:\n            return x\n    return None\n"
    assert judge(bcb(nested), "logic_2") == Judgement(
        True, "ref:nesting", "task_func has 2 nested block level(s) > 1"
    )
    assert judge(bcb(BRANCHY), "logic_9").relevant is False
    assert (
        judge(
            bcb("def task_func(a, b):\n    if a and b:\n        return 1\n    return 0\n"),
            "logic_9",
        ).rule
        == "ref:bool-ops"
    )


def test_rules_style_and_doc() -> None:
    assert judge(bcb(FS), "style_1").rule == "ref:pep8"  # E302: no blank lines before def
    assert judge(bcb(FS), "style_5") == Judgement(
        True, "ref:single-quotes", "reference has 1 single-quoted string literal(s)"
    )
    assert (
        judge(bcb("def task_func():\n    X = 1\n    return X\n"), "style_6").rule == "ref:non-snake"
    )
    assert judge(bcb(FS), "doc_1") == Judgement(
        True, "ref:unannotated", "task_func lacks 2 annotation(s)"
    )
    assert judge(bcb("def task_func(d: str) -> str:\n    return d\n"), "doc_1").relevant is False
    for iid in ("doc_3", "doc_4", "doc_5", "doc_6"):
        assert judge(bcb(FS), iid).relevant is True


def test_rules_text_only_tasks() -> None:
    stmt = "You are given N integers A_1, ..., A_N.\nPrint Yes if their sum is even.\n\nConstraints\n1 <= N <= 10"
    assert judge(lcb_stdin(stmt), "style_6").rule == "text:caps-vars"
    assert judge(lcb_stdin(stmt), "style_5").rule == "text:string-output"
    assert judge(lcb_stdin(stmt), "library_1").relevant is False
    assert judge(lcb_stdin(stmt), "error_2").relevant is False
    assert judge(lcb_stdin(stmt), "logic_7").relevant is True
    assert judge(lcb_stdin(stmt), "doc_2").relevant is False


@pytest.mark.skipif(not (DATA / "bigcodebench").is_dir(), reason="benchmark data not found")
def test_shipped_hard_suite_is_reproduced_from_the_data() -> None:
    """Regenerating the hard subset from the data reproduces the shipped file byte for byte."""
    from pytest_vibecheck.suites.loaders import load_bigcodebench

    suite = load_suite("bigvibebench-hard")
    bcb_dir = DATA / "bigcodebench"
    problems = load_bigcodebench(
        bcb_dir / "BigCodeBench-Hard-derived-from-v0.1.0_hf.jsonl.gz",
        suite="bigvibebench-hard",
        network_free=bcb_dir / "network-free-set.txt",
        stdlib_only=bcb_dir / "bigcodebench_v0.1.0_stdlib_only_task_ids.json",
    )
    import dataclasses

    from pytest_vibecheck.execute.envcheck import derive_required_modules

    again = [  # as scripts/build_suites.py writes them: each task's required modules stored
        dataclasses.replace(p, requires=derive_required_modules(p))
        for p in augment(
            problems, k=suite.manifest["k"], seed=suite.manifest["seed"], selector=RulesSelector()
        )
    ]
    assert encode_records(again) == encode_records(suite.problems)


# ---------------------------------------------------------------- LLM selectors (recorded replies)
# The selectors call the model backends over real HTTP: a local server (generation_helpers)
# answers with the recorded replies in the OpenAI / Anthropic response shapes.

KEY = "sk-local-selector-key"


@pytest.fixture
def task() -> Problem:
    return bcb(RAISING, task_id="BigCodeBench/77")


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with fake_api() as server:
        yield server


def selector(
    spec: str, api: FakeAPI, cache: Path, env: dict[str, str] | None = None, **kw: Any
) -> LLMSelector:
    """The LLM selector of ``spec`` against the local server (key from ``env``; ``kw`` are
    further :class:`BackendSettings` fields)."""
    provider = spec.partition(":")[0]
    base_url = api.url + ("/v1" if provider == "openai" else "")
    if env is None:
        env = {"OPENAI_API_KEY" if provider == "openai" else "ANTHROPIC_API_KEY": KEY}
    settings = BackendSettings(base_url=base_url, env=env, timeout_s=10.0, **kw)
    sel = make_selector(spec, cache_path=cache, settings=settings)
    assert isinstance(sel, LLMSelector)
    return sel


def reply(provider: str, text: str) -> Response:
    return Response(200, completion(text) if provider == "openai" else message(text))


def test_llm_selector_good_reply_and_cache(
    tmp_path: Path, task: Problem, api: FakeAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.push(reply("anthropic", REPLY_OK))
    sel = selector("anthropic:claude-test", api, tmp_path / "c.sqlite")
    (out,) = augment([task], k=5, seed=4, selector=sel)
    order = permutation(IDS, 4, task.task_id)
    picked = ["logic_3", "doc_1", "style_3", "error_2", "doc_3"]
    assert [r.id for r in out.instructions] == [i for i in order if i in picked]
    params = {r.id: r.params for r in out.instructions}
    assert params["logic_3"] == {"max_branches": 3}  # a proposed value inside the range is kept
    assert params["style_3"] == {"line_length": 88}
    assert params["doc_3"] == draw_params(
        get_instruction("doc_3"), 4, task.task_id
    )  # convention from the seed
    assert out.provenance["selector"] == "anthropic:claude-test"
    assert out.provenance["model"] == "claude-test"
    assert "param_changes" not in out.provenance
    skipped = [d for d in out.provenance["decisions"] if d["decision"] == "irrelevant"]
    assert skipped  # the scan passed instructions the model did not pick
    for d in skipped:
        assert (d["rule"], d["reason"]) == (
            "llm:rejected",
            "no pandas" if d["id"] == "library_2" else "not selected by the model",
        )
    kept_reasons = {
        d["id"]: d["reason"] for d in out.provenance["decisions"] if d["decision"] == "kept"
    }
    assert kept_reasons["logic_3"] == "the solution branches on input types"
    (request,) = api.requests
    assert request.path == "/v1/messages"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert set(request.body) == {"model", "max_tokens", "system", "messages"}  # no temperature
    assert (request.body["model"], request.body["max_tokens"]) == ("claude-test", 4096)
    assert request.body["system"] == SYSTEM_PROMPT
    assert request.body["messages"] == [
        {"role": "user", "content": build_prompt(task, [default_registry().get(i) for i in order], 5)}
    ]
    # the reply cache uses the generation cache's key of the request
    chat = sel.chat
    assert isinstance(chat, ChatModel)
    assert out.provenance["cache_key"] == cache_key(chat.backend.cache_identity(), chat.request(task.task_id, SYSTEM_PROMPT, request.body["messages"][0]["content"]))
    # a re-run is answered from the cache: no request, identical result, and it needs neither
    # the key nor the SDK
    monkeypatch.setitem(sys.modules, "anthropic", None)
    sel2 = selector("anthropic:claude-test", api, tmp_path / "c.sqlite", env={})
    (again,) = augment([task], k=5, seed=4, selector=sel2)
    assert again == out
    assert (sel2.calls, sel2.cache_hits, len(api.requests)) == (0, 1, 1)


def test_llm_reply_with_unknown_id_bad_params_and_conflict(
    tmp_path: Path, task: Problem, api: FakeAPI
) -> None:
    api.push(reply("openai", REPLY_BAD_IDS_AND_PARAMS))
    sel = selector("openai:gpt-test", api, tmp_path / "c.sqlite")
    (out,) = augment([task], k=5, seed=1, selector=sel)
    decisions = out.provenance["decisions"]
    assert decisions[0] == {
        "id": "style_99",
        "decision": "dropped",
        "rule": "reply:unknown-id",
        "reason": "unknown instruction id 'style_99' in the reply: dropped",
    }
    assert decisions[1]["decision"] == "dropped" and "malformed entry" in decisions[1]["reason"]
    kept = {r.id: r.params for r in out.instructions}
    assert kept["logic_3"] == {"max_branches": 2}  # 9 is out of [2, 4]: reset to the default
    assert kept["logic_5"] == {"max_locals": 4}  # "4" accepted as an int
    assert list(kept) == ["logic_5", "logic_3", "doc_6", "style_1", "doc_1"]  # scan order of seed 1
    assert out.provenance["param_changes"] == [
        "logic_3: unknown parameter 'colour' dropped (parameters: max_branches)",
        "logic_3: parameter max_branches=9 is not int in [2, 4]; reset to the default 2",
    ]
    assert next(d for d in decisions if d["id"] == "doc_4") == {
        "id": "doc_4", "decision": "conflict", "rule": "conflict", "reason": "conflicts with doc_6, kept earlier",
    }  # fmt: skip
    (request,) = api.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert (request.body["model"], request.body["temperature"], request.body["max_tokens"]) == (
        "gpt-test", 0.0, 4096,
    )  # fmt: skip
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]


def test_llm_reply_keeping_fewer_than_k(tmp_path: Path, task: Problem, api: FakeAPI) -> None:
    api.push(reply("anthropic", REPLY_FEWER))
    sel = selector("anthropic:m", api, tmp_path / "c.sqlite")
    (out,) = augment([task], k=5, seed=2, selector=sel)
    assert sorted(r.id for r in out.instructions) == ["doc_4", "style_1"]
    assert out.provenance["fewer_than_k"].startswith("kept 2 of 5")
    assert (
        next(d for d in out.provenance["decisions"] if d["id"] == "logic_1")["reason"]
        == "not selected by the model"
    )


def test_unparseable_reply_fails_the_task_and_is_not_cached(
    tmp_path: Path, task: Problem, api: FakeAPI
) -> None:
    cache = tmp_path / "c.sqlite"
    other = bcb(FS, task_id="BigCodeBench/78")
    api.push(reply("anthropic", REPLY_UNPARSEABLE), reply("anthropic", REPLY_OK))
    sel = selector("anthropic:m", api, cache)
    with pytest.raises(SelectorError) as err:
        augment([task, other], k=5, seed=2, selector=sel)
    assert str(err.value).startswith(
        "instruction selection failed for 1 of 2 tasks: BigCodeBench/77: unparseable selector reply"
    )
    assert "Re-run the same command" in str(err.value)
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 1  # only the good reply
    with pytest.raises(SelectorError, match="no JSON object with a 'selected' list"):
        parse_reply('```json\n{"picked": []}\n```')
    assert parse_reply('[{"id": "doc_4"}]') == {"selected": [{"id": "doc_4"}], "rejected": []}


def test_api_errors_are_the_backends_errors(tmp_path: Path, task: Problem, api: FakeAPI) -> None:
    api.default = Response(
        429, {"error": {"message": "Rate limit reached", "type": "requests"}}, {"retry-after": "0.01"}
    )
    sel = selector("openai:m", api, tmp_path / "c.sqlite", max_retries=1)
    with pytest.raises(SelectorError) as err:
        sel.judge_task(task, [get_instruction("style_1")], 1)
    assert str(err.value) == (
        f"openai:m at {api.url}/v1: rate limited (HTTP 429) after 2 attempts: Rate limit reached"
    )
    assert isinstance(err.value.__cause__, RateLimitError)  # the SDK's retries, then the class
    assert len(api.requests) == 2
    # the generation layer's adaptive limit saw the 429s: halved once from the default 8
    assert isinstance(sel.chat, ChatModel)
    assert sel.chat._generator_for_calls().limit.history[-1][1] == 4
    api.default = Response(401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}})
    with pytest.raises(SelectorError) as err:
        selector("anthropic:m", api, tmp_path / "c.sqlite").judge_task(task, [get_instruction("style_1")], 1)
    assert isinstance(err.value.__cause__, BackendError)
    assert (err.value.__cause__.status, err.value.__cause__.fatal) == (401, True)
    assert str(err.value).startswith(f"anthropic:m at {api.url}: HTTP 401: Incorrect API key; check")
    assert len(api.requests) == 3  # 401 is not retried
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 0


def test_missing_key_sdk_and_unknown_kind(
    tmp_path: Path, task: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    keyless = make_selector("anthropic:m", cache_path=tmp_path / "c.sqlite")  # the official API
    with pytest.raises(SelectorError) as err:
        augment([task], k=5, seed=2, selector=keyless)
    assert "BigCodeBench/77: anthropic: the API key is not set; export ANTHROPIC_API_KEY=..." in str(err.value)
    assert isinstance(keyless, LLMSelector) and isinstance(keyless.chat, ChatModel)
    assert isinstance(keyless.chat.backend, AnthropicBackend)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setitem(sys.modules, "openai", None)
    no_sdk = make_selector("openai:gpt-4o", cache_path=tmp_path / "c.sqlite")
    assert isinstance(no_sdk, LLMSelector) and isinstance(no_sdk.chat, ChatModel)
    assert isinstance(no_sdk.chat.backend, OpenAIBackend)
    assert no_sdk.name == "openai:gpt-4o"
    with pytest.raises(SelectorError, match=r"pip install 'pytest-vibecheck\[openai\]'"):
        augment([task], k=5, seed=2, selector=no_sdk)
    with pytest.raises(UnknownIdError, match="unknown selector 'gemini:x'"):
        make_selector("gemini:x")


def test_prompt_lists_the_permutation_and_the_rules(task: Problem) -> None:
    order = [default_registry().get(i) for i in permutation(IDS, 5, task.task_id)]
    prompt = build_prompt(task, order, 5)
    positions = [prompt.index(f"id: {i.id} |") for i in order]
    assert positions == sorted(positions)
    assert "USER QUERY:\nDo the task." in prompt
    assert "Stop when 5 instructions are kept." in prompt
    assert "parameter max_branches: int, default 2, valid int in [2, 4], recommended 2-4" in prompt
    assert "conflicts with: doc_2, doc_3" in prompt



@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_and_server_from_the_environment_never_cached(
    provider: str, api: FakeAPI, tmp_path: Path, task: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    upper = provider.upper()
    monkeypatch.setenv(f"{upper}_API_KEY", KEY)
    monkeypatch.setenv(f"{upper}_BASE_URL", api.url + ("/v1" if provider == "openai" else ""))
    api.default = reply(provider, REPLY_OK)
    cache = tmp_path / "c.sqlite"
    sel = make_selector(f"{provider}:model-x", cache_path=cache)
    (out,) = augment([task], k=5, seed=4, selector=sel)
    assert sorted(r.id for r in out.instructions) == sorted(
        ["logic_3", "doc_1", "style_3", "error_2", "doc_3"]
    )
    (request,) = api.requests
    assert request.path == ("/v1/chat/completions" if provider == "openai" else "/v1/messages")
    assert request.body["model"] == "model-x"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY.encode() not in cache.read_bytes()  # the key never reaches the cache
    assert KEY not in json.dumps(out.provenance)


def test_llm_workers_do_not_change_the_result(tmp_path: Path, api: FakeAPI) -> None:
    problems = [
        bcb(f"import os\ndef task_func(p):\n    return os.listdir(p)[{n}]\n", task_id=f"T/{n}")
        for n in range(6)
    ]
    api.default = reply("anthropic", REPLY_OK)
    serial = augment(problems, k=5, seed=5, selector=selector("anthropic:m", api, tmp_path / "a.sqlite"))
    threaded = augment(
        problems, k=5, seed=5, selector=selector("anthropic:m", api, tmp_path / "b.sqlite"), workers=3
    )
    assert threaded == serial
    assert len(api.requests) == 12


# ---------------------------------------------------------------- CLI


@pytest.mark.skipif(not (DATA / "humaneval").is_dir(), reason="benchmark data not found")
def test_cli_augment_and_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.txt"
    tasks.write_text("HumanEval/0\nHumanEval/1  # comment\nHumanEval/2\n")
    out = tmp_path / "he3"
    argv = [
        "augment",
        str(DATA / "humaneval" / "HumanEval.jsonl.gz"),
        "--out",
        str(out),
        "--seed",
        "3",
        "--tasks",
        str(tasks),
        "--licence",
        "MIT",
        "--licence-file",
        str(DATA / "humaneval" / "LICENSE.openai-human-eval"),
        "--json",
    ]
    assert cli.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tasks"] == 3
    suite = load_suite(out)
    assert [p.task_id for p in suite] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert suite.manifest["licence"] == "MIT"
    assert suite.manifest["source"] == {"file": "HumanEval.jsonl.gz", "format": "humaneval"}
    first = (out / "problems.jsonl.gz").read_bytes()
    assert cli.main(argv) == 0
    assert (out / "problems.jsonl.gz").read_bytes() == first  # re-run: byte-identical
    capsys.readouterr()
    assert cli.main(["problems", "stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["tasks"] == 3
    assert sum(stats["instruction_frequency"].values()) == stats["instructions"] == 15
    assert stats["paper_shares"] is None
    tasks.write_text("HumanEval/0\nHumanEval/1000\n")
    assert cli.main(argv) == 2
    assert "unknown task of" in capsys.readouterr().err


def test_cli_problems_list_and_stats_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["problems", "list", "--json"]) == 0
    rows = {r["name"]: r["tasks"] for r in json.loads(capsys.readouterr().out)}
    assert rows["bigvibebench"] == 1140
    assert rows["bigvibebench-lite"] == 50
    assert cli.main(["problems", "stats", "bigvibebench-lite"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("suite bigvibebench-lite: 50 tasks, 250 instructions\n")
    assert "paper  35.9%" in text
    assert cli.main(["problems", "stats", "bigvibe"]) == 2
    assert "did you mean 'bigvibebench'" in capsys.readouterr().err


def test_workers_do_not_change_the_result() -> None:
    problems = [
        bcb(f"import os\ndef task_func(p):\n    return os.listdir(p)[{n}]\n", task_id=f"T/{n}")
        for n in range(6)
    ]
    serial = augment(problems, k=5, seed=5, selector=RulesSelector())
    assert augment(problems, k=5, seed=5, selector=RulesSelector(), workers=3) == serial
    with pytest.raises(VibecheckError, match="workers must be >= 1, got 0"):
        augment(problems, k=5, seed=5, selector=RulesSelector(), workers=0)
