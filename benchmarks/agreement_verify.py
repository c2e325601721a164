"""Agreement of the batch engine with one ``ruff check -`` per (solution, instruction).

Data: the 1,140 real Qwen2.5-Coder-7B-Instruct solutions of BigCodeBench-Instruct
(``solution`` field). For the 27 Ruff-backed instructions at default parameters (doc_3 with
the google convention) the engine's verdicts (``verify_batch``) are compared with the paper's
pipeline: one ``ruff check --isolated -`` per (solution, instruction) with the instruction's
rules, settings (``--line-length``, ``--config``) and ``--preview`` where needed, run from an
empty folder; both restore the final newline the upstream sanitizer removed.

library_2: the paper selects PD901,PD002,PD011, but PD901 was removed from Ruff (0.12+:
selecting it is an error), so the reference is PD002,PD011 through Ruff combined with the
built-in ``df`` check. With ``--ruff-old PATH`` (a Ruff 0.11.13 binary, the paper's version)
the built-in check is also compared with the real PD901 on every solution.

Prints verdict agreement per instruction, violation-level agreement (same rule, line,
column and message), and every difference with its cause. Exit status 0 if everything agrees.

    .venv/bin/python benchmarks/agreement_verify.py [--limit N] [--ruff-old PATH]

A Ruff 0.11.13 binary for ``--ruff-old``:
``pip install --no-deps --target /tmp/ruff011 ruff==0.11.13`` gives ``/tmp/ruff011/bin/ruff``.
Takes about 5-8 minutes on 2 busy cores (30,780 reference Ruff processes).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from _common import (
    PARAMS,
    load_solutions,
    reference_args,
    ruff_instructions,
    run_reference,
    with_final_newline,
)

from pytest_vibecheck.verify.api import VerifyItem, verify_batch
from pytest_vibecheck.verify.checks import pandas_df_name
from pytest_vibecheck.verify.ruff_engine import default_engine


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="only the first N solutions")
    ap.add_argument("--ruff-old", default=None, help="a Ruff 0.11.13 binary to check the df part against PD901")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    sols = load_solutions()[: args.limit]
    insts = ruff_instructions()
    print(f"{len(sols)} solutions x {len(insts)} Ruff-backed instructions = {len(sols) * len(insts)}")
    print(f"Ruff {default_engine().version()}")

    t0 = time.perf_counter()
    items = [
        VerifyItem([(i.id, PARAMS.get(i.id, {})) for i in insts], code=with_final_newline(code), label=tid)
        for tid, code in sols
    ]
    ours = verify_batch(items)
    t_engine = time.perf_counter() - t0
    print(f"engine: {t_engine:.2f} s")

    t0 = time.perf_counter()
    tasks = [(s, k) for s in range(len(sols)) for k in range(len(insts))]
    ref_args = [reference_args(i, PARAMS.get(i.id, {})) for i in insts]
    with tempfile.TemporaryDirectory(prefix="vibecheck-ref-") as cwd:

        def ref(task: tuple[int, int]) -> tuple[bool | None, list[tuple[str, int, int, str]], str]:
            s, k = task
            return run_reference(with_final_newline(sols[s][1]), ref_args[k], cwd)

        with ThreadPoolExecutor(args.threads) as pool:
            refs = list(pool.map(ref, tasks))
    print(f"reference: {time.perf_counter() - t0:.1f} s ({len(tasks)} Ruff processes)")

    agree = Counter[str]()
    total = Counter[str]()
    ours_pass = Counter[str]()
    ref_pass = Counter[str]()
    viol_agree = 0
    diffs: list[str] = []
    for (s, k), (r_passed, r_viol, r_err) in zip(tasks, refs, strict=True):
        inst = insts[k]
        v = ours[s][k]
        mine = sorted((x.rule, x.line, x.column, x.message.removeprefix("syntax error: ")) for x in v.violations)
        r_cmp = r_passed
        r_all = list(r_viol)
        if inst.id == "library_2" and r_passed is not None:
            # reference = PD002/PD011 via Ruff + the df check (PD901 is gone from Ruff)
            df = [(x.rule, x.line, x.column, x.message) for x in pandas_df_name(with_final_newline(sols[s][1]))]
            r_all = sorted(r_all + [d for d in df if d[0] != "invalid-syntax" or not r_all])
            r_cmp = not r_all
        total[inst.id] += 1
        ours_pass[inst.id] += v.passed is True
        ref_pass[inst.id] += r_cmp is True
        if v.passed == r_cmp:
            agree[inst.id] += 1
        else:
            cause = v.error or r_err or f"ours={mine[:4]} ref={r_all[:4]}"
            diffs.append(f"{sols[s][0]} {inst.id}: ours={v.passed} ref={r_cmp}: {cause}")
        if mine == r_all:
            viol_agree += 1
        elif v.passed == r_cmp:
            diffs.append(
                f"{sols[s][0]} {inst.id}: same verdict, different violations: "
                f"only ours={sorted(set(mine) - set(r_all))[:4]} only ref={sorted(set(r_all) - set(mine))[:4]}"
            )

    print(f"\n{'instruction':<11} {'agree':>11} {'pass% ours':>10} {'pass% ref':>10}")
    for inst in insts:
        n = total[inst.id]
        print(f"{inst.id:<11} {agree[inst.id]:>5}/{n:<5} {100 * ours_pass[inst.id] / n:>9.1f}% "
              f"{100 * ref_pass[inst.id] / n:>9.1f}%")
    n_all = sum(total.values())
    print(f"\nverdict agreement: {sum(agree.values())}/{n_all}")
    print(f"violation-level agreement (same rule, line, column, message): {viol_agree}/{n_all}")
    errors = sum(1 for row in ours for v in row if v.error)
    print(f"engine errors: {errors}; reference errors: {sum(1 for r in refs if r[0] is None)}")

    if args.ruff_old:
        # The paper's Ruff (0.11.13) still has PD901: compare the built-in df check with it, and
        # the whole library_2 verdict with the paper's PD901,PD002,PD011 selection.
        lib2 = [i.id for i in insts].index("library_2")
        old_agree = 0
        full_agree = 0
        with tempfile.TemporaryDirectory(prefix="vibecheck-ref-") as cwd:

            def old(task: tuple[int, str]) -> tuple[bool | None, list[tuple[str, int, int, str]], str]:
                s, rules = task
                return run_reference(with_final_newline(sols[s][1]), ["--select", rules], cwd, args.ruff_old)

            with ThreadPoolExecutor(args.threads) as pool:
                olds = list(pool.map(old, [(s, "PD901") for s in range(len(sols))]))
                fulls = list(pool.map(old, [(s, "PD901,PD002,PD011") for s in range(len(sols))]))
        for s, ((_p, o_viol, o_err), (f_passed, f_viol, f_err)) in enumerate(zip(olds, fulls, strict=True)):
            mine = [(x.rule, x.line, x.column, x.message) for x in pandas_df_name(with_final_newline(sols[s][1]))]
            if sorted(mine) == o_viol:
                old_agree += 1
            else:
                diffs.append(f"{sols[s][0]}: df check={mine} ruff-0.11 PD901={o_viol} {o_err}")
            v = ours[s][lib2]
            if v.passed == f_passed:
                full_agree += 1
            else:
                mine_all = sorted((x.rule, x.line, x.column) for x in v.violations)
                diffs.append(f"{sols[s][0]} library_2: ours={v.passed} {mine_all[:4]} "
                             f"ruff-0.11 PD901,PD002,PD011={f_passed} {f_viol[:4]} {f_err}")
        print(f"\ndf check vs PD901 of {args.ruff_old}: {old_agree}/{len(sols)} identical violations")
        print(f"library_2 verdicts vs {args.ruff_old} --select PD901,PD002,PD011: {full_agree}/{len(sols)}")

    print(f"\n{len(diffs)} difference(s)")
    for d in diffs:
        print("  " + d)
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
