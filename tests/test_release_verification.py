"""sdc publish verifies content, not lineage (issue: a release is protected as a whole; red team round 3, R3-1,
R3-2, R3-6). Each model below beat the gate on main f5fda9a, which decided from what a relation says it reads:
a DuckDB macro or variable filled by a hook, a post-hook that rewrites a step's table, a forged step, a
"pattern" of one's own. Now every published relation is compared, cell by cell, with sdc's own recomputation
from the microdata (python/sdc/release/verify.py), and each of them is refused, naming the cell and both values.

One dbt project holds every case as a tagged model; each test publishes with a manifest in which only its case
and the protected table it reads are tagged."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sdc.errors import SdcError
from sdc.release.publish import publish
from test_publication_gate import BASE, SUPPRESSION_AND_CKM, make
from test_publish import edited_manifest, office_audit, public_audit, rows

MACRO_HOOK = ("create or replace macro main.sdc_fmt_n(s, x) as (select count(*) from raw.persons as r "
              "where r.region = s and (x = 'Total' or r.sex = x))")
VARIABLE_HOOK = ("set variable sdc_n = (select map(list(region || '/' || sex), list(n)) from "
                 "(select region, sex, count(*) as n from raw.persons group by all))")
CASES = {
    # R3-1 N1: a view that calls a macro a pre-hook made; the macro counts the raw records
    "protected/macro_view.sql": f"{{{{ config(materialized='view', pre_hook=\"{MACRO_HOOK}\") }}}}\n"
                                "select region, sex, main.sdc_fmt_n(region, sex) as count from {{ ref('persons') }} "
                                "where region <> 'Total'\n",
    # R3-1 N2: the same as a table with the build record
    "protected/macro_table.sql": f"{{{{ config(post_hook=\"{{{{ sdc.build_record() }}}}\", pre_hook=\"{MACRO_HOOK}\") }}}}\n"
                                 "select region, sex, main.sdc_fmt_n(region, sex) as count from {{ ref('persons') }} "
                                 "where region <> 'Total'\n",
    # R3-1 N3: a DuckDB variable a pre-hook filled with the raw counts
    "protected/variable_table.sql": f"{{{{ config(post_hook=\"{{{{ sdc.build_record() }}}}\", pre_hook=\"{VARIABLE_HOOK}\") }}}}\n"
                                    "select region, sex, getvariable('sdc_n')[region || '/' || sex] as count "
                                    "from {{ ref('persons') }} where region <> 'Total' and sex <> 'Total'\n",
    # R3-1 N4: a protection step whose table a post-hook overwrites with the originals
    "protected/rewritten.sql": "{{ config(post_hook=\"update {{ this }} as p set count = a.original from "
                               "main_audit.ckm_persons as a where a.region = p.region and a.sex = p.sex\") }}\n"
                               "{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
    # R3-1 N5: the CKM step's own table rewritten (count = original, noise 0: ckm_published's own check passes)
    "audit/ckm_zeroed.sql": "{{ config(post_hook=\"update {{ this }} set count = original, noise = 0\") }}\n"
                            "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "protected/zeroed.sql": "{{ sdc.ckm_published(ref('ckm_zeroed')) }}\n",
    # R3-6: sdc.step called by hand around a plain count, with the call of a real ckm_count in its header
    "audit/forged_count.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                              "{{ sdc.step('ckm_count', [source('raw', 'persons')], \"select coalesce(sex, 'Total') as sex, "
                              "coalesce(region, 'Total') as region, count(*) as original, 0 as noise, count(*) as count "
                              "from \" ~ source('raw', 'persons') ~ \" group by cube(sex, region)\", "
                              "{'call': {'dims': ['sex', 'region'], 'ptable': 'main.sdc_ptable'}}) }}\n",
    "protected/forged.sql": "{{ sdc.ckm_published(ref('forged_count')) }}\n",
    # the same forged step without a call
    "audit/forged_bare_count.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                             "{{ sdc.step('ckm_count', [source('raw', 'persons')], \"select coalesce(sex, 'Total') as sex, "
                             "coalesce(region, 'Total') as region, count(*) as original, 0 as noise, count(*) as count "
                             "from \" ~ source('raw', 'persons') ~ \" group by cube(sex, region)\") }}\n",
    "protected/forged_bare.sql": "{{ sdc.ckm_published(ref('forged_bare_count')) }}\n",
    # a forged call that names the cells sdc would sum in place of the microdata (ckm_count's leaf_cells)
    "audit/forged_cells_count.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n"
                                    "{{ sdc.step('ckm_count', [source('raw', 'persons')], \"select coalesce(sex, 'Total') as sex, "
                                    "coalesce(region, 'Total') as region, count(*) as original, 0 as noise, count(*) as count "
                                    "from \" ~ source('raw', 'persons') ~ \" group by cube(sex, region)\", "
                                    "{'call': {'dims': ['sex', 'region'], 'ptable': 'main.sdc_ptable', "
                                    "'leaf_cells': 'main_audit.forged_cells_count'}}) }}\n",
    "protected/forged_cells.sql": "{{ sdc.ckm_published(ref('forged_cells_count')) }}\n",
    # R3-2: suppression_published over a "pattern" of one's own: every cell its original, status published
    "audit/own_pattern.sql": "select coalesce(sex, 'Total') as sex, coalesce(region, 'Total') as region, "
                             "count(*) as freq, 'published' as status, cast(count(*) as varchar) as published_text "
                             "from {{ source('raw', 'persons') }} group by cube(sex, region)\n",
    "protected/own_pattern_published.sql": "{{ sdc.suppression_published(ref('own_pattern'), ['sex', 'region'], "
                                           "value='freq') }}\n",
    # R3-2 with sdc's primary table behind it: the pattern publishes the cells the rule flags
    "audit/lax_pattern.sql": "select * exclude (status), 'published' as status, cast(freq as varchar) as published_text "
                             "from {{ ref('supp_primary') }}\n",
    "protected/lax_published.sql": "{{ sdc.suppression_published(ref('lax_pattern'), ['sex', 'region'], value='freq') }}\n",
}
# three regions of one or two persons: the freq:3 rule has primary cells
PERSONS = "id,sex,region,income\n" + "".join(
    f"{i},{'mw'[i % 2]},R{9 if i in (0, 3, 200) else 8 if i in (7, 10, 12) else i % 5},{1000 + (i * 7919) % 5000}\n"
    for i in range(400))


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return make(tmp_path_factory.mktemp("verify"), {**SUPPRESSION_AND_CKM, **CASES}, persons=PERSONS)


def tagged(built, tmp, names):
    every = [Path(p).stem for p in {**SUPPRESSION_AND_CKM, **CASES} if p.startswith("protected/")]
    return edited_manifest(built, tmp, untag=tuple(n for n in every if n not in names))


@pytest.mark.parametrize("model, message", [
    # R3-1 N1-N3, relations of one's own: refused as such since R4-2
    ("macro_view", r"main_protected.macro_view \(model.pubtest.macro_view\) is a relation of one's own"),
    ("macro_table", r"main_protected.macro_table \(model.pubtest.macro_table\) is a relation of one's own"),
    ("variable_table", r"main_protected.variable_table \(model.pubtest.variable_table\) is a relation of one's own"),
    ("rewritten", r"main_protected.rewritten \(model.pubtest.rewritten\) differs from ckm_count over raw.persons \(recomputed from the microdata\) "
                  r"in the cell \(.*\): count is \d+ there and \d+ in sdc's recomputation"),
    ("zeroed", r"main_protected.zeroed .*differs from ckm_count over raw.persons .* in the cell"),
    ("forged", r"main_protected.forged .*differs from ckm_count over raw.persons .* in the cell"),
    ("forged_bare", r"main_audit.forged_bare_count is read by ckm_published, but its build record names no ckm_count or "
                    r"ckm_sum call that sdc can compute again"),
    ("forged_cells", r"main_audit.forged_cells_count has a build record whose call names leaf_cells, which no model passes"),
    ("own_pattern_published", r"main_audit.own_pattern is read by suppression_published, but no suppression_primary "
                              r"table that it was solved from can be found"),
    ("lax_published", r"main_protected.lax_published .* publishes \d+ in the cell \(sex='(m|w|Total)', region='R[89]'\), "
                      r"which the primary rules flag as unsafe"),
])
def test_a_relation_whose_content_is_not_sdcs_recomputation_is_refused(cases, tmp_path, model, message):
    # every case publishes numbers that are not the CKM's or the pattern's
    out = tmp_path / "pub.duckdb"
    manifest = tagged(cases, tmp_path, [model])
    with pytest.raises(SdcError, match=message):
        publish(cases.db, out, manifest=manifest)
    assert not out.exists()


def test_the_cases_hold_originals_where_the_ckm_publishes_noise(cases):
    """The refused relations above are no false alarms: each shows the originals somewhere."""
    exact = rows(cases.db, "select count(*) filter (where z.count = a.original), count(*) filter (where a.noise <> 0) "
                           "from main_protected.zeroed as z join main_audit.ckm_persons as a using (sex, region)")[0]
    assert exact[0] == exact[1] + rows(cases.db, "select count(*) from main_audit.ckm_persons where noise = 0")[0][0]
    assert rows(cases.db, "select count(*) from main_protected.rewritten as r join main_audit.ckm_persons as a "
                          "using (sex, region) where r.count <> a.original") == [(0,)]
    # the lax pattern publishes the one-record cells that sdc's pattern suppresses
    assert rows(cases.db, "select freq from main_protected.lax_published where sex = 'w' and region = 'R8'") == [(1,)]
    assert rows(cases.db, "select freq from main_protected.persons_suppressed where sex = 'w' and region = 'R8'") == [(None,)]


def test_the_protection_steps_and_views_over_them_are_published(cases, tmp_path):
    out = tmp_path / "pub.duckdb"
    assert publish(cases.db, out, manifest=tagged(cases, tmp_path, ["persons"])) == ["persons"]
    assert publish(cases.db, out, manifest=tagged(cases, tmp_path, ["persons_suppressed"])) == ["persons_suppressed"]
    assert rows(out, "select count(*) from persons_suppressed where freq is null") != [(0,)]


# red team R4-2: relations of one's own that carry the originals past any recomputation
LITERALS = ("{%- if execute -%}{%- set rows = run_query(\"select coalesce(sex, 'Total'), coalesce(region, 'Total'), "
            "count(*) from raw.persons group by cube(sex, region) order by 1, 2\") -%}{%- endif -%}")
OWN = {
    # the red team's view: a Jinja run_query at compile time wrote the originals into the SQL as literals
    "protected/r4litv.sql": "{{ config(materialized='view') }}\n" + LITERALS + "\n"
                            "select p.sex, p.region, t.n as count from {{ ref('persons') }} as p join (values "
                            "{%- if execute -%}{%- for r in rows %} ('{{ r[0] }}', '{{ r[1] }}', {{ r[2] }})"
                            "{{ ',' if not loop.last }}{% endfor %}{%- else -%}('m', 'R0', 0){%- endif %}"
                            ") as t(sex, region, n) using (sex, region)\n",
    # ... and as a table that reads no relation at all
    "protected/r4lit.sql": "{{ config(post_hook=\"{{ sdc.build_record() }}\") }}\n" + LITERALS + "\n"
                           "select * from (values {%- if execute -%}{%- for r in rows %} ('{{ r[0] }}', '{{ r[1] }}', "
                           "{{ r[2] }}){{ ',' if not loop.last }}{% endfor %}{%- else -%}('m', 'R0', 0){%- endif %}) "
                           "as t(sex, region, count)\n",
    # a table a hook rewrites with the originals after the build
    "protected/men.sql": "{{ config(post_hook=[\"{{ sdc.build_record() }}\", \"update {{ this }} as m set count = "
                         "a.original from main_audit.ckm_persons as a where a.region = m.region and a.sex = 'm'\"]) }}\n"
                         "select region, count from {{ ref('persons') }} where sex = 'm'\n",
    # the catalog: a view of the database's own statistics (the estimated size of the raw table)
    "protected/catalog.sql": "{{ config(materialized='view') }}\n"
                             "select p.sex, p.region, p.count, t.estimated_size from {{ ref('persons') }} as p cross "
                             "join (select estimated_size from duckdb_tables() where table_name = 'persons' and "
                             "schema_name = 'raw') as t\n",
    # a plain BI view, which its SQL could make carry anything
    "protected/men_view.sql": "{{ config(materialized='view') }}\n"
                              "select region, count from {{ ref('persons') }} where sex = 'm'\n",
}


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    return make(tmp_path_factory.mktemp("own"), {**BASE, **OWN})


@pytest.mark.parametrize("model", [Path(p).stem for p in OWN])
def test_a_relation_of_ones_own_is_refused_whatever_its_sql_carries(own, tmp_path, model):
    """Red team R4-2: a model whose SQL a Jinja run_query wrote from the raw data at compile time reads no relation
    (or only a protection step) and passed the gate and the verification, which ran its SQL again: the publication
    held every original. Readers now get sdc's steps and seeds only: every relation of one's own is refused, naming
    it, whatever it carries (literals, a hook's rewrite, the catalog's statistics) or does not."""
    out = tmp_path / "pub.duckdb"
    manifest = edited_manifest(own, tmp_path, untag=tuple(Path(p).stem for p in OWN if Path(p).stem != model))
    why = r"it reads the table function 'DUCKDB_TABLES\(\)'" if model == "catalog" else \
        r"is a relation of one's own \(a view or table that no sdc step built\)"
    with pytest.raises(SdcError, match=rf"^main_protected.{model} \(model.pubtest.{model}\) {why}"):
        publish(own.db, out, manifest=manifest)
    assert not out.exists()


def test_the_literals_of_a_compile_time_query_are_the_originals(own):
    """The refused relations above are no false alarms: the literals hold the raw counts, the CKM noise."""
    literal = dict(((s, r), c) for s, r, c in rows(own.db, "select * from main_protected.r4lit"))
    original = dict(((s, r), c) for s, r, c in rows(own.db, "select sex, region, original from main_audit.ckm_persons"))
    assert literal == original
    assert rows(own.db, "select count(*) from main_protected.r4litv as v join main_audit.ckm_persons as a "
                        "using (sex, region) where v.count <> a.original") == [(0,)]
    assert rows(own.db, "select count(*) from main_audit.ckm_persons where noise <> 0")[0][0] > 0


# ------------------------------------------------------------------------------------------ the release audit
ZEROS = {
    **BASE,
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income') }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
}
# eight regions of three persons each, of both sexes: a count of 1 or 2 is published as 0 or 3 and more (js = 2),
# so some are false zeros (a region of fewer than three persons is refused: its code tells what js hides)
LONE = "id,sex,region,income\n" + "".join(
    f"{i},{'mw'[i % 2]},{f'L{i // 3}' if i < 24 else f'R{i % 5}'},{1000 + (i * 7919) % 5000}.25\n" for i in range(400))


def magnitude_project(root, models, persons, seeds=None):
    from test_publication_gate import MAGNITUDE_VARS, NUMS_SEED_TYPES, REPO, dbt

    built = make(root, models, persons=persons, build=False,
                 seeds={"sdc_nums_ptable.csv": REPO / "demo" / "seeds" / "sdc_nums_ptable.csv", **(seeds or {})})
    project_file = built.project / "dbt_project.yml"
    project_file.write_text(project_file.read_text().replace("seeds:\n  pubtest:\n", "seeds:\n  pubtest:\n" + NUMS_SEED_TYPES)
                            + MAGNITUDE_VARS)
    dbt(built, "build")
    return built


def test_a_magnitude_beside_a_count_published_as_zero_is_refused(tmp_path, capsys):
    """R3-3: the count table publishes 0 for a cell with one record, the magnitude table its income: the reader
    learns that the cell holds records (and about what they earn). Each table alone is published."""
    from sdc.cli import main

    built = magnitude_project(tmp_path, ZEROS, LONE)
    false_zeros = rows(built.db, "select c.sex, c.region, i.value from main_audit.ckm_persons as c "
                                 "join main_protected.income as i using (sex, region) "
                                 "where c.count = 0 and c.original > 0 and c.region like 'L%' order by 1, 2")
    assert false_zeros and all(value != 0 for _, _, value in false_zeros)  # the leak is there to find
    out = tmp_path / "pub.duckdb"
    assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sdc publish: error: the release tells a published zero from an empty cell: "
                          "main_protected.persons publishes the count 0 for the cell (sex=")
    assert "and main_protected.income publishes" in err and not out.exists()
    for alone in ("persons", "income"):
        other = "income" if alone == "persons" else "persons"
        assert publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=(other,))) == [alone]
    assert public_audit(out)["checks"]["zeros"] == "passed"
    assert office_audit(built.db)["checks"]["zeros"] == "passed"


def view_and_table(name: str, view: str, step: str, arguments: str) -> dict[str, str]:
    """A view of the microdata (persons_<name>) and a published table of it: main_protected.<name>."""
    models = {f"audit/persons_{name}.sql": "{{ config(materialized='view') }}\n" + view + "\n"}
    if step != "suppression":
        return {**models, f"audit/ckm_{name}.sql": f"{{{{ sdc.{step}(ref('persons_{name}'), {arguments}) }}}}\n",
                f"protected/{name}.sql": f"{{{{ sdc.ckm_published(ref('ckm_{name}')) }}}}\n"}
    return {**models,
            f"audit/supp_{name}_cells.sql": f"{{{{ sdc.suppression_cells(ref('persons_{name}'), {arguments}) }}}}\n",
            f"audit/supp_{name}_primary.sql": f"{{{{ sdc.suppression_primary(ref('supp_{name}_cells'), "
                                               "['freq:3', 'p:10']) }}\n",
            f"audit/supp_{name}_relations.sql": f"{{{{ sdc.suppression_constraints(ref('supp_{name}_cells'), "
                                                 "['sex', 'region']) }}\n",
            f"audit/supp_{name}_pattern.py": (
                "def model(dbt, session):\n"
                "    from sdc.suppression.warehouse import suppression_pattern\n\n"
                f"    return suppression_pattern(session, dbt.ref('supp_{name}_primary'), "
                f"dbt.ref('supp_{name}_relations'),\n"
                "                               dims=['sex', 'region'], magnitude=True, method='heuristic')\n"),
            f"protected/{name}.sql": f"{{{{ sdc.suppression_published(ref('supp_{name}_pattern'), ['sex', 'region'], "
                                     "value='value') }}\n"}


# the same records under other names, some of them, hidden counts, listed cells and a count in disguise (round 4)
BY_RECORDS = {
    **ZEROS,
    "audit/persons_land.sql": "{{ config(materialized='view') }}\n"
                              "select id, region as land, sex as geschlecht, income, rk from {{ source('raw', 'persons') }}\n",
    "audit/ckm_income_land.sql": "{{ sdc.ckm_sum(ref('persons_land'), dims=['land'], value='income') }}\n",
    "protected/income_land.sql": "{{ sdc.ckm_published(ref('ckm_income_land')) }}\n",
    "audit/ckm_land.sql": "{{ sdc.ckm_count(ref('persons_land'), dims=['land']) }}\n",
    "protected/land.sql": "{{ sdc.ckm_published(ref('ckm_land')) }}\n",
    "audit/persons_clean.sql": "{{ config(materialized='view') }}\n"
                               "select * from {{ source('raw', 'persons') }} where income is not null\n",
    "audit/ckm_income_clean.sql": "{{ sdc.ckm_sum(ref('persons_clean'), dims=['sex', 'region'], value='income') }}\n",
    "protected/income_clean.sql": "{{ sdc.ckm_published(ref('ckm_income_clean')) }}\n",
    "audit/persons_small.sql": "{{ config(materialized='view') }}\n"
                               "select * from {{ source('raw', 'persons') }} where region like 'L%'\n",
    "audit/ckm_income_small.sql": "{{ sdc.ckm_sum(ref('persons_small'), dims=['sex', 'region'], value='income') }}\n",
    "protected/income_small.sql": "{{ sdc.ckm_published(ref('ckm_income_small')) }}\n",
    "audit/ckm_thr.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], threshold=4) }}\n",
    "protected/thr.sql": "{{ sdc.ckm_published(ref('ckm_thr')) }}\n",
    "audit/ckm_incomplete.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], complete=false) }}\n",
    "protected/incomplete.sql": "{{ sdc.ckm_published(ref('ckm_incomplete')) }}\n",
    "audit/persons_one.sql": "{{ config(materialized='view') }}\nselect *, 1 as one from {{ source('raw', 'persons') }}\n",
    "audit/ckm_ones.sql": "{{ sdc.ckm_sum(ref('persons_one'), dims=['sex', 'region'], value='one') }}\n",
    "protected/ones.sql": "{{ sdc.ckm_published(ref('ckm_ones')) }}\n",
    # issue 48's red team: a constant under the loaded column's name (the check read raw.persons' income), and
    # ones but for one record
    **view_and_table("flat", "select id, sex, region, rk, 1 as income from {{ source('raw', 'persons') }}",
                     "ckm_sum", "dims=['sex', 'region'], value='income'"),
    **view_and_table("nearly", "select *, case when id = 7 then 2 else 1 end as one from {{ source('raw', 'persons') }}",
                     "ckm_sum", "dims=['sex', 'region'], value='one'"),
    # a staging model of the dbt style: CTEs, a derived value, a filter (sdc publish stopped with a traceback)
    **view_and_table("staged", "with source as (select * from {{ source('raw', 'persons') }}), staged as (select rk, "
                               "sex, region, income / 1000.0 as income_k from source where income is not null) "
                               "select * from staged", "ckm_sum", "dims=['sex', 'region'], value='income_k'"),
    # the incomes under another column name, published by cell suppression beside the CKM's incomes
    **view_and_table("einkommen", "select rk, sex, region, income as einkommen from {{ source('raw', 'persons') }}",
                     "suppression", "dims=['sex', 'region'], value='einkommen'"),
    # microdata of one's own that is not record-wise, or computes the record keys (the red team's F1, F2)
    **view_and_table("shifted", "select * replace ((rk + 104729) % 100000000 as rk) from {{ source('raw', 'persons') }}",
                     "ckm_count", "dims=['sex', 'region']"),
    **view_and_table("rehashed", "select id, sex, region, income, hash(id) % 100000000 as rk "
                                 "from {{ source('raw', 'persons') }}", "ckm_count", "dims=['sex', 'region']"),
    **view_and_table("counted", "select rk, sex, region || ' n=' || cast(count(*) over (partition by region, sex) "
                                "as varchar) as cellcode from {{ source('raw', 'persons') }}",
                     "ckm_count", "dims=['sex', 'cellcode']"),
    **view_and_table("joined", "select p.rk, p.sex, q.region from {{ source('raw', 'persons') }} as p join "
                               "{{ source('raw', 'persons') }} as q on q.id = p.id + 1", "ckm_count",
                     "dims=['sex', 'region']"),
    **view_and_table("coded", "select rk, 'id' || id || ' income=' || income as cellcode "
                              "from {{ source('raw', 'persons') }}", "ckm_count", "dims=['cellcode'], totals='none'"),
    # the second red team of issue 48: a column list that renames by position (the hashed k becomes rk), a filter
    # by a column's position (#4 is rk), ones plus a billionth of the id, a hierarchy and a ptable that are
    # models, and a ptable seed whose noise is +1000 on average
    **view_and_table("aliased", "with c as (select id, sex, region, rk, hash(id, 1) % 100000000 as k "
                                "from {{ source('raw', 'persons') }}) select * from c as c(id, sex, region, k, rk)",
                     "ckm_count", "dims=['sex', 'region']"),
    **view_and_table("positional", "select id, sex, region, rk from {{ source('raw', 'persons') }} where #4 < 1000000",
                     "ckm_count", "dims=['sex', 'region']"),
    **view_and_table("nearones", "select *, 1 + id * 1e-9 as one from {{ source('raw', 'persons') }}",
                     "ckm_sum", "dims=['sex', 'region'], value='one'"),
    "audit/hier_leak.sql": "{{ config(materialized='table') }}\n"
                           "select 'region' as dimension, 'Total' as code, cast(null as varchar) as parent union all "
                           "select distinct 'region', region, 'Total' from {{ source('raw', 'persons') }} union all "
                           "select 'region', region || ' has ' || count(*), 'Total' from {{ source('raw', 'persons') }} "
                           "group by region\n",
    "audit/ckm_hleak.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region'], hierarchy=ref('hier_leak')) }}\n",
    "protected/hleak.sql": "{{ sdc.ckm_published(ref('ckm_hleak')) }}\n",
    "audit/pt_copy.sql": "{{ config(materialized='table') }}\nselect * from {{ ref('sdc_ptable') }}\n",
    "audit/ckm_ptcopy.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex'], ptable=ref('pt_copy')) }}\n",
    "protected/ptcopy.sql": "{{ sdc.ckm_published(ref('ckm_ptcopy')) }}\n",
    "audit/ckm_ptbiased.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex'], ptable=ref('pt_biased')) }}\n",
    "protected/ptbiased.sql": "{{ sdc.ckm_published(ref('ckm_ptbiased')) }}\n",
}
BY_RECORDS_PUBLISHED = [Path(name).stem for name in BY_RECORDS if name.startswith("protected/")]


@pytest.fixture(scope="module")
def by_records(tmp_path_factory):
    from test_publication_gate import REPO

    root = tmp_path_factory.mktemp("records")
    lines = (REPO / "demo" / "seeds" / "sdc_ptable.csv").read_text(encoding="utf-8").splitlines()
    biased = [lines[0]]  # every count i >= 1 moved by 1000 more: j = i + v stays, the intervals too
    for line in lines[1:]:
        i, j, p, v, low, high = line.split(",")
        if int(i) >= 1:
            j, v = str(int(j) + 1000), str(int(v) + 1000)
        biased.append(",".join([i, j, p, v, low, high]))
    (root / "pt_biased.csv").write_text("\n".join(biased) + "\n", encoding="utf-8")
    return magnitude_project(root / "project", BY_RECORDS, LONE, seeds={"pt_biased.csv": root / "pt_biased.csv"})


def only(built, tmp_path, *names):
    return edited_manifest(built, tmp_path, untag=tuple(n for n in BY_RECORDS_PUBLISHED if n not in names))


@pytest.mark.parametrize("tables, message", [
    # R4-13 (a): the incomes by land, a view that renames region: the same records as the counts' regions
    (("persons", "income_land"), r"main_protected.persons publishes the count 0 for the cell \(sex='Total', "
                                 r"region='L\d'\), and main_protected.income_land publishes [\d.]+ for the same cell "
                                 r"\(land='L\d'\) of the same records"),
    # R4-13 (b): a cleaning view that drops no record
    (("persons", "income_clean"), r"main_protected.persons publishes the count 0 for the cell \(sex='\w+', "
                                  r"region='L\d'\), and main_protected.income_clean publishes [\d.]+ for the same "
                                  r"cell \(sex='\w+', region='L\d'\) of the same records"),
    # some of the records: a view of the small regions only
    (("persons", "income_small"), r"main_protected.persons publishes the count 0 for the cell \(sex='\w+', "
                                  r"region='L\d'\), and main_protected.income_small publishes [\d.]+ for the same "
                                  r"cell \(sex='\w+', region='L\d'\) of some of its records"),
    # R4-10: a count that a threshold hides (NULL for empty cells and small ones alike) beside the magnitudes
    (("thr", "income"), r"main_protected.thr publishes no count \(NULL: below its threshold\) for the cell "
                        r"\(sex='\w+', region='L\d'\), and main_protected.income publishes [\d.]+"),
    # R4-11: complete=false lists only cells with records, so its zeros are false zeros
    (("incomplete",), r"main_protected.incomplete lists only cells with records \(ckm_count\(complete=false\)\) and "
                      r"publishes the count 0 for the cell \(sex='\w+', region='L\d'\)"),
    # R4-8: a ckm_sum of a constant is a count in disguise
    (("ones",), r"^main_protected.ones is a ckm_sum of one, which is 1 \(or 0\) in every record of its microdata: "
                r"its sums are counts"),
    # ... read in the view's own microdata, not in the loaded table whose column has the name (issue 48)
    (("flat",), r"^main_protected.flat is a ckm_sum of income, which is 1 \(or 0\) in every record"),
    (("nearly",), r"^main_protected.nearly is a ckm_sum of one, which is 1 and 2 \(or 0\) in every record"),
    # a staging model's derived value is read in that model (no traceback), its table read by its records
    (("persons", "staged"), r"main_protected.persons publishes the count 0 for the cell \(sex='\w+', region='L\d'\), "
                            r"and main_protected.staged publishes [\d.]+ for the same cell \(sex='\w+', region='L\d'\) "
                            r"of the same records"),
    # the incomes under another column name: one variable, by the loaded column it reads
    (("income", "einkommen"), r"^main_protected.income \(Cell Key Method\) and main_protected.einkommen \(cell "
                              r"suppression\) both publish the cell"),
])
def test_tables_are_compared_by_their_records_not_by_relation_or_column_names(by_records, tmp_path, tables, message):
    """Red team round 4: each pair (or table) passed the release audit on 74b75de, because the zeros check matched
    tables by source relation and dimension names, looked at 0 only, and knew nothing of complete=false or of a
    constant summed. Each table alone (a count table without complete=false) is published."""
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=message):
        publish(by_records.db, out, manifest=only(by_records, tmp_path, *tables))
    assert not out.exists()
    for alone in tables:
        if alone not in ("incomplete", "ones", "flat", "nearly"):
            assert publish(by_records.db, out, manifest=only(by_records, tmp_path, alone)) == [alone]


@pytest.mark.parametrize("table, message", [
    # F1: a key computed from the loaded one: the same records, another noise in every cell (averaging 30 such
    # tables gave 14 of 15 originals)
    ("shifted", r"main_audit.persons_shifted is microdata of one's own that a step reads, and it computes its column "
                r"rk from rk, the loaded record keys"),
    ("rehashed", r"main_audit.persons_rehashed is microdata of one's own that a step reads, and it has a column rk "
                 r"that is not the loaded table's rk"),
    # F2: every cell's original count written into a dimension's code
    ("counted", r"main_audit.persons_counted is microdata of one's own that a step reads, and it computes "
                r"COUNT\(\*?\) OVER \(PARTITION BY region, sex\), which reads other records"),
    # the next person's region: a row that is no one record
    ("joined", r"main_audit.persons_joined is microdata of one's own that a step reads, and it has a join"),
    # F2: a code per record, its id and income: each code held by one record
    ("coded", r"^main_protected.coded lists codes of its dimension cellcode that fewer than 3 records of its "
              r"microdata hold: 'id0 income=\d+.25' \(1 record\)"),
    # the second red team: hash(id, 1) under the name rk by a column list (16 such tables gave every original)
    ("aliased", r"main_audit.persons_aliased is microdata of one's own that a step reads, and it renames columns by "
                r"their position \(c\(id, sex, region, k, rk\)\)"),
    # records chosen by their keys (#4 is rk): cell keys below 0.03, a known noise
    ("positional", r"main_audit.persons_positional is microdata of one's own that a step reads, and it reads #4, a "
                   r"column sdc cannot follow by its name"),
    # a second, independent noise of every count: ones plus a billionth of the id
    ("nearones", r"^main_protected.nearones is a ckm_sum of one, which is between 1 and 1.000000399 \(or 0\) in "
                 r"every record, within a factor 2, of its microdata: its sums are counts"),
    # codes a model wrote from the microdata ("R0 has 80 persons"), noise a model wrote
    ("hleak", r"^raw.persons is read by a step computed with the hierarchy main_audit.hier_leak, which is no seed: a "
              r"hierarchy is reference data the office committed"),
    ("ptcopy", r"^raw.persons is read by a step computed with the ptable main_audit.pt_copy, which is no seed"),
    # a committed ptable whose noise is +1000 on average: the published count mod 1000 is the original
    ("ptbiased", r"is built with the ptable .*pt_biased.*, whose noise for i = 1 has the mean 1000, not 0"),
])
def test_microdata_of_ones_own_is_record_wise_with_the_loaded_keys(by_records, tmp_path, table, message):
    """The red team of issue 48: each of these views published on 7f6fe9a (the codes of a table by region and sex
    carried every original count; the ids and incomes of all 400 persons were published as codes)."""
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=message):
        publish(by_records.db, out, manifest=only(by_records, tmp_path, table))
    assert not out.exists()


def test_the_record_keys_a_view_passes_on_are_checked_in_duckdb_too(by_records, tmp_path, monkeypatch):
    """Behind the reading of the SQL, DuckDB's own result: a view whose rk the reading takes for the loaded one (here
    the reading is made blind to the column list, as it was to it before the second red team of issue 48) holds
    keys that no loaded record has, and is refused for them."""
    import sdc.release.verify as verify_module
    from sdc.release.record_wise import Lineage

    real = verify_module.record_wise_lineage

    def blind(sql, resolve, scalar, keys, unstable):
        if "hash(id, 1)" not in sql.lower():
            return real(sql, resolve, scalar, keys, unstable)
        return {name: Lineage(frozenset([("raw.persons", name)]), True, f"raw.persons.{name}")
                for name in ("id", "sex", "region", "k", "rk")}

    monkeypatch.setattr(verify_module, "record_wise_lineage", blind)
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=r"main_audit.persons_aliased is microdata of one's own whose columns rk hold, "
                                       r"in \d{3} row\(s\), values that no record of raw.persons has"):
        publish(by_records.db, out, manifest=only(by_records, tmp_path, "aliased"))
    assert not out.exists()


def test_a_view_that_renames_a_dimension_is_read_as_the_loaded_table(by_records, tmp_path):
    """The counts by land (region renamed) are read as a table of raw.persons: the office's audit names them, and
    their cells are the counts' regions in the averaging audit of that population (one population of two tables,
    the land cells the same record sets as the regions' totals: no new noise, 11 record sets, not 11 + 14)."""
    out = tmp_path / "pub.duckdb"
    assert publish(by_records.db, out, manifest=only(by_records, tmp_path, "persons", "land")) == ["land", "persons"]
    audit = office_audit(by_records.db)
    assert audit["read_by_records"] == [{"table": "main_protected.land", "read_as": '"warehouse"."raw"."persons"'}]
    (population,) = audit["averaging"]["populations"]
    assert population["tables"] == ["main_protected.land", "main_protected.persons"]
    assert population["dimensions"] == ["region", "sex"]
    regions = rows(by_records.db, "select count(distinct region) from raw.persons")[0][0]
    assert population["record_sets"] == len(rows(by_records.db, "select distinct sex, region from raw.persons")) \
        + regions + 2 + 1 - rows(by_records.db, "select count(*) from (select region from raw.persons group by 1 "
                                                "having count(distinct sex) = 1)")[0][0]


