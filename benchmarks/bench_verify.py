"""Speed of the batch verification engine against one Ruff process per verification.

Workload: the 1,140 real BigCodeBench-Instruct solutions x the 27 Ruff-backed instructions at
default parameters (doc_3 with google) = 30,780 verifications, measured in the same run:

* batch: ``verify_batch`` (the engine of ``pytest_vibecheck.verify.ruff_engine``: instructions of a
  sample grouped into few configurations, one ``ruff check`` process over all samples);
* baseline: one ``ruff check --isolated -`` process per (solution, instruction), as the paper's
  pipeline does, on a thread pool of ``--threads`` workers (default 2, the machine's cores).

Prints both rates (verifications per second), the speed-up ratio, the number of Ruff processes
and peak memory (in an extra, untimed batch run: the Python heap via tracemalloc and the Ruff
process's peak RSS sampled from ``/proc``; max RSS of this process via ``resource.getrusage``).

The floor (issue 29): one bare Ruff process over the same 1,140 files selecting only the rules
the 27 instructions use (their union: 45 selectors, with ``--preview``, concise output written to
a file, nothing parsed), timed as a whole process: what any engine must pay. It alternates with
the batch in the same run, and two ratios are printed against it, each naming it:

* in process: ``verify_batch`` (a fresh engine each time: ``ruff --version``, the rule listing
  and all planning included) / floor, for wall time and for CPU time (this process plus Ruff's,
  which a loaded machine changes less);
* whole command: ``vibecheck verify --batch IN.jsonl --out OUT.jsonl`` as a process (start-up,
  reading and writing the JSONL included) / floor.

A second floor, the Ruff work of exact verdicts: the floor above runs every rule in preview
mode at one setting each, which is not what verdicts identical to one ``ruff check`` per
(solution, instruction) are (style_1 checks E501 at line length 88, style_3 at 79; preview
changes stable rules). The configuration groups those verdicts need (:func:`exact_groups`: 3
for the shipped instructions) are written as folders of hard links of the same files and linted
by one bare Ruff process, alternating with the rest; ``verify_batch`` is printed against it too.

Targets: ratio >= 20 to the baseline and all 30,780 batch verifications in < 10 s on 2 cores
(issue 2); the batch within 2x of the floor (issue 29). Exit status 1 if a target is missed.
Every line of figures is printed with the commit and the load average.

``--verdicts OUT.jsonl`` writes every verdict of the batch (one line per solution, the
verdicts' JSON), to compare two trees byte for byte (``cmp``).

    .venv/bin/python benchmarks/bench_verify.py [--repeat 3] [--baseline-limit N] [--verdicts OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import (
    PARAMS,
    load_solutions,
    ratio_line,
    reference_args,
    ruff_instructions,
    run_context,
    run_reference,
    with_final_newline,
)

from pytest_vibecheck.verify.api import VerifyItem, ruff_check_for, verify_batch
from pytest_vibecheck.verify.params import validate_params
from pytest_vibecheck.verify.ruff_engine import RuffEngine, plan_groups


class RuffPeak:
    """Context manager: while active, processes started through ``subprocess.Popen`` (the
    engine's Ruff runs) are watched and the largest peak RSS (``VmHWM`` in
    ``/proc/PID/status``, KiB) is kept in ``kib``."""

    def __init__(self) -> None:
        self.kib = 0
        self._orig = subprocess.Popen

    def __enter__(self) -> RuffPeak:
        peak = self
        base: Any = self._orig

        class Watched(base):  # type: ignore[misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                threading.Thread(target=peak._watch, args=(self.pid,), daemon=True).start()

        subprocess.Popen = Watched  # type: ignore[misc]
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.Popen = self._orig  # type: ignore[misc]

    def _watch(self, pid: int) -> None:
        status = Path(f"/proc/{pid}/status")
        while True:
            try:
                lines = [ln for ln in status.read_text().splitlines() if ln.startswith("VmHWM:")]
            except OSError:
                return
            if not lines:  # ended (a zombie has no memory)
                return
            self.kib = max(self.kib, int(lines[0].split()[1]))
            time.sleep(0.005)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor_rules(insts: list[Any]) -> list[str]:
    """The union of the instructions' Ruff selectors (45 for the 27 shipped ones)."""
    return sorted({rule for inst in insts for rule in inst.verifier.rules})


