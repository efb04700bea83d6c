"""The layout and reference of the dbt macros (issue 35), as dbt-utils lays out its own:

* one public macro per file, the file named after it (a generic test ``{% test x %}`` counts as the macro x; a
  dispatch implementation ``<engine>__x`` of a package macro x sits beside it); helpers live in ``_`` files;
* every public macro has an entry in the ``macros:`` properties (yml beside the macros) with a description, and
  its arguments there are those of its signature, in order, each described; no entry names a macro that does
  not exist or a helper of a ``_`` file;
* engine differences go through ``adapter.dispatch``: no ``target.type`` outside a dispatch implementation.

A public macro is what a project calls (or dbt calls, for an override such as spark__load_csv_rows, dbt's own
seed loader on Spark): a macro of a file whose name does not start with ``_``, other than a dispatch
implementation of a macro of the package."""

import re
from pathlib import Path

import jinja2
import jinja2.ext
import pytest
import yaml
from jinja2 import nodes

from conftest import REPO

MACROS = REPO / "macros"
_ENGINE_PREFIX = re.compile(r"^[a-z]+__(\w+)$")


class _Tests(jinja2.ext.Extension):
    """dbt's ``{% test name(args) %} ... {% endtest %}``, parsed as the macro it is."""

    tags = {"test"}

    def parse(self, parser):
        node = nodes.Macro(lineno=next(parser.stream).lineno)
        node.name = parser.parse_assign_target(name_only=True).name
        parser.parse_signature(node)
        node.body = parser.parse_statements(("name:endtest",), drop_needle=True)
        return node


_ENV = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols", _Tests])
_BLOCK = re.compile(r"\{%-?\s*(macro|test)\s+(\w+)\s*\(.*?\{%-?\s*end(?:macro|test)\s*-?%\}", re.DOTALL)


def _macros(path: Path) -> list[nodes.Macro]:
    return list(_ENV.parse(path.read_text()).find_all(nodes.Macro))


def _all_macros(root: Path) -> dict[str, tuple[Path, nodes.Macro]]:
    return {macro.name: (path, macro) for path in sorted(root.rglob("*.sql")) for macro in _macros(path)}


def _is_implementation(name: str, known) -> bool:
    """``default__x``, ``duckdb__x``, ...: an engine's implementation of the package's own macro x (an override
    of one of dbt's macros, e.g. spark__load_csv_rows, is public)."""
    match = _ENGINE_PREFIX.match(name)
    return bool(match) and match.group(1) in known


def _is_test(path: Path, name: str) -> bool:
    return any(kind == "test" and found == name for kind, found in
               ((m.group(1), m.group(2)) for m in _BLOCK.finditer(path.read_text())))


def _public(root: Path) -> dict[str, tuple[Path, nodes.Macro]]:
    """The public macros by the name dbt gives them (a generic test x is the macro test_x)."""
    known = _all_macros(root)
    return {("test_" if _is_test(path, name) else "") + name: (path, macro) for name, (path, macro) in known.items()
            if not path.name.startswith("_") and not _is_implementation(name, known)}


def _documented(root: Path) -> dict[str, tuple[Path, dict]]:
    entries = {}
    for path in sorted(root.rglob("*.yml")):
        for entry in (yaml.safe_load(path.read_text()) or {}).get("macros") or []:
            assert entry["name"] not in entries, f"{entry['name']} has two entries ({path})"
            entries[entry["name"]] = (path, entry)
    return entries


def check_layout(root: Path) -> None:
    """One public macro per non-_ file, named as the file; its engines' implementations beside it."""
    known = _all_macros(root)
    for path in sorted(root.rglob("*.sql")):
        if path.name.startswith("_"):
            continue
        names = [m.name for m in _macros(path) if not _is_implementation(m.name, known)]
        assert names == [path.stem], f"{path}: holds {names}; one public macro per file, named as the file"
        for macro in _macros(path):
            if _is_implementation(macro.name, known):
                assert _ENGINE_PREFIX.match(macro.name).group(1) == path.stem, \
                    f"{path}: {macro.name} implements a macro of another file"


def check_reference(root: Path) -> None:
    """Every public macro documented beside it: a description, its arguments in the signature's order, each
    with a type and a description."""
    documented = _documented(root)
    for name, (path, macro) in _public(root).items():
        assert name in documented, f"{name} ({path}) has no entry under macros: in a yml beside it"
        yml, entry = documented[name]
        assert yml.parent == path.parent, f"{name} is documented in {yml}, not beside {path}"
        assert str(entry.get("description") or "").strip(), f"{name}: empty description"
        arguments = [a["name"] for a in entry.get("arguments") or []]
        signature = [arg.name for arg in macro.args]
        assert arguments == signature, f"{name}: arguments {arguments} in {yml.name}, {signature} in its signature"
        for argument in entry.get("arguments") or []:
            for key in ("type", "description"):
                assert str(argument.get(key) or "").strip(), f"{name}: argument {argument['name']} has no {key}"


