"""The verl adapter driven through verl's own calling code (not an imitation of it).

- the reward loop (verl's default): ``verl.experimental.reward_loop.RewardLoopWorker`` built
  from verl's own trainer config (``verl/trainer/config/_generated_ppo_trainer.yaml``) with the
  keys docs/reward.md gives, loading ``vibecheck_reward.py`` by file path as verl does, with
  the ``naive``, ``dapo`` and ``rate_limited`` (``limited.py``) managers and both ``compute_score_async`` and the sync
  ``compute_score``; its ``compute_score_batch`` starts one task per sample, and the adapter's
  micro-batcher scores them together;
- the legacy managers (``verl.workers.reward_manager``: ``batch`` with ``compute_score_batch``,
  ``naive`` with ``compute_score``): on verl 0.7.0 built by its ``load_reward_manager`` and
  called by its ``compute_reward`` (``use_reward_loop=False``), on later verl (no legacy
  trainer path) called as 0.7.0 called them (``manager(data, return_dict=True)``).

Runs against whichever verl is installed; run on verl 0.9.1 and 0.7.0 (docs/reward.md).

An infrastructure failure (a library missing from the sandbox) must come back as the value the
managers take as it is (0.0, ``infra_error`` 1.0), scored once, never raised: an exception
makes verl 0.7.0's ``compute_reward`` call the manager a second time.

Skipped where verl is not installed: it needs torch, which the dev extra leaves out. ``.ci/run``
installs verl 0.9.1 with the CPU build of torch in a second virtual environment and runs this
file there (docs/reward.md).
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

verl = pytest.importorskip(
    "verl", reason="verl is not installed (it needs torch, which the dev extra leaves out; "
    ".ci/run runs this file in .venv-verl)")
torch = pytest.importorskip("torch")
OmegaConf = pytest.importorskip("omegaconf").OmegaConf

from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop import RewardLoopWorker  # noqa: E402

from pytest_vibecheck.reward.batcher import batcher_for  # noqa: E402
from pytest_vibecheck.reward.core import RewardConfig, scorer_for  # noqa: E402
from pytest_vibecheck.reward.dataset import REWARD_SHIM, problem_record  # noqa: E402
from pytest_vibecheck.reward.verl import compute_score, compute_score_batch  # noqa: E402
from pytest_vibecheck.suites.store import load_suite  # noqa: E402

PROBLEM = json.dumps({
    "suite": "toy", "task_id": "add",
    "test": {"kind": "humaneval", "entry_point": "add",
             "code": "def check(candidate):\n    assert candidate(2, 3) == 5\n"},
    "entry_point": "add",
    "instructions": [{"id": "doc_1", "params": {}}, {"id": "logic_1", "params": {}}],
})
MISSING_LIB = json.dumps({**json.loads(PROBLEM), "libs": ["vibecheck_absent_module_zz"]})
GOOD = "```python\ndef add(a: int, b: int) -> int:\n    return a + b\n```"
UNTYPED = "```python\ndef add(a, b):\n    return a + b\n```"  # doc_1 fails
WRONG = "```python\ndef add(a: int, b: int) -> int:\n    return a * b\n```"
OPTIONS: dict[str, Any] = {"alpha": 0.4, "time_limit_s": 20.0}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE tokenizer saved as a Hugging Face folder (decodes what it encodes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator([GOOD, UNTYPED, WRONG] * 4, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   eos_token="<eos>", clean_up_tokenization_spaces=False)
    folder = tmp_path_factory.mktemp("tok")
    fast.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shim") / "vibecheck_reward.py"
    path.write_text(REWARD_SHIM, encoding="utf-8")
    return path


def _data(tokenizer_dir: Path, rows: list[tuple[str, str]]) -> Any:
    """A DataProto as verl's rollout hands it to the reward: prompt and response ids, the
    attention mask, and the non-tensor columns of the exported parquet."""
    import numpy as np
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    encoded = [tok.encode(text) for text, _gt in rows]
    width = max(len(e) for e in encoded) + 2
    prompt_len = 4
    prompts = torch.full((len(rows), prompt_len), tok.pad_token_id)
    responses = torch.full((len(rows), width), tok.pad_token_id)
    mask = torch.zeros((len(rows), prompt_len + width), dtype=torch.long)
    mask[:, :prompt_len] = 1
    for i, ids in enumerate(encoded):
        responses[i, : len(ids)] = torch.tensor(ids)
        mask[i, prompt_len : prompt_len + len(ids)] = 1
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, responses], dim=1)},
        non_tensors={
            "data_source": np.array(["vibecheck/toy"] * len(rows), dtype=object),
            "reward_model": np.array([{"style": "rule", "ground_truth": gt} for _t, gt in rows],
                                     dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(rows))], dtype=object),
        },
    )


def _worker(config: Any) -> Any:
    """A ``RewardLoopWorker`` in this process, as each of the reward loop's Ray actors holds
    one (verl 0.7.0 declares the class as a Ray actor; its plain class is Ray's
    ``modified_class``)."""
    meta = getattr(RewardLoopWorker, "__ray_metadata__", None)
    cls = RewardLoopWorker if meta is None else meta.modified_class
    return cls(config)


#: True for verl >= 0.7.1 (the ``reward`` group: ``reward.custom_reward_function``,
#: ``reward.reward_manager.name``); False for verl 0.7.0 (``custom_reward_function``,
#: ``reward_model.reward_manager``, ``reward_model.use_reward_loop``).
def _new_keys(config: Any) -> bool:
    return "custom_reward_function" in (config.get("reward") or {})


def _config(tokenizer_dir: Path, shim: Path, name: str, manager: str, *, loop: bool = True) -> Any:
    """verl's own trainer config with the keys of docs/reward.md for the installed verl."""
    base = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    config = OmegaConf.load(base)
    OmegaConf.set_struct(config, False)
    if _new_keys(config):
        fn, kwargs_at = "reward.custom_reward_function", "reward.custom_reward_function.reward_kwargs"
        settings: dict[str, Any] = {"reward.reward_manager.name": manager}
        limits = "reward"
    else:
        fn, kwargs_at = "custom_reward_function", "custom_reward_function.reward_kwargs"
        settings = {"reward_model.reward_manager": manager, "reward_model.use_reward_loop": loop}
        limits = "reward_model"
    settings.update({
        "actor_rollout_ref.model.path": str(tokenizer_dir),
        f"{fn}.path": str(shim),
        f"{fn}.name": name,
        kwargs_at: dict(OPTIONS),
    })
    if manager == "rate_limited":  # verl's default is one call at a time: no batch to gather
        settings[f"{limits}.max_concurrent"] = 64
    if manager == "dapo":  # verl's DAPO manager reads its overlong-buffer settings
        settings[f"{limits}.reward_kwargs"] = {"max_resp_len": 4096, "overlong_buffer_cfg": None}
    for key, value in settings.items():
        OmegaConf.update(config, key, value, force_add=True, merge=False)
    return config


