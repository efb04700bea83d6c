"""Everything a reader can read of a DuckDB release (SECURITY.md, "What a reader can read"), enumerated from the
publication file itself and compared with the list there; nothing in it is computed from original values beyond
the protected cells (red team R4-1, new user D2, R4-9).

The release: a count table of one dimension (region: five leaves and their total, the case of R4-1 where the
quality figures gave back every original), the sex × region counts, and the incomes by region (a ckm_sum: D2 read a
respondent's income from the largest relative deviation)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import duckdb
import pytest

from sdc.release.public_audit import PUBLIC_AUDIT_KEYS
from test_publication_gate import BASE
from test_publish import office_audit, public_audit, rows
from test_release_verification import magnitude_project

REPO = Path(__file__).parent.parent
MODELS = {
    **BASE,
    "audit/ckm_by_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region']) }}\n",
    "protected/by_region.sql": "{{ sdc.ckm_published(ref('ckm_by_region')) }}\n",
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['region'], value='income') }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
}
PUBLISHED = ["by_region", "income", "persons"]
# every key of the office's audit whose figure the red team or the new user turned back into originals (the
# names of the checks and of the public parameters are no figures: _numbers finds every number)
RECOVERING_KEYS = ("quality", "hellinger_counts", "hellinger_utility", "hellinger_distribution",
                   "max_relative_noise", "max_abs_noise", "mean_absolute_deviation", "mean_relative_deviation",
                   "stay_share", "relative_deviation_histogram", "rad_median", "rad_p90", "rad_p99", "false_zeros",
                   "finest_cells_with_records", "record_sets", "smallest_standard_error", "populations",
                   "published_zeros", "cells_compared_across_methods", "groups", "shared_cells")


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    from sdc.release.publish import publish

    root = tmp_path_factory.mktemp("reader")
    built = magnitude_project(root, MODELS, None)
    out = root / "publication.duckdb"
    assert publish(built.db, out, root / "parquet", project_dir=built.project) == PUBLISHED
    return built, out


def security_md_list(engine: str) -> list[str]:
    """The objects SECURITY.md's table "What a reader can read" lists for ``engine`` (its backquoted names)."""
    text = (REPO / "SECURITY.md").read_text(encoding="utf-8")
    section = text[text.index("## What a reader can read"):]
    section = section[:section.index("\n## ", 4)]
    (row,) = [line for line in section.splitlines() if line.startswith(f"| {engine} |")]
    return re.findall(r"`([^`]+)`", row.split("|")[2])


def test_the_publication_file_holds_exactly_what_security_md_lists(release):
    """Every object of the file as a reader opening it sees it (its catalog: schemas, tables, views, macros,
    sequences, indexes, types, comments), against SECURITY.md's DuckDB row; the Parquet folder likewise."""
    _, out = release
    con = duckdb.connect(str(out), read_only=True)
    try:
        found = [f"{s}.{t}" for s, t in con.execute(
            "select schema_name, table_name from duckdb_tables() order by all").fetchall()]
        found += [f"view {v}" for (v,) in con.execute("select view_name from duckdb_views() where not internal")
                  .fetchall()]
        found += [f"function {f}" for (f,) in con.execute(
            "select function_name from duckdb_functions() where not internal").fetchall()]
        found += [f"sequence {s}" for (s,) in con.execute("select sequence_name from duckdb_sequences()").fetchall()]
        found += [f"index {i}" for (i,) in con.execute("select index_name from duckdb_indexes()").fetchall()]
        found += [f"type {t}" for (t,) in con.execute("select type_name from duckdb_types() where not internal")
                  .fetchall()]
        schemas = sorted(s for (s,) in con.execute(
            "select schema_name from duckdb_schemas() where database_name = 'publication' "
            "and schema_name not in ('information_schema', 'pg_catalog')").fetchall())
        comments = con.execute("select count(*) from duckdb_tables() where comment is not null").fetchone()[0] + \
            con.execute("select count(*) from duckdb_columns() where comment is not null").fetchone()[0]
    finally:
        con.close()
    listed = security_md_list("DuckDB")
    expected = sorted([f"main.{name}" for name in PUBLISHED]
                      + [n for n in listed if n.startswith("sdc_publication.")])
    assert sorted(found) == expected
    assert "main.<published relation>" in listed and schemas == ["main", "sdc_publication"] and comments == 0
    parquet = sorted(p.name for p in (out.parent / "parquet").iterdir())
    assert parquet == sorted([f"{name}.parquet" for name in PUBLISHED] + [n for n in listed if n.endswith(".json")])


