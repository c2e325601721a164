"""pytest-vibecheck: the Vibe Checker evaluation (arXiv 2510.07315) as a pytest plugin.

Functional correctness (pass@1, FR_k) plus verifiable instruction following
(VeriCode: 30 non-functional instructions, 27 checked with Ruff).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
