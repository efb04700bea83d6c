"""Linked suppression tables (issue 33): suppression tables of one population are audited over the union of their
equations, where a cell that holds the same records in two tables is one unknown.

The unit cases are GaussSuppression's linked-tables vignette (reference linked-suppression.md LT-1): age x eu x
year and geo x year over the same 44 persons, frequencies of 1 and 2 primary. Each table's pattern passes its own
audit; published together, "local" protection suppresses a margin that the other table publishes, and
"consistent" protection (one status per shared cell) lets the two tables pin Portugal-2016. Suppressing Spain-2016
too ("super-consistent") is safe."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from sdc.cli import main
from sdc.errors import SdcError
from sdc.release.publish import publish
from sdc.warehouse.macro_renderer import Relation, render_macro
from sdc.release.linked_suppression import audit_linked_suppression
from sdc.release.verify import Verified, Verifier
from sdc.release.gate import Rel, Warehouse
from sdc.suppression.audit import a_priori_lower, audit_pattern, default_upper
from sdc.suppression.problem import group_relations
from test_publication_gate import BASE, make
from test_publish import edited_manifest, office_audit, rows

# (age, geo, eu, year, persons)
VIGNETTE = [("young", "Spain", "EU", "2014", 6), ("young", "Iceland", "nonEU", "2014", 8),
            ("old", "Spain", "EU", "2014", 9), ("old", "Portugal", "EU", "2014", 1),
            ("young", "Iceland", "nonEU", "2015", 2), ("old", "Spain", "EU", "2015", 4),
            ("old", "Portugal", "EU", "2015", 3), ("young", "Spain", "EU", "2016", 7),
            ("young", "Iceland", "nonEU", "2016", 2), ("young", "Portugal", "EU", "2016", 2)]
T1, T2 = ["age", "eu", "year"], ["geo", "year"]
# the secondary suppressions of each mode (LT-1: "local", "consistent", "super-consistent"); primary cells are
# suppressed in every pattern. sdc's attacker knows that a non-empty count is at least 1: there Portugal-2014 +
# Portugal-2016 = 6 - 3 would keep Portugal-2016 (2) within [1, 2], so t2 suppresses Portugal-2015 too (as LT-2's
# interval requirement does, with Spain-2015)
LOCAL = {"t1": [("Total", "Total", "2015"), ("Total", "Total", "2016"), ("young", "Total", "2016")],
         "t2": [("Iceland", "2014"), ("Portugal", "2015")]}
CONSISTENT = {"t1": LOCAL["t1"],
              "t2": [("Total", "2015"), ("Total", "2016"), ("Spain", "2014"), ("Spain", "2015"), ("Portugal", "2015")]}
JOINT = {"t1": LOCAL["t1"], "t2": CONSISTENT["t2"] + [("Spain", "2016")]}


TREE = [("geo", "Europe", ""), ("geo", "EU", "Europe"), ("geo", "nonEU", "Europe"), ("geo", "Spain", "EU"),
        ("geo", "Portugal", "EU"), ("geo", "Iceland", "nonEU")]


def vignette(pattern: dict, tables=(("t1", T1, False), ("t2", T2, False))) -> tuple[Verifier, list[Verified]]:
    """The tables (name, dims, whether geo has the hierarchy TREE) as sdc publish has verified them: sdc's cells
    and primary rules over the microdata (the audit tables), and the published relations with the pattern's cells
    NULL."""
    con = duckdb.connect()
    con.execute("create schema raw; create schema main_protected")
    con.execute("create table raw.persons (age varchar, geo varchar, eu varchar, year varchar)")
    con.executemany("insert into raw.persons values (?, ?, ?, ?)",
                    [(a, g, e, y) for a, g, e, y, n in VIGNETTE for _ in range(n)])
    con.execute("create table main.geo_tree (dimension varchar, code varchar, parent varchar)")
    con.executemany("insert into main.geo_tree values (?, ?, ?)", TREE)
    items = []
    for name, dims, tree in tables:
        hierarchy = Relation("memory", "main", "geo_tree") if tree else None
        cells_sql = render_macro(con, "suppression_cells", Relation("memory", "raw", "persons"), dims,
                                 hierarchy=hierarchy)
        con.execute(f"create temp table {name}_cells as {cells_sql}")
        primary_sql = render_macro(con, "suppression_primary", Relation("temp", "main", f"{name}_cells"), ["freq:3"])
        con.execute(f"create temp table {name}_primary as {primary_sql}")
        hidden = " or ".join(f"({' and '.join(f'{d} = ?' for d in dims)})" for _ in pattern[name])
        con.execute(f"create table main_protected.{name} as select {', '.join(dims)}, case when status = 'primary'"
                    f"{f' or {hidden}' if hidden else ''} then null else freq end as freq from {name}_primary",
                    [c for cell in pattern[name] for c in cell])
        call = {"dims": dims, "value": None, "settings": {}, "hierarchy": "main.geo_tree" if tree else None}
        items.append(Verified(Rel("memory", "main_protected", name), "suppression", f"main_protected.{name}",
                              audit=f"{name}_primary", source='"memory"."raw"."persons"',
                              call={"cells": call, "rules": {}, "value": "freq"}, roots=frozenset(["raw.persons"])))
    return Verifier(con, Warehouse(con, {}), {}), items


def own_audit(verifier: Verifier, item: Verified):
    """The table's audit alone, as verify_suppression runs it."""
    con, dims = verifier.con, item.call["cells"]["dims"]
    hierarchy = Relation("memory", "main", "geo_tree") if item.call["cells"]["hierarchy"] else None
    relations_sql = render_macro(con, "suppression_constraints", Relation("temp", "main", item.audit), dims,
                                 hierarchy=hierarchy)
    members = con.execute(f"select constraint_id, {', '.join(dims)}, coefficient from ({relations_sql})").fetchall()
    rows = con.execute(f"select {', '.join(f'c.{d}' for d in dims)}, c.freq, c.status, c.protection_lower, "
                       f"p.freq is null from {item.audit} as c join {item.content} as p using ({', '.join(dims)})"
                       ).fetchall()
    values = np.array([float(r[len(dims)]) for r in rows])
    relations = group_relations(members, [r[:len(dims)] for r in rows], dims)
    return audit_pattern(values, [r[-1] for r in rows], relations, sensitive=[r[-3] == "primary" for r in rows],
                         protection_lower=[r[-2] for r in rows], protection_upper=[r[-2] for r in rows],
                         lower=a_priori_lower(values, values, magnitude=False), upper=default_upper(values),
                         integer=True)


