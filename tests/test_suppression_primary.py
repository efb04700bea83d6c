"""Primary suppression rules in SQL (macros suppression_cells and suppression_primary): the seed 001
examples and the reference's test vectors TV-6, TV-11 and TV-12, with each tool's boundary semantics."""

import duckdb
import pytest

from dbt_project_helper import ScratchProject

# Seed 001 / seed 000 Table 1: Studienfach x Geschlecht
STUDENTS = {("Bauingenieurwesen", "m"): 4, ("Bauingenieurwesen", "w"): 3, ("Informatik", "m"): 9,
            ("Informatik", "w"): 12, ("Medizin", "m"): 4, ("Medizin", "w"): 1, ("Survey Statistik", "m"): 10,
            ("Survey Statistik", "w"): 10}
# Seed 001: breweries' turnover (Tabelle 2)
BREWERIES = [("Mährs Bräu", 600000), ("Schinkerla", 50000), ("Käsmann", 250000)]
# TV-11 (ssb-gausssuppression tests): cells v1..v7, contributions with holding ids
TV11 = {"v1": [(100, "A")], "v2": [(90, "C"), (10, "B")], "v3": [(80, "A"), (20, "C")], "v4": [(70, "C"), (30, "C")],
        "v5": [(80, "C"), (10, "B"), (10, "A")], "v6": [(70, "A"), (10, "B"), (10, "A"), (10, "A")],
        "v7": [(60, "C"), (20, "A"), (10, "B"), (10, "A")]}
# TV-12 (tau-Argus manual 4.1 §4.4.4): cells with (value, enterprise group) per reporting unit
TV12 = {"800,20": [(599, 1), (344, 1), (244, 1), (644, 2)], "800,30": [(355, 1), (433, 2), (323, 3), (343, 3)],
        "900,20": [(23, 4), (43, 5), (34, 5), (53, 5)], "900,30": [(700, 6), (200, 6), (60, 7), (40, 8), (10, 9)]}
