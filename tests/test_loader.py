"""`sdc load`: record keys (random, keyed, existing), facts from rules, and atomic failure."""

import hashlib
import hmac
from pathlib import Path

import duckdb
import pytest

from sdc.cli import main
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata

from conftest import DATA

# Seed 002, Tables 3, 4 and 7: four records, their EF fields and "Zufallszahl" (2-digit record keys).
SEED002_RECORDS = """id,ef21,ef28,ef32,ef33,ef35,ef36,zufallszahl
1,6,3,6,182,6,021,0.63
2,1,1,1,182,6,021,0.45
3,7,3,1,182,6,021,0.16
4,8,4,7,788,4,021,0.87
"""
SEED002_FACTS = {
    "f_studierende": "ef28 < 4",
    "f_studanf_hs1": "ef28 = 1 and ef21 = 1",
    "f_studanf_fs1": "ef28 < 4 and ef32 = 1",
}


@pytest.fixture
def seed002_csv(tmp_path):
    path = tmp_path / "records.csv"
    path.write_text(SEED002_RECORDS)
    return path


def rows(db, sql):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_seed002_facts_and_key_sums(tmp_path, seed002_csv):
    # Table 4: facts per record; Table 5: metrics 3 / 1 / 2; Table 8: key metrics 1.24 / 0.45 / 0.61
    db = tmp_path / "w.duckdb"
    report = load_microdata(
        db, seed002_csv, "students", key_mode="existing", key_column="zufallszahl", modulus=100, facts=SEED002_FACTS
    )
    assert report.rows_in == report.rows_out == 4
    assert report.facts == {"f_studierende": 3, "f_studanf_hs1": 1, "f_studanf_fs1": 2}
    assert rows(db, "select id, rk, f_studierende, f_studanf_hs1, f_studanf_fs1 from raw.students order by id") == [
        (1, 63, 1, 0, 0), (2, 45, 1, 1, 1), (3, 16, 1, 0, 1), (4, 87, 0, 0, 0),
    ]
    sums = rows(db, "select sum(rk_f_studierende), sum(rk_f_studanf_hs1), sum(rk_f_studanf_fs1) from raw.students")
    assert [s / 100 for s in sums[0]] == [1.24, 0.45, 0.61]


def test_keyed_mode_is_hmac_sha256_of_the_id(tmp_path, seed002_csv):
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "students", id_column="id", key_mode="keyed", secret=b"office secret 2026-11")
    for record_id, rk in rows(db, "select id, rk from raw.students"):
        digest = hmac.new(b"office secret 2026-11", str(record_id).encode(), hashlib.sha256).digest()
        assert rk == int.from_bytes(digest[:8], "big") % 10**8


def test_random_keys_survive_a_reload_and_new_records_get_new_keys(tmp_path, seed002_csv):
    db = tmp_path / "w.duckdb"
    first = load_microdata(db, seed002_csv, "students", id_column="id")
    assert (first.keys_kept, first.keys_new) == (0, 4)
    keys = dict(rows(db, "select id, rk from raw.students"))
    bigger = tmp_path / "more.csv"
    bigger.write_text(SEED002_RECORDS + "5,1,1,1,182,6,021,0.5\n6,2,3,2,182,6,021,0.5\n")
    second = load_microdata(db, bigger, "students", id_column="id")
    assert (second.keys_kept, second.keys_new) == (4, 2)
    again = dict(rows(db, "select id, rk from raw.students"))
    assert {k: again[k] for k in keys} == keys
    assert len(again) == 6 and all(0 <= v < 10**8 for v in again.values())
    # records that disappear keep their stored key for when they come back
    load_microdata(db, seed002_csv, "students", id_column="id")
    load_microdata(db, bigger, "students", id_column="id")
    assert dict(rows(db, "select id, rk from raw.students")) == again


def test_random_keys_are_spread_uniformly(tmp_path):
    path = tmp_path / "many.csv"
    path.write_text("id\n" + "\n".join(str(i) for i in range(20000)) + "\n")
    db = tmp_path / "w.duckdb"
    load_microdata(db, path, "t", id_column="id", modulus=256)
    counts = dict(rows(db, "select rk % 4, count(*) from raw.t group by 1"))
    # 20000 keys mod 256 in four bins of 5000: a binomial sd of about 61, so +-300 is a 5-sigma bound
    assert sorted(counts) == [0, 1, 2, 3] and all(abs(c - 5000) < 300 for c in counts.values())