def test_ckm_and_suppression_over_nearly_the_same_records_are_refused(tmp_path):
    """R3-4: suppression over the population less one record beside the CKM over all of it; the old check
    compared grand totals (400 and 399) and let it pass: of the cells that do not hold the record, the suppression
    table publishes the original the CKM perturbs."""
    models = {
        **{k: v for k, v in SUPPRESSION_AND_CKM.items() if k != "audit/supp_cells.sql"},
        "audit/persons_less_one.sql": "{{ config(materialized='view') }}\n"
                                      "select * from {{ source('raw', 'persons') }} where id <> 2\n",
        "audit/supp_cells.sql": "{{ sdc.suppression_cells(ref('persons_less_one'), dims=['sex', 'region']) }}\n",
    }
    built = make(tmp_path, models, persons=PERSONS)
    revealed = rows(built.db, "select count(*) from main_protected.persons_suppressed as s join main_protected.persons "
                              "as p using (sex, region) join main_audit.ckm_persons as a using (sex, region) "
                              "where s.freq = a.original and a.noise <> 0")[0][0]
    assert revealed > 0  # cells whose CKM noise the suppression table gives away
    with pytest.raises(SdcError, match=r"main_protected.persons \(Cell Key Method\) and main_protected.persons_suppressed "
                                       r"\(cell suppression\) both publish the cell \(sex='\w+', region='\w+'\) of "
                                       r"raw.persons, and their populations are nearly the same \(grand totals 400 and 399\)"):
        publish(built.db, tmp_path / "pub.duckdb", project_dir=built.project)
    assert not (tmp_path / "pub.duckdb").exists()