def _numbers(value, path=""):
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [(path, value)]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in _numbers(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [n for k, v in enumerate(value) for n in _numbers(v, f"{path}[{k}]")]
    return []


def test_the_readers_audit_holds_no_figure_computed_from_the_originals(release):
    """The publication's release_audit: the release, its checks, its tables and the public parameters; its only
    numbers are the release's number, the floor and the count ptable's D, V and js (the ptable's design, not the
    data). The office keeps the whole audit in the ledger."""
    built, out = release
    public = public_audit(out)
    assert sorted(public) == sorted(PUBLIC_AUDIT_KEYS)
    assert sorted(_numbers(public)) == sorted([(".release", 1), (".parameters.min_standard_error", 1.0),
                                               *((f".parameters.ptables.{name}.{k}", v)
                                                 for name, p in public["parameters"]["ptables"].items()
                                                 for k, v in p.items())])
    (ptable,) = public["parameters"]["ptables"].values()
    assert ptable == {"D": 5, "V": 3.0, "js": 2}  # the demo's ptable: sdc ptable --D 5 --V 3 --js 2
    text = json.dumps(public)
    assert not [key for key in RECOVERING_KEYS if f'"{key}"' in text]
    office = office_audit(built.db)
    assert {"quality", "averaging", "ptables"} <= set(office)  # the office's figures are kept, in the ledger


def test_r4_1_and_d2_recover_nothing_from_what_a_reader_can_read(release):
    """The red team's R4-1 on the one-dimensional table: every vector of noises |v| <= D of the five leaves whose
    originals (with their sum's) agree with every figure a reader can read. With the quality figures in the
    release audit exactly one vector was left (the originals); from the publication now, every vector that the
    public parameters allow is left, thousands of them, the true one not singled out. D2's division of a one-person
    cell by 1 - max_relative_noise has no figure to divide by."""
    built, out = release
    public = public_audit(out)
    readable = json.dumps(public) + "".join(json.dumps(r, default=str) for r in rows(
        out, "select * from sdc_publication.relations"))
    published = dict(rows(out, "select region, \"count\" from main.by_region"))
    ptable = next(iter(public["parameters"]["ptables"].values()))
    leaves = sorted(k for k in published if k != "Total")
    allowed = [v for v in range(-ptable["D"], ptable["D"] + 1)]

    def possible(original: int, shown: int) -> bool:  # what the public parameters say of one cell
        return original >= 0 and abs(shown - original) <= ptable["D"] and not 0 < shown <= ptable["js"]

    candidates = []
    for noises in itertools.product(allowed, repeat=len(leaves)):
        originals = [published[k] - v for k, v in zip(leaves, noises)]
        if all(possible(o, published[k]) for o, k in zip(originals, leaves)) and \
                possible(sum(originals), published["Total"]):
            candidates.append(originals)
    truth = [o for (o,) in rows(built.db, "select count(*) from raw.persons group by region order by region")]
    assert truth in candidates and len(candidates) > 1000
    # the attacks' figures are nowhere in what the reader reads
    for key in ("hellinger_counts", "hellinger_utility", "max_relative_noise", "relative_deviation_histogram",
                "max_abs_noise", "cells", "false_zeros", "finest_cells_with_records"):
        assert f'"{key}"' not in readable, key
