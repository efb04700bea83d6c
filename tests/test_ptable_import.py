"""Importing, validating and exporting ptables made elsewhere: the seeds' matrices, tau-Argus, SAS,
ONS/Cantabular files, and every way a file can be wrong."""

import pytest

from sdc.errors import SdcError
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.formats import parse_ptable, read_ptable, render_ptable

from conftest import ons_10_5_rule


def stats_by_row(table):
    return {s.i: s for s in table.row_stats()}


# --------------------------------------------------------------------------- seed 000 / seed 001


def test_seed000_overlay_matrix_rows_have_mean_0_and_variance_2_25(data_dir):
    # Seed 000 calls the parameter "s = 2.25" the standard deviation; every row's variance is 2.25,
    # so 2.25 is the variance. Entries are printed with 4 decimals, so row 2 is off by 1e-4.
    table, fmt, notes = read_ptable(data_dir / "seed000_overlay_matrix.csv")
    assert fmt == "overlay"
    stats = stats_by_row(table)
    assert sorted(stats) == list(range(8))
    for i in range(1, 8):
        assert stats[i].mean == pytest.approx(0.0, abs=1.5e-4), f"row {i}"
        assert stats[i].variance == pytest.approx(2.25, abs=1.5e-4), f"row {i}"
        assert stats[i].p_sum == pytest.approx(1.0, abs=1e-12)
    # p0 = 0.5: rows 3.. stay with probability 0.5; rows 1 and 2 never publish 1 or 2
    assert [round(stats[i].p_stay, 4) for i in range(8)] == [1.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5]
    assert stats[2].mean == pytest.approx(0.0001, abs=1e-9)  # 4-decimal printing, reported as a note
    assert "row i=2: mean noise +0.000100 (not unbiased)" in notes


def test_seed001_lookup_3_and_cell_key_0_853099_gives_plus_one(data_dir):
    # Seed 001 "Methodik IX/X": (Originalwert, CellKey) = (3, 0.853099) -> Überlagerungswert 1
    table, _, _ = read_ptable(data_dir / "seed000_overlay_matrix.csv")
    assert table.lookup(3, 0.853099) == 1


def test_seed001_toy_table_is_reproduced_cell_by_cell(data_dir):
    # Seed 001 "Methodik XI": count, cell key -> overlay -> new value, for all five cells.
    table, _, _ = read_ptable(data_dir / "seed000_overlay_matrix.csv")
    cells = [  # (count, cell key, overlay, new value)
        (1, 0.199674, -1, 0),  # Bamberg m
        (1, 0.139494, -1, 0),  # Eichstaett w
        (3, 0.005227, -3, 0),  # Muenchen m
        (2, 0.806379, 1, 3),  # Muenchen w: needs the full row 2 of the slides
        (3, 0.853099, 1, 4),  # Wuerzburg m
    ]
    for n, ck, overlay, new in cells:
        assert table.lookup(n, ck) == overlay
        assert n + table.lookup(n, ck) == new
    # values above 7 use row 7 (">= 7")
    assert table.lookup(1001, 0.99) == table.lookup(7, 0.99) == 4


def test_seed000_paper_matrix_lacks_an_entry_in_row_2(data_dir):
    with pytest.raises(SdcError, match=r"line 4, row i=2: 8 entries but the header has 9 columns"):
        read_ptable(data_dir / "seed000_overlay_matrix_paper.csv")


def test_seed001_slides_matrix_has_a_falling_cumulative_value_in_row_1(data_dir):
    # The slides print 0.875 before 0.6875 in row 1; the paper has 0.6875 (a typo on the slides).
    with pytest.raises(SdcError, match=r"row i=1: cumulative value 0.6875 at v=0 is below the value 0.875"):
        read_ptable(data_dir / "seed000_overlay_matrix_slides.csv")


# --------------------------------------------------------------------------- seed 002


