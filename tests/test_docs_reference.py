"""The reference pages are generated from the source (docs/gen_reference.py) and complete: every command and
option of the CLI, every public dbt macro with each argument, every public Python name has its entry."""

import importlib.util
import re

import pytest

from conftest import REPO
from test_macro_reference import _public

spec = importlib.util.spec_from_file_location("gen_reference", REPO / "docs" / "gen_reference.py")
gen_reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_reference)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    assert gen_reference.main([str(out)]) == 0
    return {name: (out / name).read_text() for name in gen_reference.PAGES}


def sections(page: str, level: str) -> dict[str, str]:
    """The page's sections at heading ``level`` ('##' or '###'), by their title without backticks."""
    parts = re.split(rf"^{level} (.+)$", page, flags=re.M)
    return {title.strip("`"): body for title, body in zip(parts[1::2], parts[2::2])}


def test_every_command_and_option_of_the_cli_has_its_entry(pages):
    by_command = sections(pages["cli.md"], "##")
    commands = gen_reference.commands(gen_reference.cli_parser())
    assert {"sdc ckm", "sdc suppress", "sdc publish", "sdc release diff", "sdc sql install"} <= {c for c, _ in commands}
    for command, parser in commands:
        assert command in by_command, f"{command}: no section in the CLI reference"
        for action in gen_reference.options(parser):
            assert action.help, f"{command} {gen_reference.option_name(action)}: no help text"
            assert f"`{gen_reference.option_name(action)}" in by_command[command], \
                f"{command} {gen_reference.option_name(action)}: not in the CLI reference"


def test_every_public_macro_and_argument_has_its_entry(pages):
    by_macro = sections(pages["macros.md"], "###")
    macros = _public(REPO / "macros")  # by the names dbt gives them: a generic test x is the macro test_x
    assert {"ckm_count", "ckm_sum", "suppression_published", "grant_published", "test_sdc_ckm_invariants"} <= set(macros)
    for name, (_, macro) in macros.items():
        title = name.removeprefix("test_")  # a data test under the name a project uses: data_tests: [sdc.x]
        assert title in by_macro, f"macro {name}: not in the macro reference"
        for argument in macro.args:
            assert f"| `{argument.name}` |" in by_macro[title], f"macro {name}: argument {argument.name} not in the reference"
    assert "data_tests: [sdc.sdc_ckm_invariants]" in by_macro["sdc_ckm_invariants"]


def test_every_public_python_name_has_its_entry_with_an_example(pages):
    by_name = sections(pages["python.md"], "###")
    names = gen_reference.public_names()
    assert {"sdc.ckm.count_table", "sdc.ptable.create_ptable", "sdc.suppression.secondary_suppression"} <= \
        {n for n, _ in names}
    for name, _ in names:
        assert name in by_name, f"{name}: not in the Python reference"
        assert "```pycon" in by_name[name], f"{name}: its reference entry shows no example"


def test_a_docstring_example_becomes_a_code_block():
    text = gen_reference.docstring_markdown('''Sum of ``x``.

    >>> 1 + 1
    2

    More.''')
    assert text == "Sum of `x`.\n\n\n```pycon\n>>> 1 + 1\n2\n```\n\n\nMore."
