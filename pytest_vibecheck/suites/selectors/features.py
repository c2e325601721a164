"""Task features for the ``rules`` selector: what a task's reference code and text show.

The measures approximate the Ruff rules behind each VeriCode instruction (Vibe Checker,
arXiv 2510.07315, Table 1) on the *reference program* (the canonical solution, else the
starter code), so the rules selector can tell whether an instruction would change a
typical implementation. They are heuristics for relevance, not verdicts: verdicts come
from Ruff itself (``verify.py``).
"""

from __future__ import annotations

import ast
import builtins
import io
import itertools
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from pytest_vibecheck.suites.problem import Problem

_BLOCKS: tuple[type[ast.AST], ...] = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Match,
    *(t for t in (getattr(ast, "Try", None), getattr(ast, "TryStar", None)) if t is not None),
)  # fmt: skip

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)

#: os / os.path / glob functions that Ruff's PTH rules replace with pathlib.
_PTH_CALLS = frozenset(
    {
        "os.path.abspath", "os.path.basename", "os.path.dirname", "os.path.exists",
        "os.path.expanduser", "os.path.getatime", "os.path.getctime", "os.path.getmtime",
        "os.path.getsize", "os.path.isabs", "os.path.isdir", "os.path.isfile",
        "os.path.islink", "os.path.join", "os.path.samefile", "os.path.splitext",
        "os.path.split", "os.chmod", "os.getcwd", "os.listdir", "os.lstat", "os.makedirs",
        "os.mkdir", "os.readlink", "os.remove", "os.rename", "os.replace", "os.rmdir",
        "os.scandir", "os.stat", "os.symlink", "os.unlink", "os.walk", "glob.glob",
        "glob.iglob", "open",
    }
)  # fmt: skip

#: Names Ruff's UP024 rewrites to OSError.
_OSERROR_ALIASES = frozenset({"IOError", "EnvironmentError", "WindowsError", "socket.error", "select.error", "os.error", "mmap.error", "resource.error"})  # fmt: skip

_SNAKE = re.compile(r"^_{0,2}[a-z0-9_]*$")


@dataclass
class FunctionMeasures:
    """Per-function measures, approximating the Ruff rules named in each field."""

    name: str
    branches: int = 0  # PLR0912
    statements: int = 0  # PLR0915
    locals: int = 0  # PLR0914 (arguments included, as pylint counts them)
    nesting: int = 0  # PLR1702: deepest block nesting
    complexity: int = 1  # C901 (McCabe)
    unannotated: int = 0  # ANN001/ANN201: arguments or return without annotations


@dataclass
class Features:
    """What the rules selector knows about one task.

    ``reference`` says where code measures come from: ``"canonical"``, ``"starter"`` or
    ``"none"`` (then only text cues apply). Counts are over the reference program.
    """

    reference: str
    text: str
    libs: frozenset[str]
    imports: tuple[str, ...] = ()
    functions: list[FunctionMeasures] = field(default_factory=list)
    parse_error: bool = False
    # style
    pep8_issues: list[str] = field(default_factory=list)
    imports_unsorted: bool = False
    lines_over_79: int = 0
    multiline_brackets: int = 0
    single_quoted: int = 0
    string_literals: int = 0
    non_snake_locals: list[str] = field(default_factory=list)
    open_calls: int = 0
    open_redundant_mode: int = 0
    magic_comparisons: list[str] = field(default_factory=list)
    unpacking: int = 0
    unused_unpacked: list[str] = field(default_factory=list)
    # logic
    unused_imports: list[str] = field(default_factory=list)
    unused_locals: list[str] = field(default_factory=list)
    undefined_names: list[str] = field(default_factory=list)
    bool_conditions: int = 0
    else_after_exit: int = 0
    assign_then_return: int = 0
    append_loops: int = 0
    # documentation
    comments: int = 0
    docstrings: int = 0
    long_doc_lines: int = 0
    # errors
    raises: int = 0
    raise_with_message: int = 0
    raise_in_except: int = 0
    try_blocks: int = 0
    oserror_aliases: list[str] = field(default_factory=list)
    oserror_handling: int = 0
    declared_raises: list[str] = field(default_factory=list)
    # library
    fs_calls: list[str] = field(default_factory=list)
    pandas: bool = False


