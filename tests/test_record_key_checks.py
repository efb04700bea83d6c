"""Issue 17: degenerate record keys are refused, and random-mode reloads match ids by value.

Record keys that were all 0 were accepted: every cell of 8 or more got -5, so original = published + 5.
`sdc load --key-mode existing`, `sdc ckm` and `ckm_count` check range, share of distinct values and
uniformity (thresholds: python/sdc/conventions.py, "record key checks")."""

import math
import re

import duckdb
import numpy as np
import pytest

from conftest import DATA, REPO, query
from dbt_project_helper import DEMO_PTABLE, ScratchProject
from sdc.cli import main
from sdc.conventions import DEFAULT_KEY_MODULUS, RECORD_KEY_ALPHA
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata
from sdc.warehouse.record_keys import expected_distinct, log10_p, problem, statistics

N = 1000
M = DEFAULT_KEY_MODULUS


def degenerate_keys():
    rng = np.random.default_rng(17)
    return {
        "all_zero": (np.zeros(N, dtype=np.int64), "distinct share 0.001: 1 distinct values in 1000 keys"),
        "all_equal": (np.full(N, 61185300, dtype=np.int64), "distinct share 0.001: 1 distinct values in 1000 keys"),
        "ten_values": (rng.integers(0, 10, N) * (M // 10) + 1234567, "distinct share 0.01: 10 distinct values in 1000 keys"),
        "bunched": (rng.integers(0, M // 10, N), "Kolmogorov-Smirnov distance 0.9"),
    }


DEGENERATE = degenerate_keys()


def microdata(path, keys, ids=None):
    """id, sex, region and the keys; 2 x 3 cells of about N / 6 records."""
    ids = range(1, len(keys) + 1) if ids is None else ids
    lines = ["id,sex,region,key"] + [f"{i},{'mf'[j % 2]},r{j % 3},{k}" for j, (i, k) in enumerate(zip(ids, keys))]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("case", DEGENERATE)
def test_sdc_load_existing_refuses_degenerate_keys(tmp_path, capsys, case):
    keys, statistic = DEGENERATE[case]
    db = tmp_path / "w.duckdb"
    load_microdata(db, microdata(tmp_path / "fine.csv", np.random.default_rng(1).integers(0, M, N)), "t",
                   key_mode="existing", key_column="key")
    before = query(db, "select id, rk from raw.t order by id")
    code = main(["load", "--db", str(db), "--input", str(microdata(tmp_path / "m.csv", keys)), "--table", "t",
                 "--key-mode", "existing", "--key-column", "key"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("sdc load: error: record keys in column 'key' of ")
    assert f"are not uniform random on [0, {M}): {statistic}" in err
    assert query(db, "select id, rk from raw.t order by id") == before  # nothing changed


@pytest.mark.parametrize("case", DEGENERATE)
def test_sdc_ckm_refuses_degenerate_keys(tmp_path, capsys, case):
    keys, statistic = DEGENERATE[case]
    out = tmp_path / "cells.csv"
    code = main(["ckm", "--input", str(microdata(tmp_path / "m.csv", keys)), "--dims", "sex,region",
                 "--record-key", "key", "--key-digits", "8", "--ptable", str(DEMO_PTABLE), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "record keys in column 'key' of " in err and statistic in err
    assert not out.exists()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Degenerate keys loaded unchecked (the only way in), and uniform keys of several sizes, each with a
    ckm_count model; only the uniform ones are built here."""
    root = tmp_path_factory.mktemp("keys")
    p = ScratchProject(root / "project")
    for case, (keys, _) in DEGENERATE.items():
        load_microdata(p.db, microdata(root / f"{case}.csv", keys), case, key_mode="existing", key_column="key",
                       facts={"f_male": "sex = 'm'"}, check_keys=False)
        p.model(f"cells_{case}", f"{{{{ sdc.ckm_count(source('raw', '{case}'), dims=['sex', 'region']) }}}}",
                tags=["degenerate"])
        p.model(f"fact_cells_{case}", f"{{{{ sdc.ckm_count(source('raw', '{case}'), dims=['region'], fact='f_male') }}}}",
                tags=["degenerate"])
        p.model(f"unchecked_{case}", f"{{{{ sdc.ckm_count(source('raw', '{case}'), dims=['sex'], check_keys=false) }}}}",
                tags=["degenerate"])
    p.model("opt_out_by_var", "{{ sdc.ckm_count(source('raw', 'all_equal'), dims=['sex']) }}", tags=["degenerate"])
    rng = np.random.default_rng(2026)
    for n in UNIFORM_SIZES:
        load_microdata(p.db, microdata(root / f"u{n}.csv", rng.integers(0, M, n)), f"uniform_{n}",
                       key_mode="existing", key_column="key")
        p.model(f"cells_uniform_{n}", f"{{{{ sdc.ckm_count(source('raw', 'uniform_{n}'), dims=['sex', 'region']) }}}}")
    p.sources(list(DEGENERATE) + [f"uniform_{n}" for n in UNIFORM_SIZES])
    (p.root / "models" / "unit_tests.yml").write_text(UNIT_TEST)
    result = p.dbt("build", "--exclude", "tag:degenerate")
    assert result.returncode == 0, result.stdout[-3000:]
    return p


UNIFORM_SIZES = (10, 100, 1000, 100_000)
# a dbt unit test gives hand-picked rows (demo/models/schema.yml has one): the check is not made there
UNIT_TEST = """version: 2
unit_tests:
  - name: hand_picked_keys
    model: cells_uniform_1000
    given:
      - input: source('raw', 'uniform_1000')
        rows:
          - {sex: m, region: r0, rk: 90000000}
          - {sex: m, region: r0, rk: 90000000}
      - input: ref('sdc_ptable')
        rows:
          - {i: 0, j: 0, p: 1.0, v: 0, p_int_lb: 0.0, p_int_ub: 1.0}
          - {i: 1, j: 1, p: 1.0, v: 0, p_int_lb: 0.0, p_int_ub: 1.0}
          - {i: 2, j: 2, p: 1.0, v: 0, p_int_lb: 0.0, p_int_ub: 1.0}
    expect:
      rows:
        - {sex: m, region: r0, original: 2, cell_key_int: 80000000}
        - {sex: m, region: Total, original: 2, cell_key_int: 80000000}
        - {sex: Total, region: r0, original: 2, cell_key_int: 80000000}
        - {sex: Total, region: Total, original: 2, cell_key_int: 80000000}
"""


@pytest.mark.parametrize("case", DEGENERATE)
def test_ckm_count_stops_on_degenerate_keys(project, case):
    _, statistic = DEGENERATE[case]
    result = project.dbt("build", "--select", f"cells_{case}", f"fact_cells_{case}")
    assert result.returncode == 1
    out = " ".join(result.stdout.split())  # dbt wraps long messages
    assert f'ckm_count: record keys in column rk of "warehouse"."raw"."{case}" are not uniform random on [0, {M}): ' \
           f"{statistic}" in out
    # with a fact, the keys counted are rk_f of the records with f = 1 (about half of them)
    assert f'record keys in column rk_f_male of "warehouse"."raw"."{case}" (records with f_male = 1) are not uniform' in out
    assert "sdc_check_record_keys: false" in out
    assert not query(project.db, "select table_name from information_schema.tables "
                                 f"where table_name in ('cells_{case}', 'fact_cells_{case}')")


def test_the_opt_out_builds_degenerate_keys(project):
    """Hand-picked teaching keys (tests/test_ckm_sql.py's Passau and ONS cells) build with check_keys=false."""
    result = project.dbt("build", "--select", "unchecked_all_equal")
    assert result.returncode == 0, result.stdout[-3000:]
    # all keys 61185300: a cell's key depends only on its size (500 records: 0.9265; 1000: 0.853), which is
    # what the check is there to prevent
    assert query(project.db, "select sex, original, cell_key from unchecked_all_equal order by sex") == [
        ("Total", 1000, 0.853), ("f", 500, 0.9265), ("m", 500, 0.9265)]


def test_the_dbt_var_turns_the_check_off(project):
    result = project.dbt("build", "--select", "opt_out_by_var", "--vars", "{sdc_check_record_keys: false}")
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_dbt_unit_test_with_hand_picked_keys_is_not_checked(project):
    result = project.dbt("test", "--select", "test_type:unit")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "PASS=1" in result.stdout


@pytest.mark.parametrize("n", UNIFORM_SIZES)
def test_uniform_keys_pass_load_and_ckm_count(project, n):
    assert query(project.db, f"select count(*) from raw.uniform_{n}") == [(n,)]
    assert query(project.db, f"select original from cells_uniform_{n} where sex = 'Total' and region = 'Total'") == [(n,)]


@pytest.mark.parametrize("n", [10, 1000, 20000])
def test_uniform_keys_pass_sdc_ckm(tmp_path, capsys, n):
    data = microdata(tmp_path / "m.csv", [f"{k / 10**8:.8f}" for k in np.random.default_rng(n).integers(0, M, n)])
    out = tmp_path / "cells.csv"
    assert main(["ckm", "--input", str(data), "--dims", "sex", "--record-key", "key", "--key-digits", "8",
                 "--ptable", str(DEMO_PTABLE), "--out", str(out)]) == 0, capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 1 + 3


def test_few_keys_are_judged_only_where_the_statistic_means_something():
    """Below 50 keys the distinct share is not judged (4 uniform keys on M = 3 are all equal with probability
    0.04); the Kolmogorov-Smirnov bound holds at every n: 8 keys all 0 are refused, 30 equal keys anywhere."""
    con = duckdb.connect()
    assert problem(statistics(con, "(select unnest([1, 1, 1, 1]) as k)", "k", 3), 3) is None
    seven = problem(statistics(con, "(select unnest([0, 0, 0, 0, 0, 0, 0]) as k)", "k", M), M)
    assert seven is None  # p <= 2 exp(-14) = 1.7e-6: not yet conclusive
    eight = problem(statistics(con, "(select unnest([0, 0, 0, 0, 0, 0, 0, 0]) as k)", "k", M), M)
    # read at the upper edge of the first of 1000 bins: D = 1 - 0.001
    assert eight == f"Kolmogorov-Smirnov distance 0.999 to the uniform over 8 keys has p <= 10^-6.6, below {RECORD_KEY_ALPHA:g}"
    middle = M // 2
    assert problem(statistics(con, f"(select {middle} as k from range(29))", "k", M), M) is None
    assert problem(statistics(con, f"(select {middle} as k from range(30))", "k", M), M).startswith(
        "Kolmogorov-Smirnov distance 0.5 to the uniform over 30 keys has p <= 10^-6.2")


def test_statistics_of_known_keys():
    con = duckdb.connect()
    # keys 0..255 each 4 times on M = 256: exactly uniform, every value present
    stats = statistics(con, "(select range % 256 as k from range(1024))", "k", 256)
    assert (stats.n, stats.nulls, stats.outside, stats.ks) == (1024, 0, 0, 0.0)
    assert stats.distinct == 256  # a bin per key value (M <= 1000 bins): counted, not estimated
    # keys 0, 1, ..., 99 on M = 1000 (one bin each): D = 1 - 100/1000 at key 99
    stats = statistics(con, "(select range as k from range(100))", "k", 1000)
    assert math.isclose(stats.ks, 0.9)
    stats = statistics(con, "(select unnest([5, null, 1000, -1]) as k)", "k", 1000)
    assert (stats.nulls, stats.outside) == (1, 2)
    assert expected_distinct(1, M) == 1.0 and math.isclose(expected_distinct(10**6, 256), 256)
    assert math.isclose(expected_distinct(1000, M), 1000 - 1000 * 999 / (2 * M), rel_tol=1e-10)
    assert log10_p(100, 0.0) == 0.0


def _independent_statistics(keys: list, modulus: int, bins: int = 1000):
    """n, nulls, outside, exact distinct keys and the Kolmogorov-Smirnov distance of the empirical CDF at every
    bin edge j w (j = 0..bins, empty bins included), from the sorted keys."""
    inside = np.sort(np.array([k for k in keys if k is not None and 0 <= k < modulus], dtype=np.int64))
    width = -(-modulus // bins)
    edges = np.minimum(np.arange(bins + 1, dtype=np.int64) * width, modulus)
    below = np.searchsorted(inside, edges, side="left")  # keys below each edge
    n = len(keys)
    ks = float(np.max(np.abs(below / n - edges / modulus))) if len(inside) else 0.0
    nulls = sum(k is None for k in keys)
    return n, nulls, n - nulls - len(inside), len(np.unique(inside)), ks


@pytest.mark.parametrize("modulus", [3, 256, 1000, 1001, 4096, 10**8, 2**62])
def test_statistics_against_an_independent_computation(modulus):
    """The binned statistics (one grouped pass, the distance read at the edges of the non-empty bins) against
    the distance at every bin edge from the sorted keys; the distinct keys counted where a bin holds one key
    value (M <= 1000: DuckDB's estimate was 253 for the 256 values of ONS's keys), estimated within 5 % else.
    Keys bunched in the lower half (a long run of empty bins), a NULL and keys outside [0, M)."""
    rng = np.random.default_rng(modulus % 1000)
    keys = [int(k) for k in rng.integers(0, max(modulus // 2, 1), 3000)] + [int(k) for k in rng.integers(0, modulus, 2000)]
    con = duckdb.connect()
    con.register("sample", {"k": np.array(keys, dtype=np.int64)})
    odd = [None, -1, modulus, modulus + 5]
    for sample, extra in ((keys, ""), (keys + odd, f" union all select unnest([null, -1, {modulus}, {modulus + 5}])")):
        stats = statistics(con, f"(select cast(k as hugeint) as k from sample{extra})", "k", modulus)
        n, nulls, outside, distinct, ks = _independent_statistics(sample, modulus)
        assert (stats.n, stats.nulls, stats.outside) == (n, nulls, outside)
        assert math.isclose(stats.ks, ks, rel_tol=1e-12, abs_tol=1e-15)
        if modulus <= 1000:
            assert stats.distinct == distinct
        else:
            assert abs(stats.distinct - distinct) <= 0.05 * distinct


def test_false_alarm_rate_on_uniform_keys_by_simulation():
    """2000 draws of genuinely random keys (sizes 50 to 20,000, moduli 256 to 2^62) through the SQL statistics:
    the bound allows 2000 x 1e-6 = 0.002 expected refusals, so none may happen. The draws also show how far
    inside the thresholds random keys stay."""
    rng = np.random.default_rng(20261123)
    con = duckdb.connect()
    sizes, moduli = [50, 200, 1000, 5000, 20000], [256, 10**6, M, 2**62]
    refused, worst_p, worst_share = 0, 0.0, math.inf
    for draw in range(2000):
        n, modulus = sizes[draw % 5], moduli[(draw // 5) % 4]
        keys = rng.integers(0, modulus, n, dtype=np.int64)
        con.register("draw", {"k": keys})
        stats = statistics(con, "draw", "k", modulus)
        refused += problem(stats, modulus) is not None
        worst_p = min(worst_p, log10_p(stats.n, stats.ks))
        worst_share = min(worst_share, stats.distinct / expected_distinct(n, modulus))
    assert refused == 0
    assert worst_p > -5  # the smallest p of 2000 draws is about 1/2000, far from 1e-6
    # DuckDB counts distinct keys with HyperLogLog (standard error about 3 %): the worst of these draws is 0.88
    # of the expected count, far above the 0.5 that is refused
    assert worst_share > 0.8


# ------------------------------------------------------------------------------------------------ reloads

def test_a_reload_with_the_id_column_now_double_keeps_every_key(tmp_path, capsys):
    """Issue 17: INTEGER ids reloaded as DOUBLE gave every record a new key ("0 kept, 200 new")."""
    db = tmp_path / "w.duckdb"
    first = load_microdata(db, microdata(tmp_path / "a.csv", [0] * 200), "t", id_column="id")
    assert (first.keys_kept, first.keys_new) == (0, 200)
    keys = query(db, "select cast(id as bigint), rk from raw.t order by 1")
    assert query(db, "select typeof(id) from raw.t limit 1") == [("BIGINT",)]
    again = microdata(tmp_path / "b.csv", [0] * 200, ids=[f"{i}.0" for i in range(1, 201)])
    assert main(["load", "--db", str(db), "--input", str(again), "--table", "t", "--id", "id"]) == 0
    assert "200 kept, 0 new" in capsys.readouterr().out
    assert query(db, "select typeof(id) from raw.t limit 1") == [("DOUBLE",)]
    assert query(db, "select cast(id as bigint), rk from raw.t order by 1") == keys
    assert query(db, "select count(*), count(distinct id) from raw.t__record_keys") == [(200, 200)]


def test_keyed_mode_keys_do_not_depend_on_the_id_column_type(tmp_path):
    secret = b"0123456789abcdef-secret"
    db = tmp_path / "w.duckdb"
    load_microdata(db, microdata(tmp_path / "a.csv", [0] * 20), "a", id_column="id", key_mode="keyed", secret=secret)
    load_microdata(db, microdata(tmp_path / "b.csv", [0] * 20, ids=[f"{i}.0" for i in range(1, 21)]), "b",
                   id_column="id", key_mode="keyed", secret=secret)
    assert query(db, "select rk from raw.a order by id") == query(db, "select rk from raw.b order by id")


def test_a_reload_whose_ids_are_all_new_is_refused_and_changes_nothing(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    load_microdata(db, microdata(tmp_path / "a.csv", [0] * 200), "t", id_column="id")
    store = query(db, "select id, rk from raw.t__record_keys order by id")
    table = query(db, "select * from raw.t order by id")
    renumbered = microdata(tmp_path / "b.csv", [0] * 200, ids=range(1001, 1201))
    code = main(["load", "--db", str(db), "--input", str(renumbered), "--table", "t", "--id", "id"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert ("none of the 200 ids in column 'id' (BIGINT) matches one of the 200 ids stored for t (BIGINT): every "
            "record would get a new key and every published number would change; if these really are new records, "
            "load with --allow-all-new-keys") in err
    assert query(db, "select id, rk from raw.t__record_keys order by id") == store
    assert query(db, "select * from raw.t order by id") == table
    # asked for: loaded with new keys; the stored ones stay (an old id that comes back gets its old key)
    assert main(["load", "--db", str(db), "--input", str(renumbered), "--table", "t", "--id", "id",
                 "--allow-all-new-keys"]) == 0
    assert "0 kept, 200 new" in capsys.readouterr().out
    assert query(db, "select count(*) from raw.t__record_keys") == [(400,)]
    assert query(db, "select id, rk from raw.t__record_keys where cast(id as int) <= 200 order by id") == store


@pytest.mark.parametrize("ids, message", [
    (["1.5"] + [str(i) for i in range(2, 201)],
     "id column 'id' is DOUBLE and holds 1.5, which is not a whole number up to 2^53: it cannot be matched to the "
     "same id in another load without loss (the stored ids of t were BIGINT); give ids as integers or text"),
    ([f"{2**60 + 1024 * i}.0" for i in range(200)], "id column 'id' is DOUBLE and holds 1.152921504606847e+18, which is not "
     "a whole number up to 2^53"),
])
def test_ids_that_a_cast_would_change_are_refused(tmp_path, ids, message):
    db = tmp_path / "w.duckdb"
    load_microdata(db, microdata(tmp_path / "a.csv", [0] * 200), "t", id_column="id")
    store = query(db, "select id, rk from raw.t__record_keys order by id")
    with pytest.raises(SdcError) as err:
        load_microdata(db, microdata(tmp_path / "b.csv", [0] * 200, ids=ids), "t", id_column="id")
    assert message in str(err.value)
    assert query(db, "select id, rk from raw.t__record_keys order by id") == store


# ------------------------------------------------------------------------------------------------ cell keys

def antithetic_keys(n=300, seed=8):
    """Red team 8: records over sex x roof whose keys cancel within each finest cell (pairs k, M - k; an odd
    cell one triple k1, k2, M - k1 - k2): each key uniform and distinct, every cell key 0."""
    rng = np.random.default_rng(seed)
    sex, roof = rng.choice(["f", "m"], n), rng.choice(["r1", "r2", "r3"], n)
    keys = np.zeros(n, dtype=np.int64)
    for cell in sorted({(s, r) for s, r in zip(sex, roof)}):  # sorted: a set of text is ordered per process
        rows = np.flatnonzero((sex == cell[0]) & (roof == cell[1]))
        drawn = rng.integers(1, M, len(rows))
        for a, b in zip(rows[0::2], rows[1::2]):
            keys[b] = M - drawn[a == rows].item()
            keys[a] = drawn[a == rows].item()
        if len(rows) % 2:
            k1, k2 = keys[rows[0]], keys[rows[1]]
            keys[rows[0]], keys[rows[1]], keys[rows[2]] = k1, k2 // 2, (M - k1 - k2 // 2) % M
            keys[rows[3:]] = np.where(np.arange(len(rows) - 3) % 2 == 0, drawn[3:], 0)[: len(rows) - 3]
            for a, b in zip(rows[3::2], rows[4::2]):
                keys[b] = M - keys[a]
    return sex, roof, keys


def antithetic_file(path):
    sex, roof, keys = antithetic_keys()
    path.write_text("id,sex,roof,akeys\n" + "".join(
        f"{i},{s},{r},{k / M:.8f}\n" for i, (s, r, k) in enumerate(zip(sex, roof, keys), start=1)))
    return path


def test_antithetic_keys_pass_the_record_key_checks_and_zero_every_cell_key():
    sex, roof, keys = antithetic_keys()
    assert len(set(keys)) > 0.99 * len(keys)
    con = duckdb.connect()
    con.register("draw", {"k": keys})
    assert problem(statistics(con, "draw", "k", M), M) is None  # one by one they look random
    for cell in sorted({(s, r) for s, r in zip(sex, roof)}):  # sorted: a set of text is ordered per process
        assert keys[(sex == cell[0]) & (roof == cell[1])].sum() % M == 0


def test_sdc_ckm_and_count_table_refuse_keys_that_cancel_within_cells(tmp_path, capsys):
    import sdc.ckm

    data = antithetic_file(tmp_path / "antithetic.csv")
    out = tmp_path / "anti_cells.csv"
    code = main(["ckm", "--input", str(data), "--dims", "sex,roof", "--record-key", "akeys", "--key-digits", "8",
                 "--ptable", str(DEMO_PTABLE), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    # 12 cells; those with the same count and key sum (the same even count: k M / 2) count as one record set
    assert re.search(r"ckm_count: the cell keys of the table are not uniform on \[0, 1\): 1 distinct cell keys among "
                     r"1[01] cells with records, Kolmogorov-Smirnov distance 1\.0+\. The record keys cancel within "
                     r"cells", err), err
    assert not out.exists()
    with pytest.raises(SdcError, match=r"cell keys of the table are not uniform .* 1 distinct cell keys among 1[01] "):
        sdc.ckm.count_table(data, ["sex", "roof"], record_key="akeys", modulus=M, ptable=DEMO_PTABLE)
    # the same records with random keys pass
    sex, roof, _ = antithetic_keys()
    fine = tmp_path / "fine.csv"
    fine.write_text("id,sex,roof,akeys\n" + "".join(f"{i},{s},{r},{k}\n" for i, (s, r, k) in enumerate(
        zip(sex, roof, np.random.default_rng(3).integers(0, M, len(sex))), start=1)))
    assert len(sdc.ckm.count_table(fine, ["sex", "roof"], record_key="akeys", modulus=M, ptable=DEMO_PTABLE)) == 12


def test_a_magnitude_table_refuses_keys_that_cancel_within_cells(tmp_path):
    """The same check in ckm_sum (sdc.ckm.sum_table), over the cells' contributors, where the cell key is the sum of
    the record keys (version_keys: false, as τ-Argus and cellKey). With the records' keys for their versions (the
    default) the cell keys are the md5 of each key and contribution summed: the antithetic keys no longer cancel,
    and the cell keys pass the same check."""
    import pandas as pd

    import sdc.ckm

    sex, roof, keys = antithetic_keys()
    params = {"type": "top_contr", "top_k": 1, "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}}
    nums = REPO / "demo" / "seeds" / "sdc_nums_ptable.csv"
    df = pd.DataFrame({"sex": sex, "roof": roof, "rk": keys, "income": np.arange(1, len(keys) + 1) * 10.0})
    with pytest.raises(SdcError, match=r"ckm_sum: the cell keys of the table are not uniform on \[0, 1\): 1 distinct "
                                       r"cell keys among 1[01] cells with records"):
        sdc.ckm.sum_table(df, ["sex", "roof"], value="income", record_key="rk", modulus=M,
                          params=params | {"version_keys": False}, ptable=nums)
    versions = sdc.ckm.sum_table(df, ["sex", "roof"], value="income", record_key="rk", modulus=M, params=params,
                                 ptable=nums, audit=True)
    assert versions["cell_key_int"].nunique() == len(versions) == 12
    df["rk"] = np.random.default_rng(4).integers(0, M, len(keys))
    assert len(sdc.ckm.sum_table(df, ["sex", "roof"], value="income", record_key="rk", modulus=M, params=params,
                                 ptable=nums)) == 12


def test_ckm_count_stops_on_keys_that_cancel_within_cells(tmp_path):
    p = ScratchProject(tmp_path / "project")
    load_microdata(p.db, antithetic_file(tmp_path / "antithetic.csv"), "antithetic", key_mode="existing",
                   key_column="akeys", modulus=M)  # one by one the keys pass the load's checks
    p.sources(["antithetic"])
    p.model("anti_cells", "{{ sdc.ckm_count(source('raw', 'antithetic'), dims=['sex', 'roof']) }}")
    result = p.dbt("build", "--select", "+anti_cells")
    assert result.returncode == 1
    out = " ".join(result.stdout.split())
    assert re.search(r"ckm_count: the cell keys of the table are not uniform on \[0, 1\): 1 distinct cell keys among "
                     r"1[01] cells", out), out[-2000:]
    assert not query(p.db, "select table_name from information_schema.tables where table_name = 'anti_cells'")


def _cube_cells(rng, sizes, n, modulus):
    """The cells (original, key_sum, cell_key_int) of a cube over dimensions of ``sizes`` codes, from n records
    with uniform keys in skewed leaves; every margin summed from the leaves."""
    leaves = int(np.prod(sizes))
    leaf = rng.choice(leaves, n, p=rng.dirichlet(np.full(leaves, 0.7)))
    keys = rng.integers(0, modulus, n)
    counts = np.bincount(leaf, minlength=leaves).reshape(sizes)
    key_sums = np.zeros(leaves, dtype=np.int64)  # exact: at most 20,000 keys below 10^8
    np.add.at(key_sums, leaf, keys)
    key_sums = key_sums.reshape(sizes)
    rows = []
    for kept in range(2 ** len(sizes)):
        axes = tuple(a for a in range(len(sizes)) if not kept >> a & 1)
        c, s = counts.sum(axis=axes) if axes else counts, key_sums.sum(axis=axes) if axes else key_sums
        rows += [(int(o), int(k), int(k) % modulus) for o, k in zip(np.ravel(c), np.ravel(s))]
    return rows


def test_false_alarm_rate_of_the_cell_key_check_by_simulation():
    """2000 tables of genuinely random keys (1 to 4 dimensions of 2 to 10 codes, 20 to 20,000 records, moduli
    256 to 10^8) through the macro's SQL: the KS bound allows 2000 x 1e-6 expected refusals, the distinct share
    (half the expected count) is far from random keys' values: none may be refused."""
    import pandas as pd

    from sdc.warehouse.macro_renderer import render_macro

    con = duckdb.connect()
    rng = np.random.default_rng(20261124)
    shapes, sizes, moduli = [(2, 3), (4, 5, 3), (10, 6), (2, 2, 3, 4), (7,)], [20, 200, 2000, 20000], [256, 4096, M]
    checks = {m: render_macro(con, "ckm_check_cell_keys", "cells", m, caller_name="ckm_count") for m in moduli}
    sql = checks[M]
    refused = 0
    for draw in range(2000):
        modulus = moduli[draw % 3]
        rows = _cube_cells(rng, shapes[draw % 5], sizes[(draw // 5) % 4], modulus)
        cells = pd.DataFrame(rows, columns=["original", "key_sum", "cell_key_int"])
        con.register("cells", cells)
        try:
            con.execute(f"select count(*) from ({checks[modulus]}) as checked").fetchall()
        except duckdb.Error:
            refused += 1
    assert refused == 0
    # and the check does refuse: every cell key 0, or all in the first tenth of [0, 1)
    for bad in (lambda k: 0, lambda k: k % (M // 10)):
        cells = pd.DataFrame([(o, k, bad(c)) for o, k, c in _cube_cells(rng, (4, 5, 3), 2000, M)],
                             columns=["original", "key_sum", "cell_key_int"])
        con.register("cells", cells)
        with pytest.raises(duckdb.Error, match="the cell keys of the table are not uniform"):
            con.execute(f"select count(*) from ({sql}) as checked").fetchall()


def keyed_frame(keys, n=600):
    """ONS-shaped records with integer keys below 256 (drawn), the given ones in the first rows."""
    import pandas as pd

    rng = np.random.default_rng(26)
    frame = pd.DataFrame({"region": rng.integers(1, 4, n), "rk": rng.integers(0, 256, n),
                          "f": rng.integers(0, 2, n), "income": rng.integers(100, 900, n).astype(float)})
    frame["rk"] = frame["rk"].astype("Int64")
    for row, key in enumerate(keys):
        frame.loc[row, "rk"] = key
    return frame


@pytest.mark.parametrize("keys, message", [
    ([None, None], "record key column 'rk' is NULL in 2 rows"),
    ([300], r"record key column 'rk': 300 is outside \[0, 256\)"),
    ([-1, 5], r"record key column 'rk': -1 is outside \[0, 256\)"),
])
@pytest.mark.parametrize("count_var, check_keys", [(None, True), ("f", True), (None, False)])
def test_null_and_outside_integer_keys_are_named_as_the_input_column(keys, message, count_var, check_keys):
    """Without a count variable the record key checks alone scan integer keys (one pass over the microdata
    fewer); a NULL or a key outside [0, M) is still named as the input's column, with the first such key, as
    where the input's column is scanned first (with count_var, whose checks see only the counted records, and
    without the checks)."""
    from sdc.ckm import count_table

    frame = keyed_frame(keys)
    with pytest.raises(SdcError, match=message):
        count_table(frame, ["region"], record_key="rk", modulus=256, ptable=DATA / "ons" / "ptable_10_5_rule.csv",
                    count_var=count_var, check_keys=check_keys)
    if count_var:  # the bad keys also in records the count variable leaves out
        with pytest.raises(SdcError, match=message):
            count_table(frame.assign(f=0), ["region"], record_key="rk", modulus=256,
                        ptable=DATA / "ons" / "ptable_10_5_rule.csv", count_var=count_var)


@pytest.mark.parametrize("keys, message", [
    ([None], "record key column 'rk' is NULL in 1 rows"),
    ([10**8], r"record key column 'rk': 100000000 is outside \[0, 100000000\)"),
])
def test_a_magnitude_table_names_null_and_outside_integer_keys_as_the_input_column(keys, message):
    from sdc.ckm import sum_table

    frame = keyed_frame(keys)
    frame["rk"] = (frame["rk"] * 390_625 + 17).where(frame.index >= len(keys), frame["rk"])  # keys below 10^8
    params = {"type": "top_contr", "top_k": 1, "multiplier": {"type": "simple", "p": 0.1, "epsilon": [1]}}
    with pytest.raises(SdcError, match=message):
        sum_table(frame, ["region"], value="income", record_key="rk", modulus=10**8, params=params,
                  ptable=REPO / "demo" / "seeds" / "sdc_nums_ptable.csv")


TWIN_CASES = {
    # (M, keys, how many): 300 key values spread over M = 1000, where DuckDB's estimate says 310
    "few values, bins of one value": (1000, "(range % 300) * 3", 2000),
    "bunched, bins of one value": (1000, "hash(range) % 500", 5000),
    "uniform, bins of one value": (256, "hash(range) % 256", 5000),
    "bunched, wide bins": (M, f"hash(range) % {M // 3}", 5000),
    "uniform, wide bins": (M, f"hash(range) % {M}", 5000),
    "ten values, wide bins": (M, f"(range % 10) * {M // 10} + 1234567", 1000),
}


@pytest.mark.parametrize("case", TWIN_CASES)
def test_the_macro_and_its_python_twin_judge_alike(case):
    """ckm_check_record_keys (the dbt models' check, rendered here) and record_keys.py (sdc ckm, count_table,
    sdc load) refuse the same keys for the same reason, with the same figures; they pass the same keys."""
    from sdc.warehouse.macro_renderer import render_macro

    modulus, keys, n = TWIN_CASES[case]
    con = duckdb.connect()
    con.execute(f"create table keys as select cast({keys} as bigint) as rk from range({n})")
    reason = problem(statistics(con, "keys", "rk", modulus), modulus)
    if reason is None:
        assert render_macro(con, "ckm_check_record_keys", "keys", "rk", None, modulus, "ckm_count") is True
        assert case.startswith("uniform")
        return
    with pytest.raises(SdcError) as refused:
        render_macro(con, "ckm_check_record_keys", "keys", "rk", None, modulus, "ckm_count")
    assert f"are not uniform random on [0, {modulus}): {reason}. Keys must be" in str(refused.value)
    assert reason.startswith("distinct share" if "values" in case else "Kolmogorov-Smirnov distance")
    if case.startswith("few values"):
        assert "300 distinct values in 2000 keys" in reason
