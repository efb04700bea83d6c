"""A published table mixes leaves, subtotals and totals: a BI tool's default SUM(count) over it added them up
(113k persons for a population of 18,790; new-user superset N4, issue 34). Every published table now carries per
dimension d the columns d__level, d__is_total, d__parent and d__sort to filter and sort on, computed by
ckm_published / suppression_published from the hierarchy of the call that made the cells; sdc publish computes
them again and refuses a table whose columns were changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdc.conventions import DIMENSION_COLUMN_SUFFIXES
from sdc.warehouse.dimension_names import check_dimension_names
from sdc.errors import SdcError
from sdc.release.publish import publish
from test_publication_gate import make
from test_publish import edited_manifest, rows

# South before North and R2 before R1 in the file: the sort follows the codes, not the file
REGIONS = "dimension,code,parent\nregion,Total,\nregion,South,Total\nregion,North,Total\n" \
          "region,R2,North\nregion,R1,North\nregion,R4,South\nregion,R3,South\n"
PERSONS = "id,sex,region,income\n" + "".join(f"{i},{'mw'[i % 2]},R{1 + i % 4},{1000 + i}\n" for i in range(400))
SECONDARY = ("def model(dbt, session):\n"
             "    from sdc.suppression.warehouse import suppression_pattern\n\n"
             "    return suppression_pattern(session, dbt.ref('supp_primary'), dbt.ref('supp_relations'),\n"
             "                                 dims=['sex', 'region'], method='heuristic', cost='freq')\n")
MODELS = {
    "sources.yml": "version: 2\nsources:\n  - name: raw\n    schema: raw\n    tables:\n      - name: persons\n",
    "audit/ckm_persons.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], "
                             "hierarchy=ref('regions')) }}\n",
    "protected/persons.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    "audit/supp_cells.sql": "{{ sdc.suppression_cells(source('raw', 'persons'), dims=['sex', 'region'], "
                            "hierarchy=ref('regions')) }}\n",
    "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:3']) }}\n",
    "audit/supp_relations.sql": "{{ sdc.suppression_constraints(ref('supp_cells'), ['sex', 'region'], "
                                "hierarchy=ref('regions')) }}\n",
    "audit/supp_pattern.py": SECONDARY,
    "protected/persons_suppressed.sql": "{{ sdc.suppression_published(ref('supp_pattern'), ['sex', 'region'], "
                                        "value='freq') }}\n",
    # a post-hook that moves a leaf one level up, or under another parent
    "protected/tampered_level.sql": "{{ config(post_hook=\"update {{ this }} set region__level = 1 "
                                    "where region = 'R1'\") }}\n{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    "protected/tampered_parent.sql": "{{ config(post_hook=\"update {{ this }} set region__parent = 'South' "
                                     "where region = 'R1'\") }}\n"
                                     "{{ sdc.suppression_published(ref('supp_pattern'), ['sex', 'region'], "
                                     "value='freq') }}\n",
}
# the same classification with an order of its own (a column sort): South before North, R2 before R1 (new user D9)
ORDERED_REGIONS = "dimension,code,parent,sort\nregion,Total,,0\nregion,South,Total,1\nregion,North,Total,2\n" \
                  "region,R2,North,1\nregion,R1,North,2\nregion,R4,South,1\nregion,R3,South,2\n"
MODELS |= {
    "audit/ckm_ordered.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], "
                             "hierarchy=ref('regions_ordered')) }}\n",
    "protected/ordered.sql": "{{ sdc.ckm_published(ref('ckm_ordered')) }}\n",
}
# leaves at different depths, as statistical classifications have them (issue 50): R3 and R4 directly under the
# total, R1 and R2 under North
UNBALANCED_REGIONS = "dimension,code,parent\nregion,Total,\nregion,North,Total\nregion,R3,Total\n" \
                     "region,R4,Total\nregion,R2,North\nregion,R1,North\n"
MODELS |= {
    "audit/ckm_unbalanced.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], "
                                "hierarchy=ref('regions_unbalanced')) }}\n",
    "protected/unbalanced.sql": "{{ sdc.ckm_published(ref('ckm_unbalanced')) }}\n",
    "audit/unb_cells.sql": "{{ sdc.suppression_cells(source('raw', 'persons'), dims=['sex', 'region'], "
                           "hierarchy=ref('regions_unbalanced')) }}\n",
    "audit/unb_primary.sql": "{{ sdc.suppression_primary(ref('unb_cells'), ['freq:3']) }}\n",
    "audit/unb_relations.sql": "{{ sdc.suppression_constraints(ref('unb_cells'), ['sex', 'region'], "
                               "hierarchy=ref('regions_unbalanced')) }}\n",
    "audit/unb_pattern.py": SECONDARY.replace("supp_primary", "unb_primary").replace("supp_relations", "unb_relations"),
    "protected/unbalanced_suppressed.sql": "{{ sdc.suppression_published(ref('unb_pattern'), ['sex', 'region'], "
                                           "value='freq') }}\n",
}
PROTECTED = [Path(p).stem for p in MODELS if p.startswith("protected/")]
# (code, level, is_total, parent, sort)
REGION_COLUMNS = [("Total", 0, True, None, 0), ("North", 1, True, "Total", 1), ("R1", 2, False, "North", 2),
                  ("R2", 2, False, "North", 3), ("South", 1, True, "Total", 4), ("R3", 2, False, "South", 5),
                  ("R4", 2, False, "South", 6)]
SEX_COLUMNS = [("Total", 0, True, None, 0), ("m", 1, False, "Total", 1), ("w", 1, False, "Total", 2)]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dimension_columns")
    (root / "regions.csv").write_text(REGIONS)
    (root / "regions_ordered.csv").write_text(ORDERED_REGIONS)
    (root / "regions_unbalanced.csv").write_text(UNBALANCED_REGIONS)
    return make(root, MODELS, persons=PERSONS, seeds={name: root / name for name in (
        "regions.csv", "regions_ordered.csv", "regions_unbalanced.csv")})


def only(built, tmp, names):
    return edited_manifest(built, tmp, untag=tuple(n for n in PROTECTED if n not in names))


def described(db, table: str, dim: str) -> list[tuple]:
    return rows(db, f"select distinct {dim}, {dim}__level, {dim}__is_total, {dim}__parent, {dim}__sort "
                    f"from {table} order by {dim}__sort")


@pytest.mark.parametrize("table", ["main_protected.persons", "main_protected.persons_suppressed"])
def test_each_dimension_gets_its_level_total_flag_parent_and_pre_order(built, table):
    assert described(built.db, table, "region") == REGION_COLUMNS
    assert described(built.db, table, "sex") == SEX_COLUMNS


def test_the_columns_come_after_the_cells_and_the_audit_table_is_unchanged(built):
    columns = [c for (c,) in rows(built.db, "select column_name from duckdb_columns() where schema_name = "
                                            "'main_protected' and table_name = 'persons' order by column_index")]
    assert columns == ["sex", "region", "count"] + [f"{d}{s}" for d in ("sex", "region")
                                                    for s in DIMENSION_COLUMN_SUFFIXES.values()]
    audit = {c for (c,) in rows(built.db, "select column_name from duckdb_columns() where table_name = 'ckm_persons'")}
    assert not any(c.endswith(tuple(DIMENSION_COLUMN_SUFFIXES.values())) for c in audit)


def test_a_bi_query_on_one_level_sums_to_the_population(built):
    """One cell per group: the regions directly under the total, over both sexes; SUM over the whole table adds
    every subtotal and total to the leaves."""
    by_region = rows(built.db, "select region, count from main_protected.persons "
                               "where region__level = 1 and sex__level = 0 order by region__sort")
    assert [r for r, _ in by_region] == ["North", "South"]
    original = rows(built.db, "select sum(original) from main_audit.ckm_persons where region in ('North', 'South') "
                              "and sex = 'Total'")[0][0]
    noise = rows(built.db, "select max(abs(v)) from main.sdc_ptable")[0][0]
    assert original == 400
    assert abs(sum(c for _, c in by_region) - 400) <= 2 * noise
    assert rows(built.db, "select sum(count) from main_protected.persons")[0][0] > 3 * 400


def test_the_release_publishes_them_and_keeps_the_ledger_s_cells(built, tmp_path):
    out = tmp_path / "pub.duckdb"
    ledger = tmp_path / "ledger.duckdb"
    assert publish(built.db, out, manifest=only(built, tmp_path, ["persons"]), ledger=ledger) == ["persons"]
    assert described(out, "persons", "region") == REGION_COLUMNS
    cells = rows(ledger, "select cell, published from cells")
    assert len(cells) == 3 * 7
    assert all(set(json.loads(cell)) == {"sex", "region"} and set(json.loads(value)) == {"count"}
               for cell, value in cells)
    out = tmp_path / "suppressed.duckdb"
    assert publish(built.db, out, manifest=only(built, tmp_path, ["persons_suppressed"])) == ["persons_suppressed"]
    assert described(out, "persons_suppressed", "sex") == SEX_COLUMNS


def test_a_code_list_with_a_sort_column_orders_the_codes_by_it(built, tmp_path):
    """New user D9: d__sort ordered the codes under one parent by their spelling only (High School before Less
    Than High School); a column sort in the code list gives a classification's own order, and sdc publish
    computes the same columns again."""
    ordered = [("Total", 0, True, None, 0), ("South", 1, True, "Total", 1), ("R4", 2, False, "South", 2),
               ("R3", 2, False, "South", 3), ("North", 1, True, "Total", 4), ("R2", 2, False, "North", 5),
               ("R1", 2, False, "North", 6)]
    assert described(built.db, "main_protected.ordered", "region") == ordered
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, manifest=only(built, tmp_path, ["ordered"])) == ["ordered"]
    assert described(out, "ordered", "region") == ordered


UNBALANCED_COLUMNS = [("Total", 0, True, None, 0), ("North", 1, True, "Total", 1), ("R1", 2, False, "North", 2),
                      ("R2", 2, False, "North", 3), ("R3", 1, False, "Total", 4), ("R4", 1, False, "Total", 5)]


def test_leaves_at_different_depths_give_each_code_one_cell_with_its_own_level(built, tmp_path):
    """Issue 50: a hierarchy whose leaves lie at different depths was refused; now every code is one cell (R3, a
    leaf directly under the total, is no second time a cell one level down), a leaf above the deepest level is
    no total, and each cell is the cell of the same records under the balanced hierarchy: the same original count,
    cell key and published count. The suppression pattern of the same table passes the audit, and sdc publish
    verifies both tables."""
    assert described(built.db, "main_protected.unbalanced", "region") == UNBALANCED_COLUMNS
    assert described(built.db, "main_protected.unbalanced_suppressed", "region") == UNBALANCED_COLUMNS
    cells = "select sex, region, original, cell_key, count from main_audit.{} where region <> 'South' order by 1, 2"
    unbalanced = rows(built.db, cells.format("ckm_unbalanced"))
    assert len(unbalanced) == 3 * 6
    assert unbalanced == rows(built.db, cells.format("ckm_persons"))
    # the cells with records (sex and region go together in PERSONS: R1 and R3 hold only m, R2 and R4 only w)
    assert rows(built.db, "select count(*), count(distinct (sex, region)) from main_audit.unb_cells") == [(14, 14)]
    assert rows(built.db, "select sum(freq) from main_audit.unb_cells where region in ('North', 'R3', 'R4') "
                          "and sex = 'Total'") == [(400,)]
    for name in ("unbalanced", "unbalanced_suppressed"):  # one method per population and release
        out = tmp_path / f"{name}.duckdb"
        assert publish(built.db, out, manifest=only(built, tmp_path, [name])) == [name]
        assert described(out, name, "region") == UNBALANCED_COLUMNS


@pytest.mark.parametrize("model, message", [
    ("tampered_level", r"main_protected.tampered_level .*differs from ckm_count over raw.persons \(recomputed from "
                       r"the microdata\) in the cell \(sex='\w+', region='R1'\): region__level is 1 there and 2 in "
                       r"sdc's recomputation"),
    ("tampered_parent", r"main_protected.tampered_parent .*differs from suppression_published of sex, region \(its "
                        r"dimension columns computed by sdc\) in the cell \(sex='\w+', region='R1'\): region__parent "
                        r"is 'South' there and 'North' in sdc's recomputation"),
])
def test_changed_dimension_columns_are_refused_naming_the_column(built, tmp_path, model, message):
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=message):
        publish(built.db, out, manifest=only(built, tmp_path, [model]))
    assert not out.exists()


@pytest.mark.parametrize("name", [f"region{s}" for s in DIMENSION_COLUMN_SUFFIXES.values()] + ["Age__SORT"])
def test_no_dimension_may_end_like_the_dimension_columns(name):
    with pytest.raises(SdcError, match=f"dimension '{name}' ends like the columns published tables add per dimension"):
        check_dimension_names(["sex", name], ())