def test_integer_keys_existing_mode(tmp_path):
    path = tmp_path / "ons.csv"
    path.write_text("id,key\n1,0\n2,255\n3,17\n")
    db = tmp_path / "w.duckdb"
    load_microdata(db, path, "t", key_mode="existing", key_column="key", modulus=256)
    assert rows(db, "select rk from raw.t order by id") == [(0,), (255,), (17,)]


def test_parquet_input(tmp_path, seed002_csv):
    parquet = tmp_path / "records.parquet"
    con = duckdb.connect()
    con.execute(f"copy (select * from read_csv('{seed002_csv}')) to '{parquet}' (format parquet)")
    con.close()
    report = load_microdata(tmp_path / "w.duckdb", parquet, "students", id_column="id", facts=SEED002_FACTS)
    assert report.rows_out == 4 and report.facts["f_studierende"] == 3


@pytest.mark.parametrize(
    "content, kwargs, message",
    [
        ("id,key\n1,0.5\n2,\n", {"key_mode": "existing", "key_column": "key"}, r"record key column 'key' is NULL in 1 rows"),
        ("id,key\n1,0.5\n2,1.5\n", {"key_mode": "existing", "key_column": "key"}, r"'key': 1.5 is not in \[0, 1\)"),
        ("id,key\n1,0.123456789\n", {"key_mode": "existing", "key_column": "key"}, r"0.123456789 is not in \[0, 1\) with at most the 8 decimals"),
        ("id,key\n1,256\n", {"key_mode": "existing", "key_column": "key", "modulus": 256}, r"'key': 256 is outside \[0, 256\)"),
        ("id,key\n1,-1\n", {"key_mode": "existing", "key_column": "key", "modulus": 256}, r"-1 is outside"),
        ("id,key\n1,1\n", {"key_mode": "existing", "key_column": "rkey"}, r"record key column 'rkey' is not in the input"),
        ("id,x\n1,2\n", {"id_column": "id", "facts": {"f_x": "x"}}, r"fact f_x: column 'x' must hold 0 or 1, found 2"),
        ("id,x\n1,1\n", {"id_column": "id", "facts": {"f_y": "ef99 = 1"}}, r"fact f_y: the rule 'ef99 = 1' does not work on the input: .*ef99"),
        ("id,x\n1,1\n", {"id_column": "id", "facts": {"f_y": "x = 1; drop table raw.t"}}, r"must be one SQL condition"),
        ("id,x\n1,1\n1,2\n", {"id_column": "id"}, r"id column 'id' is not unique: 1 appears 2 times"),
        ("id,x\n1,1\n,2\n", {"id_column": "id"}, r"id column 'id' is NULL in 1 rows"),
        ("id,x\n1,1\n", {"id_column": "nr"}, r"id column 'nr' is not in the input"),
        ("id,x\n1,1\n", {}, r"key mode random needs a record id column"),
        ("id,x\n1,1\n", {"id_column": "id", "key_mode": "keyed"}, r"key mode keyed needs a secret"),
        ("id,x\n1,1\n", {"id_column": "id", "key_mode": "guess"}, r"unknown key mode 'guess'"),
        ("id,rk\n1,1\n", {"id_column": "id"}, r"input column 'rk' clashes"),
        ("id,x\n1,1\n", {"id_column": "id", "modulus": 1}, r"key modulus must be a whole number in \[2, 2\^62\]"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(tmp_path, seed002_csv, content, kwargs, message):
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "t", id_column="id", facts=SEED002_FACTS)
    before = rows(db, "select * from raw.t order by id")
    keys_before = rows(db, "select * from raw.t__record_keys order by id")
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    with pytest.raises(SdcError, match=message):
        load_microdata(db, bad, "t", **kwargs)
    assert rows(db, "select * from raw.t order by id") == before
    assert rows(db, "select * from raw.t__record_keys order by id") == keys_before


def test_reload_with_another_modulus_is_refused(tmp_path, seed002_csv):
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "t", id_column="id")
    with pytest.raises(SdcError, match=r"drawn for modulus 100000000, not 256; load with the same modulus, or give --rekey"):
        load_microdata(db, seed002_csv, "t", id_column="id", modulus=256)


def test_missing_or_unknown_input_file(tmp_path):
    with pytest.raises(SdcError, match=r"input file not found: .*nope.csv"):
        load_microdata(tmp_path / "w.duckdb", tmp_path / "nope.csv", "t", id_column="id")
    odd = tmp_path / "data.xlsx"
    odd.write_text("x")
    with pytest.raises(SdcError, match=r"unknown input type '.xlsx'"):
        load_microdata(tmp_path / "w.duckdb", odd, "t", id_column="id")


def test_cli_load_reports_rows_and_facts(tmp_path, seed002_csv, capsys, monkeypatch):
    config = tmp_path / "facts.yml"
    config.write_text('facts:\n  f_studierende: "ef28 < 4"\n')
    monkeypatch.setenv("OFFICE_SECRET", "s3cret of the office 2026")
    code = main(["load", "--db", str(tmp_path / "w.duckdb"), "--input", str(seed002_csv), "--table", "students",
                 "--id", "id", "--key-mode", "keyed", "--secret-env", "OFFICE_SECRET", "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        "loaded 4 rows into raw.students (4 rows written)",
        "record keys: keyed, modulus 100000000",
        "fact f_studierende: 3 records",
    ]


def test_cli_load_errors_exit_2(tmp_path, seed002_csv, capsys, monkeypatch):
    monkeypatch.delenv("SDC_KEY_SECRET", raising=False)
    code = main(["load", "--db", str(tmp_path / "w.duckdb"), "--input", str(seed002_csv), "--table", "t",
                 "--id", "id", "--key-mode", "keyed"])
    assert code == 2
    assert "environment variable SDC_KEY_SECRET holding the secret is not set" in capsys.readouterr().err
    config = tmp_path / "bad.yml"
    config.write_text("facts:\n  f_a: x\ncolumns: [a]\n")
    code = main(["load", "--db", str(tmp_path / "w.duckdb"), "--input", str(seed002_csv), "--table", "t",
                 "--id", "id", "--config", str(config)])
    assert code == 2 and "unknown setting(s) ['columns']" in capsys.readouterr().err
    assert not (tmp_path / "w.duckdb").exists() or duckdb.connect(str(tmp_path / "w.duckdb")).execute(
        "select count(*) from information_schema.tables where table_schema = 'raw' and table_name = 't'"
    ).fetchone()[0] == 0


def test_locked_database_is_one_line_and_exit_2(tmp_path, capsys):
    """DuckDB allows one writer: a warehouse another process holds open is named, not a traceback."""
    import subprocess
    import sys

    db = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); "
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code = main(["load", "--db", str(db), "--input", str(DATA / "sdctable_microdata1.csv"), "--table", "t",
                     "--key-mode", "existing", "--key-column", "val", "--modulus", "1000"])
    finally:
        holder.kill()
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"sdc load: error: cannot open {db}: another process is using it")