def extract(problem: Problem) -> Features:
    """Compute :class:`Features` for ``problem`` (reference = canonical, else starter code)."""
    if problem.canonical_solution:
        code, ref = problem.canonical_solution, "canonical"
    elif problem.starter_code and problem.starter_code.strip():
        code, ref = problem.starter_code.rstrip() + "\n        pass\n", "starter"
    else:
        code, ref = "", "none"
    raises = (
        problem.metadata.get("doc_struct", {}).get("raises", [])
        if isinstance(problem.metadata.get("doc_struct"), dict)
        else []
    )
    feats = Features(
        reference=ref,
        text=problem.prompt,
        libs=frozenset(problem.libs),
        declared_raises=[str(r) for r in raises if str(r).strip()],
    )
    if not code:
        return feats
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # dataset code has invalid escapes etc.
            tree = ast.parse(code)
    except SyntaxError:
        feats.parse_error = True
        return feats
    _measure_text(code, feats)
    _measure_tree(tree, code, feats)
    return feats


# ---------------------------------------------------------------- text / tokens


def _measure_text(code: str, f: Features) -> None:
    lines = code.splitlines()
    f.lines_over_79 = sum(len(line) > 79 for line in lines)
    if any(len(line) > 88 for line in lines):
        f.pep8_issues.append("E501: a line over 88 characters")
    if any(line != line.rstrip() for line in lines):
        f.pep8_issues.append("W291/W293: trailing whitespace")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - code parsed already
        return
    stack: list[tokenize.TokenInfo] = []
    prev: tokenize.TokenInfo | None = None
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            f.comments += 1
            if len(tok.line.rstrip()) > 72:
                f.long_doc_lines += 1
        elif tok.type == tokenize.STRING:
            body = tok.string.lstrip("rRbBuUfF")
            if not body.startswith(('"""', "'''")):
                f.string_literals += 1
                if body.startswith("'") and '"' not in body:
                    f.single_quoted += 1
        elif tok.type == tokenize.OP:
            if tok.string in "([{":
                stack.append(tok)
            elif tok.string in ")]}" and stack:
                opener = stack.pop()
                if tok.start[0] > opener.start[0]:
                    f.multiline_brackets += 1
            elif tok.string == "," and prev is not None:
                pass
        if tok.type not in (
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.COMMENT,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            prev = tok
    if _missing_blank_lines(code):
        f.pep8_issues.append("E302/E305: top-level definitions need two blank lines")
    if re.search(r",[^\s\)\]\}]", _strip_strings(tokens)):
        f.pep8_issues.append("E231: missing whitespace after ','")


def _strip_strings(tokens: list[tokenize.TokenInfo]) -> str:
    return (
        " ".join(
            tok.string
            for tok in tokens
            if tok.type not in (tokenize.STRING, tokenize.COMMENT) and tok.string.strip()
        )
        .replace(" , ", ", ")
        .replace(" ,", ",")
    )


def _missing_blank_lines(code: str) -> bool:
    lines = code.splitlines()
    for n, line in enumerate(lines):
        if n == 0 or not re.match(r"(def|class|async def|@)\b|@", line):
            continue
        if lines[n - 1].startswith("@"):
            continue
        before = lines[max(0, n - 2) : n]
        if len(before) < 2 or any(b.strip() for b in before):
            return True
    return False


# ---------------------------------------------------------------- AST


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _measure_tree(tree: ast.Module, code: str, f: Features) -> None:
    nodes = list(ast.walk(tree))
    aliases: dict[str, str] = {}
    imported: dict[str, int] = {}
    module_imports: list[tuple[str, str, int]] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            module_imports.extend(("import", a.name, stmt.lineno) for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            module_imports.append(("from", stmt.module, stmt.lineno))
    loaded: set[str] = set()
    attr_roots: set[str] = set()
    strings: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                local = a.asname or a.name.split(".")[0]
                aliases[local] = a.name if a.asname else a.name.split(".")[0]
                imported[local] = node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                local = a.asname or a.name
                aliases[local] = f"{node.module}.{a.name}"
                imported[local] = node.lineno
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.add(node.id)
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted:
                attr_roots.add(dotted.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)  # names in __all__ or string annotations count as used
    f.imports = tuple(sorted({m for _, m, _ in module_imports}))
    f.imports_unsorted = _imports_unsorted(module_imports)
    f.pandas = "pandas" in f.libs or any(v.split(".")[0] == "pandas" for v in aliases.values())
    used = loaded | attr_roots
    f.unused_imports = sorted(n for n in imported if n not in used and n not in strings)
    defined = _module_names(tree) | set(dir(builtins)) | _all_bound(nodes)
    f.undefined_names = sorted(loaded - defined)[:5]

    for node in nodes:
        if isinstance(node, _FUNCS):
            own = list(_own_nodes(node))
            f.functions.append(_function_measures(node, own))
            _function_names(own, f)
            _returns(node, own, f)
        if isinstance(node, ast.Call):
            _call(node, aliases, f)
        if isinstance(node, ast.Compare):
            for comp in [node.left, *node.comparators]:
                val = _number(comp)
                if val is not None and val not in (0, 1, -1):
                    f.magic_comparisons.append(repr(val))
        if isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.BoolOp):
            f.bool_conditions += 1
        if isinstance(node, ast.If) and node.orelse and isinstance(node.body[-1], _EXITS):
            f.else_after_exit += 1
        if isinstance(node, ast.Raise):
            _raise(node, f)
        if isinstance(node, _TRIES):
            _try(node, f)
        if isinstance(node, (ast.Assign, ast.For, ast.AsyncFor, ast.With, ast.comprehension)):
            _unpacking(node, used, f)
        if isinstance(node, (ast.For, ast.AsyncFor)) and _is_append_loop(node):
            f.append_loops += 1
        if isinstance(node, (ast.Module, *_FUNCS, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                f.docstrings += 1
                f.long_doc_lines += sum(len(line) > 72 for line in doc.splitlines())


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_TRIES: tuple[type[ast.AST], ...] = tuple(
    t for t in (getattr(ast, "Try", None), getattr(ast, "TryStar", None)) if t is not None
)


def _call(node: ast.Call, aliases: dict[str, str], f: Features) -> None:
    name = _dotted(node.func)
    full = _resolve(name, aliases) if name else None
    if full in _PTH_CALLS:
        f.fs_calls.append(full)
    if full == "open" or name == "open":
        f.open_calls += 1
        mode = (
            node.args[1]
            if len(node.args) > 1
            else next((k.value for k in node.keywords if k.arg == "mode"), None)
        )
        if isinstance(mode, ast.Constant) and mode.value in ("r", "rt", "tr", "rU"):
            f.open_redundant_mode += 1


def _raise(node: ast.Raise, f: Features) -> None:
    f.raises += 1
    exc = node.exc
    if isinstance(exc, ast.Call) and exc.args:
        first = exc.args[0]
        if isinstance(first, ast.JoinedStr) or (
            isinstance(first, ast.Constant) and isinstance(first.value, str)
        ):
            f.raise_with_message += 1
    name = _dotted(exc.func if isinstance(exc, ast.Call) else exc) if exc is not None else None
    if name in _OSERROR_ALIASES:
        f.oserror_aliases.append(str(name))
    if name in ("OSError", "FileNotFoundError", "PermissionError") or name in _OSERROR_ALIASES:
        f.oserror_handling += 1


def _try(node: ast.AST, f: Features) -> None:
    f.try_blocks += 1
    for handler in getattr(node, "handlers", []):
        for exc_name in _handler_names(handler):
            if exc_name in _OSERROR_ALIASES:
                f.oserror_aliases.append(exc_name)
            if (
                exc_name in ("OSError", "FileNotFoundError", "PermissionError", "Exception")
                or exc_name in _OSERROR_ALIASES
            ):
                f.oserror_handling += 1
        if any(
            isinstance(n, ast.Raise) and n.exc is not None and n.cause is None
            for n in ast.walk(handler)
        ):
            f.raise_in_except += 1


def _resolve(name: str, aliases: dict[str, str]) -> str:
    root, _, rest = name.partition(".")
    full = aliases.get(root, root)
    return f"{full}.{rest}" if rest else full


def _number(node: ast.AST) -> int | float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return -inner if inner is not None else None
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return node.value
    return None


def _handler_names(handler: ast.ExceptHandler) -> Iterator[str]:
    types = handler.type
    if types is None:
        return
    for node in types.elts if isinstance(types, ast.Tuple) else [types]:
        name = _dotted(node)
        if name:
            yield name


def _imports_unsorted(imports: list[tuple[str, str, int]]) -> bool:
    """True if the module's top-level imports are not in isort order (Ruff ``I001``).

    isort order: standard-library section, then third-party; in each section plain
    ``import x`` lines before ``from x import y`` lines, each sorted by module name
    (case-insensitive); sections separated by a blank line (not checked here).
    """
    if len(imports) < 2:
        return False

    def key(item: tuple[str, str, int]) -> tuple[int, int, str]:
        kind, module, _ = item
        top = module.split(".")[0]
        section = 0 if top in sys.stdlib_module_names or top == "__future__" else 1
        if top == "__future__":
            section = -1
        return (section, 0 if kind == "import" else 1, module.lower())

    return [key(i) for i in imports] != sorted(key(i) for i in imports)


def _module_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _all_bound(nodes: list[ast.AST]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (*_FUNCS, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.MatchAs) and node.name:
            names.add(node.name)
    return names | {"__name__", "__file__", "__doc__", "__builtins__"}


def _own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*_FUNCS, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _function_measures(
    func: ast.FunctionDef | ast.AsyncFunctionDef, own: list[ast.AST]
) -> FunctionMeasures:
    m = FunctionMeasures(func.name)
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    if func.args.vararg:
        args.append(func.args.vararg)
    if func.args.kwarg:
        args.append(func.args.kwarg)
    m.unannotated = sum(a.annotation is None and a.arg not in ("self", "cls") for a in args) + (
        func.returns is None
    )
    local_names = {a.arg for a in args}
    for node in own:
        if isinstance(node, ast.stmt):
            m.statements += 1
        if isinstance(node, ast.If):
            m.branches += 1 + (
                1
                if node.orelse
                and not (len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If))
                else 0
            )
            m.complexity += 1
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            m.branches += 1 + (1 if node.orelse else 0)
            m.complexity += 1 + (1 if node.orelse else 0)
        elif isinstance(node, _TRIES):
            n_handlers = len(getattr(node, "handlers", []))
            has_else = bool(getattr(node, "orelse", []))
            m.branches += n_handlers + has_else + bool(getattr(node, "finalbody", []))
            m.complexity += n_handlers + has_else
        elif isinstance(node, ast.Match):
            m.branches += len(node.cases)
            m.complexity += len(node.cases)
        elif isinstance(node, ast.comprehension):
            m.complexity += 1 + len(node.ifs)
        elif isinstance(node, ast.IfExp):
            m.complexity += 1
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local_names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local_names.add(node.name)
    m.locals = len(local_names)
    m.nesting = _depth(func.body, 0)
    return m


def _depth(body: list[ast.stmt], level: int) -> int:
    deepest = level
    for stmt in body:
        if isinstance(stmt, (*_FUNCS, ast.ClassDef)):
            continue
        if isinstance(stmt, _BLOCKS):
            inner = level + 1
            children: list[list[ast.stmt]] = []
            if isinstance(stmt, ast.If):
                children = [stmt.body]
                orelse = stmt.orelse
                while len(orelse) == 1 and isinstance(orelse[0], ast.If):  # elif: same level
                    children.append(orelse[0].body)
                    orelse = orelse[0].orelse
                children.append(orelse)
            elif isinstance(stmt, ast.Match):
                children = [c.body for c in stmt.cases]
            else:
                for attr in ("body", "orelse", "finalbody"):
                    children.append(getattr(stmt, attr, []))
                children.extend(h.body for h in getattr(stmt, "handlers", []))
            for child in children:
                deepest = max(deepest, _depth(child, inner))
    return deepest


def _function_names(own: list[ast.AST], f: Features) -> None:
    for node in own:
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and not _SNAKE.match(node.id)
            and node.id not in f.non_snake_locals
        ):
            f.non_snake_locals.append(node.id)
    assigned: dict[str, int] = {}
    loads: set[str] = set()
    for node in own:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                assigned.setdefault(node.id, node.lineno)
            else:
                loads.add(node.id)
    globals_ = {
        n for node in own if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names
    }
    f.unused_locals.extend(
        n
        for n in assigned
        if n not in loads and n not in globals_ and n != "_" and not n.startswith("_")
    )


def _unpacking(node: ast.AST, used: set[str], f: Features) -> None:
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            f.unpacking += 1
            for elt in ast.walk(target):
                if isinstance(elt, ast.Name) and not elt.id.startswith("_") and elt.id not in used:
                    f.unused_unpacked.append(elt.id)


def _is_append_loop(loop: ast.For | ast.AsyncFor) -> bool:
    """A loop Ruff's PERF401-403 flag: its body (optionally one if) only appends or copies."""
    body = loop.body
    if len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse:
        body = body[0].body
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in ("append", "add")
            and isinstance(func.value, ast.Name)
        )
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Subscript)
    )


def _returns(func: ast.FunctionDef | ast.AsyncFunctionDef, own: list[ast.AST], f: Features) -> None:
    """Count ``x = ...; return x`` pairs (Ruff RET504) in the function's blocks."""
    for node in [func, *own]:
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if not isinstance(block, list):
                continue
            for first, second in itertools.pairwise(block):
                if (
                    isinstance(second, ast.Return)
                    and isinstance(second.value, ast.Name)
                    and isinstance(first, ast.Assign)
                    and len(first.targets) == 1
                    and isinstance(first.targets[0], ast.Name)
                    and first.targets[0].id == second.value.id
                ):
                    f.assign_then_return += 1
