"""`sdc ckm`: one protected table from a microdata file, checked against an independent computation
in Python (exact decimal key sums, the ptable lookup of sdc.ptable)."""

import csv
import itertools
from contextlib import nullcontext
from decimal import Decimal

import pytest

from sdc.cli import main
from sdc.warehouse.hierarchy import read_hierarchy
from sdc.ptable.formats import read_ptable

from conftest import DATA, REPO

MICRODATA = DATA / "cellkey_testdata_with_rkeys.csv"
PTABLE = REPO / "demo" / "seeds" / "sdc_ptable.csv"


def read_cells(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def expected_cells(dims, hierarchy=None, count_var=None):
    """Independent computation: every record adds itself to each ancestor code of each dimension."""
    parents = {}
    for dim, code, parent in hierarchy or []:
        parents[(dim, code)] = parent
    def ancestors(dim, code):
        out = [code]
        while (dim, out[-1]) in parents and parents[(dim, out[-1])]:
            out.append(parents[(dim, out[-1])])
        return out if hierarchy and any(d == dim for d, _, _ in hierarchy) else [code, "Total"]
    cells = {}
    with open(MICRODATA, newline="") as handle:
        for record in csv.DictReader(handle):
            if count_var and record[count_var] == "0":
                continue
            combos = [[]]
            for dim in dims:
                combos = [c + [a] for c in combos for a in ancestors(dim, record[dim])]
            for combo in combos:
                n, keys = cells.get(tuple(combo), (0, Decimal(0)))
                cells[tuple(combo)] = (n + 1, keys + Decimal(record["rkeys"]))
    return cells


def test_sex_by_age_with_hierarchy_matches_independent_computation(tmp_path, capsys):
    out = tmp_path / "cells.csv"
    code = main(["ckm", "--input", str(MICRODATA), "--dims", "sex,age",
                 "--hierarchy", str(DATA / "cellkey_testdata_hierarchies.csv"), "--record-key", "rkeys",
                 "--key-digits", "7", "--ptable", str(PTABLE), "--out", str(out), "--audit"])
    assert code == 0
    assert capsys.readouterr().out.startswith("wrote 27 cells")  # (2 + 1) sexes x (6 + 2 + 1) age codes
    table, _, _ = read_ptable(PTABLE)
    expected = expected_cells(["sex", "age"], read_hierarchy(DATA / "cellkey_testdata_hierarchies.csv"))
    rows = read_cells(out)
    assert len(rows) == len(expected) == 27
    for row in rows:
        n, key_sum = expected[(row["sex"], row["age"])]
        cell_key = key_sum % 1
        assert int(row["original"]) == n
        assert Decimal(row["cell_key"]) == cell_key
        assert int(row["noise"]) == table.lookup(n, float(cell_key))
        assert int(row["count"]) == n + int(row["noise"])
    assert rows[0] == {"sex": "Total", "age": "Total", "count": "4580", "original": "4580",
                       "cell_key": "0.6220176", "noise": "0"}


def test_count_var_without_audit_writes_only_published_columns(tmp_path):
    out = tmp_path / "cells.csv"
    assert main(["ckm", "--input", str(MICRODATA), "--dims", "roof", "--count-var", "cnt_highincome",
                 "--record-key", "rkeys", "--key-digits", "7", "--ptable", str(PTABLE), "--out", str(out)]) == 0
    rows = read_cells(out)
    assert list(rows[0]) == ["roof", "count"]
    table, _, _ = read_ptable(PTABLE)
    expected = expected_cells(["roof"], count_var="cnt_highincome")
    assert {r["roof"] for r in rows} == {k[0] for k in expected}
    for row in rows:
        n, key_sum = expected[(row["roof"],)]
        assert int(row["count"]) == n + table.lookup(n, float(key_sum % 1))


@pytest.mark.parametrize(
    "change, message",
    [
        (["--dims", "sex,region"], "column 'region' is not in"),
        (["--count-var", "income"], "fact f_sdc_count: column 'income' must hold 0 or 1, found 5780"),
        (["--key-digits", "5"], "is not in [0, 1) with at most the 5 decimals"),
        (["--key-digits", "0"], "--key-digits must be between 1 and 18"),
        (["--ptable", "missing.csv"], "ptable file not found: missing.csv"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys, change, message):
    out = tmp_path / "cells.csv"
    args = {"--input": str(MICRODATA), "--dims": "sex", "--record-key": "rkeys", "--key-digits": "7",
            "--ptable": str(PTABLE), "--out": str(out)}
    for flag, value in zip(change[::2], change[1::2]):
        args[flag] = value
    code = main(["ckm"] + [x for pair in args.items() for x in pair])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_null_record_key_is_named(tmp_path, capsys):
    data = tmp_path / "micro.csv"
    data.write_text("sex,rk7\nm,0.1\nw,\n")
    code = main(["ckm", "--input", str(data), "--dims", "sex", "--record-key", "rk7", "--key-digits", "7",
                 "--ptable", str(PTABLE), "--out", str(tmp_path / "cells.csv")])
    assert code == 2 and "record key column 'rk7' is NULL in 1 rows" in capsys.readouterr().err


def test_hierarchy_level_format_is_converted():
    rows = read_hierarchy(DATA / "cellkey_testdata_hierarchies.csv")
    assert ("age", "Total", "") in rows and ("age", "young", "Total") in rows and ("age", "age_group4", "old") in rows
    assert ("water", "w9", "wB") in rows


@pytest.mark.parametrize("content, message", [
    ("dimension,code,parent\nsex,Gesamt,\nsex,m\xe4nnlich,Gesamt\n".encode("latin-1"), "is not valid UTF-8 (byte 0xe4"),
    (b"dimension,code,parent\n", "has no rows below its header"),
])
def test_unreadable_hierarchy_file_is_one_line(tmp_path, capsys, content, message):
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_bytes(content)
    code = main(["ckm", "--input", str(MICRODATA), "--dims", "sex", "--hierarchy", str(hierarchy), "--record-key",
                 "rkeys", "--key-digits", "7", "--ptable", str(PTABLE), "--out", str(tmp_path / "cells.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err


def test_a_record_key_column_called_rk_gives_the_same_table(tmp_path, capsys):
    # issue 13: --record-key rk was refused as clashing with the column the load adds
    source = (DATA / "cellkey_testdata_with_rkeys.csv").read_text()
    renamed = tmp_path / "rk.csv"
    renamed.write_text(source.replace(",rkeys,", ",rk,", 1))
    outs = []
    for path, key in [(DATA / "cellkey_testdata_with_rkeys.csv", "rkeys"), (renamed, "rk")]:
        out = tmp_path / f"{key}_cells.csv"
        assert main(["ckm", "--input", str(path), "--dims", "sex,roof", "--record-key", key, "--key-digits", "7",
                     "--ptable", str(REPO / "demo" / "seeds" / "sdc_ptable.csv"), "--out", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1] and len(outs[0].splitlines()) > 10


def test_integer_keys_with_modulus_256_and_an_ons_ptable_as_shipped(tmp_path, capsys):
    # issue 13: --modulus M for integer keys 0..M-1 (ONS: 256), ONS's ptable file with its quoted header;
    # every cell equals an independent computation: ck = sum(keys) mod 256, noise -1 below 128 else +1
    import numpy as np

    rng = np.random.default_rng(13)
    a, b, keys = rng.integers(0, 5, 300), rng.integers(0, 3, 300), rng.integers(0, 256, 300)
    micro = tmp_path / "micro.csv"
    micro.write_text("a,b,rk\n" + "".join(f"a{x},b{y},{k}\n" for x, y, k in zip(a, b, keys)))
    ptable = tmp_path / "ptable_ons.csv"
    ptable.write_text('"pcv","ckey","pvalue"\n' + "".join(
        f"{i},{k},{-1 if k < 128 else 1}\n" for i in range(1, 301) for k in range(256)))
    out = tmp_path / "cells.csv"
    assert main(["ckm", "--input", str(micro), "--dims", "a,b", "--record-key", "rk", "--modulus", "256",
                 "--ptable", str(ptable), "--out", str(out)]) == 0
    published = {(r["a"], r["b"]): int(r["count"]) for r in csv.DictReader(out.open())}
    expected = {}
    for ca in [f"a{x}" for x in range(5)] + ["Total"]:
        for cb in [f"b{y}" for y in range(3)] + ["Total"]:
            rows = [(ca == "Total" or f"a{x}" == ca) and (cb == "Total" or f"b{y}" == cb) for x, y in zip(a, b)]
            n, ck = int(sum(rows)), int(keys[np.array(rows)].sum()) % 256
            if n:
                expected[(ca, cb)] = n + (-1 if ck < 128 else 1)
    assert published == expected


@pytest.mark.parametrize("args, message", [
    (["--modulus", "256", "--key-digits", "7"], "not allowed with argument"),
    (["--modulus", "1"], "--modulus must be a whole number in [2, 2^62], got 1"),
])
def test_modulus_and_key_digits_are_one_or_the_other(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) if "not allowed" in message else nullcontext():
        code = main(["ckm", "--input", str(DATA / "cellkey_testdata_with_rkeys.csv"), "--dims", "sex", "--record-key",
                     "rkeys", "--ptable", str(REPO / "demo" / "seeds" / "sdc_ptable.csv"), *args,
                     "--out", str(tmp_path / "out.csv")])
        assert code == 2
    assert message in capsys.readouterr().err and not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("dims, cells, empty", [(["roof", "water"], 66, 17), (["age", "roof"], 54, 5)])
def test_every_cell_of_the_frame_is_published_empty_ones_as_zero(tmp_path, capsys, dims, cells, empty):
    """As cellKey and ONS: the table holds every combination of the hierarchies' codes (roof: 5 + total, water:
    8 leaves + 2 groups + total, age: 6 + 2 + 1), also those without records (17 of roof x water's 66)."""
    hierarchy = read_hierarchy(DATA / "cellkey_testdata_hierarchies.csv")
    arguments = ["ckm", "--input", str(MICRODATA), "--dims", ",".join(dims), "--hierarchy",
                 str(DATA / "cellkey_testdata_hierarchies.csv"), "--record-key", "rkeys", "--key-digits", "7",
                 "--ptable", str(PTABLE), "--audit"]
    assert main(arguments + ["--out", str(tmp_path / "all.csv")]) == 0
    table, _, _ = read_ptable(PTABLE)
    expected = expected_cells(dims, hierarchy)
    codes = [[code for dim, code, _ in hierarchy if dim == d] for d in dims]
    rows = read_cells(tmp_path / "all.csv")
    assert sorted(tuple(r[d] for d in dims) for r in rows) == sorted(itertools.product(*codes))
    assert len(rows) == cells
    for row in rows:
        n, key_sum = expected.get(tuple(row[d] for d in dims), (0, Decimal(0)))
        assert int(row["original"]) == n
        if n:
            assert int(row["count"]) == n + table.lookup(n, float(key_sum % 1))
        else:
            assert row["count"] == "0" and Decimal(row["cell_key"]) == 0
    assert sum(row["original"] == "0" for row in rows) == empty
    assert main(arguments + ["--no-empty-cells", "--out", str(tmp_path / "observed.csv")]) == 0
    observed = read_cells(tmp_path / "observed.csv")
    assert len(observed) == cells - empty and all(r["original"] != "0" for r in observed)
    assert [r for r in rows if r["original"] != "0"] == observed


def test_a_root_code_with_a_comma_is_one_root():
    # the hierarchy check counted roots by the commas of their list: "North, South" was taken for two roots
    import pandas as pd

    from sdc.ckm import count_table

    hierarchy = pd.DataFrame({"dimension": ["region"] * 3, "code": ["North, South", "N", "S"],
                              "parent": [None, "North, South", "North, South"]})
    data = pd.DataFrame({"region": ["N"] * 30 + ["S"] * 20, "key": [(i * 7919) % 10**8 for i in range(50)]})
    table = count_table(data, ["region"], record_key="key", modulus=10**8, ptable=PTABLE, hierarchy=hierarchy,
                        audit=True, check_keys=False)
    assert dict(zip(table["region"], table["original"])) == {"North, South": 50, "N": 30, "S": 20}


def test_a_ptable_file_rewritten_in_place_is_read_again(tmp_path):
    # count_table keeps a parsed ptable for the process, by the file's content: a rewrite of the same size
    # (here: the noise of row 2 from 0 to 1) must not serve the old table
    import pandas as pd

    from sdc.ckm import count_table

    ptable = tmp_path / "pt.csv"
    data = pd.DataFrame({"a": ["x", "x", "y"], "key": [0, 1, 3]})
    tables = []
    for noise in ("0", "1"):
        ptable.write_text("pcv,ckey,pvalue\n" + "".join(f"{i},{k},{noise if i == 2 else 0}\n"
                                                        for i in (1, 2) for k in range(4)))
        tables.append(count_table(data, ["a"], record_key="key", modulus=4, ptable=ptable, check_keys=False))
    assert tables[0]["count"].tolist() == [3, 2, 1]  # Total, x, y
    assert tables[1]["count"].tolist() == [4, 3, 1]  # Total (row 2, the last) and x (2 records) now get +1


def test_a_ptable_dataframe_is_parsed_once_per_content(monkeypatch):
    # count_table keeps a DataFrame ptable parsed by its content: the same values parse once, a value changed
    # in place (the noise of row 2 from 0 to 1) parses again and gives the new table
    import pandas as pd

    import sdc.ckm.counts
    from sdc.ckm import count_table

    parsed = []
    parse = sdc.ckm.counts.parse_ptable
    monkeypatch.setattr(sdc.ckm.counts, "parse_ptable", lambda *args, **kwargs: parsed.append(1) or parse(*args, **kwargs))
    ptable = pd.DataFrame({"pcv": [1] * 4 + [2] * 4, "ckey": list(range(4)) * 2, "pvalue": [0] * 8})
    data = pd.DataFrame({"a": ["x", "x", "y"], "key": [0, 1, 3]})
    counts = [count_table(data, ["a"], record_key="key", modulus=4, ptable=ptable, check_keys=False)["count"].tolist()
              for _ in range(2)]
    assert counts == [[3, 2, 1], [3, 2, 1]] and len(parsed) == 1
    ptable.loc[ptable["pcv"] == 2, "pvalue"] = 1
    changed = count_table(data, ["a"], record_key="key", modulus=4, ptable=ptable, check_keys=False)
    assert changed["count"].tolist() == [4, 3, 1] and len(parsed) == 2


def test_totals_none_with_a_hierarchy_gives_the_leaves_only():
    from sdc.ckm import count_table

    table = count_table(MICRODATA, ["sex", "age"], record_key="rkeys", modulus=10**7, ptable=PTABLE,
                        hierarchy=DATA / "cellkey_testdata_hierarchies.csv", totals="none", audit=True)
    assert len(table) == 2 * 6 and set(table["age"]) == {f"age_group{k}" for k in range(1, 7)}
    assert set(table["sex"]) == {"male", "female"} and table["original"].sum() == 4580