def test_missing_database_folder_is_named(tmp_path, capsys):
    code = main(["load", "--db", str(tmp_path / "nowhere" / "w.duckdb"), "--input", str(DATA / "sdctable_microdata1.csv"),
                 "--table", "t", "--key-mode", "existing", "--key-column", "val", "--modulus", "1000"])
    assert code == 2
    assert f"folder {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("table", ["students__record_keys", "sdc_loads", "X__RECORD_KEYS"])
def test_the_load_s_own_table_names_are_refused(tmp_path, table):
    """Issue 17: `--table t__record_keys` replaced table t's stored random keys."""
    with pytest.raises(SdcError, match=f"table name '{table}' is taken by sdc load itself"):
        load_microdata(tmp_path / "w.duckdb", DATA / "sdctable_microdata1.csv", table, key_mode="existing",
                       key_column="val", modulus=1000)
    assert not (tmp_path / "w.duckdb").exists()


def test_a_data_file_as_the_warehouse_is_refused(tmp_path):
    """Issue 17: `sdc load --db file.csv` reported success and stored nothing a user would find."""
    with pytest.raises(SdcError, match="looks like a data file; the warehouse is a DuckDB file"):
        load_microdata(tmp_path / "micro.csv", DATA / "sdctable_microdata1.csv", "t", key_mode="existing",
                       key_column="val", modulus=1000)
    assert not (tmp_path / "micro.csv").exists()


