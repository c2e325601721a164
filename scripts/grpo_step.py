"""One real TRL ``GRPOTrainer`` training step with the vibecheck reward (CPU, nothing downloaded).

The model is a tiny Llama built from a config (random weights) with a byte-level BPE tokenizer
trained here on the prompts; the data is ``vibecheck export-dataset SUITE --format trl``
loaded with ``datasets``; the reward is :class:`pytest_vibecheck.reward.trl.VibecheckReward`
(tests in the sandbox + VeriCode verdicts). A random model writes no code, so its rewards are
0.0 (no code is a model failure); ``--inject-solution`` makes the reward also see the
reference solution for the first completion of each group, which shows a positive reward going
through the same trainer step. The script prints what TRL passed to the reward, the rewards and
the step's logged metrics.

Needs: ``pip install torch==2.13.0 trl transformers datasets accelerate`` (not in the dev
extra: too heavy for CI).

    python scripts/grpo_step.py [--suite bigvibebench] [--task ID ...] [--k 2] [--inject-solution]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar


def build_tokenizer(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=1024, special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                   eos_token="<eos>", padding_side="left")
    fast.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    return fast


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="bigvibebench")
    ap.add_argument("--task", action="append", default=None, metavar="TASK_ID",
                    help="task of the suite (repeatable; default BigCodeBench/3 and BigCodeBench/5)")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--inject-solution", action="store_true")
    args = ap.parse_args()

    import torch
    import transformers
    import trl
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, LlamaConfig
    from trl import GRPOConfig, GRPOTrainer

    from pytest_vibecheck.reward.dataset import export_dataset
    from pytest_vibecheck.reward.trl import VibecheckReward
    from pytest_vibecheck.suites.store import load_suite

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "data"
        export_dataset(args.suite, "trl", out, k=args.k,
                       tasks=args.task or ["BigCodeBench/3", "BigCodeBench/5"])
        train = load_dataset("json", data_files=str(out / "train.jsonl"), split="train",
                             cache_dir=str(Path(tmp) / "hf"))
        print(f"dataset: {train.num_rows} rows, columns {train.column_names}")
        tokenizer = build_tokenizer([m["content"] for row in train["prompt"] for m in row])
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=8192, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=tokenizer.eos_token_id, bos_token_id=None)
        model = AutoModelForCausalLM.from_config(config)
        solutions = {f"{args.suite}::{p.task_id}": p.canonical_solution
                     for p in load_suite(args.suite).problems}

        class Recorded(VibecheckReward):
            calls: ClassVar[list[dict[str, Any]]] = []

            def __call__(self, prompts: Any = None, completions: Any = None,
                         completion_ids: Any = None, **kwargs: Any) -> list[float | None]:
                if args.inject_solution and completions is not None:
                    completions = list(completions)
                    for i in range(0, len(completions), 2):
                        text = f"```python\n{solutions[kwargs['task_id'][i]]}\n```"
                        completions[i] = [{"role": "assistant", "content": text}]
                rewards = super().__call__(prompts, completions, completion_ids, **kwargs)
                self.calls.append({
                    "kwargs": sorted(kwargs),
                    "conversational": isinstance(completions[0], list),
                    "completion_0": str(completions[0])[:120],
                    "rewards": rewards,
                })
                return rewards

        reward = Recorded(alpha=0.4)
        cfg = GRPOConfig(
            output_dir=str(Path(tmp) / "run"), per_device_train_batch_size=4, num_generations=2,
            max_completion_length=24, max_steps=1, logging_steps=1, learning_rate=1e-4,
            report_to="none", use_cpu=True, save_strategy="no", bf16=False, seed=0,
            log_completions=False,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=cfg, train_dataset=train,
                              processing_class=tokenizer)
        result = trainer.train()
        print("reward calls:", json.dumps(Recorded.calls, indent=1))
        logged = [h for h in trainer.state.log_history if any(k.startswith("rewards/") or "vibecheck" in k for k in h)]
        print("logged:", json.dumps(logged, indent=1, default=str))
        print(f"global_step {result.global_step}, training_loss {result.training_loss}")
        ok = result.global_step == 1 and bool(Recorded.calls)
    print("GRPO step with the vibecheck reward:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
