"""Collection: one pytest item per (suite, problem, model, protocol, k, sample).

There are no files to collect, so the plugin adds one :class:`VibeSuite` collector per suite to
the session's own collection (``pytest_make_collect_report`` for the session, see
:mod:`pytest_vibecheck.plugin.hooks`). Node ids follow pytest's ``path::name[params]`` shape with the
suite name in place of the path, e.g.::

    bigvibebench::BigCodeBench/13[gpt-5-baseline]
    bigvibebench::BigCodeBench/13[gpt-5-single-k5]
    bigvibebench::BigCodeBench/13[gpt-5-multi-k5-s2]      # sample 2 (with --vibe-samples 3)

so they are stable across runs (``--lf``, ``--ff``), deterministic on every xdist worker, and
``-k`` matches the suite, task id, model label, protocol, instruction ids and categories.

Markers on every item (all start with ``vibe``, so none clashes with a project's own markers,
and they are registered only when the benchmark is active): ``vibecheck(suite=, model=,
protocol=, k=, sample=)``, one protocol marker (``vibe_baseline``, ``vibe_single_turn``,
``vibe_multi_turn``), one marker per category of the judged instructions (``vibe_style``,
``vibe_logic``, ``vibe_doc``, ``vibe_error``, ``vibe_library``) and one per judged instruction
id (``vibe_style_3``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vibecheck.plugin.run import (
    ItemOutcome,
    ItemSpec,
    VibeFailure,
    VibeInfraError,
    default_setup,
    run_item_for,
)
from pytest_vibecheck.suites.problem import Problem
from pytest_vibecheck.suites.profiles import GenerationSetup
from pytest_vibecheck.verify.instructions import get_instruction

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from pytest_vibecheck.config.settings import VibeSettings

__all__ = [
    "PROTOCOL_MARKERS",
    "ItemSpec",
    "VibeItem",
    "VibeSuite",
    "item_param",
    "marker_help",
    "marker_name",
    "model_labels",
    "plan_items",
    "select_problems",
]

#: Marker name of each protocol. Every marker of the plugin starts with ``vibe``, so none can
#: clash with a project's own markers (``style``, ``error``, ``baseline`` ...); they are
#: registered only when the benchmark is active.
PROTOCOL_MARKERS: dict[str, str] = {
    "baseline": "vibe_baseline",
    "single": "vibe_single_turn",
    "multi": "vibe_multi_turn",
}

#: ``-k`` words of each protocol (besides the marker names, which are keywords too).
_PROTOCOL_WORDS: dict[str, str] = {"baseline": "baseline", "single": "single_turn", "multi": "multi_turn"}


def marker_name(category_or_id: str) -> str:
    """The marker of an instruction category or id: ``style`` -> ``vibe_style``, ``style_3``
    -> ``vibe_style_3``."""
    return f"vibe_{category_or_id}"


def marker_help() -> tuple[str, ...]:
    """The ``markers`` ini lines of the benchmark (``pytest --markers`` shows them)."""
    from pytest_vibecheck.verify.instructions import category_names, default_registry

    return (
        "vibecheck(suite, model, protocol, k, sample): a pytest-vibecheck benchmark item",
        "vibe_baseline: vibecheck item of the baseline protocol (no instructions; paper §3.2)",
        "vibe_single_turn: vibecheck item of the single-turn protocol (paper §3.2)",
        "vibe_multi_turn: vibecheck item of the multi-turn protocol (paper §3.2)",
        *(f"{marker_name(cat)}: vibecheck item judging a {name} instruction"
          for cat, name in category_names().items()),
        *(f"{marker_name(inst.id)}: vibecheck item judging instruction {inst.id}"
          for inst in default_registry()),
    )


def _sanitize(text: str) -> str:
    out = text.replace("::", "_").replace("[", "(").replace("]", ")")
    return "".join("_" if ch.isspace() else ch for ch in out)


def model_labels(models: Sequence[str]) -> dict[str, str]:
    """Short, unique labels for node ids: ``openai:gpt-5`` -> ``gpt-5``, ``replay:NAME`` ->
    ``NAME``, ``replay:/path/x.jsonl`` -> ``x``; ``reference`` stays. Specs whose short labels
    collide keep their full (sanitised) spec."""
    short: dict[str, str] = {}
    for m in models:
        _, sep, rest = m.partition(":")
        name = rest if sep else m
        if "/" in name or "\\" in name or name.endswith((".jsonl", ".json", ".gz")):
            base = Path(name).name
            for suffix in (".gz", ".jsonl", ".json"):
                base = base.removesuffix(suffix)
            name = base or name
        short[m] = _sanitize(name)
    counts: dict[str, int] = {}
    for v in short.values():
        counts[v] = counts.get(v, 0) + 1
    return {m: (v if counts[v] == 1 else _sanitize(m)) for m, v in short.items()}


def item_param(label: str, protocol: str, k: int, sample: int, samples: int) -> str:
    """The ``[...]`` part of a node id: ``gpt-5-baseline``, ``gpt-5-single-k5``,
    ``gpt-5-multi-k3-s1`` (the sample suffix only when ``samples > 1``)."""
    text = f"{label}-{protocol}" if protocol == "baseline" else f"{label}-{protocol}-k{k}"
    if samples > 1:
        text += f"-s{sample}"
    return text


def select_problems(
    problems: Sequence[Problem], tasks: Sequence[str], limit: int | None
) -> list[Problem]:
    """Problems whose task id matches any glob in ``tasks`` (all if empty), in suite order,
    at most ``limit``."""
    chosen = [
        p for p in problems if not tasks or any(fnmatch.fnmatchcase(p.task_id, g) for g in tasks)
    ]
    return chosen[:limit] if limit is not None else chosen


def plan_items(
    suite: str,
    suite_hash: str | None,
    problems: Iterable[Problem],
    settings: VibeSettings,
    missing: Mapping[str, tuple[str, ...]] | None = None,
    setup: GenerationSetup | None = None,
) -> Iterator[ItemSpec]:
    """Every item of a suite in a fixed order: problem, model, protocol (baseline, single,
    multi), k, sample. Baseline has one k (0). ``missing``: task id -> modules this environment
    lacks (:func:`pytest_vibecheck.plugin.preflight.missing_by_task`); those items are skipped
    without a request. ``setup``: the suite's generation settings (default: the default
    profile's with no manifest)."""
    setup = setup or default_setup()
    labels = model_labels(settings.models)
    missing = missing or {}
    for problem in problems:
        lacks = tuple(missing.get(problem.task_id, ()))
        for model in settings.models:
            for protocol in settings.protocols:
                ks = (0,) if protocol == "baseline" else settings.ks
                for k in ks:
                    for sample in range(settings.samples):
                        yield ItemSpec(
                            suite, suite_hash, problem, model, labels[model], protocol, k, sample, lacks,
                            setup,
                        )


