"""pytest-vibecheck: the Vibe Checker evaluation (arXiv 2510.07315) as a pytest plugin.

Functional correctness (pass@1, FR_k) plus verifiable instruction following
(VeriCode: 30 non-functional instructions, 27 checked with Ruff).

The supported Python API is listed in ``__all__`` and imported lazily (PEP 562), so
``import pytest_vibecheck`` stays cheap (pytest imports it for every run)::

    from pytest_vibecheck import VerifyItem, get_instruction, verify_batch
    verdicts = verify_batch([VerifyItem(instructions=[("logic_3", {"max_branches": 3})], code=code)])

(``pytest_vibecheck.verify`` is the verification layer's subpackage; its one-text function is
``pytest_vibecheck.verify.api.verify``.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_vibecheck.registry import set_default_registry

__version__ = "0.1.0"

# The package is the composition root of last resort: a process that activates no registry of
# its own (a pytest session or the command line do) gets the built-ins and the entry-point
# plugins, built on first use by the top layer (nothing is imported until then).
set_default_registry("pytest_vibecheck.compose.build:installed_registry")

#: public name -> module that defines it
_API: dict[str, str] = {
    # verification (VeriCode)
    "verify_batch": "pytest_vibecheck.verify.api",
    "VerifyItem": "pytest_vibecheck.verify.api",
    "Verdict": "pytest_vibecheck.verify.verdict",
    "Violation": "pytest_vibecheck.verify.verdict",
    "Instruction": "pytest_vibecheck.verify.instructions",
    "get_instruction": "pytest_vibecheck.verify.instructions",
    "all_instructions": "pytest_vibecheck.verify.instructions",
    "extract_code": "pytest_vibecheck.verify.extract",
    # suites and execution
    "Problem": "pytest_vibecheck.suites.problem",
    "load_suite": "pytest_vibecheck.suites.store",
    "run_tests": "pytest_vibecheck.execute.tests",
    # generation
    "make_backend": "pytest_vibecheck.generate.backends.registry",
    "Backend": "pytest_vibecheck.generate.backends.base",
    "BackendSettings": "pytest_vibecheck.generate.backends.base",
    "GenerationRequest": "pytest_vibecheck.generate.backends.base",
    "Generation": "pytest_vibecheck.generate.backends.base",
    # extension
    "Registry": "pytest_vibecheck.registry",
    "get_registry": "pytest_vibecheck.registry",
    # reports
    "load_report": "pytest_vibecheck.report.json_report",
    "ReportItem": "pytest_vibecheck.report.records",
    # errors
    "VibecheckError": "pytest_vibecheck.errors",
    "UnknownIdError": "pytest_vibecheck.errors",
    "DataFileError": "pytest_vibecheck.errors",
    "ParameterError": "pytest_vibecheck.errors",
    "VibeInfraError": "pytest_vibecheck.errors",
}

__all__ = [
    "Backend",
    "BackendSettings",
    "DataFileError",
    "Generation",
    "GenerationRequest",
    "Instruction",
    "ParameterError",
    "Problem",
    "Registry",
    "ReportItem",
    "UnknownIdError",
    "Verdict",
    "VerifyItem",
    "VibeInfraError",
    "VibecheckError",
    "Violation",
    "__version__",
    "all_instructions",
    "extract_code",
    "get_instruction",
    "get_registry",
    "load_report",
    "load_suite",
    "make_backend",
    "run_tests",
    "verify_batch",
]

if TYPE_CHECKING:
    from pytest_vibecheck.errors import (
        DataFileError,
        ParameterError,
        UnknownIdError,
        VibecheckError,
        VibeInfraError,
    )
    from pytest_vibecheck.execute.tests import run_tests
    from pytest_vibecheck.generate.backends.base import (
        Backend,
        BackendSettings,
        Generation,
        GenerationRequest,
    )
    from pytest_vibecheck.generate.backends.registry import make_backend
    from pytest_vibecheck.registry import Registry, get_registry
    from pytest_vibecheck.report.json_report import load_report
    from pytest_vibecheck.report.records import ReportItem
    from pytest_vibecheck.suites.problem import Problem
    from pytest_vibecheck.suites.store import load_suite
    from pytest_vibecheck.verify.api import VerifyItem, verify_batch
    from pytest_vibecheck.verify.extract import extract_code
    from pytest_vibecheck.verify.instructions import Instruction, all_instructions, get_instruction
    from pytest_vibecheck.verify.verdict import Verdict, Violation


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_vibecheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