def test_seed002_table11_passau_cell_key_gives_minus_two(data_dir):
    # Seed 002, Table 9 and text: U Passau, 860 students on leave (i >= 4), cell key 0.041765
    # lies in [0, 0.07) of row 4 -> j = 2 -> noise 2 - 4 = -2 -> 858.
    table, fmt, _ = read_ptable(data_dir / "seed002_table11.csv")
    assert fmt == "overlay"
    assert table.max_i == 4
    assert table.lookup(860, 0.041765) == -2
    assert 860 + table.lookup(860, 0.041765) == 858


def test_seed002_table11_rows_are_the_rounded_table10_probabilities(data_dir):
    # Table 11 is Table 10 cumulated; printed with 2 decimals, so rows 1 and 2 are not exactly unbiased.
    table, _, notes = read_ptable(data_dir / "seed002_table11.csv")
    rows, cols, matrix = table.transition_matrix()
    assert cols == [0, 2, 3, 4, 5, 6]  # nothing ever moves to 1
    assert matrix[1].tolist() == pytest.approx([0.51, 0.46, 0.03, 0, 0, 0], abs=1e-12)
    assert matrix[3].tolist() == pytest.approx([0, 0.42, 0.28, 0.18, 0.12, 0], abs=1e-12)
    assert matrix[4].tolist() == pytest.approx([0, 0.07, 0.25, 0.36, 0.25, 0.07], abs=1e-12)
    assert "row i=1: mean noise +0.010000 (not unbiased)" in notes
    assert "row i=2: mean noise -0.020000 (not unbiased)" in notes
    # empty intervals: the repeated 1s of row 0 (6) and the 0.00 entries of rows 3 and 4 at j = 0, 1 (4)
    assert "10 empty interval(s) (p = 0) dropped" in notes


def test_seed002_table11_as_printed_row0_is_not_cumulative(data_dir):
    # The printed Table 11 repeats Table 10's row 0 ("1 0 0 ..."), which is not a cumulative row.
    with pytest.raises(SdcError, match=r"row i=0: cumulative value 0 at j=1 is below the value 1"):
        read_ptable(data_dir / "seed002_table11_as_printed.csv")


def test_seed002_table12_format_gives_the_same_table_as_table11(data_dir):
    # Table 12 (i, cum_zuf, changeValue) is printed only in part; its first rows equal Table 11
    # (0.51/-1, 0.97/+1, 1/+2; 0.17/-2, 0.72/0, 0.96/+1, 1/+2). Its printed rows "3; 0.07; -2" and
    # "3; 0.31; -1" do not match Table 11's row 3 (0.42 -> -1, ...): they resemble row 4 (0.07, 0.32).
    # The complete file is derived from Table 11.
    t12, fmt, _ = read_ptable(data_dir / "seed002_table12_complete.csv")
    t11, _, _ = read_ptable(data_dir / "seed002_table11.csv")
    assert fmt == "cum_zuf"
    assert render_ptable(t12) == render_ptable(t11)
    assert t12.lookup(860, 0.041765) == -2


# --------------------------------------------------------------------------- tau-Argus, SAS, round trips


@pytest.mark.parametrize("fmt", ["sdc", "sas", "tauargus"])
def test_export_and_import_round_trip_is_exact(fmt):
    table = create_ptable(PTableParams(D=5, V=3, js=2, pstay=0.5)).table
    text = render_ptable(table, fmt)
    again, detected, notes = parse_ptable(text)
    assert detected == fmt and notes == []
    assert again.lb_units.tolist() == table.lb_units.tolist()
    assert again.ub_units.tolist() == table.ub_units.tolist()
    assert again.j.tolist() == table.j.tolist()


def test_export_headers_are_those_of_ptable_pt_export():
    table = create_ptable(PTableParams(D=2, V=0.9)).table
    assert render_ptable(table, "tauargus").splitlines()[:3] == [
        "i;j;p;v;p_int_ub",
        "0;0;1.00000000;0;1.00000000",
        "1;0;0.36250000;-1;0.36250000",
    ]
    assert render_ptable(table, "sas").splitlines()[2] == "1;0;0.36250000;-1;0.00000000;0.36250000"
    assert render_ptable(table, "sdc").splitlines()[0] == "i,j,p,v,p_int_lb,p_int_ub"