# TV-6 (Handbook ch. 4): example 2 (p = 10 vs (2, 90.9)) and example 4 ((1, 85), X = 330)
TV6 = {"ex2": [52000, 50000, 8000], "ex4": [300, 20, 10]}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    p = ScratchProject(tmp_path_factory.mktemp("suppression") / "project")
    con = duckdb.connect(str(p.db))
    con.execute("create schema raw")
    rows = [(f, g) for (f, g), n in STUDENTS.items() for _ in range(n)]
    con.execute("create table raw.students (fach varchar, geschlecht varchar)")
    con.executemany("insert into raw.students values (?, ?)", rows)
    con.execute("create table raw.breweries (region varchar, brauerei varchar, umsatz double)")
    con.executemany("insert into raw.breweries values ('Bamberg', ?, ?)", BREWERIES)
    con.execute("create table raw.tv11 (cell varchar, x double, holding varchar)")
    con.executemany("insert into raw.tv11 values (?, ?, ?)", [(c, x, h) for c, xs in TV11.items() for x, h in xs])
    con.execute("create table raw.tv12 (cell varchar, x double, grp varchar)")
    con.executemany("insert into raw.tv12 values (?, ?, ?)", [(c, x, str(g)) for c, xs in TV12.items() for x, g in xs])
    con.execute("create table raw.uni (universitaet varchar, geschlecht varchar)")
    con.executemany("insert into raw.uni values (?, ?)", [("Würzburg", "m")] * 3 + [("Eichstätt", "w"), ("Bamberg", "m")]
                    + [("München", "m")] * 3 + [("München", "w")] * 2)
    con.execute("create table raw.tv6 (cell varchar, x double)")
    con.executemany("insert into raw.tv6 values (?, ?)", [(c, x) for c, xs in TV6.items() for x in xs])
    con.close()
    p.sources(["students", "breweries", "tv11", "tv12", "tv6", "uni"])
    p.seed("sdc_hierarchies", "dimension,code,parent\nuniversitaet,Bayern,\nuniversitaet,Franken,Bayern\n"
           "universitaet,Oberbayern,Bayern\nuniversitaet,Würzburg,Franken\nuniversitaet,Bamberg,Franken\n"
           "universitaet,Eichstätt,Oberbayern\nuniversitaet,München,Oberbayern\n")
    p.model("uni_cells", "{{ sdc.suppression_cells(source('raw', 'uni'), dims=['universitaet', 'geschlecht'], "
            "hierarchy=ref('sdc_hierarchies')) }}")
    p.model("uni_constraints", "{{ sdc.suppression_constraints(ref('uni_cells'), ['universitaet', 'geschlecht'], "
            "hierarchy=ref('sdc_hierarchies')) }}")
    cells = "{{{{ sdc.suppression_cells(source('raw', '{}'), dims={}, value={}, holding={}, totals='none') }}}}"
    p.model("students_cells", "{{ sdc.suppression_cells(source('raw', 'students'), dims=['fach', 'geschlecht']) }}")
    for preset in ("handbook", "sdctable"):
        p.model(f"students_{preset}", f"{{{{ sdc.suppression_primary(ref('students_cells'), ['freq:3'], preset='{preset}') }}}}")
    p.model("brew_cells", "{{ sdc.suppression_cells(source('raw', 'breweries'), dims=['region'], value='umsatz', totals='none') }}")
    p.model("brew_primary", "{{ sdc.suppression_primary(ref('brew_cells'), ['p:10', 'nk:1,85']) }}")
    p.model("tv11_units", cells.format("tv11", "['cell']", "'x'", "none"))
    p.model("tv11_holdings", cells.format("tv11", "['cell']", "'x'", "'holding'"))
    for name, rules, preset in [("nk2_90", "['nk:2,90']", "handbook"), ("nk2_90_acro", "['nk:2,90']", "acro"),
                                ("nk1_70", "['nk:1,70']", "handbook"), ("p10", "['p:10']", "handbook"),
                                ("p25", "['p:25']", "handbook")]:
        p.model(f"tv11_{name}", f"{{{{ sdc.suppression_primary(ref('tv11_units'), {rules}, preset='{preset}') }}}}")
    p.model("tv11_p25_holdings", "{{ sdc.suppression_primary(ref('tv11_holdings'), ['p:25']) }}")
    p.model("tv12_units", cells.format("tv12", "['cell']", "'x'", "none"))
    p.model("tv12_groups", cells.format("tv12", "['cell']", "'x'", "'grp'"))
    p.model("tv12_p10_units", "{{ sdc.suppression_primary(ref('tv12_units'), ['p:10']) }}")
    p.model("tv12_groups_rules", "{{ sdc.suppression_primary(ref('tv12_groups'), ['holdings:3', 'p:10']) }}")
    p.model("tv6_cells", cells.format("tv6", "['cell']", "'x'", "none"))
    p.model("tv6_rules", "{{ sdc.suppression_primary(ref('tv6_cells'), ['p:10', 'nk:2,90.9', 'nk:1,85']) }}")
    p.model("students_constraints", "{{ sdc.suppression_constraints(ref('students_cells'), ['fach', 'geschlecht']) }}")
    result = p.dbt("build")
    assert result.returncode == 0, result.stdout[-3000:]
    return p


def query(p, sql):
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def flags(p, model):
    return [status == "primary" for (status,) in query(p, f"select status from {model} order by cell")]


def test_seed001_medizin_weiblich_is_primary_under_n_3(built):
    # Seed 001 "Mindestfallzahlregel": cells below n = 3 are suppressed: Medizin/weiblich = 1 ("x")
    rows = query(built, "select fach, geschlecht, freq, rule from students_handbook where status = 'primary'")
    assert rows == [("Medizin", "w", 1, "freq:3")]


def test_sdctable_counts_three_as_unsafe_under_n_3(built):
    # sdcTable maxN = 3 means f in {1, 2, 3}: Bauingenieurwesen/weiblich = 3 becomes primary as well
    rows = query(built, "select fach, geschlecht from students_sdctable where status = 'primary' order by all")
    assert rows == [("Bauingenieurwesen", "w"), ("Medizin", "w")]


def test_seed001_breweries_total_is_sensitive_under_p10(built):
    # Seed 001 "p%-Regel": 900,000 - 250,000 - 600,000 = 50,000 < 60,000 = 10 % of 600,000
    rows = query(built, "select value, top_1, top_2, status, rule, protection_upper, protection_lower from brew_primary")
    assert rows == [(900000.0, 600000.0, 250000.0, "primary", "p:10", 10000.0, 10000.0)]


def test_tv11_boundaries_differ_between_tools(built):
    # TV-11 [computed in the reference]: (2,90) strict vs >= flips v5 (80 + 10 = 90 % exactly)
    assert flags(built, "tv11_nk2_90") == [True, True, True, True, False, False, False]
    assert flags(built, "tv11_nk2_90_acro") == [True, True, True, True, True, False, False]
    assert flags(built, "tv11_nk1_70") == [True, True, True, False, True, False, False]
    assert flags(built, "tv11_p10") == [True, True, True, True, False, False, False]
    assert flags(built, "tv11_p25") == [True, True, True, True, True, False, False]
    assert flags(built, "tv11_p25_holdings") == [True] * 7