def test_a_weighted_count_beside_a_suppression_table_of_the_same_weights_is_refused(tmp_path):
    """ckm_count(weight='income') publishes the sums of income perturbed, a suppression table of the same cells
    (value='income') their originals: one variable of one population by two methods, every noise revealed. The
    release audit compares the weighted counts too (the release gate's grand totals did, before the audit)."""
    models = {
        "sources.yml": BASE["sources.yml"],
        "audit/ckm_persons.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], weight='income') }}\n",
        "protected/persons.sql": "{{ sdc.ckm_published(ref('ckm_persons')) }}\n",
        "audit/supp_cells.sql": "{{ sdc.suppression_cells(source('raw', 'persons'), dims=['sex', 'region'], "
                                "value='income') }}\n",
        "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['p:10', 'nk:2,85']) }}\n",
        "audit/supp_relations.sql": SUPPRESSION_AND_CKM["audit/supp_relations.sql"],
        "audit/supp_pattern.py": SUPPRESSION_AND_CKM["audit/supp_pattern.py"].replace("cost='freq'",
                                                                                      "magnitude=True, cost='value'"),
        "protected/income_suppressed.sql": "{{ sdc.suppression_published(ref('supp_pattern'), ['sex', 'region'], "
                                           "value='value') }}\n",
    }
    built = magnitude_project(tmp_path, models, None)  # five regions of 80 persons: no false zeros
    revealed = rows(built.db, "select count(*) from main_protected.income_suppressed as s join main_audit.ckm_persons "
                              "as a using (sex, region) where s.value = a.original_weighted_count "
                              "and a.weighted_count <> a.original_weighted_count")[0][0]
    assert revealed > 0  # cells whose weighted count's noise the suppression table gives away
    with pytest.raises(SdcError, match=r"main_protected.persons \(Cell Key Method\) and main_protected.income_suppressed "
                                       r"\(cell suppression\) both publish the cell \(sex='\w+', region='\w+'\) of "
                                       r"raw.persons, and their populations are nearly the same \(grand totals (\d+) and "
                                       r"\1\)"):
        publish(built.db, tmp_path / "pub.duckdb", project_dir=built.project)
    assert not (tmp_path / "pub.duckdb").exists()
    for alone in ("persons", "income_suppressed"):
        other = "income_suppressed" if alone == "persons" else "persons"
        assert publish(built.db, tmp_path / "pub.duckdb", manifest=edited_manifest(built, tmp_path, untag=(other,))) == [alone]


