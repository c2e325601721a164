"""List prices of API models, for ``--vibe-budget`` in dollars.

:data:`PRICES` maps a model-name prefix to ``(USD per 1M input tokens, USD per 1M output
tokens)``: the providers' published list prices for standard (non-batch, uncached) requests,
as of the date in :data:`PRICES_AS_OF`. The longest matching prefix wins (``gpt-5-mini`` before
``gpt-5``). A model not listed has no known price: a dollar budget then cannot be checked and the
run asks for a budget in tokens instead. Requests sent through a batch API (``--vibe-batch``)
cost :data:`BATCH_PRICE_FACTOR` of the list price (:func:`batch_cost_usd`).
"""

from __future__ import annotations

__all__ = [
    "BATCH_PRICE_FACTOR", "PRICES", "PRICES_AS_OF", "PRICE_WORDS", "batch_cost_usd", "cost_usd", "format_usd",
    "price_of",
]

#: What a request through the provider's batch API costs against its list price: half, for
#: OpenAI's Batch API and Anthropic's Message Batches alike (both providers' pricing pages).
BATCH_PRICE_FACTOR = 0.5

#: The prices a run's dollars are at (the report's ``run.spend.price``), in words for messages.
PRICE_WORDS: dict[str, str] = {
    "list": "list prices",
    "batch": "batch prices (half the list price)",
    "mixed": "list and batch prices (shards of both kinds)",
}

PRICES_AS_OF = "2025-10"

PRICES: dict[str, tuple[float, float]] = {
    # OpenAI (platform.openai.com/docs/pricing)
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
    "o3": (2.0, 8.0),
    "o4-mini": (1.10, 4.40),
    # Anthropic (docs.anthropic.com/en/docs/about-claude/pricing)
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-3-5-haiku": (0.80, 4.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


def price_of(model: str) -> tuple[float, float] | None:
    """``(USD per 1M input tokens, USD per 1M output tokens)`` of ``model`` (a spec such as
    ``openai:gpt-5`` or a bare name), or None when no price is known."""
    name = model.partition(":")[2] or model
    best = max((p for p in PRICES if name == p or name.startswith(p + "-")), key=len, default=None)
    return PRICES[best] if best is not None else None


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The list price in US dollars of ``input_tokens`` + ``output_tokens`` of ``model``;
    None when no price is known."""
    price = price_of(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def batch_cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """:func:`cost_usd` at the batch price (:data:`BATCH_PRICE_FACTOR` of the list price)."""
    cost = cost_usd(model, input_tokens, output_tokens)
    return None if cost is None else cost * BATCH_PRICE_FACTOR


def format_usd(usd: float) -> str:
    """``usd`` (US dollars, >= 0) as text that tells small amounts apart: cents from $1 up
    (``$1,234.57``), else three significant digits with at least two decimals (``$0.02``,
    ``$0.00625``, ``$0.0001``); ``$0.00`` for zero. A budget and what was spent against it are
    shown with this, so ``$0.0001`` never reads as ``$0.00``."""
    if usd >= 1 or usd <= 0:
        return f"${max(usd, 0.0):,.2f}"
    import math

    decimals = max(2, 2 - math.floor(math.log10(usd)))
    text = f"{usd:.{decimals}f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"
