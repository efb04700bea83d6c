"""`sdc sql install`: ad-hoc SQL protected with the warehouse's own ptable and modulus, giving the numbers of
the dbt macro ckm_count; what the macros refuse; how the install treats paths, locks and hostile names."""

import random
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import ons_10_5_rule, query
from dbt_project_helper import ScratchProject
from docs_pages import page_text
from sdc.cli import main
from sdc.warehouse.loader import load_microdata
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.relation import create_ptable_table
from sdc.ptable.formats import parse_ptable, render_ptable

REPO = Path(__file__).parent.parent
SDC = Path(sys.executable).parent / "sdc"
# the warehouse's own ptable (not the demo's D=5, V=3 file): a user who seeded a ptable of their own
OWN_PTABLE = create_ptable(PTableParams(D=3, V=1)).table
OTHER_PTABLE = create_ptable(PTableParams(D=2, V=0.9)).table
FACTS = {"f_beurlaubte": "ef28 = 4", "f_studierende": "ef28 < 4"}

# the analyst's guide's query of the students on leave, as the page shows it (its first line names the database)
DOCS_BEURLAUBTE = next(block.split("\n", 1)[1] for block in re.findall(r"```sql\n(.*?)```", page_text("guides/analyst.md"), re.S)
                       if "sum(rk_f_beurlaubte)" in block)
# the same over every record, by cube (the page's own count of all records groups by rollup)
CUBE_ALL = """select coalesce(hochschulart, 'Total') as hochschulart,
       coalesce(geschlecht, 'Total')   as geschlecht,
       sdc_ckm(count(*), sum(rk)) as studierende
from raw.students
group by cube (hochschulart, geschlecht);"""


