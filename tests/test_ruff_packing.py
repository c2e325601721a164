"""The Ruff engine packs the configuration groups of many samples into few shared folders
(``lint.per-file-ignores`` keeps each file to its own group's rules) and gives the verdicts of
one sample at a time; checks that may not share (removed or redirected rules) run alone."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from ruff_helpers import wrapped_ruff

from pytest_vibecheck.verify.api import VerifyItem, ruff_check_for, verify_batch
from pytest_vibecheck.verify.instructions import all_instructions
from pytest_vibecheck.verify.ruff_engine import (
    PACK_ABOVE,
    SOLO_UP_TO,
    RuffCheck,
    RuffEngine,
    RuffJob,
    plan_groups,
)

#: A wrapper around the real Ruff that records, per run, the configuration folders of the
#: tree and the lines Ruff printed (then prints them), so tests see the layout and the raw
#: output. ``RENAME`` rewrites one rule code in the output of files in shared folders.
RECORDING_RUFF = """#!{python}
import json, os, subprocess, sys
real, log, rename = {real!r}, {log!r}, {rename!r}
proc = subprocess.run([real] + sys.argv[1:], capture_output=True, text=True)
out = proc.stdout
if rename:
    old, new = rename
    out = "\\n".join(
        ln.replace(" " + old + " ", " " + new + " ") if "-k" in ln.split(":")[0] else ln
        for ln in out.split("\\n")
    )
configs = []
for root, _dirs, names in os.walk("."):
    if "ruff.toml" in names and root != ".":
        configs.append(root)
if sys.argv[1:2] == ["check"]:
    with open(log, "a") as fh:
        fh.write(json.dumps({{"configs": sorted(configs), "lines": out.count("\\n")}}) + "\\n")
sys.stdout.write(out)
sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
"""


def _recording_engine(
    tmp_path: Path, rename: tuple[str, str] | None = None, pack_above: int = 0
) -> tuple[RuffEngine, Path]:
    """An engine on the recording wrapper (packing every batch unless ``pack_above``) and its
    log."""
    log = tmp_path / "runs.jsonl"
    fake = wrapped_ruff(tmp_path, RECORDING_RUFF, "recording-ruff", log=str(log), rename=rename)
    return RuffEngine(fake, pack_above=pack_above), log


def _runs(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


CODE = [
    "import os\nx = 1 \n",
    "def f(a, b):\n    if a:\n        return 1\n    elif b:\n        return 2\n    return 3\n",
    "import sys\n\n\ndef g():\n    y = 'x' * 100 + 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy'\n    return y\n",
    "class A:\n    def m(self, v):\n        try:\n            return int(v)\n        except ValueError:\n            raise KeyError(v)\n",
]


def _default_checks() -> list[RuffCheck]:
    found = [ruff_check_for(inst, inst.defaults()) for inst in all_instructions()]
    return [c for c in found if c is not None]


def test_many_groups_share_few_folders_with_the_verdicts_of_one_sample_at_a_time(tmp_path: Path) -> None:
    """60 samples, each with 5 of the 27 default Ruff-backed instructions (60 different sets):
    one Ruff process over fewer than 8 configuration folders, and every outcome equal to
    linting that sample alone."""
    checks = _default_checks()
    assert len(checks) == 27
    combos = list(itertools.islice(itertools.combinations(range(27), 5), 0, 60 * 997, 997))
    jobs = [RuffJob(CODE[i % len(CODE)], [checks[k] for k in combo]) for i, combo in enumerate(combos)]
    engine, log = _recording_engine(tmp_path)
    together = engine.run(jobs)
    [run] = _runs(log)
    assert len(run["configs"]) < 8  # type: ignore[arg-type]
    alone_engine = RuffEngine()
    alone = [alone_engine.run([job])[0] for job in jobs]
    assert together == alone
    failing = sum(bool(o.violations) for row in together for o in row)
    assert failing >= 40  # 49 of 300 with Ruff 0.17.6: the outcomes compared are not all empty


def test_a_file_gets_only_its_own_rules(tmp_path: Path) -> None:
    """Sample A asks for F (pyflakes) only, sample B for E/W only, in one folder: A's file is
    not linted for W291 and B's not for F401, so Ruff prints exactly the two findings."""
    f_only = RuffCheck.make(["F"])
    e_w = RuffCheck.make(["E", "W"], settings={"lint.pycodestyle.max-line-length": 88})
    engine, log = _recording_engine(tmp_path)
    [[a], [b]] = engine.run([RuffJob(CODE[0], [f_only]), RuffJob(CODE[0], [e_w])])
    assert [v.rule for v in a.violations] == ["F401"]
    assert [v.rule for v in b.violations] == ["W291"]
    [run] = _runs(log)
    assert len(run["configs"]) == 1  # type: ignore[arg-type]
    assert run["lines"] == 2