def test_verify_published_checks_the_tagged_steps_in_dbt_itself(tmp_path):
    """The same checks as a dbt operation or on-run-end hook (for engines where sdc neither copies nor grants,
    e.g. Spark on a governed cluster): a step's table rewritten by a post-hook is refused naming the cell; the
    release without it is verified."""
    from test_publication_gate import dbt_result

    rewritten = tmp_path / "project" / "models" / "protected" / "rewritten.sql"
    built = make(tmp_path, {**BASE, "protected/rewritten.sql": CASES["protected/rewritten.sql"]})
    result = dbt_result(built, "run-operation", "verify_published")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode != 0, out[-3000:]
    assert re.search(r"verify_published: \S+rewritten\"? differs from ckm_count over \S+persons\"? \(recomputed from the "
                     r"microdata\) in the cell \(sex=\w+, region=\w+\): count \d+ there, \d+ in sdc's recomputation", out), out[-3000:]
    rewritten.unlink()
    result = dbt_result(built, "run-operation", "verify_published")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "verify_published: 1 relation(s) hold what sdc computes from the microdata for their steps" in result.stdout


def test_magnitudes_of_cells_whose_count_is_published_as_zero_are_zero_with_zero_with_counts(tmp_path):
    """The method's remedy for R3-3: ckm_sum(zero_with_counts=ref('sdc_ptable')) publishes 0 wherever ckm_count
    publishes the count 0 (same records, key and noise), so the pair publishes, and the release audit passes."""
    models = {**ZEROS, "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], "
                                               "value='income', zero_with_counts=ref('sdc_ptable'), audit=true) }}\n"}
    built = magnitude_project(tmp_path, models, LONE)
    pairs = rows(built.db, "select c.original, c.count, i.value, i.original_value from main_audit.ckm_persons as c "
                           "join main_audit.ckm_income as i using (sex, region)")
    false_zeros = [p for p in pairs if p[0] > 0 and p[1] == 0]
    assert false_zeros and all(value == 0 for _, _, value, _ in false_zeros)
    # elsewhere the magnitudes are as without the argument: noisy, never 0 for a cell with income
    assert all(value != 0 for original, count, value, income in pairs if count != 0 and income != 0)
    out = tmp_path / "pub.duckdb"
    report = {}
    assert publish(built.db, out, project_dir=built.project, report=report) == ["income", "persons"]
    assert report["checks"]["zeros"] == "passed"


