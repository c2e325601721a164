"""Real-data check of ``--vibe-shard`` + ``vibecheck merge`` (issue 6).

Runs one benchmark unsharded and in N shards (default: the README's offline quick start,
``replay:qwen2.5-coder-7b-instruct`` on ``bigvibebench-lite``, baseline protocol), merges the
shard reports with ``vibecheck merge`` and prints whether the merged aggregates equal the
unsharded ones, the shard sizes, and the wall times (sum of the shards against the unsharded run,
measured in the same process)::

    .venv/bin/python benchmarks/check_shard_merge.py [--shards 3] [--workers 2]
        [--model replay:qwen2.5-coder-7b-instruct] [--suite bigvibebench-lite]
        [--protocol baseline]

Exit status 0 when the aggregates are identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _pytest(args: list[str], cwd: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
                          cwd=cwd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"pytest failed with exit status {proc.returncode}")
    return took, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--workers", default="2")
    ap.add_argument("--model", default="replay:qwen2.5-coder-7b-instruct")
    ap.add_argument("--suite", default="bigvibebench-lite")
    ap.add_argument("--protocol", default="baseline")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        base = ["--vibe-model", ns.model, "--vibe-suite", ns.suite, "--vibe-protocol", ns.protocol,
                "--vibe-no-fail-items", "-n", ns.workers,
                "--vibe-cache-mode", "off"]  # cache hits would differ between the runs
        # pytest runs from the repository (the sandbox cannot start from a 0700 temporary
        # folder as its working directory); only the reports go to the temporary folder.
        root = Path(__file__).resolve().parent.parent
        t_full, _ = _pytest([*base, "--vibe-report", str(out / "full.json")], root)
        full: dict[str, Any] = json.loads((out / "full.json").read_text(encoding="utf-8"))
        times = []
        for i in range(1, ns.shards + 1):
            took, _ = _pytest([*base, "--vibe-shard", f"{i}/{ns.shards}",
                               "--vibe-report", str(out / f"shard-{i}.json")], root)
            times.append(took)
        shard_files = [str(out / f"shard-{i}.json") for i in range(1, ns.shards + 1)]
        sizes = [len(json.loads(Path(p).read_text(encoding="utf-8"))["items"]) for p in shard_files]
        proc = subprocess.run([sys.executable, "-m", "pytest_vibecheck.cli.main", "merge", *shard_files,
                               "--json", str(out / "merged.json"), "-q"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            return 1
        merged = json.loads((out / "merged.json").read_text(encoding="utf-8"))
    same = merged["aggregates"] == full["aggregates"]
    evaluated = sum(int(r["evaluated"]) for r in full["aggregates"])
    errors = sum(int(r["errors"]) for r in full["aggregates"])
    if evaluated == 0:
        print(f"no item was evaluated ({errors} infrastructure errors): nothing to compare")
        return 1
    print(f"items: unsharded {len(full['items'])}, shards {sizes} (sum {sum(sizes)})")
    for row in full["aggregates"]:
        print(f"  {row['suite']} {row['model']} {row['protocol']} k={row['k']}: "
              f"pass@1 {row['pass_at_1']}, instruction_if {row['instruction_if']}, "
              f"task_if {row['task_if']}")
    print(f"merged aggregates identical to the unsharded run: {same}")
    print(f"wall time: unsharded {t_full:.1f} s; shards {', '.join(f'{t:.1f}' for t in times)} s "
          f"(max {max(times):.1f} s = {max(times) / t_full:.2f}x the unsharded run, as on "
          f"{ns.shards} machines)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