TAU_LEGACY = """i;j;p_ij;v;p_ij_ub
0;0;1;0;1
1;0;0.362500004;-1;0.362500004
1;1;3.62499996E-01;0;0.725
1;2;0.1875;1;0.9125
1;3;8.75E-02;2;1
2;0;0.051546094;-2;0.051546094
2;1;0.243815636;-1;0.29536173
2;2;0.40927654;0;0.70463827
2;3;0.24381564;1;0.94845391
2;4;0.05154609;2;1
"""


def test_tauargus_legacy_header_with_nine_decimals_and_exponents():
    table, fmt, notes = parse_ptable(TAU_LEGACY)
    assert fmt == "tauargus"
    assert table.p_int_ub[table.i == 1].tolist() == [0.3625, 0.725, 0.9125, 1.0]
    assert table.lookup(2, 0.0515460) == -2 and table.lookup(2, 0.05154609) == -1
    assert "interval bounds rounded to 8 decimals (largest change 4.0E-9)" in notes


# --------------------------------------------------------------------------- ONS / Cantabular


def test_ons_10_5_rule_documented_rows():
    # ONS documentation (reference T11): (10, ckey 173) -> 10; (7, 180) -> 0 (then suppressed as < 10);
    # (14, 66) -> 15; (11, 190) -> 10. Our key for integer ckey k out of 256 is k / 256.
    table, fmt, notes = parse_ptable(ons_10_5_rule(20))
    assert fmt == "ons"
    for count, ckey, published in [(10, 173, 10), (7, 180, 0), (14, 66, 15), (11, 190, 10)]:
        assert count + table.lookup(count, ckey / 256) == published
    assert any("counts above 20 use row 20" in n for n in notes) and table.reuse_from is None
    assert table.lb_units[table.i == 0].tolist() == [0]  # row 0 added: zeros stay zero


def test_ons_file_as_shipped_with_a_quoted_header_imports_as_it_is():
    # ONS's data_files/ptable_10_5_rule.csv quotes its header: "pcv","ckey","pvalue" (issue 13)
    plain = ons_10_5_rule(20)
    header, body = plain.split("\n", 1)
    assert header == "pcv,ckey,pvalue"
    quoted, fmt, _ = parse_ptable('"pcv","ckey","pvalue"\n' + body)
    table, _, _ = parse_ptable(plain)
    assert fmt == "ons"
    assert quoted.lb_units.tolist() == table.lb_units.tolist() and quoted.j.tolist() == table.j.tolist()


CANTABULAR = """cell_value,cell_key,perturbation
1,0-1364,-1
1,1365-3071,0
1,3072-4095,1
2,0-4095,0
"""


def test_cantabular_key_ranges_and_exact_bounds_for_4096_keys():
    table, fmt, notes = parse_ptable(CANTABULAR)
    assert fmt == "cantabular"
    # 1365/4096 = 0.333251953125 is floored to 0.33325195: key 1364 -> -1, key 1365 -> 0, exactly
    assert table.lookup(1, 1364 / 4096) == -1
    assert table.lookup(1, 1365 / 4096) == 0
    assert table.lookup(1, 3071 / 4096) == 0 and table.lookup(1, 3072 / 4096) == 1
    assert any("floored to 8 decimals" in n for n in notes)


def test_ons_file_with_a_missing_key_names_row_and_key():
    text = ons_10_5_rule(3).replace("2,17,-2\n", "")
    with pytest.raises(SdcError, match=r"row i=2: cell key 17 has no perturbation"):
        parse_ptable(text)


def test_ons_file_with_a_repeated_key_names_the_line():
    with pytest.raises(SdcError, match=r"line 3, row i=1: cell key 0 appears twice"):
        parse_ptable("pcv,ckey,pvalue\n1,0,0\n1,0,0\n1,1,0\n")