@pytest.mark.parametrize("secret, message", [
    (b"x", "the keyed-mode secret has 1 bytes; give one of at least 16"),
    (b"sdc-demo-secret-not-for-production", "the keyed-mode secret is the demo's, which is published"),
])
def test_a_short_or_published_keyed_secret_is_refused(tmp_path, seed002_csv, secret, message):
    """Issue 17: a one-character secret, or the demo's published one, was accepted outside the demo."""
    with pytest.raises(SdcError, match=message):
        load_microdata(tmp_path / "w.duckdb", seed002_csv, "students", id_column="id", key_mode="keyed", secret=secret)
    assert not (tmp_path / "w.duckdb").exists()


def test_the_demo_may_use_its_published_secret(tmp_path, seed002_csv, monkeypatch, capsys):
    monkeypatch.setenv("SDC_KEY_SECRET", "sdc-demo-secret-not-for-production")
    code = main(["load", "--db", str(tmp_path / "w.duckdb"), "--input", str(seed002_csv), "--table", "students",
                 "--id", "id", "--key-mode", "keyed", "--allow-demo-secret"])
    assert code == 0 and "record keys: keyed" in capsys.readouterr().out


def test_a_failed_first_load_leaves_no_empty_warehouse(tmp_path):
    micro = tmp_path / "micro.csv"
    micro.write_text("id,sex\n1,m\n1,f\n")   # duplicate id: refused
    db = tmp_path / "new.duckdb"
    with pytest.raises(SdcError, match="id"):
        load_microdata(db, micro, "persons", id_column="id")
    assert not db.exists() and not Path(f"{db}.wal").exists()
    micro.write_text("id,sex\n1,m\n2,f\n")
    load_microdata(db, micro, "persons", id_column="id")
    assert db.exists()


def test_a_semicolon_csv_is_named_as_such_and_loads_as_txt(tmp_path):
    # .csv is read comma-separated (a sniffer misread comma files whose names or values hold ';')
    micro = tmp_path / "micro.csv"
    micro.write_text("id;sex\n1;m\n2;f\n")
    with pytest.raises(SdcError, match="looks separated by ';', but a .csv is read comma-separated"):
        load_microdata(tmp_path / "w.duckdb", micro, "persons", id_column="id")
    txt = micro.rename(tmp_path / "micro.txt")
    report = load_microdata(tmp_path / "w.duckdb", txt, "persons", id_column="id")
    assert report.rows_out == 2


def test_existing_keys_in_a_column_called_rk_become_the_record_key(tmp_path):
    # ONS's files call the key column rk; it was refused as clashing with the column the load adds (issue 13)
    rng = __import__("numpy").random.default_rng(5)
    keys = rng.integers(0, 256, 300)
    for name in ("rk", "rkey"):
        micro = tmp_path / f"{name}.csv"
        micro.write_text(f"id,{name}\n" + "".join(f"{k},{key}\n" for k, key in enumerate(keys)))
        load_microdata(tmp_path / "w.duckdb", micro, f"t_{name}", key_mode="existing", key_column=name, modulus=256)
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        assert [r[0] for r in con.execute("describe raw.t_rk").fetchall()] == ["id", "rk"]
        assert con.execute("select rk from raw.t_rk order by id").fetchall() == \
            con.execute("select rk from raw.t_rkey order by id").fetchall() == [(int(k),) for k in keys]
    finally:
        con.close()