def test_a_staging_table_is_computed_again_from_its_sql(tmp_path):
    """The microdata a step reads may be a table of one's own (a staging model, no build record): sdc computes it
    again from its SQL in the manifest. A post-hook that changed its rows before the step read them (here: every
    record of region R1 moved to R2) makes the step's table differ from that recomputation."""
    staging = "{{ config(post_hook=\"update {{ this }} set region = 'R2' where region = 'R1'\") }}\n" \
              "select * from {{ source('raw', 'persons') }} where id <> 2\n"
    models = {**BASE,
              "audit/persons_kept.sql": "select * from {{ source('raw', 'persons') }} where id <> 2\n",
              "audit/ckm_kept.sql": "{{ sdc.ckm_count(ref('persons_kept'), dims=['sex', 'region']) }}\n",
              "protected/kept.sql": "{{ sdc.ckm_published(ref('ckm_kept')) }}\n",
              "audit/persons_moved.sql": staging,
              "audit/ckm_moved.sql": "{{ sdc.ckm_count(ref('persons_moved'), dims=['sex', 'region']) }}\n",
              "protected/moved.sql": "{{ sdc.ckm_published(ref('ckm_moved')) }}\n"}
    built = make(tmp_path, models)
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=("persons", "moved"))) == ["kept"]
    with pytest.raises(SdcError, match=r"main_protected.moved \(model.pubtest.moved\) (differs from ckm_count over "
                                       r"main_audit.persons_moved \(recomputed from the microdata\) in|lacks|holds) "
                                       r"the cell \(sex='\w+', region='R\d'\)"):
        publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=("persons", "kept")))


