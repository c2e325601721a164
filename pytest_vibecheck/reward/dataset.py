"""Training datasets for TRL and verl from a suite: single-turn prompts plus what the reward needs.

Each row is one task of the suite, prompted with the paper's single-turn protocol at ``k``
(system prompt; the query, a blank line and "Additionally, ensure your code meets the following
requirement: <prompt>" at k = 1, or "Additionally, ensure your code meets the following
requirements:" and instructions 1..k numbered one per line;
:func:`pytest_vibecheck.generate.protocols.single_turn_messages`) with
the suite's own generation setup under the ``paper`` profile (its manifest's system prompt and
query style: LiveVibeBench's differ from BigVibeBench's), so the messages are the ones the
plugin sends under ``--vibe-profile paper``. Each row records the prompt's length:
``prompt_chars`` (characters of the messages' contents) and, when a tokenizer is given,
``prompt_tokens`` (the chat template applied with a generation prompt, as verl's
``RLHFDataset`` counts it against ``data.max_prompt_length``). It
carries the problem the reward scores against: the record of ``docs/suites.md`` with the
judged instructions only, without the reference solution, the task metadata and the
selector's provenance. The suite's provenance (name, data sha256, taxonomy and prompt versions,
k, pytest-vibecheck version) goes into every row and ``manifest.json``.

Formats:

- ``trl``: ``{split}.jsonl``, one JSON object per row with ``prompt`` (conversational:
  ``[{"role": "system", ...}, {"role": "user", ...}]``), ``problem`` (the inline problem's
  JSON text), ``task_id`` (``"SUITE::TASK_ID"``) and ``provenance``; loads with
  ``datasets.load_dataset("json", data_files=...)``. TRL passes ``problem`` and ``task_id`` to
  :class:`~pytest_vibecheck.reward.trl.VibecheckReward` as keyword arguments.
- ``verl``: ``{split}.parquet`` with verl's columns (``examples/data_preprocess`` of verl):
  ``data_source`` (``"vibecheck/SUITE"``), ``prompt`` (messages), ``ability`` (``"code"``),
  ``reward_model`` (``{"style": "rule", "ground_truth": problem JSON}``) and ``extra_info``
  (``index``, ``split``, ``task_id``, ``k``, ``provenance``); plus ``vibecheck_reward.py``,
  the file to name in ``custom_reward_function.path``. Needs pyarrow (the ``rl`` extra).

Both write ``manifest.json`` and copy the suite's licence files: the rows are derived from
the licensed benchmark.
"""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pytest_vibecheck import __version__
from pytest_vibecheck.errors import VibecheckError
from pytest_vibecheck.generate.protocols import PROMPT_VERSION, single_turn_messages
from pytest_vibecheck.generate.setup import generation_setup
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.profiles import DEFAULT_PROFILE, get_profile
from pytest_vibecheck.suites.store import load_suite

from .problems import problem_ref_text

__all__ = ["FORMATS", "REWARD_SHIM", "TokenCounter", "export_dataset", "hf_token_counter",
           "problem_record", "prompt_chars"]

#: Counts the tokens of a prompt (its messages); see :func:`hf_token_counter`.
TokenCounter = Callable[[Sequence[Mapping[str, str]]], int]

DatasetFormat = Literal["trl", "verl"]
FORMATS: tuple[str, ...] = ("trl", "verl")

#: ``vibecheck_reward.py``: what verl's ``custom_reward_function.path`` loads by file path.
REWARD_SHIM = '''"""verl custom reward: custom_reward_function.path=<this file>, name=compute_score_async
(verl's reward loop), compute_score (legacy naive/dapo managers) or compute_score_batch (legacy
batch manager). Written by vibecheck export-dataset; docs/reward.md has the config keys."""

from pytest_vibecheck.reward.verl import compute_score, compute_score_async, compute_score_batch

__all__ = ["compute_score", "compute_score_async", "compute_score_batch"]
'''


def prompt_chars(messages: Sequence[Mapping[str, str]]) -> int:
    """The prompt's length in characters: the sum of its messages' contents."""
    return sum(len(m["content"]) for m in messages)


