"""The VeriCode instruction registry: the 30 instructions of Vibe Checker as data.

Each instruction lives in one TOML file (``instructions/<id>.toml`` in the source tree,
``pytest_vibecheck/_data/instructions`` in an installed wheel). The registry loads them,
checks every field, makes conflicts symmetric and answers ``get_instruction("logic_3")``.

Source of the taxonomy: Zhong et al., "Vibe Checker", arXiv 2510.07315, §2 and Table 1.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pytest_vibecheck.errors import DataFileError, DuplicateIdError, UnknownIdError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: Category ids (the prefixes of the instruction ids) and the paper's names for them.
CATEGORIES: Mapping[str, str] = MappingProxyType(
    {
        "style": "Coding Style",
        "logic": "Logic & Patterns",
        "doc": "Documentation",
        "error": "Error Handling",
        "library": "Library & API",
    }
)

#: Version of the taxonomy data; recorded in augmentation provenance and reports.
TAXONOMY_VERSION = "vericode-1"

ParamType = Literal["int", "str"]
VerifierKind = Literal["ruff", "builtin"]
VerifierTarget = Literal["code", "reply"]

#: A category id: lower-case letters, digits and underscores (``acme``, ``team_style``).
_CATEGORY_ID = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class ParamSpec:
    """One typed parameter of an instruction.

    ``min``/``max`` bound the valid range (inclusive) for ``int`` parameters;
    ``choices`` lists the valid values of ``str`` parameters; ``recommended`` is the
    inclusive range the paper draws non-default values from (§3.1).
    """

    name: str
    type: ParamType
    default: int | str
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] = ()
    recommended: tuple[int, int] | None = None

    def is_valid(self, value: object) -> bool:
        """True if ``value`` has the right type and lies in the valid range or choices."""
        if self.type == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                return False
            if self.min is not None and value < self.min:
                return False
            return not (self.max is not None and value > self.max)
        if not isinstance(value, str):
            return False
        return not self.choices or value in self.choices

    def describe(self) -> str:
        """Human-readable valid range, e.g. ``int in [2, 4]`` or ``one of google, numpy``."""
        if self.type == "int":
            lo = "-inf" if self.min is None else str(self.min)
            hi = "inf" if self.max is None else str(self.max)
            return f"int in [{lo}, {hi}]"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return "str"


@dataclass(frozen=True)
class VerifierSpec:
    """How an instruction is verified.

    ``kind == "ruff"``: pass iff Ruff reports nothing for ``rules`` (rule codes or
    prefixes) under ``fixed`` settings plus the parameter-mapped ``settings``
    (parameter name -> ruff.toml key, e.g. ``"lint.pylint.max-branches"``), with
    preview mode when ``preview``. ``checks`` names built-in checks that must pass
    too (``kind == "builtin"`` has only those). ``target`` says whether the check judges
    the extracted code or the whole reply. ``replaces`` lists Ruff rules that were
    removed from Ruff and are re-implemented by a built-in check.
    """

    kind: VerifierKind
    target: VerifierTarget
    rules: tuple[str, ...]
    preview: bool
    checks: tuple[str, ...]
    settings: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    fixed: Mapping[str, int | str | bool] = field(default_factory=lambda: MappingProxyType({}))
    replaces: tuple[str, ...] = ()

    @property
    def uses_ruff(self) -> bool:
        """True if Ruff must run for this verifier."""
        return bool(self.rules)


@dataclass(frozen=True)
class Instruction:
    """One VeriCode instruction (paper Table 1).

    ``single_turn`` and ``multi_turn`` are prompt templates with ``{param}`` placeholders;
    ``conflicts`` is symmetric across the registry.
    """

    id: str
    category: str
    description: str
    single_turn: str
    multi_turn: str
    params: Mapping[str, ParamSpec]
    verifier: VerifierSpec
    conflicts: frozenset[str]
    source: str
    category_title: str = ""

    @property
    def category_name(self) -> str:
        """The paper's name of the category, e.g. ``"Logic & Patterns"``; for a team category
        its ``category_name`` from the file (else the category id)."""
        return CATEGORIES.get(self.category) or self.category_title or self.category

    def defaults(self) -> dict[str, int | str]:
        """The default value of every parameter."""
        return {name: spec.default for name, spec in self.params.items()}


class InstructionRegistry:
    """Instructions by id, in a stable order (category order, then numeric suffix)."""

    def __init__(self, instructions: Iterable[Instruction] = ()) -> None:
        self._by_id: dict[str, Instruction] = {}
        for inst in instructions:
            self.register(inst)

    def register(self, inst: Instruction) -> None:
        """Add ``inst``; raises :class:`DuplicateIdError` if its id is already taken."""
        if inst.id in self._by_id:
            other = self._by_id[inst.id]
            raise DuplicateIdError(
                f"instruction id {inst.id!r} is defined twice: in {other.source} and {inst.source}"
            )
        self._by_id[inst.id] = inst

    def get(self, instruction_id: str) -> Instruction:
        """The instruction with this id; :class:`UnknownIdError` with suggestions if absent."""
        try:
            return self._by_id[instruction_id]
        except KeyError:
            raise UnknownIdError("instruction", instruction_id, self._by_id) from None

    def __contains__(self, instruction_id: object) -> bool:
        return instruction_id in self._by_id

    def __iter__(self) -> Iterator[Instruction]:
        return iter(sorted(self._by_id.values(), key=_sort_key))

    def __len__(self) -> int:
        return len(self._by_id)

    def ids(self) -> list[str]:
        """All ids in stable order."""
        return [inst.id for inst in self]

    def conflict(self, a: str, b: str) -> bool:
        """True if instructions ``a`` and ``b`` must never be selected together."""
        return b in self.get(a).conflicts

    def finalize(self) -> InstructionRegistry:
        """Return a registry whose conflicts are symmetric; unknown conflict ids raise."""
        extra: dict[str, set[str]] = {i: set() for i in self._by_id}
        for inst in self._by_id.values():
            for other in inst.conflicts:
                if other not in self._by_id:
                    raise DataFileError(
                        inst.source,
                        f"conflicts names unknown instruction {other!r}",
                        field="conflicts",
                    )
                extra[other].add(inst.id)
        out = InstructionRegistry()
        for inst in self._by_id.values():
            out.register(
                dataclasses.replace(inst, conflicts=frozenset(inst.conflicts | extra[inst.id]))
            )
        return out


def _sort_key(inst: Instruction) -> tuple[int, int, str]:
    cats = list(CATEGORIES)
    cat = cats.index(inst.category) if inst.category in cats else len(cats)
    suffix = inst.id.rsplit("_", 1)[-1]
    return (cat, int(suffix) if suffix.isdigit() else 10**6, inst.id)


def data_dir(kind: str) -> Path:
    """Folder of shipped data (``"instructions"`` or ``"problems"``).

    In a wheel the data lives in ``pytest_vibecheck/_data/<kind>``; in a source
    checkout (editable install) it is ``<repo>/<kind>``.
    """
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_data" / kind
    if packaged.is_dir():
        return packaged
    return here.parent / kind


# ---------------------------------------------------------------- loading


def _req(doc: Mapping[str, Any], key: str, typ: type | tuple[type, ...], path: Path, prefix: str = "") -> Any:
    name = prefix + key
    if key not in doc:
        raise DataFileError(path, "required field is missing", field=name)
    value = doc[key]
    if not isinstance(value, typ) or (isinstance(value, bool) and typ is int):
        want = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise DataFileError(path, f"expected {want}, got {type(value).__name__} {value!r}", field=name)
    return value


def _str_list(doc: Mapping[str, Any], key: str, path: Path, prefix: str = "") -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataFileError(path, f"expected a list of strings, got {value!r}", field=prefix + key)
    return tuple(value)


def _parse_param(name: str, doc: Any, path: Path) -> ParamSpec:
    prefix = f"params.{name}."
    if not isinstance(doc, dict):
        raise DataFileError(path, "expected a table", field=f"params.{name}")
    ptype = _req(doc, "type", str, path, prefix)
    if ptype not in ("int", "str"):
        raise DataFileError(path, f"type must be 'int' or 'str', got {ptype!r}", field=prefix + "type")
    unknown = set(doc) - {"type", "default", "min", "max", "choices", "recommended"}
    if unknown:
        raise DataFileError(path, f"unknown keys {sorted(unknown)}", field=f"params.{name}")
    if ptype == "int":
        default = _req(doc, "default", int, path, prefix)
        lo = doc.get("min")
        hi = doc.get("max")
        for key, v in (("min", lo), ("max", hi)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise DataFileError(path, f"expected int, got {v!r}", field=prefix + key)
        rec = doc.get("recommended")
        recommended: tuple[int, int] | None = None
        if rec is not None:
            if (
                not isinstance(rec, list)
                or len(rec) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in rec)
                or rec[0] > rec[1]
            ):
                raise DataFileError(path, f"expected [low, high] ints, got {rec!r}", field=prefix + "recommended")
            recommended = (rec[0], rec[1])
        spec = ParamSpec(name, "int", default, lo, hi, (), recommended)
    else:
        default = _req(doc, "default", str, path, prefix)
        spec = ParamSpec(name, "str", default, choices=_str_list(doc, "choices", path, prefix))
    if not spec.is_valid(spec.default):
        raise DataFileError(path, f"default {spec.default!r} is not {spec.describe()}", field=prefix + "default")
    return spec


def _parse_verifier(
    doc: Any, params: Mapping[str, ParamSpec], path: Path, known_checks: Collection[str] | None
) -> VerifierSpec:
    if not isinstance(doc, dict):
        raise DataFileError(path, "expected a table", field="verifier")
    p = "verifier."
    kind = _req(doc, "kind", str, path, p)
    if kind not in ("ruff", "builtin"):
        raise DataFileError(path, f"kind must be 'ruff' or 'builtin', got {kind!r}", field=p + "kind")
    target = doc.get("target", "code")
    if target not in ("code", "reply"):
        raise DataFileError(path, f"target must be 'code' or 'reply', got {target!r}", field=p + "target")
    rules = _str_list(doc, "rules", path, p)
    checks = _str_list(doc, "checks", path, p)
    preview = doc.get("preview", False)
    if not isinstance(preview, bool):
        raise DataFileError(path, f"expected true or false, got {preview!r}", field=p + "preview")
    for check in checks:
        if known_checks is not None and check not in known_checks:
            unknown_check = UnknownIdError("built-in check", check, known_checks)
            raise DataFileError(path, str(unknown_check), field=p + "checks")
    if kind == "ruff" and not rules:
        raise DataFileError(path, "a ruff verifier needs at least one rule", field=p + "rules")
    if kind == "builtin" and (rules or not checks):
        raise DataFileError(path, "a builtin verifier has checks and no rules", field=p + "checks")
    settings = doc.get("settings", {})
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        raise DataFileError(path, "expected a table of parameter = \"ruff.key\"", field=p + "settings")
    for pname in settings:
        if pname not in params:
            raise DataFileError(path, f"maps unknown parameter {pname!r}", field=p + "settings." + pname)
    fixed = doc.get("fixed", {})
    if not isinstance(fixed, dict):
        raise DataFileError(path, "expected a table of Ruff settings", field=p + "fixed")
    unknown = set(doc) - {"kind", "target", "rules", "preview", "checks", "settings", "fixed", "replaces"}
    if unknown:
        raise DataFileError(path, f"unknown keys {sorted(unknown)}", field="verifier")
    return VerifierSpec(
        kind=kind,
        target=target,
        rules=rules,
        preview=preview,
        checks=checks,
        settings=MappingProxyType(dict(settings)),
        fixed=MappingProxyType(dict(fixed)),
        replaces=_str_list(doc, "replaces", path, p),
    )


def _known_checks() -> list[str]:
    from pytest_vibecheck.registry import get_registry

    return get_registry().checks.names()


def load_instruction_file(path: Path, *, known_checks: Collection[str] | None = None) -> Instruction:
    """Parse one instruction TOML file; :class:`DataFileError` names the file and field.

    ``category`` is one of :data:`CATEGORIES`, or a team category (``[a-z][a-z0-9_]*``)
    declared with a ``category_name`` in the file (so a typo such as ``logik`` is still an
    error). ``verifier.checks`` names are checked against ``known_checks`` (default: the active
    registry's built-in checks, :mod:`pytest_vibecheck.registry`); the registry itself passes
    ``()`` and checks them once every plugin has registered.
    """
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(path, f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot read: {exc}") from None
    iid = _req(doc, "id", str, path)
    category = _req(doc, "category", str, path)
    title = doc.get("category_name", "")
    if not isinstance(title, str):
        raise DataFileError(path, f"expected str, got {title!r}", field="category_name")
    if category not in CATEGORIES and not (title and _CATEGORY_ID.match(category)):
        raise DataFileError(
            path,
            f"unknown category {category!r}; use one of {list(CATEGORIES)}, or name a team "
            "category ([a-z][a-z0-9_]*) and give its category_name",
            field="category",
        )
    raw_params = doc.get("params", {})
    if not isinstance(raw_params, dict):
        raise DataFileError(path, "expected a table", field="params")
    params = {name: _parse_param(name, spec, path) for name, spec in raw_params.items()}
    texts = {}
    for key in ("description", "single_turn", "multi_turn"):
        text = _req(doc, key, str, path)
        try:
            text.format(**{n: s.default for n, s in params.items()})
        except (KeyError, IndexError, ValueError) as exc:
            raise DataFileError(path, f"template placeholder error: {exc!r}", field=key) from None
        texts[key] = text
    checks = _known_checks() if known_checks is None else known_checks or None
    verifier = _parse_verifier(doc.get("verifier"), params, path, checks)
    allowed = {"id", "category", "category_name", "description", "single_turn", "multi_turn", "conflicts", "params", "verifier"}
    unknown = set(doc) - allowed
    if unknown:
        raise DataFileError(path, f"unknown keys {sorted(unknown)}")
    return Instruction(
        id=iid,
        category=category,
        description=texts["description"],
        single_turn=texts["single_turn"],
        multi_turn=texts["multi_turn"],
        params=MappingProxyType(params),
        verifier=verifier,
        conflicts=frozenset(_str_list(doc, "conflicts", path)),
        source=str(path),
        category_title=title,
    )


def load_registry(*folders: Path) -> InstructionRegistry:
    """Load every ``*.toml`` under ``folders`` (default: the shipped taxonomy).

    Raises :class:`DataFileError` for a malformed file, :class:`DuplicateIdError` when two
    files define the same id.
    """
    if not folders:
        folders = (data_dir("instructions"),)
    reg = InstructionRegistry()
    for folder in folders:
        if not folder.is_dir():
            raise DataFileError(folder, "instruction folder does not exist")
        for path in sorted(folder.glob("*.toml")):
            reg.register(load_instruction_file(path))
    return reg.finalize()


class InstructionCatalog:
    """The instructions of one :class:`pytest_vibecheck.registry.Registry` while plugins register
    (:meth:`~pytest_vibecheck.registry.Registry.add_instruction` and
    :meth:`~pytest_vibecheck.registry.Registry.add_instruction_dir` land here), finalized once
    into an :class:`InstructionRegistry` on first look-up.

    The registry container sits below this layer and cannot parse or finalize instructions; the
    composition root (:func:`pytest_vibecheck.compose.build.build_registry`) gives each registry
    its catalog. Thread-safe.
    """

    def __init__(self) -> None:
        self._instructions: dict[str, Instruction] = {}
        self._shipped: set[str] = set()
        self._finalized: InstructionRegistry | None = None
        self._lock = threading.Lock()

    def add(self, instruction: Instruction, *, shipped: bool = False) -> None:
        """Add one instruction. Raises DuplicateIdError when the id is taken (a team
        instruction may never reuse a shipped id)."""
        with self._lock:
            old = self._instructions.get(instruction.id)
            if old is not None:
                what = "the shipped instruction" if old.id in self._shipped else "instruction"
                raise DuplicateIdError(
                    f"instruction id {instruction.id!r} in {instruction.source} clashes with "
                    f"{what} {old.id!r} ({old.source}); give it another id"
                )
            self._instructions[instruction.id] = instruction
            if shipped:
                self._shipped.add(instruction.id)
            self._finalized = None

    def add_folder(self, folder: str | Path, *, shipped: bool = False) -> None:
        """Add every ``*.toml`` instruction file of ``folder`` (the shipped schema; their
        ``verifier.checks`` are checked when finalized, once every plugin has registered).

        Raises DataFileError for a missing folder or a malformed file (naming file and field).
        """
        path = Path(folder)
        if not path.is_dir():
            raise DataFileError(path, "instruction folder does not exist (instruction_dirs)")
        for file in sorted(path.glob("*.toml")):
            self.add(load_instruction_file(file, known_checks=()), shipped=shipped)

    def is_shipped(self, instruction_id: str) -> bool:
        """True for an instruction of the shipped VeriCode taxonomy."""
        return instruction_id in self._shipped

    def finalized(self, checks: Collection[str]) -> InstructionRegistry:
        """Every instruction, finalized (conflicts symmetric), each ``verifier.checks`` name
        one of ``checks`` (the registry's built-in checks). Raises DataFileError naming the
        file of a bad reference."""
        with self._lock:
            if self._finalized is None:
                for inst in self._instructions.values():
                    for check in inst.verifier.checks:
                        if check not in checks:
                            unknown = UnknownIdError("built-in check", check, sorted(checks))
                            raise DataFileError(inst.source, str(unknown), field="verifier.checks")
                self._finalized = InstructionRegistry(self._instructions.values()).finalize()
            return self._finalized


def default_registry() -> InstructionRegistry:
    """The instructions of the active registry (:func:`pytest_vibecheck.registry.get_registry`):
    the shipped VeriCode taxonomy (30 instructions) plus the team instructions of
    ``instruction_dirs`` and plugins, loaded once per process."""
    from pytest_vibecheck.registry import get_registry

    return get_registry().instructions()


def category_names(registry: InstructionRegistry | None = None) -> dict[str, str]:
    """Every category id of ``registry`` (default: the active one) and its name: the paper's
    five (:data:`CATEGORIES`, always, in their order), then each team category with the
    ``category_name`` its instructions declare, in registry order."""
    names = dict(CATEGORIES)
    for inst in registry if registry is not None else default_registry():
        names.setdefault(inst.category, inst.category_name)
    return names


def get_instruction(instruction_id: str) -> Instruction:
    """The shipped instruction with this id, e.g. ``get_instruction("logic_3")``.

    Raises :class:`UnknownIdError` (with close-match suggestions) for an unknown id.
    """
    return default_registry().get(instruction_id)


def all_instructions() -> list[Instruction]:
    """Every registered instruction in stable order: the 30 shipped ones (style_1 ...
    library_2), then team categories."""
    return list(default_registry())
