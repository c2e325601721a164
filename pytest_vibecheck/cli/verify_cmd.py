"""``vibecheck verify``: judge code or a model reply against VeriCode instructions.

Single mode::

    vibecheck verify FILE|- -i logic_3:max_branches=3 -i doc_3:convention=google [--reply] [--json]

prints ``PASS``/``FAIL``/``ERROR`` per instruction and each violation as
``FILE:LINE:COL RULE message`` (at most 50 for the file, then one line with the count of the
rest; ``--json`` lists them all). A FILE over ``--max-bytes`` (default 2,000,000) is refused.
Exit status: 0 if every instruction passes, 1 if any fails, 2 on a usage error or when a
verifier could not judge.

Batch mode::

    vibecheck verify --batch IN.jsonl --out OUT.jsonl

Each input line is ``{"id": ..., "reply": ...}`` or ``{"id": ..., "code": ...}`` (code =
already extracted; both may be given) plus ``"instructions": [{"id": "logic_3", "params":
{"max_branches": 2}}, ...]`` and optionally ``"entry_point"``. Each output line is
``{"id": ..., "results": [{"instruction", "params", "passed", "error", "violations":
[{"rule", "line", "column", "message"}]}]}``, in input order. A malformed input line is
reported on stderr by line number and skipped; the others are still verified. Exit status:
0 when every line was verified and judged, 2 when a line was skipped or a verifier could not
judge (the other results are still written).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from pytest_vibecheck.config.limits import MAX_INPUT_BYTES, SHOWN_VIOLATIONS, too_large
from pytest_vibecheck.errors import ParameterError, ParameterWarning, VibecheckError
from pytest_vibecheck.verify.api import VerifyItem, verify_batch
from pytest_vibecheck.verify.instructions import default_registry
from pytest_vibecheck.verify.params import parse_instruction_arg, validate_params
from pytest_vibecheck.verify.verdict import Verdict

RESULT_KEYS = ("instruction", "params", "passed", "error", "violations")


def _as_json(verdict: Verdict) -> Mapping[str, object]:
    """The verdict's JSON, read by key name."""
    return verdict.to_dict()


def register(sub: Any) -> None:
    """Add the ``verify`` sub-command to ``sub`` (an argparse subparsers object)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help="check code or a model reply against VeriCode instructions",
        description="Check code (or a model reply) against VeriCode instructions.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="code file to check, or - for stdin")
    p.add_argument(
        "-i",
        "--instruction",
        action="append",
        default=[],
        metavar="ID[:key=value,...]",
        help="instruction to check, e.g. logic_3:max_branches=3 (repeatable)",
    )
    p.add_argument(
        "--reply",
        action="store_true",
        help="FILE is a model's whole reply: code instructions judge the code extracted from it",
    )
    p.add_argument("--extract", choices=("first", "best"), default="first", help="extraction mode for --reply")
    p.add_argument("--entry-point", default=None, help="function the code must define (for --extract best)")
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.add_argument(
        "--lenient-params",
        action="store_true",
        help="as in the paper, reset invalid -i parameters to their defaults with a warning "
        "instead of failing with exit status 2",
    )
    p.add_argument(
        "--max-bytes", type=int, default=MAX_INPUT_BYTES, metavar="N",
        help=f"refuse a FILE, or a batch line's code, larger than N bytes (default {MAX_INPUT_BYTES:,})",
    )  # fmt: skip
    p.add_argument("--batch", metavar="IN.jsonl", help="verify every line of a JSONL file")
    p.add_argument("--out", metavar="OUT.jsonl", default="-", help="batch output file (default: stdout)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run single or batch mode; returns the exit status."""
    if args.batch:
        if args.file or args.instruction:
            raise VibecheckError("--batch takes the instructions from IN.jsonl; give no FILE and no -i")
        return _run_batch(Path(args.batch), args.out, args.max_bytes)
    if not args.file:
        raise VibecheckError("give a FILE (or - for stdin) and at least one -i ID, or use --batch IN.jsonl")
    if not args.instruction:
        raise VibecheckError("give at least one instruction with -i ID[:key=value,...]")
    return _run_single(args)


def _read_text(name: str, max_bytes: int) -> str:
    """The text of ``name`` (``-``: stdin); VibecheckError when it cannot be read or is over
    ``max_bytes`` (checked before reading a file, so a huge one costs nothing)."""
    raise_with = "not verified: pass --max-bytes N to raise the limit"
    if name == "-":
        raw = getattr(sys.stdin, "buffer", None)  # a text stream without one: read as text
        data = raw.read(max_bytes + 1) if raw is not None else sys.stdin.read(max_bytes + 1).encode()
        if len(data) > max_bytes:
            raise VibecheckError(
                f"stdin is over the limit of {max_bytes:,} bytes; {raise_with}"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise VibecheckError(f"cannot read stdin: {exc}") from None
    try:
        refusal = too_large(name, Path(name).stat().st_size, max_bytes, raise_with)
        if refusal is not None:
            raise VibecheckError(refusal)
        return Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VibecheckError(f"cannot read {name}: {exc}") from None


def _run_single(args: argparse.Namespace) -> int:
    registry = default_registry()
    pairs: list[tuple[str, Mapping[str, object]]] = []
    for spec in args.instruction:
        iid, params = parse_instruction_arg(spec)
        inst = registry.get(iid)  # unknown id -> UnknownIdError with suggestions (exit 2)
        if not args.lenient_params:
            # A value typed on the command line is checked strictly: a typo must not be
            # silently replaced by the default (ParameterError -> exit 2); nothing is reset.
            try:
                validate_params(inst, params, strict=True, warn=False)
            except ParameterError as exc:
                raise ParameterError(
                    f"{exc}; give a valid value, or pass --lenient-params to reset invalid "
                    "parameters to their defaults as the paper does"
                ) from None
        pairs.append((iid, params))
    text = _read_text(args.file, args.max_bytes)
    name = "<stdin>" if args.file == "-" else args.file
    item = VerifyItem(
        pairs,
        reply=text if args.reply else None,
        code=None if args.reply else text,
        entry_point=args.entry_point,
        extract_mode=args.extract,
        label=name,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ParameterWarning)
        verdicts = verify_batch([item], registry=registry)[0]
    for w in caught:
        if issubclass(w.category, ParameterWarning):
            print(f"vibecheck verify: warning: {w.message}", file=sys.stderr)
    if args.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2))
    else:
        _print_verdicts(verdicts, name, sys.stdout)
    if any(v.passed is None for v in verdicts):
        return 2
    return 0 if all(v.passed for v in verdicts) else 1