# Red team 10: rules that read a file or another table put one bit of it into a published count.
HOSTILE_RULES = [
    ("(select count(*) from read_text('secret*')) >= 1 and (select count(*) from duckdb_tables()) >= 0",
     "a subquery ((SELECT COUNT(*) FROM READ_TEXT('secret*')))"),
    ("sex = 'm' or length((select string_agg(content, '') from read_text('secret.txt'))) > 0", "a subquery"),
    ("substr((select content from read_text('secret.txt')), 1, 1) = 'a'", "a subquery"),
    ("(select rk from raw.t__record_keys where id = '1') % 2 = 1", "a subquery"),
    ("id in (select id from raw.t)", "a subquery"),
    ("length(read_text('secret.txt')) > 0", "the function read_text"),
    ("getvariable('x') is null", "the function getvariable"),
    ("sex = current_setting('home_directory')", "the function current_setting"),
    ("t.sex = 'm'", "names t.sex"),
    ("sex = 'm' /* a comment */", "without comments"),
    ("sex = 'm'; select 1", "found 2 statements"),
]


@pytest.mark.parametrize("rule, refused", HOSTILE_RULES)
def test_a_fact_rule_that_reads_more_than_the_input_is_refused(tmp_path, rule, refused):
    (tmp_path / "secret.txt").write_text("a secret")
    micro = tmp_path / "m.csv"
    micro.write_text("id,sex\n1,m\n2,w\n")
    db = tmp_path / "w.duckdb"
    load_microdata(db, micro, "t", id_column="id")
    before = rows(db, "select * from raw.t order by id")
    with pytest.raises(SdcError, match=r"^fact f_leak: the rule ") as refusal:
        load_microdata(db, micro, "t", id_column="id", facts={"f_leak": rule})
    assert rule in str(refusal.value).replace("''", "'") or repr(rule) in str(refusal.value)
    assert refused in str(refusal.value)
    assert rows(db, "select * from raw.t order by id") == before


def test_the_demo_s_fact_rules_and_allowed_expressions_still_work(tmp_path):
    from sdc.demo import FACTS_CONFIG
    from sdc.warehouse.loader import read_facts_config

    micro = tmp_path / "m.csv"
    micro.write_text("id,ef21,ef28,ef32,name\n1,1,1,1,Anna\n2,3,4,1,bert\n3,1,3,2,Carl\n")
    facts = dict(read_facts_config(FACTS_CONFIG), f_mixed="ef28 between 1 and 3 and ef21 in (1, 2) and "
                 "lower(substr(name, 1, 1)) like 'c%' and coalesce(ef32, 0) * 2 - 1 >= 3 and name is not null")
    report = load_microdata(tmp_path / "w.duckdb", micro, "t", id_column="id", facts=facts)
    assert report.facts == {"f_studierende": 2, "f_studanf_hs1": 1, "f_studanf_fs1": 1, "f_beurlaubte": 1,
                            "f_mixed": 1}
    assert rows(tmp_path / "w.duckdb", "select id, f_studierende, f_studanf_hs1, f_studanf_fs1, f_beurlaubte, "
                "f_mixed, rk_f_mixed = rk from raw.t order by id") == [
        (1, 1, 1, 1, 0, 0, False), (2, 0, 0, 0, 1, 0, False), (3, 1, 0, 0, 0, 1, True)]


def test_facts_are_computed_where_no_file_can_be_read(tmp_path, monkeypatch):
    """The second wall: a rule that got past the check still runs on a connection without file access."""
    import sdc.warehouse.loader

    (tmp_path / "secret.txt").write_text("a secret")
    micro = tmp_path / "m.csv"
    micro.write_text("id,sex\n1,m\n2,w\n")
    rule = f"(select count(*) from read_text('{tmp_path / 'secret.txt'}')) = 1"
    monkeypatch.setattr(sdc.warehouse.loader, "parse_fact_rule", lambda name, rule, columns: (rule, ["sex"]))
    with pytest.raises(SdcError, match=r"fact f_leak: the rule .* does not work on the input: .*"
                                       r"(disabled|external access)"):
        load_microdata(tmp_path / "w.duckdb", micro, "t", id_column="id", facts={"f_leak": rule})


