#!/usr/bin/env python3
"""Build the shipped replays ``replay:qwen2.5-coder-7b-instruct`` (and ``-hard``).

Source: real generations of Qwen2.5-Coder-7B-Instruct (greedy, n = 1) on BigCodeBench, made
by the BigCodeBench harness and published in wyettzeng/bigcodebench @ ef6cb51c (``haozhe/``),
Apache-2.0; a copy sits in ``../shared/data/samples/bigcodebench-qwen2.5-coder-7b-instruct/``.
The ``solution`` field (code already extracted by the harness's sanitizer) becomes a reply
made of one fenced ```python block; an empty solution stays an empty reply. Label
``baseline`` only: these replies answer the plain task, with no instructions.

Also writes ``upstream_status.json`` (the official harness's verdict per task) and a README
with provenance and licence. The output is byte-for-byte reproducible::

    python scripts/build_qwen_replay.py [--source DIR] [--out replays]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_vibecheck.generate.backends.base import fence  # noqa: E402
from pytest_vibecheck.generate.backends.replay import ReplayEntry, write_replay  # noqa: E402

DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "samples" / "bigcodebench-qwen2.5-coder-7b-instruct"
PREFIX = "Qwen2.5-Coder-7B-Instruct--bigcodebench-"
LICENCE_FILE = "LICENSE.wyettzeng-bigcodebench"

SPLITS = {
    # replay name: (split file infix, suites it fits, description)
    "qwen2.5-coder-7b-instruct": (
        "instruct",
        ["bigvibebench", "bigvibebench-lite", "bigvibebench-hard"],
        "all 1,140 BigCodeBench tasks (instruct split)",
    ),
    "qwen2.5-coder-7b-instruct-hard": (
        "hard-instruct",
        ["bigvibebench-hard"],
        "the 148 BigCodeBench-Hard tasks (hard instruct split; a separate generation run: 54 of its 148 solutions differ from the full run's)",
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(name: str, source: Path, out_root: Path) -> dict[str, Any]:
    infix, suites, description = SPLITS[name]
    samples = source / f"{PREFIX}{infix}--sanitized_calibrated.jsonl.gz"
    results = source / f"{PREFIX}{infix}--sanitized_calibrated_eval_results.json.gz"
    pass_at_k = source / f"{PREFIX}{infix}--sanitized_calibrated_pass_at_k.json"
    with gzip.open(samples, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    rows.sort(key=lambda r: int(r["task_id"].rsplit("/", 1)[1]))
    entries = [
        ReplayEntry(
            task_id=r["task_id"],
            reply=fence(r["solution"]) if r["solution"].strip() else "",
            label="baseline",
        )
        for r in rows
    ]
    with gzip.open(results, "rt", encoding="utf-8") as fh:
        evals = json.load(fh)["eval"]
    status = {t: evals[t][0]["status"] for t in sorted(evals, key=lambda t: int(t.rsplit("/", 1)[1]))}
    official = json.loads(pass_at_k.read_text(encoding="utf-8"))
    folder = out_root / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "upstream_status.json").write_text(json.dumps(status, indent=0) + "\n", encoding="utf-8")
    shutil.copyfile(source / LICENCE_FILE, folder / "LICENSE")
    counts = {s: sum(1 for v in status.values() if v == s) for s in ("pass", "fail", "timeout")}
    manifest: dict[str, Any] = {
        "name": name,
        "model": "Qwen2.5-Coder-7B-Instruct",
        "description": f"Real replies of Qwen2.5-Coder-7B-Instruct to {description}.",
        "protocols": ["baseline"],
        "suites": suites,
        "decoding": "greedy (temperature 0), n = 1",
        "prompt": (
            "BigCodeBench instruct_prompt as sent by the BigCodeBench harness; "
            "not pytest-vibecheck's system prompt"
        ),
        "reply_format": (
            "the harness's sanitized code (blank lines and final newline removed by its sanitizer) "
            "as one ```python fenced block; an empty solution is an empty reply"
        ),
        "empty_replies": sum(1 for e in entries if not e.reply),
        "upstream": {
            "repository": "https://github.com/wyettzeng/bigcodebench",
            "commit": "ef6cb51c",
            "path": f"haozhe/{samples.name}",
            "sha256": sha256(samples),
            "harness_pass_at_1": official["pass@1"],
            "harness_status_counts": counts,
            "status_file": "upstream_status.json",
        },
        "licence": "Apache-2.0 (see LICENSE)",
        "attribution": (
            "Generations of Qwen2.5-Coder-7B-Instruct (Qwen team, Apache-2.0) on BigCodeBench "
            "(bigcode-project, Apache-2.0), published by wyettzeng/bigcodebench (Apache-2.0)."
        ),
        "builder": "scripts/build_qwen_replay.py",
    }
    full = write_replay(folder, entries, manifest)
    (folder / "README.md").write_text(
        f"""# replay:{name}

{manifest['description']}

- Model: Qwen2.5-Coder-7B-Instruct, {manifest['decoding']}.
- Prompt: {manifest['prompt']}.
- Replies: {full['entries']:,}, label `baseline` only (protocol `baseline`); {manifest['empty_replies']} empty.
  Format: {manifest['reply_format']}.
- Upstream: {manifest['upstream']['repository']} @ ef6cb51c, `{manifest['upstream']['path']}`
  (sha256 `{manifest['upstream']['sha256']}`).
- The official BigCodeBench harness scored these generations pass@1 = {official['pass@1']:.4f}
  ({counts['pass']} pass, {counts['fail']} fail, {counts['timeout']} timeout; per task in
  `upstream_status.json`; it evaluates the solution after prepending the task's code prompt
  ("calibrated")).
- Licence: Apache-2.0 (`LICENSE`, copied from the upstream repository).
- Rebuild: `python scripts/build_qwen_replay.py` (byte-for-byte reproducible).

Use: `pytest --vibe-model=replay:{name} --vibe-protocol=baseline`.
""",
        encoding="utf-8",
    )
    return full


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="folder of the upstream sample files")
    ap.add_argument("--out", type=Path, default=REPO / "replays", help="replays folder to write into")
    args = ap.parse_args(argv)
    for name in SPLITS:
        m = build(name, args.source, args.out)
        print(f"{name}: {m['entries']} entries, labels {m['labels']}, sha256 {m['sha256'][:16]}...")
    return 0


if __name__ == "__main__":
    sys.exit(main())
