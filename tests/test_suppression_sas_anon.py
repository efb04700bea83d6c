"""sas-anon compatible interval publication (seed 003; reference suppression.md §2.1, TV-1 ... TV-5)."""

import csv

import pytest

from sdc.errors import SdcError
from sdc.suppression.sas_anon import anonymise, text_of

README_INPUT = [  # seed 003, "Inputs"
    (0, 0, 28), (1, 0, 9), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2), (2, 2, 0), (3, 0, 17), (3, 1, 17),
]
# seed 003, "Outputs", character for character (en dash in the primary intervals, hyphens elsewhere)
README_OUTPUT = """Kreis Quartier Wert Wert_korr Wert_fallLang Wert_min Wert_max Wert_fall
0 0 28 28 . .
1 0 9 9 . .
1 1 2 1–3 Kleine Werte werden auf der untersten Ebene maskiert 1 3 primär
1 2 7 6-8 Anonymisiert, damit in Quartier 2 keine Rückschlüsse gezogen werden können. 6 8 A11
2 0 2 1-3 Anonymisiert, damit in Kreis 2 keine Rückschlüsse gezogen werden können. 1 3 A12
2 1 2 1–3 Kleine Werte werden auf der untersten Ebene maskiert 1 3 primär
2 2 0 0 . .
3 0 17 16-18 Anonymisiert, damit in Kreis 3 keine Rückschlüsse gezogen werden können. 16 18 A21
3 1 17 16-18 Anonymisiert, damit in Kreis 3 keine Rückschlüsse gezogen werden können. 16 18 C1
"""


def run(data, function="max", **kwargs):
    rows = [{"Kreis": k, "Quartier": q, "Wert": w} for k, q, w in data]
    return anonymise(rows, levels=["Quartier", "Kreis"], value="Wert", function=function, min_value=1, max_value=3, **kwargs)


def summary(result):
    return [(r["Kreis"], r["Quartier"], r["Wert_korr"], r["Wert_fall"]) for r in result.rows]


def test_tv1_seed003_readme_example_character_for_character():
    result = run(README_INPUT)
    assert result.text() == README_OUTPUT
    assert result.consistency_errors == []


def test_tv2_b11_b12_a21_c1():
    data = [(0, 0, 38), (1, 0, 12), (1, 1, 1), (1, 2, 1), (1, 3, 10), (2, 0, 6), (2, 1, 3), (2, 2, 3), (2, 3, 0),
            (3, 0, 20), (3, 1, 20)]
    assert summary(run(data)) == [
        (0, 0, "38", ""), (1, 0, "12", ""), (1, 1, "1–3", "primär"), (1, 2, "1–3", "primär"), (1, 3, "6-10", "B11"),
        (2, 0, "2-6", "B12"), (2, 1, "1–3", "primär"), (2, 2, "1–3", "primär"), (2, 3, "0", ""),
        (3, 0, "20-24", "A21"), (3, 1, "20-24", "C1"),
    ]


def test_tv3_function_min_recodes_a11_as_c1():
    assert summary(run(README_INPUT, function="min")) == [
        (0, 0, "28", ""), (1, 0, "8-10", "A21"), (1, 1, "1–3", "primär"), (1, 2, "6-8", "C1"),
        (2, 0, "1-3", "A12"), (2, 1, "1–3", "primär"), (2, 2, "0", ""), (3, 0, "17", ""), (3, 1, "17", ""),
    ]


@pytest.mark.parametrize("function, masked", [("max", (3, "32-34")), ("min", (2, "4-6"))])
def test_tv4_sibling_choice(function, masked):
    data = [(0, 0, 40), (1, 0, 40), (1, 1, 2), (1, 2, 5), (1, 3, 33)]
    rows = {q: (korr, fall) for _, q, korr, fall in summary(run(data, function=function))}
    quartier, interval = masked
    assert rows[quartier] == (interval, "A11")
    other = 2 if quartier == 3 else 3
    assert rows[other][1] == ""  # the other sibling is published


def test_tv5_c_interval_leak_and_the_fixed_variant():
    # Kreis 3 = {Q1 = 17, Q2 = 2}: Kreis 3 total 18-20 (A21), Q1 16-18 (C1), Q2 1–3 (primär).
    # Since C1 = Q1 shifted by the parent's offsets, Q2 = 18 - 16 = 2 is revealed (quirk 9).
    data = [(0, 0, 30), (1, 0, 9), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2), (2, 2, 0), (3, 0, 19), (3, 1, 17), (3, 2, 2)]
    rows = {(k, q): r for k, q, *r in summary(run(data))}
    assert rows[(3, 0)] == ["18-20", "A21"] and rows[(3, 1)] == ["16-18", "C1"] and rows[(3, 2)] == ["1–3", "primär"]
    parent_low, child_low = 18, 16
    assert parent_low - child_low == 2  # the masked Q2, recovered from published numbers alone
    # fixed variant: Q1 gets the interval the constraints allow: [18 - 3, 20 - 1] = [15, 19]
    fixed = {(k, q): r for k, q, *r in summary(run(data, fixed_c_intervals=True))}
    assert fixed[(3, 1)] == ["15-19", "C1"]


def test_two_primaries_inside_their_bounds_get_no_secondary():
    data = [(0, 0, 14), (1, 0, 14), (1, 1, 2), (1, 2, 2), (1, 3, 10)]
    assert summary(run(data)) == [(0, 0, "14", ""), (1, 0, "14", ""), (1, 1, "1–3", "primär"), (1, 2, "1–3", "primär"),
                                  (1, 3, "10", "")]