def test_the_release_audit_is_written_as_json_beside_the_publication(tmp_path, capsys):
    """The audit's result is a file of the office: per table and per release (issue 33), as the ledger keeps it,
    written like every output of sdc (a file it did not write is not replaced). The publication's readers get its
    public part only (red team R4-1)."""
    import json

    from sdc.cli import main
    from sdc.release.public_audit import PUBLIC_AUDIT_KEYS, public_release_audit

    built = make(tmp_path, BASE)
    out, audit = tmp_path / "pub.duckdb", tmp_path / "release_audit.json"
    args = ["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out),
            "--audit-json", str(audit)]
    assert main(args) == 0
    assert capsys.readouterr().out.endswith(f"wrote the release audit to {audit}\n")
    report = json.loads(audit.read_text())
    assert report["verified"] == ["main_protected.persons"]
    assert report["checks"] == {"averaging": "passed", "two_methods": "passed", "zeros": "passed"}
    assert [t["table"] for t in report["tables"]] == ["main_protected.persons"]
    assert report["tables"][0]["cells"] == rows(out, "select count(*) from persons")[0][0]
    assert report == office_audit(built.db) and "quality" in report and "averaging" in report
    public = public_audit(out)
    assert public == public_release_audit(report) and sorted(public) == sorted(PUBLIC_AUDIT_KEYS)
    assert public["checks"] == {"verification": "passed", "zeros": "passed", "two_methods": "passed",
                                "linked_suppression": "passed", "averaging": "passed", "ledger": "passed"}
    assert public["tables"] == [{"table": "main_protected.persons", "method": "ckm counts"}]
    assert main(args) == 0  # its own earlier output is replaced
    foreign = tmp_path / "notes.json"
    foreign.write_text("{}\n")
    assert main(args[:-1] + [str(foreign)]) == 2
    assert "notes.json exists and is not an earlier output of sdc publish --audit-json" in capsys.readouterr().err
    assert foreign.read_text() == "{}\n"