# New-user trial D18: a condition that is NULL for a record (a NULL in its column) counted silently as 0.
def test_a_fact_rule_that_is_null_for_some_records_is_refused_naming_the_column(tmp_path):
    micro = tmp_path / "m.csv"
    micro.write_text("id,age,sex\n1,30,m\n2,,w\n3,70,\n4,,m\n")
    db = tmp_path / "w.duckdb"
    with pytest.raises(SdcError, match=r"^fact f_old: the rule 'age >= 65' is neither true nor false for 2 records "
                                       r"\(column 'age' is NULL in 2\); say what a missing value means, e\.g\. "
                                       r"'\(age >= 65\) and age is not null' to count it as 0$"):
        load_microdata(db, micro, "t", id_column="id", facts={"f_old": "age >= 65"})
    assert not db.exists()
    with pytest.raises(SdcError, match=r"the rule .age > 18 and sex = .m.. is neither true nor false for 2 records "
                                       r"\(column 'age' is NULL in 1, column 'sex' is NULL in 1\)"):
        load_microdata(db, micro, "t", id_column="id", facts={"f_adult_man": "age > 18 and sex = 'm'"})
    # an explicit choice loads: a missing age is not old, or counts as old
    report = load_microdata(db, micro, "t", id_column="id",
                            facts={"f_old": "(age >= 65) and age is not null", "f_old_or_unknown": "coalesce(age, 99) >= 65"})
    assert report.facts == {"f_old": 1, "f_old_or_unknown": 3}


def storage_format(db) -> tuple[int, str]:
    """The DuckDB file's header version number (64: storage v1.0.0 .. v1.1, read by every client since 1.0)
    and the storage version DuckDB reports for it."""
    header = Path(db).read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    return int.from_bytes(header[12:20], "little"), rows(db, "select tags['storage_version'] from duckdb_databases() "
                                                              "where not internal")[0][0]


def test_a_new_warehouse_is_written_in_a_format_duckdb_1_x_reads(tmp_path, seed002_csv):
    """New-user trial D12: the DuckDB 1.5 CLI refused the warehouse (version 69 of DuckDB 2.0); a warehouse that
    sdc load creates is in storage v1.0.0 (header version 64); one that exists keeps its format."""
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "t", id_column="id", facts=SEED002_FACTS)
    load_microdata(db, seed002_csv, "t", id_column="id", facts=SEED002_FACTS)  # a reload writes it again
    assert storage_format(db) == (64, "v1.0.0+")
    existing = tmp_path / "v2.duckdb"
    duckdb.connect(str(existing)).close()
    header = storage_format(existing)
    load_microdata(existing, seed002_csv, "t", id_column="id")
    assert storage_format(existing) == header != (64, "v1.0.0+")
    assert rows(existing, "select count(*) from raw.t")[0][0] == 4


# ------------------------------------------------------------------ the key series of a table across reloads
SECRET_A, SECRET_B = b"office secret A, at least 16 bytes", b"office secret B, at least 16 bytes"


