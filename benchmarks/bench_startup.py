"""Start-up of the command line against its floors, as whole processes, in one interleaved run.

Each command is started ``--repeat`` times, round-robin (so a change of load hits every side
alike), and its median wall time is printed with its ratio to the floors:

* ``python -c pass`` (the interpreter of this venv: what any Python command pays);
* ``ruff check --isolated --no-cache`` on the same file (what verifying it costs Ruff);

against ``vibecheck --help`` and ``vibecheck verify FILE -i style_3 -i doc_1`` (a pre-commit
hook's or an editor's call). Targets (issue 29): ``--help`` <= 0.1 s and the one-file verify
<= 0.15 s on the project's 2-core machine. Exit status 1 when a target is missed.

``--smoke`` (the CI check, ``.ci/run``) fails only when far off: the one-file verify or
``--help`` slower than 1 s *and* than 20x ``python -c pass`` (both, so that a loaded machine,
which slows the floor too, does not fail it; nor does a small slowdown). Today both take 4x to
13x the floor.

``--baseline-tree DIR`` also times both vibecheck commands with the package of another tree
(``git archive main | tar -x -C DIR``: imported through ``PYTHONPATH``) in the same rounds, for
a before/after pair measured alike.

    .venv/bin/python benchmarks/bench_startup.py [--repeat 15] [--smoke] [--baseline-tree DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ratio_line, run_context

from pytest_vibecheck.verify.ruff_engine import default_engine

CODE = "def f(x):\n    return x\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="starts of each command (median reported)")
    ap.add_argument("--smoke", action="store_true", help="fail only when far off (CI)")
    ap.add_argument("--baseline-tree", type=Path, default=None, help="also time this tree's package")
    args = ap.parse_args(argv)
    bindir = Path(sys.executable).parent
    vibecheck = str(bindir / "vibecheck")
    with tempfile.TemporaryDirectory(prefix="vibecheck-startup-") as tmp:
        one = Path(tmp, "one.py")
        one.write_text(CODE, encoding="utf-8")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "ruff check FILE": [default_engine().ruff_bin(), "check", "--isolated", "--no-cache",
                                "--select", "E501,ANN", "-q", str(one)],
            "vibecheck --help": [vibecheck, "--help"],
            "vibecheck verify FILE": [vibecheck, "verify", str(one), "-i", "style_3", "-i", "doc_1"],
        }
        envs: dict[str, dict[str, str] | None] = dict.fromkeys(commands)
        if args.baseline_tree is not None:
            base_env = {**os.environ, "PYTHONPATH": str(args.baseline_tree.resolve())}
            for name in ("vibecheck --help", "vibecheck verify FILE"):
                commands[f"{name} (baseline tree)"] = commands[name]
                envs[f"{name} (baseline tree)"] = base_env
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                t0 = time.perf_counter()
                subprocess.run(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=envs[name], check=False)
                times[name].append(time.perf_counter() - t0)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    print(f"{args.repeat} starts of each command, round-robin; {run_context()}")
    for name, t in med.items():
        print(f"  {name:24s} {t:6.3f} s median (min {min(times[name]):.3f} s)")
    py, ruff = med["python -c pass"], med["ruff check FILE"]
    help_s, verify_s = med["vibecheck --help"], med["vibecheck verify FILE"]
    print(ratio_line("vibecheck --help", help_s, "python -c pass", py))
    print(ratio_line("vibecheck verify FILE", verify_s, "python -c pass", py))
    print(ratio_line("vibecheck verify FILE", verify_s, "ruff check FILE", ruff))
    if args.baseline_tree is not None:
        for name in ("vibecheck --help", "vibecheck verify FILE"):
            before = med[f"{name} (baseline tree)"]
            print(ratio_line(f"{name}, baseline tree", before, "python -c pass", py)
                  + f"; this tree / baseline tree = {med[name] / before:.2f}x")
    if args.smoke:
        bad = [f"{name} {t:.2f} s" for name, t in (("--help", help_s), ("verify", verify_s))
               if t > 1.0 and t > 20 * py]
        print(f"smoke check (fails only above both 1 s and 20x python -c pass): {'FAILED: ' + ', '.join(bad) if bad else 'ok'}")
        return 1 if bad else 0
    ok = help_s <= 0.1 and verify_s <= 0.15
    print(f"targets (--help <= 0.1 s, verify FILE <= 0.15 s): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
