"""The instruction registry: the 30 shipped instructions, loud errors, symmetric conflicts,
and the data shipped inside the wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from pytest_vibecheck.errors import DataFileError, DuplicateIdError, UnknownIdError
from pytest_vibecheck.verify.instructions import (
    CATEGORIES,
    all_instructions,
    data_dir,
    default_registry,
    get_instruction,
    load_instruction_file,
    load_registry,
)

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "instructions"


def test_the_30_instructions_in_paper_order() -> None:
    ids = [i.id for i in all_instructions()]
    assert ids == (
        [f"style_{n}" for n in range(1, 10)]
        + [f"logic_{n}" for n in range(1, 10)]
        + [f"doc_{n}" for n in range(1, 7)]
        + [f"error_{n}" for n in range(1, 5)]
        + ["library_1", "library_2"]
    )
    counts = Counter(i.category for i in all_instructions())
    assert counts == {"style": 9, "logic": 9, "doc": 6, "error": 4, "library": 2}
    assert get_instruction("error_3").category_name == "Error Handling"
    assert set(CATEGORIES) == set(counts)


def test_verifier_specs() -> None:
    insts = all_instructions()
    assert sum(1 for i in insts if i.verifier.uses_ruff) == 27
    assert sorted(i.id for i in insts if i.verifier.preview) == ["logic_2", "logic_5", "logic_9", "style_9"]
    assert sorted(i.id for i in insts if i.verifier.target == "reply") == ["doc_4", "doc_6"]
    l3 = get_instruction("logic_3")
    assert l3.verifier.rules == ("PLR0912",)
    assert dict(l3.verifier.settings) == {"max_branches": "lint.pylint.max-branches"}
    spec = l3.params["max_branches"]
    assert (spec.type, spec.default, spec.min, spec.max) == ("int", 2, 2, 4)
    lib2 = get_instruction("library_2")
    assert lib2.verifier.rules == ("PD002", "PD011")
    assert lib2.verifier.checks == ("pandas_df_name",)
    assert lib2.verifier.replaces == ("PD901",)
    assert dict(get_instruction("style_1").verifier.fixed) == {"lint.pycodestyle.max-line-length": 88}
    assert get_instruction("doc_3").params["convention"].choices == ("google", "numpy", "pep257")


def test_unknown_id_suggests_close_matches() -> None:
    with pytest.raises(UnknownIdError) as info:
        get_instruction("logic_33")
    err = info.value
    assert isinstance(err, KeyError)
    assert err.suggestions[0] == "logic_3"
    assert str(err).startswith("unknown instruction 'logic_33'; did you mean 'logic_3'")
    assert "? Available: doc_1, doc_2" in str(err)
    with pytest.raises(UnknownIdError, match="did you mean 'style_1'"):
        get_instruction("style1")


def test_conflicts_are_symmetric() -> None:
    reg = default_registry()
    for inst in reg:
        for other in inst.conflicts:
            assert inst.id in reg.get(other).conflicts, (inst.id, other)
    assert get_instruction("doc_5").conflicts == {"doc_2", "doc_3"}
    assert get_instruction("doc_2").conflicts == {"doc_5"}
    assert reg.conflict("doc_4", "doc_6") and reg.conflict("doc_6", "doc_4")
    assert not reg.conflict("logic_3", "style_1")


def _copy(tmp_path: Path, *ids: str) -> Path:
    folder = tmp_path / "insts"
    folder.mkdir(exist_ok=True)
    for iid in ids:
        shutil.copy(SHIPPED / f"{iid}.toml", folder / f"{iid}.toml")
    return folder


def test_symmetry_is_added_when_one_side_is_missing(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "doc_5", "doc_2", "doc_3")
    for name in ("doc_2", "doc_3"):  # drop the back-references
        path = folder / f"{name}.toml"
        path.write_text(path.read_text(encoding="utf-8").replace('conflicts = ["doc_5"]', "conflicts = []"), encoding="utf-8")
    reg = load_registry(folder)
    assert reg.get("doc_2").conflicts == {"doc_5"}
    assert reg.get("doc_3").conflicts == {"doc_5"}


def test_duplicate_id_is_rejected(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "logic_3")
    (folder / "copy.toml").write_text((SHIPPED / "logic_3.toml").read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(DuplicateIdError, match="'logic_3' is defined twice") as info:
        load_registry(folder)
    assert "copy.toml" in str(info.value) and "logic_3.toml" in str(info.value)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(SHIPPED / "logic_3.toml", other / "logic_3.toml")
    with pytest.raises(DuplicateIdError):
        load_registry(_copy(tmp_path), other)


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ('category = "logic"', 'category = "logik"', "category", "unknown category 'logik'"),
        ('id = "logic_3"\n', "", "id", "required field is missing"),
        ("default = 2\n", 'default = "two"\n', "params.max_branches.default", "expected int, got str 'two'"),
        ("default = 2\n", "default = 9\n", "params.max_branches.default", "default 9 is not int in [2, 4]"),
        ('kind = "ruff"', 'kind = "pylint"', "verifier.kind", "kind must be 'ruff' or 'builtin'"),
        (
            'max_branches = "lint.pylint.max-branches"',
            'max_branchez = "lint.pylint.max-branches"',
            "verifier.settings.max_branchez",
            "maps unknown parameter 'max_branchez'",
        ),
        ("preview = false", 'preview = "no"', "verifier.preview", "expected true or false"),
        ('rules = ["PLR0912"]', "rules = []", "verifier.rules", "a ruff verifier needs at least one rule"),
        ("at most {max_branches} branches.\"\nmulti", "at most {max_branch} branches.\"\nmulti", "single_turn", "placeholder"),
        ("conflicts = []", 'conflicts = ["style_99"]', "conflicts", "unknown instruction 'style_99'"),
    ],
)
def test_malformed_file_names_file_and_field(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    folder = _copy(tmp_path, "logic_3")
    path = folder / "logic_3.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DataFileError) as info:
        load_registry(folder)
    err = info.value
    assert err.path == str(path)
    assert err.field == field
    assert message in str(err)
    assert str(err).startswith(f"{path}: field {field!r}: ")


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    bad = folder / "broken.toml"
    bad.write_text('id = "x\n', encoding="utf-8")
    with pytest.raises(DataFileError, match="not valid TOML") as info:
        load_instruction_file(bad)
    assert info.value.path == str(bad)
    with pytest.raises(DataFileError, match="does not exist"):
        load_registry(tmp_path / "nowhere")


def test_unknown_builtin_check_is_rejected(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "doc_5")
    path = folder / "doc_5.toml"
    path.write_text(
        path.read_text(encoding="utf-8").replace('"no_comments_or_docstrings"', '"no_comment_or_docstring"'),
        encoding="utf-8",
    )
    with pytest.raises(DataFileError) as info:
        load_registry(folder)
    assert info.value.field == "verifier.checks"
    assert str(info.value).startswith(
        f"{path}: field 'verifier.checks': unknown built-in check 'no_comment_or_docstring'; "
        "did you mean 'no_comments_or_docstrings'?"
    )


def test_data_dir_finds_the_shipped_data() -> None:
    assert (data_dir("instructions") / "logic_3.toml").is_file()
    assert len(list(data_dir("instructions").glob("*.toml"))) == 30


def test_wheel_contains_the_instruction_data(tmp_path: Path) -> None:
    """A wheel install works, not only editable: the TOML files are inside the wheel."""
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [wheel] = tmp_path.glob("pytest_vibecheck-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pytest_vibecheck/_data/instructions/logic_3.toml" in names
    assert sum(1 for n in names if n.startswith("pytest_vibecheck/_data/instructions/") and n.endswith(".toml")) == 30
    assert "pytest_vibecheck/py.typed" in names
