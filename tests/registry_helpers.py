"""A third-party plugin package outside the repository, for the registry tests.

:func:`make_acme_package` writes ``acme_vibe`` (a backend ``acme`` and a built-in check
``acme_no_print_calls``) and its ``acme_vibe-1.0.dist-info`` with an entry point of the group
``pytest_vibecheck`` into a folder; putting that folder on ``sys.path`` / ``PYTHONPATH`` installs
it as pip would (``importlib.metadata`` finds the dist-info there).
"""

from __future__ import annotations

from pathlib import Path

ACME_PLUGIN = '''"""acme's pytest-vibecheck plugin: a backend and a built-in check."""

import ast

from pytest_vibecheck.generate.backends.base import Backend, Generation, fence
from pytest_vibecheck.verify.verdict import Violation


class AcmeBackend(Backend):
    """Answers every request with the task's reference solution, fenced."""

    provider = "acme"

    def __init__(self, model, settings):
        self.model = model
        self.settings = settings

    def generate(self, request):
        return Generation(text="Here:\\n" + fence(request.reference or "pass\\n"), model=self.model)


def no_print_calls(code):
    """ACME001 on every call of print()."""
    return [
        Violation("ACME001", node.lineno, node.col_offset + 1, "print() call; use logging")
        for node in ast.walk(ast.parse(code))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
    ]


def pytest_vibecheck_register(registry):
    registry.add_backend("acme", AcmeBackend, origin="acme_vibe")
    registry.add_check("acme_no_print_calls", no_print_calls, origin="acme_vibe")
'''

#: An instruction on the plugin's check, in a team category (registered by a conftest.py).
ACME_NO_PRINT = '''id = "acme_no_print"
category = "acme"
category_name = "Acme conventions"
description = "No print() calls; use logging."
single_turn = "Do not call print(); use the logging module."
multi_turn = "Replace every print() call with logging."
conflicts = []

[verifier]
kind = "builtin"
checks = ["acme_no_print_calls"]
'''

#: A Ruff-rule instruction with a parameter mapped to a Ruff setting (for instruction_dirs).
ACME_MAX_ARGS = '''id = "acme_max_args"
category = "acme"
category_name = "Acme conventions"
description = "Functions take at most {max_args} arguments."
single_turn = "Give every function at most {max_args} arguments."
multi_turn = "Refactor so that every function takes at most {max_args} arguments."
conflicts = []

[params.max_args]
type = "int"
default = 3
min = 1
max = 10

[verifier]
kind = "ruff"
rules = ["PLR0913"]
preview = false

[verifier.settings]
max_args = "lint.pylint.max-args"
'''

#: A conftest.py that registers the team instruction acme_no_print from its own folder.
CONFTEST = '''from pathlib import Path


def pytest_vibecheck_register(registry):
    registry.add_instruction_dir(Path(__file__).parent / "conftest_instructions")
'''


def make_acme_package(root: Path) -> Path:
    """Write ``acme_vibe`` and its dist-info (entry point ``acme = acme_vibe``) into ``root``."""
    pkg = root / "acme_vibe"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(ACME_PLUGIN, encoding="utf-8")
    info = root / "acme_vibe-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-vibe\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[pytest_vibecheck]\nacme = acme_vibe\n", encoding="utf-8")
    (info / "RECORD").write_text("", encoding="utf-8")
    return root


def write_conftest_instruction(project: Path) -> None:
    """``conftest.py`` + ``conftest_instructions/acme_no_print.toml`` in ``project``."""
    (project / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    folder = project / "conftest_instructions"
    folder.mkdir(exist_ok=True)
    (folder / "acme_no_print.toml").write_text(ACME_NO_PRINT, encoding="utf-8")


def write_instruction_dir(project: Path, rel: str = "vibe/instructions") -> Path:
    """``acme_max_args.toml`` in ``project/rel``; returns the folder."""
    folder = project / rel
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "acme_max_args.toml").write_text(ACME_MAX_ARGS, encoding="utf-8")
    return folder