# --------------------------------------------------------------------------- malformed files


GOOD = """i,j,p,v,p_int_lb,p_int_ub
0,0,1.00000000,0,0.00000000,1.00000000
1,0,0.50000000,-1,0.00000000,0.50000000
1,2,0.50000000,1,0.50000000,1.00000000
2,1,0.25000000,-1,0.00000000,0.25000000
2,2,0.50000000,0,0.25000000,0.75000000
2,3,0.25000000,1,0.75000000,1.00000000
"""


def test_good_file_is_accepted_and_reported():
    table, fmt, notes = parse_ptable(GOOD)
    assert (fmt, notes) == ("sdc", [])
    stats = stats_by_row(table)
    assert (stats[1].mean, stats[1].variance, stats[2].variance, stats[2].p_stay) == (0.0, 1.0, 0.5, 0.5)


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("2,2,0.50000000,0,0.25000000", "2,2,0.50000000,0,0.26000000", r"line 6, row i=2: gap in the intervals"),
        ("2,2,0.50000000,0,0.25000000", "2,2,0.50000000,0,0.24000000", r"row i=2: overlap in the intervals"),
        ("2,3,0.25000000,1,0.75000000,1.00000000", "2,3,0.24000000,1,0.75000000,0.99000000",
         r"row i=2: the intervals end at 0.99000000, not at 1"),
        ("1,2,0.50000000,1,0.50000000,1.00000000", "1,2,0.50000000,1,0.50000000,0.40000000\n1,3,0.6,2,0.4,1.0",
         r"line 4, row i=1: upper bound 0.40000000 is below the lower bound 0.50000000"),
        ("2,1,0.25000000,-1", "2,1,0.35000000,-1", r"line 5, row i=2: p = 0.35000000 disagrees with its interval"),
        ("1,0,0.50000000,-1", "1,-1,0.50000000,-2", r"line 3, row i=1: noise v=-2 would publish -1, below 0"),
        ("2,3,0.25000000,1", "2,4,0.25000000,1", r"line 7, row i=2: j=4 but i \+ v = 3"),
        ("0,0,1.00000000,0", "0,1,1.00000000,1", r"zero cells must stay zero, but row 0 has noise v=\+1"),
        ("1,0,0.50000000,-1", "1,0,half,-1", r"line 3: p = 'half' is not a number"),
    ],
)
def test_malformed_file_is_rejected_naming_the_row(old, new, message):
    assert old in GOOD
    with pytest.raises(SdcError, match=message):
        parse_ptable(GOOD.replace(old, new), source="bad.csv")


def test_missing_row_is_rejected():
    text = GOOD.replace("1,0,0.50000000,-1,0.00000000,0.50000000\n1,2,0.50000000,1,0.50000000,1.00000000\n", "")
    with pytest.raises(SdcError, match=r"row i=1 is missing; rows must run 1..2 without gaps"):
        parse_ptable(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a,b,c\n1,2,3\n", r"unknown ptable format, header 'a,b,c' matches none of"),
        ("", r"the file is empty"),
        ("i,j,p,v,p_int_lb,p_int_ub\n", r"the file has no ptable rows"),
        ("i;j;p;v;p_int_ub;type\n1;0;1;-1;1;even\n", r"type 'even' is a magnitude ptable"),
        ("i,j,p,v,p_int_lb,p_int_ub\n1,0,1\n", r"line 2: no value in column 'v'"),
    ],
)
def test_unusable_files_are_rejected(text, message):
    with pytest.raises(SdcError, match=message):
        parse_ptable(text)


def test_unknown_import_format_name_is_rejected():
    with pytest.raises(SdcError, match=r"unknown ptable format 'xls'; known: sdc, sas, tauargus"):
        parse_ptable(GOOD, fmt="xls")


def test_unknown_export_format_name_is_rejected():
    table, _, _ = parse_ptable(GOOD)
    with pytest.raises(SdcError, match=r"unknown export format 'ons'; known: sdc, tauargus, sas"):
        render_ptable(table, "ons")