# ------------------------------------------------------------------------------------------ the cost of verifying
class CountingConnection:
    """The warehouse connection of sdc publish, with the SQL it runs kept."""

    def __init__(self, con):
        self._con, self.queries = con, []

    def execute(self, sql, *args):
        self.queries.append(str(sql))
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_the_tables_of_one_source_share_their_record_key_checks_and_each_step_is_recomputed_once(tmp_path, monkeypatch):
    """Three CKM steps over raw.persons, one of them published twice (a table and a view): the record key checks'
    queries over raw.persons run once (the warehouse is read-only while sdc publish reads it), every step is
    recomputed once, and every published relation is still compared."""
    import importlib

    publish_module = importlib.import_module("sdc.release.publish")  # sdc.release.publish is the function

    models = {**BASE,
              "audit/ckm_by_sex.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex']) }}\n",
              "audit/ckm_by_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region'], threshold=3) }}\n",
              "protected/by_sex.sql": "{{ sdc.ckm_published(ref('ckm_by_sex')) }}\n",
              "protected/by_region.sql": "{{ sdc.ckm_published(ref('ckm_by_region')) }}\n",
              "protected/persons_view.sql": "{{ config(materialized='view') }}\n"
                                            "{{ sdc.ckm_published(ref('ckm_persons')) }}\n"}
    built = make(tmp_path, models)
    opened = []
    open_warehouse = publish_module._open_warehouse
    monkeypatch.setattr(publish_module, "_open_warehouse", lambda db: opened.append(CountingConnection(open_warehouse(db))) or opened[-1])
    out = tmp_path / "pub.duckdb"
    assert publish(built.db, out, project_dir=built.project) == ["by_region", "by_sex", "persons", "persons_view"]
    queries = opened[0].queries
    assert sum("key_bins" in sql for sql in queries) == 1  # ckm_check_record_keys' statistics of raw.persons
    assert sum(sql.startswith("create temp table sdc_verify_recomputed") for sql in queries) == 3
    # the leaf cells of the three calls: one pass over raw.persons, by sex and region
    assert [sql for sql in queries if sql.startswith("create temp table sdc_verify_cells")] == [
        'create temp table sdc_verify_cells_1 as select "region", "sex", count(*) as sdc_original_0, '
        'sum("rk") as sdc_key_sum_0 from "warehouse"."raw"."persons" group by "region", "sex"']
    assert sum("full join" in sql for sql in queries) == 4  # each published relation compared with its step
    assert office_audit(built.db)["verified"]
    # the cells sdc sums in place of the microdata are its own: a model cannot hand ckm_count cells of its own
    from test_publication_gate import dbt_result

    result = dbt_result(built, "compile", "--inline", "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex'], "
                                                      "leaf_cells=ref('ckm_persons')) }}")
    assert result.returncode != 0 and "ckm_count: leaf_cells is for sdc publish's recomputation" in result.stdout


def test_keys_that_fail_the_record_key_checks_are_refused_at_publish_whatever_the_build_said(tmp_path):
    """A build with check_keys=false (for teaching keys) over keys that are all one value passes dbt build; sdc
    publish runs every record key check whatever the call said, for each table over the relation."""
    from sdc.warehouse.loader import load_microdata
    from test_publication_gate import dbt

    persons = "id,sex,region,key\n" + "".join(f"{i},{'mw'[i % 2]},R{i % 5},50000000\n" for i in range(400))
    models = {**BASE,
              "audit/ckm_persons.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region'], "
                                       "check_keys=false) }}\n",
              "audit/ckm_by_sex.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex'], check_keys=false) }}\n",
              "protected/by_sex.sql": "{{ sdc.ckm_published(ref('ckm_by_sex')) }}\n"}
    built = make(tmp_path, models, persons=persons, build=False)
    built.db.unlink()
    load_microdata(built.db, tmp_path / "persons.csv", "persons", id_column="id", key_mode="existing",
                   key_column="key", check_keys=False)
    dbt(built, "build")
    for only in ("persons", "by_sex"):
        manifest = edited_manifest(built, tmp_path, untag=tuple({"persons", "by_sex"} - {only}))
        with pytest.raises(SdcError, match=r"record keys in column rk of \S+persons\S* are not uniform random on "
                                           r"\[0, 100000000\): distinct share 0.0025"):
            publish(built.db, tmp_path / "pub.duckdb", manifest=manifest)


# one source, counted in many ways: facts, a hierarchy, thresholds, frames complete and not, totals of all kinds
MANY_WAYS = {
    "sources.yml": BASE["sources.yml"],
    "audit/ckm_sex_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'region']) }}\n",
    "audit/ckm_region_tree.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region'], "
                                 "hierarchy=ref('sdc_hierarchies')) }}\n",
    "audit/ckm_age_sex_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['age', 'sex', 'region']) }}\n",
    "audit/ckm_high_age.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['age'], fact='f_high', threshold=100) }}\n",
    "audit/ckm_high_sex_age.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex', 'age'], fact='f_high', "
                                  "complete=false) }}\n",
    "audit/ckm_region_age_rollup.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region', 'age'], totals='rollup', "
                                       "hierarchy=ref('sdc_hierarchies')) }}\n",
    "audit/ckm_sex_only.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['sex'], totals='none') }}\n",
    "audit/ckm_age_region_observed.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['age', 'region'], "
                                         "complete=false, threshold=3) }}\n",
}
MANY_WAYS.update({f"protected/{Path(name).stem[4:]}.sql": f"{{{{ sdc.ckm_published(ref('{Path(name).stem}')) }}}}\n"
                  for name in MANY_WAYS if name.startswith("audit/")})
# region R5 holds age A0 only: the complete frames have empty cells
MANY_PERSONS = "id,sex,region,age,income\n" + "".join(
    f"{i},{'mw'[i % 2]},R{i % 6},A{0 if i % 6 == 5 else (i // 6) % 4},{1000 + (i * 7919) % 5000}\n" for i in range(600))
REGIONS = "dimension,code,parent\nregion,Total,\nregion,North,Total\nregion,South,Total\n" + "".join(
    f"region,R{r},{'North' if r < 3 else 'South'}\n" for r in range(6))


