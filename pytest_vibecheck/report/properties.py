"""How an item's record travels from the item to the controller, and what JUnit files see of it.

An item keeps its record (a dict of builtins, docs/report-schema.md) in ``user_properties`` under
a name (``"vibecheck"`` for benchmark items, ``"vibecheck_gate"`` for gate items). pytest writes
every user property into its own ``--junitxml`` as ``str(value)``, which was a 2.4 KB Python
repr on every test case. So when the report is made (on the xdist worker that ran the item),
:func:`move_record` takes the record out of the report's ``user_properties`` into a report
attribute (``report.vibecheck_records[name]``: pytest serialises a report's attributes for
pytest-xdist, as pytest-html does with its ``extras``) and puts short, readable properties in its
place (:func:`item_properties`, :func:`gate_properties`). :func:`record_of` reads the record back
on the controller, from the attribute or, for items that store it the old way, from
``user_properties``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

__all__ = ["RECORDS_ATTR", "gate_properties", "item_properties", "move_record", "record_of"]

#: The report attribute that carries the records, by name.
RECORDS_ATTR = "vibecheck_records"


def item_properties(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The test-case properties of a benchmark item: model, protocol, k, the tests' status of
    the final turn (``passed``, ``failed``, ``timeout``, ..., ``not run``), one
    ``passed``/``failed``/``error`` per judged instruction id, and the error kind or
    ``no code`` when there is one."""
    props = [
        ("vibecheck.model", str(record.get("model"))),
        ("vibecheck.protocol", str(record.get("protocol"))),
        ("vibecheck.k", str(record.get("k"))),
    ]
    turns = record.get("turns") or []
    final = turns[-1] if turns else {}
    props.append(("vibecheck.tests", str((final.get("tests") or {}).get("status") or "not run")))
    for v in final.get("verdicts") or []:
        verdict = {True: "passed", False: "failed"}.get(v.get("passed"), "error")
        props.append((f"vibecheck.{v.get('id')}", verdict))
    if record.get("no_code"):
        props.append(("vibecheck.no_code", "true"))
    err = record.get("error")
    if err:
        props.append(("vibecheck.error", str(err.get("kind"))))
    return props


def gate_properties(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The test-case properties of a gate item: file, instruction label, status and the number
    of counted violations."""
    counted = sum(1 for v in record.get("violations") or [] if v.get("counted"))
    return [
        ("vibecheck.file", str(record.get("file"))),
        ("vibecheck.instruction", str(record.get("label"))),
        ("vibecheck.status", str(record.get("status"))),
        ("vibecheck.violations", str(counted)),
    ]


def move_record(
    report: pytest.TestReport,
    name: str,
    properties: Callable[[Mapping[str, Any]], list[tuple[str, str]]],
) -> None:
    """Move the record stored under ``name`` from ``report.user_properties`` into the report
    attribute :data:`RECORDS_ATTR`, and add ``properties(record)`` in its place (on the
    teardown report only, the one pytest's junitxml writes). No-op without such a record."""
    index = next(
        (n for n, (key, value) in enumerate(report.user_properties)
         if key == name and isinstance(value, Mapping)),
        None,
    )
    if index is None:
        return
    value = report.user_properties.pop(index)[1]
    assert isinstance(value, Mapping)
    records = getattr(report, RECORDS_ATTR, None)
    if not isinstance(records, dict):
        records = {}
        setattr(report, RECORDS_ATTR, records)
    records[name] = value
    if report.when == "teardown":
        report.user_properties.extend(properties(value))


def record_of(report: pytest.TestReport, name: str = "vibecheck") -> Mapping[str, Any] | None:
    """The record of ``name`` carried by ``report`` (see :func:`move_record`), or None. A
    benchmark item's full record comes with its setup report; its call and teardown reports
    carry :data:`~pytest_vibecheck.report.collector.SAME_AS_SETUP` (``{"same_as_setup":
    True}``), so a reader keeps what it needs from the setup report."""
    records = getattr(report, RECORDS_ATTR, None)
    found = records.get(name) if isinstance(records, Mapping) else None
    if isinstance(found, Mapping):
        return found
    for key, value in report.user_properties:
        if key == name and isinstance(value, Mapping):
            return value
    return None