def check_entries(root: Path) -> None:
    """No entry for a macro that does not exist, nor for a helper of a _ file or an engine's implementation."""
    known, public = _all_macros(root), _public(root)
    for name, (yml, _) in _documented(root).items():
        assert name in public, (f"{yml} documents {name}, " + (
            f"a helper ({known[name][0].name})" if name in known else "which no macro file defines"))


def check_dispatch(root: Path) -> None:
    """target.type / adapter.type only inside an engine's own implementation, never as a branch in a macro."""
    for path in sorted(root.rglob("*.sql")):
        for block in _BLOCK.finditer(path.read_text()):
            name = block.group(2)
            if _ENGINE_PREFIX.match(name):  # an engine's own implementation (or override of dbt's)
                continue
            text = re.sub(r"\{#.*?#\}", "", block.group(0), flags=re.DOTALL)
            assert not re.search(r"\b(target|adapter)\.type\b", text), \
                f"{path}: {name} checks the engine itself; put the difference behind adapter.dispatch"


def test_the_parser_sees_every_macro_and_test():
    """Jinja2's parser finds the blocks a plain search finds (so nothing escapes the checks)."""
    for path in MACROS.rglob("*.sql"):
        assert [m.name for m in _macros(path)] == [m.group(2) for m in _BLOCK.finditer(path.read_text())], path


def test_one_public_macro_per_file_named_after_it():
    check_layout(MACROS)


def test_every_public_macro_is_documented_with_its_arguments():
    assert len(_public(MACROS)) >= 25
    check_reference(MACROS)


def test_no_entry_for_a_macro_that_is_missing_or_private():
    check_entries(MACROS)


def test_engine_differences_go_through_dispatch():
    check_dispatch(MACROS)


def test_the_package_docs_are_beside_the_macros():
    """dbt reads the yml and the docs blocks from the macro paths; the wheel carries them (setup.py copies
    macros/) and so does the sdist (MANIFEST.in)."""
    manifest = (REPO / "MANIFEST.in").read_text()
    assert "recursive-include macros *.sql *.yml *.md" in manifest
    assert (MACROS / "sdc_published_columns.md").is_file()


@pytest.mark.parametrize("case", ["two public", "missing entry", "wrong order", "empty description", "no type",
                                  "helper documented", "unknown entry", "target.type"])
def test_the_checks_catch_what_they_are_for(case, tmp_path):
    """Each rule fails on a folder that breaks it, and passes the same folder without the fault."""
    sql = tmp_path / "a.sql"
    sql.write_text("{% macro a(x, y=1) %}{{ return(adapter.dispatch('a', 'p')(x, y)) }}{% endmacro %}\n"
                   "{% macro default__a(x, y) %}{{ target.type }}{% endmacro %}\n")
    (tmp_path / "_h.sql").write_text("{% macro h() %}{% endmacro %}\n")
    (tmp_path / "t.sql").write_text("{% test t(model) %}select 1{% endtest %}\n")
    entries = [{"name": "a", "description": "A.", "arguments": [{"name": "x", "type": "int", "description": "X."},
                                                                {"name": "y", "type": "int", "description": "Y."}]},
               {"name": "test_t", "description": "T.", "arguments": [{"name": "model", "type": "relation",
                                                                       "description": "The model."}]}]

    def check():
        (tmp_path / "p.yml").write_text(yaml.safe_dump({"version": 2, "macros": entries}))
        for rule in (check_layout, check_reference, check_entries, check_dispatch):
            rule(tmp_path)

    check()
    if case == "two public":
        sql.write_text(sql.read_text() + "{% macro b() %}{% endmacro %}\n")
    elif case == "missing entry":
        entries.pop(1)
    elif case == "wrong order":
        entries[0]["arguments"].reverse()
    elif case == "empty description":
        entries[0]["arguments"][1]["description"] = " "
    elif case == "no type":
        del entries[0]["arguments"][0]["type"]
    elif case == "helper documented":
        entries.append({"name": "h", "description": "H."})
    elif case == "unknown entry":
        entries.append({"name": "gone", "description": "G."})
    elif case == "target.type":
        (tmp_path / "_h.sql").write_text("{% macro h() %}{% if target.type == 'x' %}1{% endif %}{% endmacro %}\n")
    with pytest.raises(AssertionError):
        check()