def _print_verdicts(verdicts: list[Verdict], name: str, out: TextIO) -> None:
    """PASS/FAIL/ERROR per instruction with its violations, at most
    :data:`~pytest_vibecheck.config.limits.SHOWN_VIOLATIONS` of them for the file; the rest
    of each instruction is one line with its count."""
    left = SHOWN_VIOLATIONS
    for v in verdicts:
        params = ", ".join(f"{k}={val}" for k, val in v.params.items())
        head = v.instruction + (f" ({params})" if params else "")
        if v.passed is None:
            print(f"ERROR {head}: {v.error}", file=out)
            continue
        print(f"{'PASS' if v.passed else 'FAIL'} {head}", file=out)
        for x in v.violations[:left]:
            print(f"  {name}:{x.line}:{x.column} {x.rule} {x.message}", file=out)
        rest = len(v.violations) - left
        if rest > 0:
            print(f"  ... and {rest:,} more violations of {v.instruction} in {name}, not shown "
                  "(--json lists them all)", file=out)
        left = max(0, left - len(v.violations))


def _parse_line(raw: str, registry: Any) -> tuple[str | int, VerifyItem]:
    """One batch input line -> (id, item); raises ValueError with the reason."""
    try:
        obj = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    if "id" not in obj:
        raise ValueError('missing "id"')
    sid = obj["id"]
    if not isinstance(sid, str | int) or isinstance(sid, bool):
        raise ValueError('"id" must be a string or an integer')
    reply, code = obj.get("reply"), obj.get("code")
    if reply is None and code is None:
        raise ValueError('give "reply" or "code"')
    for key, value in (("reply", reply), ("code", code)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f'"{key}" must be a string')
    insts = obj.get("instructions")
    if not isinstance(insts, list) or not insts:
        raise ValueError('"instructions" must be a non-empty list of {"id": ..., "params": {...}}')
    pairs: list[tuple[str, Mapping[str, object]]] = []
    for n, inst in enumerate(insts):
        if isinstance(inst, str):
            inst = {"id": inst}
        if not isinstance(inst, dict) or not isinstance(inst.get("id"), str):
            raise ValueError(f'instructions[{n}] must be {{"id": "...", "params": {{...}}}}')
        params = inst.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError(f'instructions[{n}].params must be an object')
        try:
            registry.get(inst["id"])
        except VibecheckError as exc:
            raise ValueError(f"instructions[{n}]: {exc}") from None
        pairs.append((inst["id"], params))
    entry = obj.get("entry_point")
    if entry is not None and not isinstance(entry, str):
        raise ValueError('"entry_point" must be a string')
    return sid, VerifyItem(
        pairs, reply=reply, code=code, entry_point=entry, label=str(sid)
    )


def _run_batch(path: Path, out_name: str, max_bytes: int = MAX_INPUT_BYTES) -> int:
    registry = default_registry()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VibecheckError(f"cannot read {path}: {exc}") from None
    ids: list[Any] = []
    items: list[VerifyItem] = []
    skipped = 0
    for n, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            refusal = too_large(f"line {n}", len(raw.encode("utf-8")), max_bytes,
                                "not verified: pass --max-bytes N to raise the limit")
            if refusal is not None:
                raise ValueError(refusal.removeprefix(f"line {n} "))
            sid, item = _parse_line(raw, registry)
        except ValueError as exc:
            print(f"{path}:{n}: skipped: {exc}", file=sys.stderr)
            skipped += 1
            continue
        ids.append(sid)
        items.append(item)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ParameterWarning)
        results = verify_batch(items, registry=registry)
    for w in caught:
        if issubclass(w.category, ParameterWarning):
            print(f"{path}: warning: id {w.message}", file=sys.stderr)
    errors = 0
    out_lines = []
    for sid, verdicts in zip(ids, results, strict=True):
        errors += sum(v.passed is None for v in verdicts)
        rows = [{k: d[k] for k in RESULT_KEYS} for d in map(_as_json, verdicts)]
        out_lines.append(json.dumps({"id": sid, "results": rows}, ensure_ascii=False))
    text = "".join(line + "\n" for line in out_lines)
    if out_name == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(out_name).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise VibecheckError(f"cannot write {out_name}: {exc}") from None
    versions = sorted({v.ruff_version for row in results for v in row if v.ruff_version})
    print(
        f"vibecheck verify: {len(items)} line(s) verified, {skipped} skipped, "
        f"{errors} verifier error(s)" + (f"; Ruff {', '.join(versions)}" if versions else ""),
        file=sys.stderr,
    )
    return 2 if skipped or errors else 0