def test_tv11_p10_protection_levels(built):
    # UPL for p = 10: p/100 x1 - (X - x1 - x2) = 10, 9, 8, 7 for the unsafe cells v1..v4
    rows = query(built, "select cell, protection_upper from tv11_p10 where status = 'primary' order by cell")
    assert rows == [("v1", 10.0), ("v2", 9.0), ("v3", 8.0), ("v4", 7.0)]


def test_tv11_holdings_are_summed_before_the_rules(built):
    # v6 = 70[A] 10[B] 10[A] 10[A]: holdings A = 90, B = 10 -> two contributors, x1 = 90, x2 = 10
    rows = query(built, "select cell, freq, contributors, top_1, top_2 from tv11_holdings where cell in ('v4', 'v6') order by cell")
    assert rows == [("v4", 2, 1, 100.0, 0.0), ("v6", 4, 2, 90.0, 10.0)]


def test_tv12_tau_argus_holding_example(built):
    # tau-Argus manual §4.4.4: (900,30) is p10-safe on reporting units (10 + 60 + 40 = 110 >= 70) but
    # unsafe on enterprise groups (40 + 10 = 50 < 90); (800,20) and (900,20) have only 2 groups (< 3).
    assert query(built, "select cell from tv12_p10_units where status = 'primary'") == []
    rows = query(built, "select cell, rule from tv12_groups_rules where status = 'primary' order by cell")
    # with two contributors the p% rule fires as well (X - x1 - x2 = 0)
    assert rows == [("800,20", "holdings:3,p:10"), ("900,20", "holdings:3,p:10"), ("900,30", "p:10")]


def test_tv6_handbook_examples(built):
    rows = {c: (rule, upl) for c, rule, upl in query(built, "select cell, rule, protection_upper from tv6_rules")}
    # Ex. 2: p = 10 safe (X - x1 - x2 = 8,000 >= 5,200) but (2, 90.9) unsafe (102,000 > 99,990)
    assert rows["ex2"][0] == "nk:2,90.9"
    # Ex. 4: X = 330 = 300 + 20 + 10 unsafe under (1, 85); upper bound must reach 100/85 * 300 = 352.94
    assert rows["ex4"][0] == "p:10,nk:2,90.9,nk:1,85"
    assert rows["ex4"][1] == pytest.approx(max(100 / 85 * 300 - 330, 100 / 90.9 * 320 - 330, 0.1 * 300 - 10))
    assert 100 / 85 * 300 - 330 == pytest.approx(22.94, abs=0.01)


def test_unknown_rule_and_preset_are_compile_errors(tmp_path):
    """In dbt: a model with an unreadable rule does not compile, and its message names the rule."""
    p = ScratchProject(tmp_path / "project")
    p.model("cells", "{{ sdc.suppression_cells(ref('sdc_ptable'), dims=['i']) }}")
    p.model("bad_rule", "{{ sdc.suppression_primary(ref('cells'), ['freq:three:4']) }}")
    result = p.dbt("compile")
    assert result.returncode != 0 and "cannot read rule 'freq:three:4'; its parameters must be numbers" in result.stdout
    assert primary_error("freq:3", preset="argus") == (
        "suppression_primary: unknown preset 'argus'; known: handbook, tauargus, sdctable, acro, sas_anon")


def primary_error(rule: str, **kwargs) -> str:
    """The message with which suppression_primary(cells, [rule]) stops, rendered in-process
    (sdc.warehouse.macro_renderer: the macros' one implementation, in milliseconds where a dbt compile takes
    seconds; the test above shows that dbt stops with the same message)."""
    from sdc.errors import SdcError
    from sdc.warehouse.macro_renderer import render_macro

    con = duckdb.connect()
    con.execute("create table cells as select 'a' as i, 3 as freq")
    with pytest.raises(SdcError) as raised:
        render_macro(con, "suppression_primary", "cells", [rule], **kwargs)
    return str(raised.value)