def test_a_redirected_rule_runs_alone_and_keeps_its_findings() -> None:
    """``TRY200`` (removed from Ruff, redirected to ``B904``) and ``B904`` on the same code,
    in one sample and in two: each check fails with B904's finding. Sharing a configuration,
    B904's selector would have taken the finding and TRY200 would have passed."""
    engine = RuffEngine(pack_above=0)
    try200, b904 = RuffCheck.make(["TRY200"]), RuffCheck.make(["B904"])
    assert engine.packable(b904) and not engine.packable(try200)
    [one] = engine.run([RuffJob(CODE[3], [try200, b904])])
    two = engine.run([RuffJob(CODE[3], [try200]), RuffJob(CODE[3], [b904])])
    [small] = RuffEngine().run([RuffJob(CODE[3], [try200, b904])])  # a batch too small to pack
    for outcomes in (one, [two[0][0], two[1][0]], small):
        assert [[v.rule for v in o.violations] for o in outcomes] == [["B904"], ["B904"]]
        assert all(o.error is None for o in outcomes)


def test_a_rejected_shared_folder_errors_only_the_bad_check() -> None:
    """A check with a setting Ruff rejects shares a folder with good checks of other samples:
    only that check is an error; every other sample, and the good check of its own sample,
    is judged."""
    bad = RuffCheck.make(["C901"], settings={"lint.mccabe.max-complexity": "many"})
    good = RuffCheck.make(["F"])
    e_w = RuffCheck.make(["E", "W"], settings={"lint.pycodestyle.max-line-length": 88})
    engine = RuffEngine(pack_above=0)
    rows = engine.run([RuffJob(CODE[0], [bad, good]), RuffJob(CODE[0], [e_w]), RuffJob(CODE[1], [good])])
    assert rows[0][0].error is not None and "rejected the configuration" in rows[0][0].error
    assert [v.rule for v in rows[0][1].violations] == ["F401"] and rows[0][1].error is None
    assert [v.rule for v in rows[1][0].violations] == ["W291"]
    assert rows[2][0].violations == () and rows[2][0].error is None


def test_a_code_no_shared_selector_covers_is_linted_again_alone(tmp_path: Path) -> None:
    """Ruff reports a code that no selector of the shared folder covers (here the wrapper
    renames F401 to X999 in shared folders): that file is linted again in an exact folder
    of its own group, where its only check owns the code; the other sample is untouched."""
    engine, log = _recording_engine(tmp_path, rename=("F401", "X999"))
    f_only = RuffCheck.make(["F"])
    e_w = RuffCheck.make(["E", "W"], settings={"lint.pycodestyle.max-line-length": 88})
    [[a], [b]] = engine.run([RuffJob(CODE[0], [f_only]), RuffJob(CODE[0], [e_w])])
    assert [v.rule for v in a.violations] == ["F401"] and a.error is None
    assert [v.rule for v in b.violations] == ["W291"]
    assert len(_runs(log)) == 2


def test_small_batches_get_one_exact_folder_per_group(tmp_path: Path) -> None:
    """Up to PACK_ABOVE distinct groups: one folder per group (as cheap as a few shared
    ones), with the same verdicts as packed."""
    engine, log = _recording_engine(tmp_path, pack_above=PACK_ABOVE)
    checks = _default_checks()
    jobs = [RuffJob(CODE[i % len(CODE)], [checks[i], checks[i + 5]]) for i in range(6)]
    small = engine.run(jobs)
    [run] = _runs(log)
    groups = {tuple(job.checks[k] for k in members) for job in jobs for members in plan_groups(tuple(job.checks))}
    assert len(groups) == 8  # two of the pairs cannot share a configuration
    assert len(run["configs"]) == 8  # type: ignore[arg-type]
    assert small == RuffEngine(pack_above=0).run(jobs)


def test_verify_batch_with_mixed_instructions_equals_one_item_at_a_time() -> None:
    """Through the public API: 12 items with different instruction sets (preview and not,
    three docstring conventions) give, in one batch, the verdicts of one item at a time."""
    ids = [i.id for i in all_instructions() if i.verifier.rules]
    items = [
        VerifyItem([(iid, {}) for iid in ids[k::7][:6]], code=CODE[k % len(CODE)]) for k in range(12)
    ]
    assert verify_batch(items) == [verify_batch([item])[0] for item in items]


def test_a_few_checks_run_alone_without_listing_the_rules(tmp_path: Path) -> None:
    """A batch of at most SOLO_UP_TO checks (``vibecheck verify FILE -i ... -i ...``) puts
    each check in an exact folder of its own and never runs ``ruff rule --all`` (about a
    third of a one-file verify, issue 29); the outcomes are those of the grouped layout."""
    checks = _default_checks()[:SOLO_UP_TO]
    engine, log = _recording_engine(tmp_path, pack_above=PACK_ABOVE)
    code = CODE[0] + "\n\n" + CODE[1] + "\n\n" + CODE[3]
    [solo] = engine.run([RuffJob(code, checks)])
    [run] = _runs(log)
    assert len(run["configs"]) == SOLO_UP_TO  # type: ignore[arg-type]
    assert engine._rule_codes_read is False
    grouped_engine = RuffEngine(pack_above=PACK_ABOVE)
    [grouped] = grouped_engine.run([RuffJob(code, [*checks, _default_checks()[SOLO_UP_TO]])])
    assert grouped_engine._rule_codes_read is True  # one check more: grouped as before
    assert solo == grouped[:SOLO_UP_TO]
    assert sum(bool(o.violations) for o in solo) >= 2  # the outcomes compared are not all empty
