#!/usr/bin/env python3
"""Check a SARIF file the way GitHub code scanning's upload path does, as far as it runs offline.

    python scripts/check_sarif_upload.py FILE.sarif [--node-modules DIR] [--multitool PATH]

1. **Schemas** (Python ``jsonschema``, always): the OASIS SARIF 2.1.0 schema and the copy
   ``github/codeql-action/upload-sarif`` validates with (both in ``tests/data/sarif``).
2. **The upload action's own validation** (``--node-modules DIR``, a folder with the npm package
   ``jsonschema`` 1.5.0, the version the action pins): node runs what ``validateSarifFileSchema``
   in the action's ``src/upload-lib.ts`` does, ``new Validator().validate(log, schema)`` with
   URI-format errors only warned, against the action's schema copy.
3. **GitHub's ingestion rules** (``--multitool PATH``, the ``Sarif.Multitool`` binary of the npm
   package ``@microsoft/sarif-multitool``): ``validate --rule-kind "Gh;Sarif"``, the rules GitHub
   points to for checking a file before upload; errors fail, warnings and notes are printed.
4. **Code scanning's hard limits** (always): at most 20 runs per file, 25,000 results and 25,000
   rules per run, 20 tags per rule, 1,000 locations per result, 100 tool extensions per run.

Cannot be run here: the upload itself (GitHub's API, with a token) and the processing on GitHub.
Exit status 0 when every check that ran passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "tests" / "data" / "sarif"

NODE_CHECK = r"""
const {Validator} = require("jsonschema");
const fs = require("fs");
const log = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const schema = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const result = new Validator().validate(log, schema);
const uri = ["uri-reference", "uri"];
const isUri = (e) => e.name === "format" && typeof e.argument === "string" && uri.includes(e.argument);
for (const w of result.errors.filter(isUri)) console.log(`warning: '${w.instance}' is not a valid URI in '${w.property}'`);
const errors = result.errors.filter((e) => !isUri(e));
for (const e of errors) console.log(`error: ${e.stack}`);
console.log(`upload-lib validateSarifFileSchema: ${errors.length} error(s)`);
process.exit(errors.length ? 1 : 0);
"""


def _schemas(log: Any) -> bool:
    import jsonschema

    ok = True
    for name, validator in (("sarif-schema-2.1.0.json", jsonschema.Draft4Validator),
                            ("codeql-action-sarif-schema-2.1.0.json", jsonschema.Draft202012Validator)):
        schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
        errors = list(validator(schema, format_checker=validator.FORMAT_CHECKER).iter_errors(log))
        print(f"schema {name}: {len(errors)} error(s)")
        for err in errors[:20]:
            print(f"  {'/'.join(map(str, err.absolute_path))}: {err.message}")
        ok = ok and not errors
    return ok


def _limits(log: Any) -> bool:
    problems = []
    runs = log.get("runs", [])
    if len(runs) > 20:
        problems.append(f"{len(runs)} runs (at most 20)")
    for n, run in enumerate(runs):
        rules = run.get("tool", {}).get("driver", {}).get("rules", [])
        checks = [
            (len(run.get("results", [])), 25_000, "results"),
            (len(rules), 25_000, "rules"),
            (len(run.get("tool", {}).get("extensions", [])), 100, "tool extensions"),
            (max((len(r.get("properties", {}).get("tags", [])) for r in rules), default=0), 20,
             "tags in a rule"),
            (max((len(r.get("locations", [])) for r in run.get("results", [])), default=0), 1000,
             "locations in a result"),
        ]
        problems += [f"run {n}: {got} {what} (at most {limit})" for got, limit, what in checks
                     if got > limit]
    print(f"code scanning limits: {'ok' if not problems else '; '.join(problems)}")
    return not problems


def _node(path: Path, node_modules: Path) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "check.js"
        script.write_text(NODE_CHECK, encoding="utf-8")
        proc = subprocess.run(
            ["node", str(script), str(path), str(SCHEMAS / "codeql-action-sarif-schema-2.1.0.json")],
            capture_output=True, text=True, check=False,
            env={"NODE_PATH": str(node_modules), "PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
    print(proc.stdout.rstrip() or proc.stderr.rstrip())
    return proc.returncode == 0


def _multitool(path: Path, multitool: Path) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "validation.sarif"
        proc = subprocess.run(
            [str(multitool), "validate", str(path), "--rule-kind", "Gh;Sarif",
             "--level", "Error;Warning;Note", "-o", str(out), "--log", "ForceOverwrite"],
            capture_output=True, text=True, check=False,
        )
        if not out.is_file():
            print(f"Sarif.Multitool failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
            return False
        results = json.loads(out.read_text(encoding="utf-8"))["runs"][0].get("results", [])
    by_level: dict[str, list[str]] = {}
    for r in results:
        by_level.setdefault(r.get("level", "warning"), []).append(
            f"{r['ruleId']}: {r['message'].get('text') or r['message'].get('id')}")
    counts = ", ".join(f"{len(v)} {k}(s)" for k, v in sorted(by_level.items())) or "nothing"
    print(f"Sarif.Multitool validate --rule-kind Gh;Sarif: {counts}")
    for level in ("error", "warning"):
        for line in sorted(set(by_level.get(level, [])))[:20]:
            print(f"  {level} {line[:200]}")
    return not by_level.get("error")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sarif", type=Path)
    ap.add_argument("--node-modules", type=Path, help="folder with the npm package jsonschema 1.5.0")
    ap.add_argument("--multitool", type=Path, help="the Sarif.Multitool binary")
    args = ap.parse_args()
    log = json.loads(args.sarif.read_text(encoding="utf-8"))
    ok = _schemas(log) & _limits(log)
    if args.node_modules:
        ok &= _node(args.sarif, args.node_modules)
    if args.multitool:
        ok &= _multitool(args.sarif, args.multitool)
    print("passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
