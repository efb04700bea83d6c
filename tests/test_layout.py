"""The package's folders say its architecture, and the imports keep to it: no import circles, the methods
import no warehouse, release or CLI module, nothing imports the CLI, and no function runs over 60 lines
without a comment above it that says why ("# Long: ...") (docstrings not counted)."""

import ast
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "python" / "sdc"
MAX_FUNCTION_LINES = 60

# What every layer may use: the error type, the vocabulary, files, SQL quoting and the user's cache folder.
CORE = {"sdc", "sdc.errors", "sdc.conventions", "sdc.files", "sdc.quoting", "sdc.user_cache"}
# The methods' folders; their modules are pure (arrays and small dataclasses in, the same out) except the
# table-level entries below, which run the method's SQL (the dbt macros) or read files through the warehouse
# (a package's __init__ among them where it offers its table functions).
METHOD_PACKAGES = ("sdc.ptable", "sdc.ckm", "sdc.suppression", "sdc.microaggregation")
TABLE_ENTRIES = {
    "sdc.ckm", "sdc.ckm.counts", "sdc.ckm.magnitudes", "sdc.ckm._inputs",
    "sdc.suppression", "sdc.suppression.pipeline", "sdc.suppression.database", "sdc.suppression.warehouse",
    "sdc.suppression.linked_tables", "sdc.suppression.record_sets",
    "sdc.microaggregation", "sdc.microaggregation.tables",
}
LAYER_ORDER = ("core", "method", "warehouse", "table", "release", "demo", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> str:
    if module in CORE:
        return "core"
    if module in TABLE_ENTRIES:
        return "table"
    if module == "sdc.warehouse" or module.startswith("sdc.warehouse."):
        return "warehouse"
    for name in ("release", "demo", "cli"):
        if module == f"sdc.{name}" or module.startswith(f"sdc.{name}."):
            return name
    if module.startswith(METHOD_PACKAGES):
        return "method"
    raise AssertionError(f"{module}: in no layer; add its folder to tests/test_layout.py")


# what each layer may import besides itself
ALLOWED = {
    "core": {"core"},
    "method": {"core", "method"},
    "warehouse": {"core", "method", "warehouse"},
    "table": {"core", "method", "warehouse", "table"},
    "release": {"core", "method", "warehouse", "table", "release"},
    "demo": {"core", "method", "warehouse", "table"},
    "cli": set(LAYER_ORDER),
}


def imported_modules(module: str) -> set[str]:
    """The sdc modules ``module`` imports anywhere in its code (at the top or inside a function): for
    ``from a.b import c`` the module a.b.c where c is one, else a.b."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "sdc":
                continue
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "sdc")
    return {m for m in found if m != module}


GRAPH = {m: imported_modules(m) for m in MODULES}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules (Tarjan), each as a path that returns to its start."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_the_import_graph_is_read_from_the_package():
    # the graph sees imports made inside functions too, which is where a circle hides
    assert "sdc.warehouse.macro_renderer" in GRAPH["sdc.ckm.counts"]
    assert "sdc.ptable.nums" in GRAPH["sdc.ckm.params"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    assert circles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_from_its_own_layer_or_below(module):
    own = layer(module)
    wrong = sorted(m for m in GRAPH[module] if m in MODULES and layer(m) not in ALLOWED[own])
    assert not wrong, f"{module} ({own}) imports {', '.join(f'{m} ({layer(m)})' for m in wrong)}"


def test_nothing_outside_the_cli_imports_it():
    assert sorted(m for m, deps in GRAPH.items() if layer(m) != "cli" and any(layer(d) == "cli" for d in deps)) == []


def code_lines(node) -> int:
    """The lines of a function from its def to its end, its docstring left out (prose, not code)."""
    length = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        length -= first.end_lineno - first.lineno + 1
    return length


def long_functions(path: Path) -> list[tuple[str, int]]:
    """(name, lines) of the functions over MAX_FUNCTION_LINES of code without a '# Long: ' comment right above."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = code_lines(node)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            above = lines[first - 2].strip() if first > 1 else ""
            if length > MAX_FUNCTION_LINES and not above.startswith("# Long: "):
                found.append((node.name, length))
    return found


def test_no_function_over_60_lines_without_a_reason():
    found = {f"{module}.{name}": n for module, path in MODULES.items() for name, n in long_functions(path)}
    assert found == {}, "split these, or say why in a '# Long: ' comment right above the def"
