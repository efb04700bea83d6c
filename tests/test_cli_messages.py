"""Issue 25, the CLI's words: every command's --help says what it does (new-user trial D18), and sdc audit of
a table with a hierarchy, run without it, names --hierarchy instead of only a missing cell (D11)."""

from __future__ import annotations

import argparse
import shutil

import pytest

from sdc.cli import build_parser, main

from conftest import DATA

MICRO = DATA / "cellkey_testdata_with_rkeys.csv"
# the age hierarchy of tests/data/cellkey_testdata_hierarchies.csv with its root named All instead of Total
AGE_UNDER_ALL = ("dim,level,name\nage,@,All\nage,@@,young\nage,@@@,age_group1\nage,@@@,age_group2\n"
                 "age,@@@,age_group3\nage,@@,old\nage,@@@,age_group4\nage,@@@,age_group5\nage,@@@,age_group6\n")


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """(words, parser) of every command and sub-command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _commands(sub, prefix + (name,))


def test_every_command_has_a_description_in_its_help(capsys):
    commands = dict(_commands(build_parser()))
    assert {("audit",), ("microaggregate",), ("suppress",), ("demo", "generate")} <= set(commands)
    for words, sub in commands.items():
        with pytest.raises(SystemExit) as done:
            main([*words, "--help"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        # argparse prints usage, a blank line, the description, a blank line, the options
        paragraphs = [p for p in text.split("\n\n") if p.strip()]
        assert not paragraphs[1].lstrip().startswith(("options:", "positional arguments:")), f"sdc {' '.join(words)}"
        assert sub.description and " ".join(paragraphs[1].split()) == " ".join(sub.description.split())


@pytest.fixture
def audit_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(MICRO, tmp_path / "micro.csv")
    shutil.copy(DATA / "cellkey_testdata_hierarchies.csv", tmp_path / "hierarchies.csv")
    (tmp_path / "age_all.csv").write_text(AGE_UNDER_ALL)
    return tmp_path


@pytest.mark.parametrize("hierarchy, message", [
    # the root is not called Total: without the hierarchy, the Total it assumes is missing
    ("age_all.csv", "audit.csv: cell {'sex': 'Total', 'age': 'Total'} is missing: it is the total of "
                    "{'sex': 'Total', 'age': 'All'} along 'age', and every total must be a row of the table"),
    # the root is Total: without the hierarchy, the subtotals young and old count twice
    ("hierarchies.csv", "audit.csv: cell sex=Total, age=Total is 4580 but its children sum to 9160; the table is "
                        "not additive"),
])
def test_audit_without_the_hierarchy_of_the_table_names_the_option(audit_files, capsys, hierarchy, message):
    assert main(["suppress", "--input", "micro.csv", "--dims", "sex,age", "--hierarchy", hierarchy, "--rule", "freq:10",
                 "--audit", "--out", "audit.csv"]) == 0
    capsys.readouterr()
    assert main(["audit", "--cells", "audit.csv"]) == 2
    assert capsys.readouterr().err == (f"sdc audit: error: {message}; a table with a hierarchy (as sdc suppress "
                                       "--hierarchy made it) is audited with the same file: give it as --hierarchy FILE\n")
    assert main(["audit", "--cells", "audit.csv", "--hierarchy", hierarchy]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "audit passed: 2 sensitive cells, 4 suppressed, 0 not protected"


def test_audit_of_a_table_without_hierarchy_gives_no_hierarchy_hint(audit_files, capsys):
    """The hint is for a missing hierarchy only: with --hierarchy given, a broken table is just named."""
    assert main(["suppress", "--input", "micro.csv", "--dims", "sex,age", "--hierarchy", "age_all.csv", "--rule",
                 "freq:10", "--audit", "--out", "audit.csv"]) == 0
    lines = (audit_files / "audit.csv").read_text().splitlines()
    (audit_files / "broken.csv").write_text("\n".join(line for line in lines if not line.startswith("Total,All,"))
                                            + "\n")
    capsys.readouterr()
    assert main(["audit", "--cells", "broken.csv", "--hierarchy", "age_all.csv"]) == 2
    err = capsys.readouterr().err
    assert "is missing" in err and "--hierarchy" not in err


def test_output_into_a_closed_pipe_is_no_traceback(tmp_path):
    """New-user N10: `sdc load ... | head -1` printed a BrokenPipeError traceback after the load had committed.
    The reader closing the pipe now ends sdc quietly, with the exit status of SIGPIPE, and the load stands."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import duckdb

    data = tmp_path / "records.csv"
    data.write_text("id,sex\n" + "".join(f"{i},{'mf'[i % 2]}\n" for i in range(50)))
    db = tmp_path / "w.duckdb"
    sdc = Path(sys.executable).parent / "sdc"
    # a pipe whose reader has gone before sdc writes: the first line already fails
    read, write = os.pipe()
    os.close(read)
    run = subprocess.run([str(sdc), "load", "--db", str(db), "--input", str(data), "--table", "t", "--id", "id"],
                         stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(write)
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, run.stderr
    assert run.returncode == 128 + signal.SIGPIPE
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select count(*) from raw.t").fetchone() == (50,)
    con.close()


def test_the_help_of_load_names_every_target(capsys):
    """New-user N10: `sdc --help` said load loads "into DuckDB", though --target loads into PostgreSQL and Spark."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "load microdata with record keys and fact columns into a DuckDB file or a dbt target (PostgreSQL, Spark)" \
        in " ".join(out.split())