@pytest.mark.parametrize("pattern", [LOCAL, CONSISTENT, JOINT])
def test_each_tables_pattern_passes_its_own_audit(pattern):
    verifier, items = vignette(pattern)
    for item in items:
        result = own_audit(verifier, item)
        assert result.passed and len(result.intervals) > 0


def test_a_margin_suppressed_in_one_table_and_published_in_the_other_is_refused():
    verifier, items = vignette(LOCAL)
    # Total-2015 is suppressed in t1, published in t2: t1's primary young-2015 = 9 - 7 (old-2015) = 2
    t1 = verifier.con.execute("select age, freq from main_protected.t1 where eu = 'Total' and year = '2015' "
                              "order by age").fetchall()
    t2 = verifier.con.execute("select freq from main_protected.t2 where geo = 'Total' and year = '2015'").fetchall()
    assert (t1, t2) == ([("Total", None), ("old", 7), ("young", None)], [(9,)])
    with pytest.raises(SdcError) as refused:
        audit_linked_suppression(verifier, items)
    assert str(refused.value) == (
        "main_protected.t1 suppresses the cell (age='Total', eu='Total', year='2015'), and main_protected.t2 "
        "publishes 9 for the cell (geo='Total', year='2015'), which holds the same records of raw.persons: published "
        "together, the suppression is undone. A cell that two tables share needs one status in both: protect the "
        "tables with one pattern, or publish one of them")


def test_cells_that_pin_a_primary_cell_together_are_refused():
    """The statuses agree, but nonEU and Iceland hold the same records, so EU-year = Spain-year + Portugal-year
    follows from the two tables' equations: Portugal-2016 = EU-2016 (t1) - Spain-2016 (t2) = 9 - 7 = 2."""
    verifier, items = vignette(CONSISTENT)
    eu = verifier.con.execute("select freq from main_protected.t1 where age = 'Total' and eu = 'EU' "
                              "and year = '2016'").fetchall()
    t2 = dict(verifier.con.execute("select geo, freq from main_protected.t2 where year = '2016'").fetchall())
    assert (eu, t2["Spain"], t2["Portugal"]) == ([(9,)], 7, None)
    with pytest.raises(SdcError) as refused:
        audit_linked_suppression(verifier, items)
    assert str(refused.value) == (
        "main_protected.t1 and main_protected.t2, cell-suppression tables of the same records (raw.persons), do not "
        "protect the primary cell (geo='Portugal', year='2016') of main_protected.t2 together: from the cells they "
        "publish and the additivity of each it lies within [2, 2], closer than its protection interval, though each "
        "table alone protects it. Protect the tables with one pattern, or publish one of them")