def hf_token_counter(name_or_path: str) -> TokenCounter:
    """A :data:`TokenCounter` from a Hugging Face tokenizer (a local folder, or a name already
    in the local cache; nothing is downloaded): the number of ids of the chat template applied
    with ``add_generation_prompt=True``, which is what verl's ``RLHFDataset`` compares with
    ``data.max_prompt_length`` (TRL's ``max_prompt_length`` likewise). Raises
    :class:`~pytest_vibecheck.errors.VibecheckError` when transformers is missing, the
    tokenizer cannot be loaded or has no chat template."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise VibecheckError(
            f"--tokenizer {name_or_path}: counting tokens needs transformers (pip install transformers)"
        ) from None
    try:
        tok = AutoTokenizer.from_pretrained(name_or_path, local_files_only=True)
    except Exception as exc:
        raise VibecheckError(
            f"--tokenizer {name_or_path}: cannot load a tokenizer there ({type(exc).__name__}); "
            "give a local tokenizer folder (one with tokenizer.json or tokenizer_config.json)"
        ) from None
    if not getattr(tok, "chat_template", None):
        raise VibecheckError(
            f"--tokenizer {name_or_path}: the tokenizer has no chat template; give the policy "
            "model's tokenizer (the one the trainer applies the template with)"
        )

    def count(messages: Sequence[Mapping[str, str]]) -> int:
        ids = tok.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True,
                                      tokenize=True)
        if isinstance(ids, Mapping) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)

    return count


def _lengths(values: Sequence[int]) -> dict[str, int]:
    return {"min": min(values), "median": int(statistics.median(values)), "max": max(values)} if values else {}


def problem_record(problem: Problem, k: int) -> dict[str, Any]:
    """The inline problem a row is scored against: the suite record with instructions 1..k,
    without ``canonical_solution``, ``prompt`` (the row has it), ``metadata`` and
    ``provenance`` (none is needed to score, and the solution must not travel with training
    data)."""
    record = problem.to_dict()
    record["instructions"] = record["instructions"][:k]
    record["canonical_solution"] = None
    record["prompt"] = ""
    record["metadata"] = {}
    record["provenance"] = {}
    return record


def _require_pyarrow() -> None:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise VibecheckError(
            "--format verl writes parquet and needs pyarrow: pip install 'pytest-vibecheck[rl]'"
        ) from None


def export_dataset(
    suite: str | Path,
    fmt: str,
    out: str | Path,
    *,
    k: int | None = None,
    split: str = "train",
    limit: int | None = None,
    tasks: Sequence[str] = (),
    tokens: TokenCounter | None = None,
) -> dict[str, Any]:
    """Write ``suite``'s single-turn rows in ``fmt`` (``"trl"`` or ``"verl"``) into ``out``.

    ``k``: instructions per prompt (default: all of each task's); ``limit``: the first N tasks
    only; ``tasks``: only these task ids (in suite order); ``tokens``: counts a prompt's tokens
    (:func:`hf_token_counter`), recorded per row as ``prompt_tokens``. Returns the manifest
    written to ``out/manifest.json``, with ``prompt_chars`` (and ``prompt_tokens``) as
    ``{"min", "median", "max"}`` over the rows. Raises :class:`~pytest_vibecheck.errors.VibecheckError` for an
    unknown format, suite or task id, a k larger than a task's instruction count, or a missing
    pyarrow (verl), before writing anything.
    """
    if fmt not in FORMATS:
        raise VibecheckError(f"unknown dataset format {fmt!r}; use one of {', '.join(FORMATS)}")
    if k is not None and (isinstance(k, bool) or k < 0):
        raise VibecheckError(f"k must be >= 0, got {k!r}")
    if limit is not None and limit < 1:
        raise VibecheckError(f"limit must be >= 1, got {limit!r}")
    if not split or "/" in split or split.startswith("."):
        raise VibecheckError(f"split must be a plain name such as 'train', got {split!r}")
    if fmt == "verl":
        _require_pyarrow()
    loaded = load_suite(suite)
    try:  # the suite's own system prompt and query style, as the plugin sends them under paper
        setup = generation_setup(get_profile(DEFAULT_PROFILE), loaded.manifest)
    except ValueError as exc:
        raise VibecheckError(f"suite {loaded.name}: {exc}") from None
    problems: list[Problem] = list(loaded.problems)
    if tasks:
        chosen = set(tasks)
        for task in tasks:
            loaded.get(task)  # UnknownIdError with suggestions
        problems = [p for p in problems if p.task_id in chosen]
    if limit is not None:
        problems = problems[:limit]
    manifest = loaded.manifest
    provenance = {
        "suite": loaded.name,
        "suite_sha256": manifest.get("sha256"),
        "suite_content_sha256": manifest.get("content_sha256"),
        "taxonomy_version": manifest.get("taxonomy_version"),
        "prompt_version": PROMPT_VERSION,
        "protocol": "single",
        "profile": setup.profile,
        "pytest_vibecheck": __version__,
    }
    rows: list[dict[str, Any]] = []
    lengths: list[dict[str, int]] = []
    for index, prob in enumerate(problems):
        n = len(prob.instructions) if k is None else k
        # ParameterError if k is too big
        messages = [dict(m) for m in single_turn_messages(prob, n, setup)]
        row_prov = {**provenance, "k": n}
        record = json.dumps(problem_record(prob, n), sort_keys=True, ensure_ascii=False)
        length: dict[str, int] = {"prompt_chars": prompt_chars(messages)}
        if tokens is not None:
            length["prompt_tokens"] = int(tokens(messages))
        if fmt == "trl":
            rows.append({"prompt": messages, "problem": record, "task_id": problem_ref_text(prob),
                         "provenance": row_prov, **length})
        else:
            rows.append({
                "data_source": f"vibecheck/{loaded.name}",
                "prompt": messages,
                "ability": "code",
                "reward_model": {"style": "rule", "ground_truth": record},
                "extra_info": {"index": index, "split": split, "task_id": problem_ref_text(prob),
                               "k": n, "provenance": json.dumps(row_prov, sort_keys=True), **length},
            })
        lengths.append(length)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    if fmt == "trl":
        name = f"{split}.jsonl"
        with (folder / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
        files.append(name)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        name = f"{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), folder / name)
        (folder / "vibecheck_reward.py").write_text(REWARD_SHIM, encoding="utf-8")
        files += [name, "vibecheck_reward.py"]
    licences = []
    for lic in sorted(loaded.path.glob("LICENSE*")):
        shutil.copyfile(lic, folder / lic.name)
        licences.append(lic.name)
    out_manifest: dict[str, Any] = {
        "format": fmt,
        "split": split,
        "rows": len(rows),
        "files": files,
        "k": k,
        "prompt_chars": _lengths([x["prompt_chars"] for x in lengths]),
        **({"prompt_tokens": _lengths([x["prompt_tokens"] for x in lengths])} if tokens is not None else {}),
        "provenance": provenance,
        "source": manifest.get("source"),
        "licence": manifest.get("licence"),
        "licence_files": licences,
        "attribution": manifest.get("attribution"),
    }
    (folder / "manifest.json").write_text(
        json.dumps(out_manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return out_manifest