def write_samples(codes: list[str], tmp: str) -> None:
    """The samples as ``s0.py`` ... in ``tmp`` (untimed), for the floor."""
    for n, code in enumerate(codes):
        Path(tmp, f"s{n}.py").write_text(with_final_newline(code), encoding="utf-8")


def bare_ruff_floor(rules: list[str], tmp: str) -> tuple[float, float]:
    """One Ruff process over the files in ``tmp`` with only ``rules`` (``--preview``, concise
    output to a file, not parsed), timed as a whole process: the floor of any engine (issue
    29). Returns (wall seconds, Ruff's CPU seconds)."""
    from pytest_vibecheck.verify.ruff_engine import default_engine

    cmd = [default_engine().ruff_bin(), "check", "--isolated", "--no-cache", "--select", ",".join(rules),
           "--preview", "--output-format", "concise", "--exit-zero", "--quiet", "."]
    return _timed_ruff(cmd, tmp)


def _timed_ruff(cmd: list[str], cwd: str) -> tuple[float, float]:
    """Run ``cmd`` (a bare Ruff process) in ``cwd`` with its output to ``CWD.out`` and no
    ``RUFF_*`` variable, timed as a whole process: (wall seconds, its CPU seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUFF_")}
    r0 = _children_cpu()
    with Path(f"{cwd}.out").open("wb") as out:
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, check=False, env=env)
        wall = time.perf_counter() - t0
    return wall, _children_cpu() - r0


def exact_groups(insts: list[Any]) -> list[tuple[Any, ...]]:
    """The configuration groups that verdicts identical to one ``ruff check`` per (solution,
    instruction) need for ``insts`` at their default parameters (``plan_groups``: 3 for the 27
    shipped ones: style_1's E and W at line length 88 overlap style_3's E501 at 79 and doc_2's
    W505 at 72, and the preview rules need preview mode, which changes other rules)."""
    checks = [ruff_check_for(i, validate_params(i, PARAMS.get(i.id, {}), warn=False).params) for i in insts]
    distinct = tuple(dict.fromkeys(c for c in checks if c is not None))
    return [tuple(distinct[k] for k in group) for group in plan_groups(distinct)]


def write_exact_tree(groups: list[tuple[Any, ...]], files: str, root: str) -> None:
    """A folder per group under ``root`` (its ``ruff.toml``: the group's selectors, settings
    and preview flag), each holding hard links of the files in ``files`` (untimed)."""
    Path(root, "ruff.toml").write_text("respect-gitignore = false\nlint.select = []\n", encoding="utf-8")
    for n, group in enumerate(groups):
        folder = Path(root, f"g{n}")
        folder.mkdir()
        selectors = list(dict.fromkeys(sel for check in group for sel in check.rules))
        settings = {key: value for check in group for key, value in check.settings}
        lines = ["respect-gitignore = false", "lint.select = " + json.dumps(selectors)]
        if group[0].preview:
            lines.append("lint.preview = true")
        lines += [f"{key} = {json.dumps(value)}" for key, value in sorted(settings.items())]
        (folder / "ruff.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for path in sorted(Path(files).iterdir()):
            (folder / path.name).hardlink_to(path)


def exact_floor(root: str) -> tuple[float, float]:
    """One Ruff process over the tree of :func:`write_exact_tree` (concise output to a file,
    not parsed), timed as a whole process: the Ruff work that exact verdicts need, with
    nothing of the engine's own. Returns (wall seconds, Ruff's CPU seconds)."""
    from pytest_vibecheck.verify.ruff_engine import default_engine

    cmd = [default_engine().ruff_bin(), "check", "--no-cache", "--output-format", "concise",
           "--exit-zero", "--quiet", "."]
    return _timed_ruff(cmd, root)


def batch_command(items_path: Path, out_path: Path) -> float:
    """Wall seconds of ``vibecheck verify --batch IN --out OUT`` as a whole process."""
    vibecheck = str(Path(sys.executable).parent / "vibecheck")
    t0 = time.perf_counter()
    done = subprocess.run([vibecheck, "verify", "--batch", str(items_path), "--out", str(out_path)],
                          capture_output=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"vibecheck verify --batch failed ({done.returncode}): {done.stderr[-500:]!r}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="batch runs (the median is reported)")
    ap.add_argument("--threads", type=int, default=2, help="baseline worker threads")
    ap.add_argument(
        "--baseline-limit",
        type=int,
        default=None,
        help="time the baseline on the first N verifications only (default: all 30,780)",
    )
    ap.add_argument("--verdicts", type=Path, default=None, help="write every verdict here (JSONL)")
    args = ap.parse_args()

    sols = load_solutions()
    insts = ruff_instructions()
    n = len(sols) * len(insts)
    items = [
        VerifyItem([(i.id, PARAMS.get(i.id, {})) for i in insts], code=with_final_newline(code))
        for _, code in sols
    ]
    rules = floor_rules(insts)
    print(f"workload: {len(sols)} solutions x {len(insts)} instructions = {n} verifications; "
          f"floor rules: {len(rules)} selectors")
    print(run_context())

    # Batch, floor and command alternate, so that a change of machine load hits every side.
    batch_runs: list[tuple[float, float, float]] = []  # (wall, Python CPU, Ruff CPU) seconds
    floor_runs: list[tuple[float, float]] = []  # (wall, Ruff CPU)
    exact_runs: list[tuple[float, float]] = []  # (wall, Ruff CPU)
    groups = exact_groups(insts)
    command_runs: list[float] = []
    processes = 0
    codes = [code for _, code in sols]
    with tempfile.TemporaryDirectory(prefix="vibecheck-floor-") as work:
        files = Path(work, "files")
        files.mkdir()
        write_samples(codes, str(files))
        exact = Path(work, "exact")
        exact.mkdir()
        write_exact_tree(groups, str(files), str(exact))
        jsonl = Path(work, "in.jsonl")
        with jsonl.open("w", encoding="utf-8") as fh:
            for k, code in enumerate(codes):
                insts_json = [{"id": i.id, "params": PARAMS.get(i.id, {})} for i in insts]
                fh.write(json.dumps({"id": k, "code": with_final_newline(code), "instructions": insts_json}) + "\n")
        for _ in range(args.repeat):
            engine = RuffEngine()  # fresh: includes `ruff --version` and all planning
            c0, r0 = time.process_time(), _children_cpu()
            t0 = time.perf_counter()
            verdicts = verify_batch(items, engine=engine)
            batch_runs.append((time.perf_counter() - t0, time.process_time() - c0, _children_cpu() - r0))
            processes = engine.processes_run
            assert sum(len(row) for row in verdicts) == n
            floor_runs.append(bare_ruff_floor(rules, str(files)))
            exact_runs.append(exact_floor(str(exact)))
            command_runs.append(batch_command(jsonl, Path(work, "out.jsonl")))
    if args.verdicts is not None:
        with args.verdicts.open("w", encoding="utf-8") as fh:
            for row in verdicts:
                fh.write(json.dumps([v.to_dict() for v in row], sort_keys=True) + "\n")
        print(f"verdicts written to {args.verdicts}")
    t_batch, py_batch, ruff_batch = (statistics.median(r[k] for r in batch_runs) for k in range(3))
    t_floor, ruff_floor = (statistics.median(r[k] for r in floor_runs) for k in range(2))
    t_exact, ruff_exact = (statistics.median(r[k] for r in exact_runs) for k in range(2))
    t_command = statistics.median(command_runs)
    errors = sum(1 for row in verdicts for v in row if v.error)
    floor_name = f"the floor (one bare Ruff process, {len(rules)} selectors, no parse)"
    print(f"batch:    {t_batch:6.2f} s median of {args.repeat} ({', '.join(f'{r[0]:.2f}' for r in batch_runs)} s), "
          f"{n / t_batch:8.0f} verifications/s, {processes} Ruff process(es), {errors} errors; "
          f"CPU {py_batch:.2f} s Python + {ruff_batch:.2f} s Ruff")
    print(f"floor:    {t_floor:6.2f} s median of {args.repeat} ({', '.join(f'{r[0]:.2f}' for r in floor_runs)} s); "
          f"CPU {ruff_floor:.2f} s Ruff")
    print(f"exact:    {t_exact:6.2f} s median of {args.repeat} ({', '.join(f'{r[0]:.2f}' for r in exact_runs)} s); "
          f"CPU {ruff_exact:.2f} s Ruff: one bare Ruff process over the {len(groups)} configuration groups "
          "exact verdicts need, every file in each (hard links), nothing parsed")
    print(f"command:  {t_command:6.2f} s median of {args.repeat} ({', '.join(f'{t:.2f}' for t in command_runs)} s): "
          "vibecheck verify --batch IN.jsonl --out OUT.jsonl as a process")
    ratio_floor = t_batch / t_floor
    print(ratio_line("verify_batch in process (wall)", t_batch, floor_name, t_floor, target=2))
    print(ratio_line("verify_batch in process (CPU)", py_batch + ruff_batch, floor_name + " (CPU)", ruff_floor))
    print(ratio_line("whole command (wall)", t_command, floor_name, t_floor))
    exact_name = f"the Ruff work of exact verdicts ({len(groups)} configuration groups, no parse)"
    print(ratio_line("verify_batch in process (wall)", t_batch, exact_name, t_exact))
    print(ratio_line("verify_batch in process (CPU)", py_batch + ruff_batch, exact_name + " (CPU)", ruff_exact))
    print(run_context())

    # One more (untimed) batch run for memory: the Python heap via tracemalloc, and the peak
    # RSS of the Ruff process (VmHWM sampled from /proc: getrusage(RUSAGE_CHILDREN) would
    # report this process's own size, as the child is forked from it).
    tracemalloc.start()
    with RuffPeak() as peak:
        verify_batch(items, engine=RuffEngine())
    peak_heap = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    tasks = [(s, k) for s in range(len(sols)) for k in range(len(insts))][: args.baseline_limit]
    ref_args = [reference_args(i, PARAMS.get(i.id, {})) for i in insts]
    with tempfile.TemporaryDirectory(prefix="vibecheck-bench-") as cwd:

        def one(task: tuple[int, int]) -> bool | None:
            s, k = task
            return run_reference(with_final_newline(sols[s][1]), ref_args[k], cwd)[0]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.threads) as pool:
            list(pool.map(one, tasks))
        t_base = time.perf_counter() - t0
    rate_base = len(tasks) / t_base
    print(f"baseline: {t_base:6.2f} s for {len(tasks)} verifications, {rate_base:8.0f} verifications/s "
          f"({len(tasks)} Ruff processes, {args.threads} threads)")

    ratio = (n / t_batch) / rate_base
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ratio (batch rate / baseline rate): {ratio:.1f}x")
    ruff_peak = f"{peak.kib / 1024:.0f} MiB" if peak.kib else "n/a (no /proc)"
    print(f"peak memory: Python heap during a batch {peak_heap / 2**20:.1f} MiB (tracemalloc); "
          f"max RSS of this process {self_rss:.0f} MiB; batch Ruff process peak RSS {ruff_peak}")
    ok = ratio >= 20 and t_batch < 10 and ratio_floor <= 2
    print(f"targets (>= 20x the baseline, < 10 s, <= 2x the floor): {'met' if ok else 'MISSED'}; "
          f"{run_context()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