def test_a_joint_safe_pattern_passes():
    verifier, items = vignette(JOINT)
    figures = audit_linked_suppression(verifier, items)
    # shared: the grand total, the three year totals, and Iceland's four cells (= nonEU's = young-nonEU's)
    assert figures == {"groups": [{"tables": ["main_protected.t1", "main_protected.t2"], "population": "raw.persons",
                                   "variable": "count", "cells": 26, "shared_cells": 8, "shared_suppressed": 4,
                                   "sensitive": 4, "audited": True}],
                       "shared_cells": 8, "passed": True}



def test_a_hierarchys_code_is_the_cell_of_its_leaves():
    """geo with the hierarchy Europe > EU (Spain, Portugal), nonEU (Iceland) beside the flat eu: (geo=EU) and (eu=EU)
    hold the same records, and so do the root Europe and eu's Total."""
    tables = (("by_geo", ["geo", "year"], True), ("by_eu", ["eu", "year"], False))
    by_geo = [("EU", "2015"), ("EU", "2016"), ("Europe", "2015"), ("Europe", "2016"), ("Spain", "2014"),
              ("Spain", "2015"), ("Spain", "2016"), ("Portugal", "2015")]
    by_eu = [("EU", "2015"), ("EU", "2016"), ("Total", "2015"), ("Total", "2016")]
    verifier, items = vignette({"by_geo": by_geo, "by_eu": by_eu}, tables)
    assert all(own_audit(verifier, item).passed for item in items)
    # shared: eu's 12 cells (EU, nonEU, Total by year and in all); geo's Iceland cells are its nonEU cells
    assert audit_linked_suppression(verifier, items)["groups"] == [
        {"tables": ["main_protected.by_eu", "main_protected.by_geo"], "population": "raw.persons",
         "variable": "count", "cells": 20, "shared_cells": 12, "shared_suppressed": 6, "sensitive": 4, "audited": True}]
    verifier, items = vignette({"by_geo": by_geo, "by_eu": by_eu[:1] + by_eu[2:]}, tables)
    with pytest.raises(SdcError, match=r"^main_protected.by_geo suppresses the cell \(geo='EU', year='2016'\), and "
                                       r"main_protected.by_eu publishes 9 for the cell \(eu='EU', year='2016'\)"):
        audit_linked_suppression(verifier, items)

# ------------------------------------------------------------------------------------------ sdc publish
def suppression_models(name: str, dims: list[str], records: str = "source('raw', 'persons')") -> dict[str, str]:
    """suppression_cells -> suppression_primary -> sdc's suppression_pattern -> suppression_published."""
    listed = repr(dims)
    return {
        f"audit/{name}_cells.sql": f"{{{{ sdc.suppression_cells({records}, dims={listed}) }}}}\n",
        f"audit/{name}_primary.sql": f"{{{{ sdc.suppression_primary(ref('{name}_cells'), ['freq:3']) }}}}\n",
        f"audit/{name}_relations.sql": f"{{{{ sdc.suppression_constraints(ref('{name}_cells'), {listed}) }}}}\n",
        f"audit/{name}_pattern.py": (
            "def model(dbt, session):\n"
            "    from sdc.suppression.warehouse import suppression_pattern\n\n"
            f"    return suppression_pattern(session, dbt.ref('{name}_primary'), dbt.ref('{name}_relations'),\n"
            f"                                 dims={listed}, method='heuristic', cost='freq')\n"),
        f"protected/{name}.sql":
            f"{{{{ sdc.suppression_published(ref('{name}_pattern'), {listed}, value='freq') }}}}\n",
    }


# R1 holds four persons: two men and two women (by_sex: two primary cells in a row whose total 4 keeps each within
# [1, 3]), aged a1, a2, a3, a3 (by_age: 1 + 1 + 2, where a total of 4 keeps a3 within [1, 2], so by_age suppresses
# R1's total, which by_sex publishes). R2..R5 hold 18 persons each, three per sex and age group.
R1 = [("m", "a1"), ("m", "a2"), ("w", "a3"), ("w", "a3")]
LINKED_PERSONS = ("id,sex,region,age\n" + "".join(f"{i},{sex},R1,{age}\n" for i, (sex, age) in enumerate(R1))
                  + "".join(f"{4 + 18 * r + i},{'mw'[i % 2]},R{r + 2},a{i % 3 + 1}\n"
                            for r in range(4) for i in range(18)))