def test_missing_file_is_named(tmp_path):
    with pytest.raises(SdcError, match=r"ptable file not found: .*nope.csv"):
        read_ptable(tmp_path / "nope.csv")


def test_ons_table_with_750_rows_keeps_the_reuse_of_rows_501_to_750():
    # ONS: pcv = n for n <= 750, else ((n - 1) mod 250) + 501; with the 10-5 rule table this keeps
    # rounding to base 5 for large counts (reference T11 note).
    table, _, notes = parse_ptable(ons_10_5_rule(750))
    assert table.reuse_from == 501
    assert any("the sdc file keeps the rule in its column reuse_from" in n for n in notes)
    assert table.key_modulus == 256  # integer cell keys 0..255
    for n in [751, 752, 1000, 1001, 1003, 12345, 10**6 + 2]:
        ons_row = ((n - 1) % 250) + 501
        assert table.lookup(n, 0.5) == table.lookup(ons_row, 0.5)
        assert (n + table.lookup(n, 0.5)) % 5 == 0
    assert 751 + table.lookup(751, 0.1) == 750 and 1003 + table.lookup(1003, 0.9) == 1005


# --------------------------------------------------------------------------- magnitude ptables (D15)
NUMS_ALL = ["--table", "nums", "--D", "5", "--V", "1", "--step", "2"]  # the Makefile's NUMS_PTABLE_ARGS


@pytest.mark.parametrize("fmt", ["sdc", "tauargus"])
def test_import_reads_and_checks_the_magnitude_ptable_that_sdc_ptable_table_nums_writes(tmp_path, capsys, fmt):
    """New-user trial D15: `sdc ptable --import` of a --table nums file failed with "j = '0.5' is not a whole
    number"; it reads it as a magnitude table (the column type), checks it and prints the same rows."""
    from sdc.cli import main

    built = tmp_path / "nums.csv"
    assert main(["ptable", *NUMS_ALL, "--format", fmt, "--out", str(built)]) == 0
    rows_when_built = capsys.readouterr().out.splitlines()[1:-1]  # after the title, before "wrote"
    assert main(["ptable", "--import", str(built), "--out", str(tmp_path / "copy.csv")]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"imported {built}: magnitude ptable of types all"
    assert printed[1:-1] == rows_when_built
    assert printed[1].split() == ["type", "i", "mean", "variance", "sum"]
    assert [line.split()[:2] for line in printed[2:-1]] == [["all", "0"], ["all", "1"], ["all", "5"]]
    assert all(line.split()[3] == "1.000000" for line in printed[3:-1])  # V = 1 in every row but 0
    if fmt == "sdc":
        assert (tmp_path / "copy.csv").read_text() == built.read_text()


@pytest.mark.parametrize("change, message", [
    (lambda lines: lines[:3] + lines[4:], "line 4: the interval of type all, i=1 leaves a gap before it"),
    (lambda lines: [lines[0]] + [line.replace(",all", ",every") for line in lines[1:]], "type 'every' is not one of"),
])
def test_import_of_a_broken_magnitude_ptable_names_the_line(tmp_path, capsys, change, message):
    from sdc.cli import main

    built = tmp_path / "nums.csv"
    assert main(["ptable", *NUMS_ALL, "--out", str(built)]) == 0
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join(change(built.read_text().splitlines())) + "\n")
    capsys.readouterr()
    assert main(["ptable", "--import", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sdc ptable: error: {broken}") and message in err and err.count("\n") == 1


def test_import_of_a_magnitude_ptable_takes_no_build_options(tmp_path, capsys):
    from sdc.cli import main

    built = tmp_path / "nums.csv"
    assert main(["ptable", *NUMS_ALL, "--out", str(built)]) == 0
    capsys.readouterr()
    assert main(["ptable", "--import", str(built), "--add-to", str(built), "--out", str(tmp_path / "x.csv")]) == 2
    assert "--import reads a finished table; --add-to cannot be combined with it" in capsys.readouterr().err