def test_constraints_of_the_seed001_table(built):
    # along fach: Total = sum of the 4 subjects, for m, w and Total (3 constraints of 5 cells);
    # along geschlecht: Total = m + w for each subject and the total (5 constraints of 3 cells)
    shapes = query(built, "select dimension, count(distinct constraint_id), count(*) from students_constraints group by 1 order by 1")
    assert shapes == [("fach", 3, 15), ("geschlecht", 5, 15)]
    # every constraint holds on the frequencies
    residuals = query(built, """
        select k.constraint_id, sum(k.coefficient * c.freq) from students_constraints k
        join students_cells c using (fach, geschlecht) group by 1 having sum(k.coefficient * c.freq) <> 0""")
    assert residuals == []
    members = query(built, "select fach, coefficient from students_constraints where constraint_id = 'fach:Total|w' order by 2 desc, 1")
    assert members == [("Total", 1), ("Bauingenieurwesen", -1), ("Informatik", -1), ("Medizin", -1), ("Survey Statistik", -1)]


def test_constraints_follow_the_hierarchy(built):
    rows = query(built, "select constraint_id, universitaet, coefficient from uni_constraints "
                        "where dimension = 'universitaet' and geschlecht = 'Total' order by 1, 3 desc, 2")
    assert rows == [
        ("universitaet:Bayern|Total", "Bayern", 1), ("universitaet:Bayern|Total", "Franken", -1),
        ("universitaet:Bayern|Total", "Oberbayern", -1),
        ("universitaet:Franken|Total", "Franken", 1), ("universitaet:Franken|Total", "Bamberg", -1),
        ("universitaet:Franken|Total", "Würzburg", -1),
        ("universitaet:Oberbayern|Total", "Oberbayern", 1), ("universitaet:Oberbayern|Total", "Eichstätt", -1),
        ("universitaet:Oberbayern|Total", "München", -1),
    ]
    residuals = query(built, """
        select k.constraint_id from uni_constraints k join uni_cells c using (universitaet, geschlecht)
        group by 1 having sum(k.coefficient * c.freq) <> 0""")
    assert residuals == []


def test_rules_out_of_range_are_compile_errors():
    """Issue 17: malformed rules such as nk:0,50 or pq:10,0 were accepted or ended in raw engine errors."""
    cases = {
        "freq:0": "the threshold must be a whole number of at least 1",
        "holdings:2.5": "the threshold must be a whole number of at least 1",
        "nk:0,50": "n (the number of largest contributions) must be a whole number of at least 1",
        "nk:2,0": "k must be a percentage above 0 and at most 100",
        "nk:2,150": "k must be a percentage above 0 and at most 100",
        "p:0": "p must be a percentage above 0",
        "pq:10,0": "p and q must both be above 0",
        'manual:x"; drop table cells; --': "the column must be a plain name",
        "range:0": "the width must be above 0",
    }
    for rule, message in cases.items():
        assert primary_error(rule).startswith(f"suppression_primary: rule '{rule}': {message}"), rule
    # a rule's line breaks are shown escaped: an error is one line
    assert primary_error("range:4\r\n; drop table cells") == ("suppression_primary: cannot read rule "
                                                            "'range:4\\r\\n; drop table cells'; its parameters must be numbers")


def test_the_option_range_widens_the_upper_protection_of_primaries_only_and_is_given_once():
    """range:w (issue 50, GaussSuppression's rangeMin) flags no cell: a primary's protection_upper becomes at least
    w (so its interval is at least w wide), its protection_lower stays the rules'; a second range is an error, and
    so is range alone (no cell would be protected)."""
    from sdc.errors import SdcError
    from sdc.warehouse.macro_renderer import render_macro

    con = duckdb.connect()
    con.execute("create table cells as select * from (values ('a', 1, 1.0), ('b', 2, 2.0), ('c', 7, 7.0), "
                "('d', 0, 0.0)) as t(i, freq, value)")
    for rules, expected in [(["freq:3"], [("a", "primary", 1, 1), ("b", "primary", 1, 1), ("c", "published", 0, 0),
                                          ("d", "empty", 0, 0)]),
                            (["freq:3", "range:4"], [("a", "primary", 1, 4), ("b", "primary", 1, 4),
                                                     ("c", "published", 0, 0), ("d", "empty", 0, 0)])]:
        sql = render_macro(con, "suppression_primary", "cells", rules)
        assert con.execute(f"select i, status, protection_lower, protection_upper from ({sql}) order by i"
                           ).fetchall() == expected, rules
    with pytest.raises(SdcError, match="rule 'range:5': give range:w once"):
        render_macro(con, "suppression_primary", "cells", ["freq:3", "range:4", "range:5"])
    # alone it would publish every cell unprotected: refused
    with pytest.raises(SdcError, match="range:w flags no cell, it widens the protection of the cells a rule flags"):
        render_macro(con, "suppression_primary", "cells", ["range:4"])