# R1's total, suppressed by by_age and published by by_sex
SHARED_MARGIN_REFUSED = (
    "sdc publish: error: main_protected.by_age suppresses the cell (region='R1', age='Total'), and "
    "main_protected.by_sex publishes 4 for the cell (region='R1', sex='Total'), which holds the same records of "
    "raw.persons: published together, the suppression is undone. A cell that two tables share needs one status "
    "in both: protect the tables with one pattern, or publish one of them\n")


def test_two_tables_that_share_a_margin_are_refused_together_and_published_alone(tmp_path, capsys):
    models = {"sources.yml": BASE["sources.yml"], **suppression_models("by_sex", ["region", "sex"]), **suppression_models("by_age", ["region", "age"])}
    built = make(tmp_path, models, persons=LINKED_PERSONS)
    # the leak: by_sex publishes R1's total, so by_age's three suppressed cells of R1 sum to 4, each at least 1:
    # (R1, a3) = 2 is at most 2, short of its protection (up to 3)
    assert rows(built.db, "select freq from main_protected.by_sex where region = 'R1' order by sex") == \
        [(4,), (None,), (None,)]
    assert rows(built.db, "select age, freq from main_protected.by_age where region = 'R1' order by age") == \
        [("Total", None), ("a1", None), ("a2", None), ("a3", None)]
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == SHARED_MARGIN_REFUSED
    assert not out.exists()
    for alone, other in (("by_sex", "by_age"), ("by_age", "by_sex")):
        assert publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=(other,))) == [alone]
        report = office_audit(built.db)
        assert report["linked_suppression"] == {"groups": [], "shared_cells": 0, "passed": True}


def test_a_table_over_a_view_of_the_same_records_is_linked(tmp_path, capsys):
    """Red team R4-14: the second table over a cleaning view that drops no record was another population by its
    relation name, so R1's total, suppressed in one and published in the other, passed. The records are the same:
    the tables are linked and refused as over raw.persons itself."""
    models = {"sources.yml": BASE["sources.yml"],
              "audit/persons_clean.sql": "{{ config(materialized='view') }}\n"
                                         "select * from {{ source('raw', 'persons') }} where age is not null\n",
              **suppression_models("by_sex", ["region", "sex"]),
              **suppression_models("by_age", ["region", "age"], "ref('persons_clean')")}
    built = make(tmp_path, models, persons=LINKED_PERSONS)
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == SHARED_MARGIN_REFUSED
    assert not out.exists()


def linked_pattern_models(tables: dict[str, list[str]]) -> dict[str, str]:
    """suppression_models of each table, with pattern models that solve all tables as one problem."""
    models = {}
    for name, dims in tables.items():
        models |= suppression_models(name, dims)
    for name in tables:
        models[f"audit/{name}_pattern.py"] = (
            "def model(dbt, session):\n"
            "    from sdc.suppression.warehouse import linked_suppression_pattern\n\n"
            "    # dbt finds the refs of a Python model in its statements: one assignment per table\n"
            "    tables = {}\n"
            + "".join(f"    tables['{n}'] = (dbt.ref('{n}_primary'), dbt.ref('{n}_relations'), {d!r})\n"
                      for n, d in tables.items())
            + "    records = dbt.source('raw', 'persons')\n"
            f"    return linked_suppression_pattern(session, '{name}', tables, records, method='heuristic', "
            "cost='freq')\n")
    return models


def test_tables_protected_by_one_pattern_in_dbt_pass_the_release_audit(tmp_path):
    """The two tables of the test above, each pattern model solving both tables as one problem
    (linked_suppression_pattern): R1's total has one status in both, and sdc publish's audit of the two tables
    together passes."""
    models = {"sources.yml": BASE["sources.yml"],
              **linked_pattern_models({"by_sex": ["region", "sex"], "by_age": ["region", "age"]})}
    built = make(tmp_path, models, persons=LINKED_PERSONS)
    by_sex = rows(built.db, "select sex, freq from main_protected.by_sex where region = 'R1' order by sex")
    by_age = rows(built.db, "select age, freq from main_protected.by_age where region = 'R1' order by age")
    assert by_sex[0] == ("Total", None) and by_age[0] == ("Total", None)  # the shared cell, suppressed in both
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, manifest=built.manifest) == ["by_age", "by_sex"]
    report = office_audit(built.db)
    (group,) = report["linked_suppression"]["groups"]
    assert group["audited"] and group["shared_cells"] > 0 and group["shared_suppressed"] > 0