def test_inconsistent_totals_are_reported_not_fatal():
    data = [(0, 0, 28), (1, 0, 10), (1, 1, 2), (1, 2, 7), (2, 0, 2), (2, 1, 2), (2, 2, 0), (3, 0, 17), (3, 1, 17)]
    result = run(data)
    assert result.consistency_errors == [
        "ERROR: Inkonsistenz zwischen den Ebenen «Kreis» und «Quartier» (Kreis 1)",
        "ERROR: Inkonsistenz zwischen den Ebenen «Einer» und «Kreis» (Einer 1)",
    ]


def test_bad_input():
    with pytest.raises(SdcError, match=r"function must be min or max"):
        run(README_INPUT, function="median")
    with pytest.raises(SdcError, match=r"duplicate cell \{'Quartier': 1, 'Kreis': 1\}"):
        run(README_INPUT + [(1, 1, 5)])
    with pytest.raises(SdcError, match=r"row 1: column 'Wert' is missing"):
        anonymise([{"Kreis": 0, "Quartier": 0}], levels=["Quartier", "Kreis"], value="Wert")


def test_cli_prints_the_readme_output_and_writes_csv(tmp_path, capsys):
    from sdc.cli import main

    source = tmp_path / "kreise.csv"
    source.write_text("Kreis,Quartier,Wert\n" + "".join(f"{k},{q},{w}\n" for k, q, w in README_INPUT))
    assert main(["sas-anon", "--input", str(source), "--levels", "Quartier,Kreis", "--value", "Wert",
                 "--function", "max"]) == 0
    assert capsys.readouterr().out == README_OUTPUT
    out = tmp_path / "out.csv"
    assert main(["sas-anon", "--input", str(source), "--levels", "Quartier,Kreis", "--value", "Wert",
                 "--function", "max", "--fixed-c-intervals", "--out", str(out)]) == 0
    lines = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
    assert lines[0] == ["Kreis", "Quartier", "Wert", "Wert_korr", "Wert_fallLang", "Wert_min", "Wert_max", "Wert_fall"]
    assert lines[3] == ["1", "1", "2", "1–3", "Kleine Werte werden auf der untersten Ebene maskiert", "1", "3", "primär"]
    fixed = run(README_INPUT, fixed_c_intervals=True).rows[-1]
    assert lines[-1][3:] == [fixed["Wert_korr"], fixed["Wert_fallLang"], text_of(fixed["Wert_min"]),
                                        text_of(fixed["Wert_max"]), fixed["Wert_fall"]]


@pytest.mark.parametrize("rows, kwargs, message", [
    ([{"Kreis": "1", "Quartier": "0", "Wert": "viel"}], {}, "row 1: value column 'Wert' holds 'viel', not a number"),
    ([{"Kreis": "1", "Quartier": "0", "Wert": "nan"}], {}, "row 1: value column 'Wert' holds 'nan', not a number"),
    ([{"Kreis": "eins", "Quartier": "0", "Wert": "2"}], {}, "row 1: level column 'Kreis' holds 'eins', not a whole"),
    ([{"Kreis": "1", "Quartier": "0", "Wert": ""}], {}, "row 1: column 'Wert' is missing or empty"),
    ([{"Kreis": "1", "Quartier": "0", "Wert": "2"}], {"min_value": float("nan")}, "min_value (--min-value) must be"),
    ([{"Kreis": "1", "Quartier": "0", "Wert": "2"}], {"max_value": float("inf")}, "max_value (--max-value) must be"),
    ([{"Kreis": "1", "Quartier": "0", "Wert": "2"}], {"min_value": 5, "max_value": 3}, "min_value (--min-value) 5 is "
     "larger than max_value (--max-value) 3"),
])
def test_values_codes_and_bounds_that_are_not_numbers(rows, kwargs, message):
    options = {"min_value": 1, "max_value": 3} | kwargs
    with pytest.raises(SdcError) as error:
        anonymise(rows, levels=["Quartier", "Kreis"], value="Wert", **options)
    assert message in str(error.value)


def test_cli_files_that_cannot_be_read_or_written(tmp_path, capsys):
    from sdc.cli import main

    def sas_anon(source, *args):
        code = main(["sas-anon", "--input", str(source), "--levels", "Quartier,Kreis", "--value", "Wert", *args])
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("sdc sas-anon: error: "), err
        return code, err

    good = tmp_path / "kreise.csv"
    good.write_text("Kreis,Quartier,Wert\n0,0,28\n1,0,9\n1,1,2\n1,2,7\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    assert sas_anon(folder) == (2, f"sdc sas-anon: error: input file {folder} is a folder\n")
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("Kreis,Quartier,Wert,Name\n0,0,28,Z\xfcrich\n".encode("latin-1"))
    assert "is not valid UTF-8 (byte 0xfc" in sas_anon(latin1)[1]
    header = tmp_path / "header.csv"
    header.write_text("Kreis,Quartier,Wert\n")
    assert sas_anon(header) == (2, f"sdc sas-anon: error: {header}: no rows below the header\n")
    text = tmp_path / "text.csv"
    text.write_text("Kreis,Quartier,Wert\n0,0,viel\n")
    assert "value column 'Wert' holds 'viel', not a number" in sas_anon(text)[1]
    assert "cannot write" in sas_anon(good, "--out", str(folder))[1]
    assert "folder" in sas_anon(good, "--out", str(tmp_path / "missing" / "out.csv"))[1]
    assert "min_value (--min-value) must be a finite number, got nan" in sas_anon(good, "--min-value", "nan")[1]