def warehouse_state(db) -> tuple:
    """Everything a refused load must leave as it was: the table, its key store, the load log."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [name for (name,) in con.execute("select table_name from duckdb_tables() where schema_name = 'raw' "
                                                  "order by 1").fetchall()]
        return tuple((name, con.execute(f"select * from raw.{name} order by all").fetchall()) for name in tables)
    finally:
        con.close()


@pytest.mark.parametrize("first, second, changed", [
    # new-user N1: a monthly reload that forgets --key-mode keyed (random is the default)
    (dict(key_mode="keyed", secret=SECRET_A), dict(key_mode="random"), "key mode keyed -> random"),
    # ... and the other way: the stored random keys would be ignored
    (dict(key_mode="random"), dict(key_mode="keyed", secret=SECRET_A), "key mode random -> keyed"),
    # keyed with another secret: every key changes as well
    (dict(key_mode="keyed", secret=SECRET_A), dict(key_mode="keyed", secret=SECRET_B), "secret fingerprint "),
])
def test_a_reload_that_would_re_key_every_record_is_refused_naming_both(tmp_path, seed002_csv, first, second, changed):
    """New-user N1: a reload with another key mode gave every record a new key, exit 0, and every published number
    changed for unchanged microdata. The load log records each table's key mode, modulus and the keyed secret's
    fingerprint (never the secret); a reload that would change them is refused and changes nothing."""
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "students", id_column="id", **first)
    before = warehouse_state(db)
    with pytest.raises(SdcError) as refused:
        load_microdata(db, seed002_csv, "students", id_column="id", **second)
    message = str(refused.value)
    assert f"raw.students was last loaded on " in message and f"with key mode {first['key_mode']}" in message
    assert changed in message and "give --rekey to start a new series of keys on purpose" in message
    assert "nothing was loaded" in message
    assert warehouse_state(db) == before
    for secret in (SECRET_A, SECRET_B):  # the log and the message hold no secret
        assert secret.decode() not in message and secret.decode() not in repr(before)


def test_the_same_key_series_reloads_and_keeps_every_key(tmp_path, seed002_csv):
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "students", id_column="id", key_mode="keyed", secret=SECRET_A)
    keys = rows(db, "select id, rk from raw.students order by id")
    load_microdata(db, seed002_csv, "students", id_column="id", key_mode="keyed", secret=SECRET_A)
    assert rows(db, "select id, rk from raw.students order by id") == keys
    (fingerprint, rekeyed), = rows(db, "select key_fingerprint, rekeyed from raw.sdc_loads")
    expected = hmac.new(SECRET_A, b"sdc record key secret fingerprint", hashlib.sha256).hexdigest()[:16]
    assert (fingerprint, rekeyed) == (expected, False)


def test_rekey_starts_a_new_series_of_keys_and_the_load_log_records_it(tmp_path, seed002_csv):
    """--rekey on purpose: random after random draws a key for every record anew (the stored keys are dropped,
    none is kept), and the load log marks the load as a break in consistency; the next plain reload keeps the new
    keys."""
    db = tmp_path / "w.duckdb"
    path = tmp_path / "many.csv"
    path.write_text("id\n" + "\n".join(str(i) for i in range(1000)) + "\n")
    load_microdata(db, path, "t", id_column="id")
    old = dict(rows(db, "select id, rk from raw.t"))
    report = load_microdata(db, path, "t", id_column="id", rekey=True)
    new = dict(rows(db, "select id, rk from raw.t"))
    assert (report.keys_kept, report.keys_new) == (0, 1000)
    # 1000 keys drawn anew from 10^8: the chance that one repeats its old key is 1000 / 10^8
    assert sum(old[i] == new[i] for i in old) == 0
    assert rows(db, "select key_mode, rekeyed from raw.sdc_loads") == [("random", True)]
    assert any("new series of record keys (--rekey)" in line for line in report.lines())
    load_microdata(db, path, "t", id_column="id")
    assert dict(rows(db, "select id, rk from raw.t")) == new
    assert rows(db, "select rekeyed from raw.sdc_loads") == [(False,)]
    # random -> keyed on purpose: allowed with --rekey, and the stale random store is emptied
    load_microdata(db, path, "t", id_column="id", key_mode="keyed", secret=SECRET_A, rekey=True)
    assert rows(db, "select count(*) from raw.t__record_keys") == [(0,)]


def test_a_load_log_of_an_earlier_version_gets_the_new_columns_and_is_checked(tmp_path, seed002_csv):
    db = tmp_path / "w.duckdb"
    load_microdata(db, seed002_csv, "students", id_column="id", key_mode="keyed", secret=SECRET_A)
    con = duckdb.connect(str(db))
    con.execute("alter table raw.sdc_loads drop column key_fingerprint")
    con.execute("alter table raw.sdc_loads drop column rekeyed")
    con.close()
    with pytest.raises(SdcError, match="key mode keyed -> random"):
        load_microdata(db, seed002_csv, "students", id_column="id")
    load_microdata(db, seed002_csv, "students", id_column="id", key_mode="keyed", secret=SECRET_B)  # no fingerprint yet
    assert rows(db, "select count(key_fingerprint) from raw.sdc_loads") == [(1,)]


def test_cli_rekey(tmp_path, seed002_csv, capsys):
    db = tmp_path / "w.duckdb"
    args = ["load", "--db", str(db), "--input", str(seed002_csv), "--table", "students", "--id", "id"]
    assert main(args) == 0
    assert main(args + ["--modulus", "1000"]) == 2
    assert "give --rekey to start a new series of keys on purpose" in capsys.readouterr().err
    assert main(args + ["--modulus", "1000", "--rekey"]) == 0
    assert "a new series of record keys (--rekey)" in capsys.readouterr().out
    assert rows(db, "select modulus, rekeyed from raw.sdc_loads") == [(1000, True)]
