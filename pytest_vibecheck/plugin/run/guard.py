"""When a run stops sending requests: fatal model errors, ``--vibe-max-errors``, ``--vibe-budget``.

:class:`RunGuard` is the :class:`~pytest_vibecheck.generate.generator.CallGuard` of every
generator of a process. Before each API request it raises
:class:`~pytest_vibecheck.generate.generator.RunStoppedError` when the request may not be sent;
after it, it records what the request spent. Its decisions are shared by all processes of the run
through :class:`~pytest_vibecheck.plugin.run.state.RunState`:

- a fatal error of a model (HTTP 401/402/403/404, unknown model, nothing listening at the base
  URL; :attr:`BackendError.fatal`), or HTTP 400 on :data:`BAD_REQUESTS_FATAL` requests of a
  model with none answered, stops every further request to that model;
- more infrastructure errors than ``--vibe-max-errors`` (``N`` items, or ``P%`` of the run's
  items; default :data:`DEFAULT_MAX_ERRORS`) stops every request of the run;
- ``--vibe-budget`` (tokens, and/or US dollars at the list prices of
  :mod:`pytest_vibecheck.generate.prices`, at half of them in batch mode) stops every request once
  what the run spent reaches it; in batch mode a batch takes no more requests than the budget left
  allows (:meth:`RunGuard.left`, :mod:`pytest_vibecheck.generate.batcher`).

Requests already in flight finish; cached replies are still served. Items whose request is
refused are reported as not run (skipped, with the reason).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pytest_vibecheck.config.limits import Budget, ErrorBound
from pytest_vibecheck.generate.backends.base import BackendError, Generation
from pytest_vibecheck.generate.generator import RunStoppedError
from pytest_vibecheck.generate.prices import (
    PRICE_WORDS,
    PRICES_AS_OF,
    batch_cost_usd,
    cost_usd,
    format_usd,
)
from pytest_vibecheck.plugin.run.state import ALL, RunState

if TYPE_CHECKING:
    from pytest_vibecheck.report.records import ModelSpendRecord, SpendRecord

__all__ = [
    "RunGuard",
]

#: HTTP 400 replies, with no request of the model answered, after which the model is stopped.
BAD_REQUESTS_FATAL = 3
#: How the reason of a stop by ``--vibe-budget`` starts.
BUDGET_STOP = "--vibe-budget"
def _count(n: float) -> str:
    return f"{int(n):,}"


class RunGuard:
    """The call guard of one process (see the module docstring). ``items``: the run's items
    (for a ``P%`` error bound), set at collection."""

    def __init__(
        self, state: RunState, max_errors: ErrorBound, budget: Budget | None = None, *, batch: bool = False
    ) -> None:
        self.state = state
        self.max_errors = max_errors
        self.budget = budget
        self.items = 0
        #: requests go through the providers' batch APIs (``--vibe-batch``): dollars are counted
        #: at the batch price (:data:`~pytest_vibecheck.generate.prices.BATCH_PRICE_FACTOR`)
        self.batch = batch

    @property
    def price(self) -> Literal["list", "batch"]:
        """Which prices the dollars are at: ``"list"``, or ``"batch"`` (half the list price)."""
        return "batch" if self.batch else "list"

    @property
    def price_words(self) -> str:
        """The prices in words, for messages: ``"list prices"`` or ``"batch prices (half the list
        price)"``."""
        return PRICE_WORDS[self.price]

    def left(self) -> tuple[float | None, float | None]:
        """What the budget still allows: ``(tokens, US dollars)``, each None when the budget sets
        no such limit (both None without a budget); never below 0."""
        if self.budget is None:
            return None, None
        _n, tin, tout, usd = self.spent()
        tokens = None if self.budget.tokens is None else max(0, self.budget.tokens - tin - tout)
        dollars = None if self.budget.usd is None else max(0.0, self.budget.usd - (usd or 0.0))
        return tokens, dollars

    # -- the CallGuard protocol ---------------------------------------------------------

    def before_call(self, spec: str) -> None:
        """Raises RunStoppedError when no request may go to model ``spec``."""
        reason = self.state.stopped(spec)
        if reason is None and self.budget is not None:
            reason = self._over_budget()
        if reason is not None:
            raise RunStoppedError(reason)

    def after_call(self, spec: str, generation: Generation) -> None:
        """Record one answered request of ``spec`` and the tokens it spent."""
        self.state.add(
            {
                "requests": 1,
                f"ok:{spec}": 1,
                f"in:{spec}": generation.input_tokens,
                f"out:{spec}": generation.output_tokens,
            }
        )

    def on_error(self, spec: str, exc: BaseException) -> None:
        """Stop ``spec`` after a fatal error (or :data:`BAD_REQUESTS_FATAL` HTTP 400 replies
        with none answered)."""
        if not isinstance(exc, BackendError):
            return
        if exc.fatal:
            self.state.stop(spec, f"{exc} (no further requests are sent to {spec})")
        elif exc.status == 400:
            got = self.state.add({f"bad:{spec}": 1, f"ok:{spec}": 0})
            if got[f"bad:{spec}"] >= BAD_REQUESTS_FATAL and not got[f"ok:{spec}"]:
                self.state.stop(
                    spec,
                    f"{exc} (HTTP 400 on each of the first {BAD_REQUESTS_FATAL} requests: check "
                    f"--vibe-model and the sampling options; no further requests are sent to {spec})",
                )

    # -- item-level accounting ------------------------------------------------------------

    def item_error(self) -> None:
        """Count one item's infrastructure error (not one caused by a stop); stops the run once
        the count passes ``--vibe-max-errors``."""
        errors = int(self.state.add({"errors": 1})["errors"])
        limit = self.max_errors.limit(self.items)
        if errors > limit:
            self.state.stop(
                ALL,
                f"{errors} infrastructure errors, more than --vibe-max-errors {self.max_errors.text} "
                f"({limit} of {self.items} items): no further requests are sent",
            )

    def spent(self) -> tuple[int, int, int, float | None]:
        """``(requests, input tokens, output tokens, US dollars or None)`` spent by the run on API
        requests so far (cache hits cost nothing); dollars are None when a model has no price."""
        counters = self.state.counters()
        usd: float | None = 0.0
        tin = tout = 0
        for spend in _by_model(counters, self.batch).values():
            tin, tout = tin + spend["input_tokens"], tout + spend["output_tokens"]
            usd = None if spend["usd"] is None or usd is None else usd + spend["usd"]
        return int(counters.get("requests", 0)), tin, tout, usd

    def spend(self, cache_hits: int = 0) -> SpendRecord:
        """The report's ``run.spend`` (:class:`~pytest_vibecheck.report.records.SpendRecord`):
        what :meth:`spent` says, per model too, with ``cache_hits`` (generations served from the
        cache, counted from the items), the budget and whether it stopped the run."""
        requests, tin, tout, usd = self.spent()
        stop = self.state.stops().get(ALL, "")
        return {
            "requests": requests,
            "input_tokens": tin,
            "output_tokens": tout,
            "cache_hits": int(cache_hits),
            "usd": None if usd is None else round(usd, 6),
            "prices_as_of": PRICES_AS_OF,
            "price": self.price,
            "budget": self.budget.text if self.budget is not None else None,
            "budget_stopped": self.budget is not None and stop.startswith(BUDGET_STOP),
            "models": _by_model(self.state.counters(), self.batch),
        }

    def _over_budget(self) -> str | None:
        assert self.budget is not None
        _n, tin, tout, usd = self.spent()
        if self.budget.tokens is not None and tin + tout >= self.budget.tokens:
            why = f"{_count(tin + tout)} tokens spent, budget {_count(self.budget.tokens)}"
        elif self.budget.usd is not None and usd is not None and usd >= self.budget.usd:
            why = f"{format_usd(usd)} spent at {self.price_words}, budget {format_usd(self.budget.usd)}"
        else:
            return None
        return self.state.stop(ALL, f"{BUDGET_STOP} {self.budget.text} reached ({why}): no further requests are sent")


def _by_model(counters: dict[str, float], batch: bool = False) -> dict[str, ModelSpendRecord]:
    """Per model spec: requests answered, tokens and dollars (None without a known price; at the
    batch price with ``batch``), from the run state's counters (``ok:``, ``in:``, ``out:`` + spec)."""
    out: dict[str, ModelSpendRecord] = {}
    for name in sorted(counters):
        if not name.startswith("in:"):
            continue
        spec = name[3:]
        tin, tout = int(counters[name]), int(counters.get(f"out:{spec}", 0))
        cost = (batch_cost_usd if batch else cost_usd)(spec, tin, tout)
        out[spec] = {
            "requests": int(counters.get(f"ok:{spec}", 0)),
            "input_tokens": tin,
            "output_tokens": tout,
            "usd": None if cost is None else round(cost, 6),
        }
    return out