ROWS = [(GOOD, PROBLEM), (UNTYPED, PROBLEM), (WRONG, PROBLEM), (GOOD, MISSING_LIB),
        (GOOD, PROBLEM), ("no code here", PROBLEM)]
#: the default composite, gated, at alpha 0.4 (docs/reward.md): all met and passing 1.0; doc_1
#: failed 0.8; failing tests 0.0 (no instruction credit without passing tests; the blend paid
#: 0.4); infra 0.0; no code 0.
WANT = [1.0, 0.8, 0.0, 0.0, 1.0, 0.0]
WANT_INFRA = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize(("manager", "name"), [
    ("naive", "compute_score_async"), ("naive", "compute_score"), ("dapo", "compute_score_async"),
    ("rate_limited", "compute_score_async"),
])
def test_reward_loop_worker_scores_through_the_adapter(
    tokenizer_dir: Path, shim: Path, manager: str, name: str
) -> None:
    config = _config(tokenizer_dir, shim, name, manager)
    scorer = scorer_for(RewardConfig.from_options(OPTIONS))
    batcher = batcher_for(RewardConfig.from_options(OPTIONS))
    scored, batches, infra = scorer.scored, batcher.stats.batches, scorer.infra_errors

    async def run() -> list[dict[str, Any]]:
        worker = _worker(config)  # what each Ray actor of the reward loop runs
        out: list[dict[str, Any]] = await worker.compute_score_batch(_data(tokenizer_dir, ROWS))
        return out

    outputs = asyncio.run(run())
    scores = [o["reward_score"] for o in outputs]
    if manager == "dapo":  # DAPO's reward is the score itself with the overlong buffer off
        scores = [o["reward_extra_info"]["score"] for o in outputs]
    assert scores == pytest.approx(WANT)
    assert [o["reward_extra_info"]["infra_error"] for o in outputs] == WANT_INFRA
    assert outputs[3]["reward_extra_info"]["exec_status"] == "skipped"
    # six per-sample calls, each scored once, in fewer batches than calls
    assert scorer.scored - scored == len(ROWS)
    assert scorer.infra_errors - infra == 1
    assert 1 <= batcher.stats.batches - batches < len(ROWS)


def test_reward_loop_rejects_the_batch_manager(tokenizer_dir: Path, shim: Path) -> None:
    """Why the docs never name ``batch`` for the reward loop: verl refuses it."""
    config = _config(tokenizer_dir, shim, "compute_score_batch", "batch")
    with pytest.raises((ValueError, AssertionError), match="batch"):
        _worker(config)


def test_legacy_batch_and_naive_managers(tokenizer_dir: Path, shim: Path) -> None:
    """The legacy managers as verl builds and calls them: verl 0.7.0's ``load_reward_manager``
    and ``compute_reward`` (``use_reward_loop=False``); in later verl, which has no legacy
    trainer path, the managers of ``verl.workers.reward_manager`` called as 0.7.0 called them."""
    from transformers import AutoTokenizer
    from verl.trainer.ppo import reward as verl_reward

    data = _data(tokenizer_dir, ROWS)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    lengths = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1]:].sum(-1)
    scorer = scorer_for(RewardConfig.from_options(OPTIONS))
    for manager, name in (("batch", "compute_score_batch"), ("naive", "compute_score")):
        before = scorer.scored
        config = _config(tokenizer_dir, shim, name, manager, loop=False)
        if hasattr(verl_reward, "compute_reward"):  # verl 0.7.0: the trainer's own calls
            reward_fn = verl_reward.load_reward_manager(config, tok, num_examine=0)
            tensor, extra = verl_reward.compute_reward(data, reward_fn)
        else:
            from verl.workers.reward_manager import get_reward_manager_cls

            fn = partial(compute_score_batch if manager == "batch" else compute_score, **OPTIONS)
            reward_fn = get_reward_manager_cls(manager)(
                tokenizer=tok, num_examine=0, compute_score=fn, reward_fn_key="data_source")
            out = reward_fn(data, return_dict=True)
            tensor, extra = out["reward_tensor"], out["reward_extra_info"]
        # scored once: no exception, so compute_reward never calls the manager again
        assert scorer.scored - before == len(ROWS)
        assert [float(tensor[i, int(n) - 1]) for i, n in enumerate(lengths)] == pytest.approx(WANT)
        assert list(extra["infra_error"]) == WANT_INFRA


def test_exported_rows_score_through_the_reward_loop(tokenizer_dir: Path, shim: Path) -> None:
    """Real BigVibeBench rows as ``export-dataset`` writes their ground truth; the reference
    solutions pass their tests, and a stub whose body is ``pass`` is a reply without code
    (``no_code``: nothing to run, verify/substance.py), not a failed run."""
    suite = load_suite("bigvibebench")
    probs = [suite.get("BigCodeBench/4"), suite.get("BigCodeBench/5")]  # standard library only
    rows: list[tuple[str, str]] = []
    for p in probs:
        gt = json.dumps(problem_record(p, 2), sort_keys=True)
        assert p.canonical_solution is not None
        rows += [(f"```python\n{p.canonical_solution}\n```", gt), ("def task_func():\n    pass\n", gt)]
    config = _config(tokenizer_dir, shim, "compute_score_async", "naive")

    async def run() -> list[dict[str, Any]]:
        worker = _worker(config)
        out: list[dict[str, Any]] = await worker.compute_score_batch(_data(tokenizer_dir, rows))
        return out

    outputs = asyncio.run(run())
    assert [o["reward_extra_info"]["exec_status"] for o in outputs] == ["passed", "no_code"] * 2
    direct = compute_score_batch(["vibecheck/bigvibebench"] * 4, [t for t, _g in rows],
                                 [g for _t, g in rows], **OPTIONS)
    assert [o["reward_score"] for o in outputs] == pytest.approx([d["score"] for d in direct])