def write_students(path: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        f.write("id,hochschulart,geschlecht,fach,land,ef28\n")
        for k in range(n):
            # skewed sizes: cells from a handful of records to tens of thousands
            fach = f"F{min(int(rng.expovariate(0.12)), 39):02d}"
            f.write(f"{k},{rng.choice(['U', 'FH', 'KH', 'VH'])},{rng.choice('mw')},{fach},"
                    f"L{rng.randrange(16):02d},{rng.choice([1, 2, 3, 4, 1, 2])}\n")


def write_persons(path: Path, n: int = 500, seed: int = 2) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        f.write("id,geschlecht,income\n")
        for k in range(n):
            f.write(f"{k},{rng.choice('mw')},{int(rng.lognormvariate(10.3, 0.6) * 100)}\n")  # cents, about 30,000 EUR



def execute(db, *statements):
    con = duckdb.connect(str(db))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def put_ptable(db, relation: str, table) -> None:
    """A ptable relation as dbt seeds it (exact decimals), e.g. put_ptable(db, 'main.sdc_ptable', t)."""
    con = duckdb.connect(str(db))
    try:
        con.execute(f"create schema if not exists {relation.rsplit('.', 1)[0]}")
        create_ptable_table(con, relation, table)
    finally:
        con.close()


def installed(db) -> bool:
    return bool(query(db, "select count(*) from duckdb_functions() where function_name = 'sdc_ckm'")[0][0])


def small_warehouse(folder: Path, name="w.duckdb", ptables=(("main.sdc_ptable", OWN_PTABLE),), loads=(("students", 10**8),)):
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / name
    data = folder / "students.csv"
    write_students(data, 3000)
    for table, modulus in loads:
        load_microdata(db, data, table, id_column="id", key_mode="random", modulus=modulus, facts=FACTS)
    for relation, table in ptables:
        put_ptable(db, relation, table)
    return db


def expected_count(table, n, key_sum, modulus, reuse_from=None):
    from dataclasses import replace
    if n == 0:
        return 0
    return n + replace(table, reuse_from=reuse_from).lookup(n, (key_sum % modulus) / modulus)


# ------------------------------------------------------------------------------------------ a dbt warehouse


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """A warehouse built as a user builds one: microdata loaded by sdc load, their own ptable seeded, tables
    protected by ckm_count in dbt (complete=false: an ad-hoc GROUP BY has only cells with records); then
    `sdc sql install` (twice: idempotent)."""
    root = tmp_path_factory.mktemp("sql_install")
    p = ScratchProject(root / "project")
    p.seed("sdc_ptable", render_ptable(OWN_PTABLE))
    write_students(root / "students.csv", 60000)
    load_microdata(p.db, root / "students.csv", "students", id_column="id", key_mode="random", facts=FACTS)
    write_persons(root / "persons.csv")
    load_microdata(p.db, root / "persons.csv", "persons", id_column="id", key_mode="random")
    p.sources(["students"])
    src = "source('raw', 'students')"
    p.model("beurlaubte", f"{{{{ sdc.ckm_count({src}, dims=['hochschulart', 'geschlecht'], fact='f_beurlaubte', complete=false) }}}}")
    p.model("alle", f"{{{{ sdc.ckm_count({src}, dims=['hochschulart', 'geschlecht'], complete=false) }}}}")
    p.model("studierende_big", f"{{{{ sdc.ckm_count({src}, dims=['fach', 'land', 'geschlecht'], fact='f_studierende', complete=false) }}}}")
    p.model("alle_big", f"{{{{ sdc.ckm_count({src}, dims=['fach', 'land', 'geschlecht'], complete=false) }}}}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-4000:]
    return p


@pytest.fixture(scope="module")
def installed_warehouse(warehouse):
    lines = []
    for _ in range(2):  # idempotent
        proc = subprocess.run([str(SDC), "sql", "install", "--db", str(warehouse.db)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        lines.append(proc.stdout.strip())
    assert lines[0] == lines[1]
    return warehouse, lines[0]


def test_the_install_uses_the_seeded_ptable_and_the_recorded_modulus(installed_warehouse):
    p, line = installed_warehouse
    assert line == (f"installed sdc_ckm, sdc_noise, sdc_cell_key in {p.db}: modulus 100000000 (as loaded: raw.persons, "
                    "raw.students), ptable main.sdc_ptable (the warehouse's, read through a view; "
                    "rows 0..3; counts above 3 use row 3)")
    assert "FROM main.sdc_ptable;" in query(p.db, "select sql from duckdb_views() where schema_name = 'sdc_ckm' "
                                 "and view_name = 'ptable_intervals'")[0][0]


def test_the_documented_queries_give_the_numbers_of_ckm_count(installed_warehouse):
    p, _ = installed_warehouse
    for sql, model in [(DOCS_BEURLAUBTE, "beurlaubte"), (CUBE_ALL, "alle")]:
        adhoc = sorted(query(p.db, sql))
        published = sorted(query(p.db, f"select hochschulart, geschlecht, count from main.{model}"))
        assert len(adhoc) == 15 and adhoc == published
    # the protection did something: some cells differ from the originals
    assert query(p.db, "select count(*) from main.alle where count <> original")[0][0] > 0


@pytest.mark.parametrize("grouping", [
    "group by hochschulart, geschlecht",
    "group by rollup (hochschulart, geschlecht)",
    "group by cube (hochschulart, geschlecht)",
    "group by grouping sets ((hochschulart, geschlecht), (geschlecht), ())",
])
def test_count_star_sum_1_and_facts_in_every_grouping(installed_warehouse, grouping):
    p, _ = installed_warehouse
    adhoc = query(p.db, f"""
        select coalesce(hochschulart, 'Total'), coalesce(geschlecht, 'Total'),
               sdc_ckm(count(*), sum(rk)), sdc_ckm(sum(1), sum(rk)),
               sdc_ckm(sum(f_beurlaubte), sum(rk_f_beurlaubte)),
               sdc_noise(count(*), sum(rk)), sdc_cell_key(sum(rk))
        from raw.students {grouping}""")
    alle = {(h, g): (c, v, k) for h, g, c, v, k in query(p.db, "select hochschulart, geschlecht, count, noise, cell_key_int from main.alle")}
    beurlaubte = {(h, g): c for h, g, c in query(p.db, "select hochschulart, geschlecht, count from main.beurlaubte")}
    assert adhoc
    for h, g, n_all, n_sum1, n_beurl, noise, key in adhoc:
        assert (n_all, noise, key) == alle[h, g]
        assert n_sum1 == n_all
        assert n_beurl == beurlaubte[h, g]


def test_thousands_of_legitimate_cells_pass_the_checks_and_match(installed_warehouse):
    # 41 x 17 x 3 cells with every subtotal, counts from 1 to 60,000: no false alarm, every cell as in dbt
    p, _ = installed_warehouse
    for fact, model in [("f_studierende", "studierende_big"), (None, "alle_big")]:
        n, k = ("count(*)", "sum(rk)") if fact is None else (f"sum({fact})", f"sum(rk_{fact})")
        adhoc = query(p.db, f"""
            select coalesce(fach, 'Total'), coalesce(land, 'Total'), coalesce(geschlecht, 'Total'), sdc_ckm({n}, {k})
            from raw.students group by cube (fach, land, geschlecht)""")
        published = query(p.db, f"select fach, land, geschlecht, count from main.{model}")
        assert len(adhoc) > 2000
        assert sorted(adhoc) == sorted(published)


def test_the_macros_refuse_what_they_cannot_protect(installed_warehouse):
    p, _ = installed_warehouse
    refused = {
        "select sdc_ckm(12.7, 5)": "the count 12.7 is not a whole number >= 0",
        "select sdc_ckm(-3, 5)": "the count -3 is not a whole number >= 0",
        "select sdc_noise(3, 5.5)": "the key sum 5.5 is not a whole number >= 0",
        "select sdc_ckm(3, -1)": "the key sum -1 is not a whole number >= 0",
        "select sdc_ckm(3, 300000000)": "the key sum 300000000 exceeds n * (M - 1) = 299999997 for the count n = 3",
        "select sdc_ckm(0, 12345)": "the key sum 12345 exceeds n * (M - 1) = 0 for the count n = 0",
        # 500 incomes in cents passed as a count: the old macro added a little noise to the sum and published it
        "select sdc_ckm(sum(income), sum(rk)) from raw.persons": "is implausible for the key sum",
        "select geschlecht, sdc_ckm(sum(income), sum(rk)) from raw.persons group by geschlecht": "is implausible for the key sum",
        # a count with the key sum of another count
        "select sdc_ckm(count(*), sum(rk_f_beurlaubte)) from raw.students": "is implausible for the key sum",
    }
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        for sql, message in refused.items():
            with pytest.raises(duckdb.Error, match="sdc_ckm: ") as caught:
                con.execute(sql).fetchall()
            assert message in str(caught.value), (sql, str(caught.value))
        assert con.execute("select sdc_ckm(0, 0), sdc_noise(0, 0), sdc_cell_key(123456789012), sdc_ckm(null, 5), "
                           "sdc_ckm(12, 5.0) is not null").fetchall() == [(0, 0, 56789012, None, True)]
        # an empty selection: count(*) = 0 with sum(rk) NULL stays 0
        assert con.execute("select sdc_ckm(count(*), sum(rk)) from raw.students where false").fetchall() == [(0,)]
    finally:
        con.close()


# ------------------------------------------------------------------------------------------ which ptable


def test_a_new_seed_is_used_at_once(tmp_path, capsys):
    db = small_warehouse(tmp_path)
    assert main(["sql", "install", "--db", str(db)]) == 0
    sql = "select fach, count(*), sum(rk), sdc_ckm(count(*), sum(rk)) from raw.students group by fach, land"
    for table in (OWN_PTABLE, OTHER_PTABLE):
        put_ptable(db, "main.sdc_ptable", table)  # what `dbt seed` does with a changed seed file
        rows = query(db, sql)
        assert [c for *_, c in rows] == [expected_count(table, n, k, 10**8) for _, n, k, _ in rows]
    assert any(expected_count(OWN_PTABLE, n, k, 10**8) != c for _, n, k, c in rows)


def test_no_ptable_in_the_warehouse_is_an_error_that_says_what_to_do(tmp_path, capsys):
    db = small_warehouse(tmp_path, ptables=())
    assert main(["sql", "install", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "the warehouse has no ptable: no table or view named sdc_ptable" in err
    assert "run `dbt seed` (or `dbt build`)" in err and "--ptable FILE" in err
    assert not installed(db) and not query(db, "select * from duckdb_schemas() where schema_name = 'sdc_ckm'")


def test_several_ptables_need_ptable_relation(tmp_path, capsys):
    db = small_warehouse(tmp_path, ptables=(("main.sdc_ptable", OWN_PTABLE), ("audit.sdc_ptable", OTHER_PTABLE)))
    assert main(["sql", "install", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "the warehouse has 2 ptables named sdc_ptable: audit.sdc_ptable, main.sdc_ptable" in err
    assert "--ptable-relation schema.name" in err and not installed(db)
    assert main(["sql", "install", "--db", str(db), "--ptable-relation", "audit.sdc_ptable"]) == 0
    assert "ptable audit.sdc_ptable (--ptable-relation; rows 0..2;" in capsys.readouterr().out
    rows = query(db, "select count(*), sum(rk), sdc_ckm(count(*), sum(rk)) from raw.students group by hochschulart")
    assert [c for _, _, c in rows] == [expected_count(OTHER_PTABLE, n, k, 10**8) for n, k, _ in rows]
    assert main(["sql", "install", "--db", str(db), "--ptable-relation", "nowhere.sdc_ptable"]) == 2
    assert "no table or view of that name" in capsys.readouterr().err
    assert main(["sql", "install", "--db", str(db), "--ptable-relation", "raw.students"]) == 2
    assert "raw.students is not a ptable: it has no column i, j, p, v, p_int_lb, p_int_ub" in capsys.readouterr().err


def test_a_ptable_file_other_than_the_seed_is_refused(tmp_path, capsys):
    db = small_warehouse(tmp_path)
    other = tmp_path / "other.csv"
    other.write_text(render_ptable(OTHER_PTABLE))
    assert main(["sql", "install", "--db", str(db), "--ptable", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"--ptable {other} differs from the warehouse's ptable main.sdc_ptable" in err
    assert not installed(db)
    # the same table as a file: the macros read the seed (and follow it)
    same = tmp_path / "same.csv"
    same.write_text(render_ptable(OWN_PTABLE))
    assert main(["sql", "install", "--db", str(db), "--ptable", str(same)]) == 0
    assert f"ptable {same} (--ptable; equal to main.sdc_ptable, read from there; rows 0..3;" in capsys.readouterr().out
    assert "FROM main.sdc_ptable;" in query(db, "select sql from duckdb_views() where view_name = 'ptable_intervals'")[0][0]


def test_a_ptable_file_without_a_seed_is_copied_and_a_later_seed_replaces_it(tmp_path, capsys):
    db = small_warehouse(tmp_path, ptables=())
    ons = tmp_path / "pt.csv"
    ons.write_text(render_ptable(OTHER_PTABLE))
    assert main(["sql", "install", "--db", str(db), "--ptable", str(ons)]) == 0
    assert f"ptable {ons} (--ptable; copied to sdc_ckm.ptable_file; rows 0..2;" in capsys.readouterr().out
    sql = "select count(*), sum(rk), sdc_ckm(count(*), sum(rk)) from raw.students group by geschlecht"
    rows = query(db, sql)
    assert [c for _, _, c in rows] == [expected_count(OTHER_PTABLE, n, k, 10**8) for n, k, _ in rows]
    put_ptable(db, "main.sdc_ptable", OWN_PTABLE)
    assert main(["sql", "install", "--db", str(db), "--ptable", str(ons)]) == 2  # now two tables: refused
    assert "differs from the warehouse's ptable main.sdc_ptable" in capsys.readouterr().err
    assert main(["sql", "install", "--db", str(db)]) == 0
    rows = query(db, sql)
    assert [c for _, _, c in rows] == [expected_count(OWN_PTABLE, n, k, 10**8) for n, k, _ in rows]
    assert not query(db, "select * from duckdb_tables() where schema_name = 'sdc_ckm'")  # the copy is gone


def test_a_bad_ptable_changes_nothing(tmp_path, capsys):
    db = small_warehouse(tmp_path)
    assert main(["sql", "install", "--db", str(db)]) == 0
    sql = "select hochschulart, sdc_ckm(sum(f_beurlaubte), sum(rk_f_beurlaubte)) from raw.students group by all order by 1"
    before = query(db, sql)
    bad = tmp_path / "pt.csv"
    bad.write_text("i,j,p,v,p_int_lb,p_int_ub\n0,0,0.9,0,0,0.9\n")
    assert main(["sql", "install", "--db", str(db), "--ptable", str(bad)]) == 2
    assert "row i=0: the intervals end at 0.9" in capsys.readouterr().err
    assert query(db, sql) == before  # the installed macros keep working
    # a bad seed is named as well
    execute(db, "delete from main.sdc_ptable where i = 2 and v = 0")
    assert main(["sql", "install", "--db", str(db)]) == 2
    assert "ptable main.sdc_ptable" in capsys.readouterr().err


def test_an_ons_ptable_with_256_keys_and_rows_reused_from_501(tmp_path, capsys):
    # ONS reference T11: (10, ckey 173) -> 10; (7, 180) -> 0; (14, 66) -> 15; (11, 190) -> 10;
    # 751 -> row 501 -> 750; 1003 -> row 503 -> 1005 (as tests/test_ckm_sql.py for ckm_count)
    lines = ["id,cell,key"]
    for cell, count, ckey in [("a", 10, 173), ("b", 7, 180), ("c", 14, 66), ("d", 11, 190)]:
        lines += [f"{cell}{k},{cell},{0 if k < count - 1 else ckey}" for k in range(count)]
    lines += [f"n751_{k},n751,{k % 256}" for k in range(751)] + [f"n1003_{k},n1003,{k % 256}" for k in range(751, 1754)]
    data = tmp_path / "ons.csv"
    data.write_text("\n".join(lines) + "\n")
    expected = [("a", 10), ("b", 0), ("c", 15), ("d", 10), ("n1003", 1005), ("n751", 750)]
    ons_file = tmp_path / "ons_ptable.csv"
    ons_file.write_text(ons_10_5_rule(750))
    sql = "select cell, sdc_ckm(count(*), sum(rk)) from raw.ons group by cell order by cell"
    # the file in ONS format: its reuse rule comes with it
    db = tmp_path / "file.duckdb"
    load_microdata(db, data, "ons", id_column="id", key_mode="existing", key_column="key", modulus=256)
    assert main(["sql", "install", "--db", str(db), "--ptable", str(ons_file)]) == 0
    assert "modulus 256 (as loaded: raw.ons)" in capsys.readouterr().out
    assert query(db, sql) == expected
    # the same table seeded without the rule's column: --reuse-from 501 as the dbt var
    db = tmp_path / "seeded.duckdb"
    load_microdata(db, data, "ons", id_column="id", key_mode="existing", key_column="key", modulus=256)
    put_ptable(db, "main.sdc_ptable", parse_ptable(ons_10_5_rule(750))[0])
    assert main(["sql", "install", "--db", str(db), "--reuse-from", "501"]) == 0
    assert "counts above 750 reuse rows 501..750" in capsys.readouterr().out
    assert query(db, sql + "") == expected
    assert query(db, "select cell, sdc_ckm(count(*), sum(rk)) from raw.ons group by rollup (cell) order by cell")[:4] == expected[:4]
    # the sdc file of the ONS table, seeded as it is: its column reuse_from carries the rule (as ckm_count reads it)
    db = tmp_path / "seeded_with_rule.duckdb"
    load_microdata(db, data, "ons", id_column="id", key_mode="existing", key_column="key", modulus=256)
    converted = tmp_path / "ons_as_sdc.csv"
    converted.write_text(render_ptable(parse_ptable(ons_10_5_rule(750))[0]))
    con = duckdb.connect(str(db))
    con.execute("create table main.sdc_ptable as select * from read_csv(?, header = true)", [str(converted)])
    con.close()
    assert main(["sql", "install", "--db", str(db), "--reuse-from", "600"]) == 2
    assert "reuses rows from 501 on (its column reuse_from), but --reuse-from 600 was asked for" in capsys.readouterr().err
    assert not installed(db)
    assert main(["sql", "install", "--db", str(db)]) == 0
    assert "counts above 750 reuse rows 501..750" in capsys.readouterr().out
    assert query(db, sql) == expected


# ------------------------------------------------------------------------------------------ the modulus


def test_the_modulus_comes_from_the_loads_and_must_agree(tmp_path, capsys):
    db = small_warehouse(tmp_path, loads=(("students", 256),))
    assert main(["sql", "install", "--db", str(db), "--modulus", "1000"]) == 2
    assert ("--modulus 1000 differs from the modulus 256 that raw.students was loaded with (raw.sdc_loads)"
            in capsys.readouterr().err)
    assert not installed(db)
    assert main(["sql", "install", "--db", str(db)]) == 0
    assert "modulus 256 (as loaded: raw.students)" in capsys.readouterr().out
    assert query(db, "select sdc_cell_key(300)") == [(44,)]
    rows = query(db, "select count(*), sum(rk), sdc_ckm(count(*), sum(rk)) from raw.students group by fach")
    assert [c for _, _, c in rows] == [expected_count(OWN_PTABLE, n, k, 256) for n, k, _ in rows]


def test_loads_with_different_moduli_are_refused(tmp_path, capsys):
    db = small_warehouse(tmp_path, loads=(("students", 256), ("persons", 10**8), ("old", 1000)))
    execute(db, "drop table raw.old")  # a dropped table's load no longer counts
    assert main(["sql", "install", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert ("the loads in raw.sdc_loads have different record-key moduli (modulus 256: raw.students; "
            "modulus 100000000: raw.persons)") in err
    assert not installed(db)


@pytest.mark.parametrize("modulus", ["1", "0", "-5", str(2**62 + 1)])
def test_moduli_outside_2_to_2_62_are_refused(tmp_path, capsys, modulus):
    db = small_warehouse(tmp_path, loads=())
    assert main(["sql", "install", "--db", str(db), "--modulus", modulus]) == 2
    assert f"--modulus must be a whole number in [2, 2^62], got {modulus}" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ files, locks, names


def test_relative_paths_are_taken_from_the_working_directory(tmp_path, monkeypatch, capsys):
    here = tmp_path / "analyst"
    small_warehouse(here, name="relative_path_test.duckdb", ptables=())
    (here / "pt.csv").write_text(render_ptable(OWN_PTABLE))
    monkeypatch.chdir(here)
    assert main(["sql", "install", "--db", "relative_path_test.duckdb", "--ptable", "pt.csv"]) == 0
    assert installed(here / "relative_path_test.duckdb")
    assert not list(REPO.glob("**/relative_path_test.duckdb*"))


def test_a_missing_database_is_named_and_not_created(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["sql", "install", "--db", "typo.duckdb"]) == 2
    assert f"database file not found: {tmp_path / 'typo.duckdb'}" in capsys.readouterr().err
    assert not (tmp_path / "typo.duckdb").exists() and not list(tmp_path.iterdir())


def test_a_locked_database_is_one_line_and_exit_2(tmp_path):
    db = small_warehouse(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
         "time.sleep(120)", str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        proc = subprocess.run([str(SDC), "sql", "install", "--db", str(db)], capture_output=True, text=True, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"sdc sql: error: cannot open {db}: ") and "lock" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_hostile_names_never_reach_sql_unquoted(tmp_path, capsys):
    canary = 'x"; create table pwned as select 1; --'
    db = small_warehouse(tmp_path)
    for name in (canary, f"main.{canary}", "main.sdc_ptable; drop table raw.students", "main.sdc_ptable\n--",
                 "a.b.c", '"unterminated.sdc_ptable'):
        assert main(["sql", "install", "--db", str(db), "--ptable-relation", name]) == 2
        assert "--ptable-relation" in capsys.readouterr().err
    # a schema whose name is the canary, holding a second sdc_ptable: found, listed, usable, quoted
    put_ptable(db, '"' + canary.replace('"', '""') + '".sdc_ptable', OTHER_PTABLE)
    assert main(["sql", "install", "--db", str(db)]) == 2
    assert 'ptables named sdc_ptable: main.sdc_ptable, "x""; create table pwned as select 1; --".sdc_ptable' \
        in capsys.readouterr().err
    assert main(["sql", "install", "--db", str(db), "--ptable-relation",
                 '"x""; create table pwned as select 1; --".sdc_ptable']) == 0
    rows = query(db, "select count(*), sum(rk), sdc_ckm(count(*), sum(rk)) from raw.students group by hochschulart")
    assert [c for _, _, c in rows] == [expected_count(OTHER_PTABLE, n, k, 10**8) for n, k, _ in rows]
    assert not query(db, "select * from duckdb_tables() where table_name = 'pwned'")
    assert query(db, "select count(*) from raw.students")[0][0] == 3000