def test_the_tables_of_one_source_summed_from_one_pass_are_those_of_ckm_count_table_by_table(tmp_path):
    """sdc publish recomputes the ckm_count tables of one source from one GROUP BY per largest set of dimensions
    (ckm_count's leaf_cells): every column of every table, audit columns included, and its type, is what ckm_count
    gives over the microdata table by table, and what dbt built."""
    import duckdb

    from sdc.warehouse.loader import load_microdata
    from sdc.release.verify import Verifier
    from sdc.release.gate import Warehouse
    from test_publication_gate import dbt

    (tmp_path / "sdc_hierarchies.csv").write_text(REGIONS)
    built = make(tmp_path, MANY_WAYS, persons=MANY_PERSONS, build=False,
                 seeds={"sdc_hierarchies.csv": tmp_path / "sdc_hierarchies.csv"})
    built.db.unlink()
    load_microdata(built.db, tmp_path / "persons.csv", "persons", id_column="id", key_mode="keyed",
                   secret=b"gate test secret", facts={"f_high": "income > 3000"})
    dbt(built, "build")
    manifest = built.manifest_json()
    names = sorted(Path(name).stem for name in MANY_WAYS if name.startswith("protected/"))

    def recomputed(shared: bool) -> dict:
        con = duckdb.connect(str(built.db), read_only=True)
        try:
            warehouse = Warehouse(con, manifest)
            verifier = Verifier(con, warehouse, manifest)
            rels = [warehouse.find(None, "main_protected", name) for name in names]
            if shared:
                verifier.plan(rels)
            for rel in rels:
                verifier.verify(rel)
            passes = [t for (t,) in con.execute("select table_name from duckdb_tables() where database_name = 'temp' "
                                                "and table_name like 'sdc_verify_cells%'").fetchall()]
            tables = {}
            for audit, table in verifier.recomputed.items():
                kinds = con.execute(f"describe {table}").fetchall()
                tables[audit[-1]] = ([k[:2] for k in kinds], sorted(con.execute(f"select * from {table}").fetchall(), key=repr),
                                     sorted(con.execute(f"select {', '.join(f'{chr(34)}{k[0]}{chr(34)}' for k in kinds)} "
                                                        f"from main_audit.{audit[-1]}").fetchall(), key=repr))
            return tables, passes, verifier
        finally:
            con.close()

    together, passes, verifier = recomputed(shared=True)
    one_by_one, none, _ = recomputed(shared=False)
    assert len(passes) == 1 and none == []  # one pass: age, sex, region holds every table's dimensions
    assert sum(len(s.leaf_cells) for s in verifier.shared.values()) == len(names)
    assert sorted(together) == sorted(one_by_one) == sorted(f"ckm_{name}" for name in names)
    for table, (kinds, cells, built_cells) in together.items():
        assert (kinds, cells) == one_by_one[table][:2], table
        assert cells == built_cells, table
        assert len(cells) >= 2
    # the frames: empty cells (original 0) where the frame is complete, thresholds, the fact's own counts
    empty = {t: sum(1 for row in together[t][1] if row[kinds.index(("original", "BIGINT"))] == 0)
             for t, (kinds, _, _) in together.items()}
    assert empty["ckm_age_sex_region"] > 0 and empty["ckm_age_region_observed"] == 0
    reasons = [row[-1] for row in together["ckm_high_age"][1]]  # count_reason: below the threshold, or not
    assert None in reasons and "perturbed count below 100" in reasons


def test_magnitude_parameters_that_cannot_keep_their_p_rule_are_warned_about_at_build(by_records):
    """New user D7: the guide's parameters (mu_c 1, a flex multiplier falling to 0.05) flag cells by p:10 but move
    them by 5 % of the largest contribution at least (7.6 % in the trial); nothing said so. The build warns, naming
    the share and the mu_c that meets the rule; the demo's parameters (now mu_c 2) meet it and are not warned."""
    import warnings

    import yaml

    from sdc.errors import SdcWarning
    from test_publication_gate import REPO, dbt_result

    result = dbt_result(by_records, "compile", "--select", "ckm_income")
    out = result.stdout.replace("\n  ", " ")
    assert result.returncode == 0, out[-3000:]
    assert ("ckm_sum: the magnitude parameters guarantee a sensitive cell a move of at least 5.0 % of its largest "
            "contribution (mu_c 1 x epsilon_1 1 x the multiplier's smallest factor 0.05), less than the 10.0 % of its "
            "rule p:10: a cell the rule flags can be published within 10.0 % of its largest contribution. Raise mu_c "
            "to 2.0 or more for the rule to hold") in out, out[-3000:]
    demo = yaml.safe_load((REPO / "demo" / "dbt_project.yml").read_text())["vars"]["sdc_magnitude_params"]
    result = dbt_result(by_records, "compile", "--select", "ckm_income", "--vars",
                        yaml.safe_dump({"sdc_magnitude_params": demo}, default_flow_style=True))
    assert result.returncode == 0 and "guarantee a sensitive cell" not in result.stdout, result.stdout[-3000:]
    # the Python API the same, as a warning
    import pandas as pd

    import sdc.ckm

    df = pd.DataFrame({"g": ["a", "a", "b"], "v": [3510.0, 10.0, 500.0], "rk": [11, 22, 33]})
    with pytest.warns(SdcWarning, match=r"guarantee a sensitive cell a move of at least 5.0 %"):
        sdc.ckm.sum_table(df, ["g"], value="v", record_key="rk", modulus=100, check_keys=False,
                          params={**demo, "mu_c": 1}, ptable=REPO / "demo" / "seeds" / "sdc_nums_ptable.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SdcWarning)
        sdc.ckm.sum_table(df, ["g"], value="v", record_key="rk", modulus=100, check_keys=False, params=demo,
                          ptable=REPO / "demo" / "seeds" / "sdc_nums_ptable.csv")


def test_a_published_seed_is_reference_data_the_office_committed(tmp_path):
    """The red team of issue 48 (F3): an on-run-start hook wrote the raw counts by region and sex into a seed's
    file, the next build loaded it, and sdc published it (its table is its file). Where the project lies in git, a
    published seed's file must be committed and unchanged since; outside git sdc warns that it cannot tell. The
    ptable seed is internal: refused (its D, V and js are in the release audit), and as reference data of a step
    checked as a published seed is (the second red team of issue 48)."""
    import subprocess

    from sdc.errors import SdcWarning
    from test_publication_gate import dbt

    regions = tmp_path / "regions.csv"
    regions.write_text("region,name\n" + "".join(f"R{k},Region {'ABCDE'[k]}\n" for k in range(5)))
    built = make(tmp_path, BASE, seeds={"regions.csv": regions})
    out = tmp_path / "pub.duckdb"
    with pytest.raises(SdcError, match=r"^main.sdc_ptable is the perturbation table of main_protected.persons "
                                       r"\(ptable=\) and is tagged sdc_publish: its rows are internal"):
        publish(built.db, out, manifest=edited_manifest(built, tmp_path, tag=("sdc_ptable",)))
    tagged = edited_manifest(built, tmp_path, tag=("regions",))
    with pytest.warns(SdcWarning, match=r"regions.csv lies in no git repository: sdc cannot tell whether it is the "
                                        r"reference data the office reviewed"):
        assert publish(built.db, out, manifest=tagged) == ["persons", "regions"]

    def git(*arguments):
        subprocess.run(["git", "-c", "user.name=office", "-c", "user.email=office@example.org", "-C",
                        str(built.project), *arguments], check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "the office's project")
    assert publish(built.db, out, manifest=tagged, min_changed_records=0) == ["persons", "regions"]
    # what the hook wrote: the counts by region and sex, as a seed of the same name
    seed = built.project / "seeds" / "regions.csv"
    seed.write_text("region,name\n" + "".join(f"{r},{s} {n}\n" for r, s, n in rows(
        built.db, "select region, sex, count(*) from raw.persons group by all order by all")))
    dbt(built, "seed")
    published = out.read_bytes()
    with pytest.raises(SdcError, match=r"main.regions \(seed.pubtest.regions\) is a seed whose file \S+regions.csv is "
                                       r"changed since the last commit in the project's git repository"):
        publish(built.db, out, manifest=edited_manifest(built, tmp_path, tag=("regions",)), min_changed_records=0)
    assert out.read_bytes() == published
    # a seed a step computes with (its ptable) is reference data too: its file changed after the commit is refused
    git("checkout", "--", "seeds/regions.csv")
    dbt(built, "seed")
    ptable = built.project / "seeds" / "sdc_ptable.csv"
    ptable.write_text(ptable.read_text() + "\n")  # the same rows: only git tells
    with pytest.raises(SdcError, match=r"main.sdc_ptable \(its ptable\) is a seed whose file \S+sdc_ptable.csv is "
                                       r"changed since the last commit in the project's git repository"):
        publish(built.db, out, manifest=tagged, min_changed_records=0)
    assert out.read_bytes() == published