class VibeSuite(pytest.Collector):
    """The collector of one suite; its node id is the suite name.

    ``specs`` are the planned items (see :func:`plan_items`).
    """

    def __init__(self, *, specs: Sequence[ItemSpec], samples: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.specs = tuple(specs)
        self.samples = samples

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        for spec in self.specs:
            param = item_param(spec.label, spec.protocol, spec.k, spec.sample, self.samples)
            name = f"{spec.problem.task_id}[{param}]"
            yield VibeItem.from_parent(
                self, name=name, spec=spec, nodeid=f"{self.nodeid}::{name}"
            )

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name


def make_suite_collector(
    session: pytest.Session, name: str, specs: Sequence[ItemSpec], samples: int
) -> VibeSuite:
    """The collector of suite ``name`` as a child of the session (path = the rootdir)."""
    return VibeSuite.from_parent(
        session,
        name=name,
        nodeid=name,
        path=Path(session.config.rootpath),
        specs=specs,
        samples=samples,
    )


class VibeItem(pytest.Item):
    """One benchmark item. The work (generate, extract, test, verify) happens in
    :meth:`setup`, so an infrastructure failure is a pytest *error*; :meth:`runtest` only
    judges the stored result (pass iff the tests pass and every instruction passes)."""

    def __init__(self, *, spec: ItemSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.outcome: ItemOutcome | None = None  # set by setup
        self.add_marker(
            pytest.mark.vibecheck(
                suite=spec.suite,
                model=spec.model,
                protocol=spec.protocol,
                k=spec.k,
                sample=spec.sample,
            )
        )
        self.add_marker(PROTOCOL_MARKERS[spec.protocol])
        cats: list[str] = []
        for _pos, iid, _params in spec.instructions:
            cat = get_instruction(iid).category
            if cat not in cats:
                cats.append(cat)
            self.extra_keyword_matches.add(iid)
        for cat in cats:
            self.add_marker(marker_name(cat))
        for _pos, iid, _params in spec.instructions:
            self.add_marker(marker_name(iid))
        self.extra_keyword_matches.update(
            {spec.suite, spec.model, spec.label, spec.protocol, _PROTOCOL_WORDS[spec.protocol]}
        )

    def setup(self) -> None:
        self.outcome = run_item_for(self, self.spec)

    def runtest(self) -> None:
        outcome = self.outcome
        if outcome is None:  # pragma: no cover - setup always sets it or raises
            raise RuntimeError("vibecheck: item was not set up")
        if not outcome.passed:
            raise VibeFailure(outcome.failure_text)

    def repr_failure(
        self,
        excinfo: ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, (VibeFailure, VibeInfraError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid
