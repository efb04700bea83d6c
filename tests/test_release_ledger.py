"""The ledger of releases (python/sdc/release/ledger.py): releases month after month from one warehouse.

A two-month scenario on DuckDB as an office runs it: load, build, publish; a reload with some records changed,
rebuild, publish; the diff names exactly the cells whose records changed. A new ptable changes cells whose records
did not: refused unless accepted. A re-key (sdc load --rekey) changes every cell and says so."""

from __future__ import annotations

import json

import pytest

from sdc.cli import main
from sdc.errors import SdcError
from sdc.warehouse.loader import load_microdata
from sdc.release.publish import publish
from sdc.release.ledger import (
    LedgerCell,
    check_against_last,
    diff_releases,
    list_releases,
    open_ledger,
    record_release,
)
from test_publication_gate import BASE, dbt, make
from test_publish import edited_manifest

MODELS = {
    **BASE,
    "audit/ckm_by_region.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region']) }}\n",
    "protected/by_region.sql": "{{ sdc.ckm_published(ref('ckm_by_region')) }}\n",
}
SECRET = b"gate test secret"  # make()'s keyed secret


def persons(moved: int = 0) -> str:
    """400 persons in regions R0..R4; the first ``moved`` persons of R0 (ids 0, 5, 10, ...) moved to R1."""
    rows = []
    for i in range(400):
        region = f"R{i % 5}"
        if region == "R0" and i // 5 < moved:
            region = "R1"
        rows.append(f"{i},{'mw'[i % 2]},{region},{1000 + (i * 7919) % 5000}\n")
    return "id,sex,region,income\n" + "".join(rows)


def month(built, tmp_path, n: int, **options):
    """Release n; the months here move a handful of persons on purpose, so without the minimum of changed records
    (tested on its own: test_a_release_that_changes_a_handful_of_records_is_refused_for_its_changed_cells)."""
    out = tmp_path / "publication.duckdb"
    report: dict = {}
    publish(built.db, out, manifest=built.manifest, report=report, **{"min_changed_records": 0, **options})
    return report


@pytest.fixture
def office(tmp_path):
    built = make(tmp_path / "office", MODELS, persons=persons())
    return built


def reload(built, tmp_path, text: str, **options) -> None:
    path = tmp_path / "persons_next.csv"
    path.write_text(text)
    load_microdata(built.db, path, "persons", id_column="id", key_mode=options.pop("key_mode", "keyed"),
                   secret=options.pop("secret", SECRET), **options)
    dbt(built, "build")


def test_two_months_of_releases_with_a_reload_a_new_ptable_and_a_re_key(office, tmp_path, capsys):
    built = office
    ledger = built.db.parent / "sdc_ledger.duckdb"
    first = month(built, tmp_path, 1)
    assert first["release"] == 1 and first["ledger"] == str(ledger)

    # month 2: two persons of R0 moved to R1; every other cell keeps its records and so its published value
    reload(built, tmp_path, persons(moved=2))
    second = month(built, tmp_path, 2)
    assert second["release"] == 2
    changes = diff_releases(ledger, 1, 2)
    changed_cells = {(c["relation"], tuple(sorted(c["cell"].items()))) for c in changes}
    # the cells of R0 and R1 of the men (ids 0 and 5 are m and w: one of each moved), the women, their totals
    assert all(c["reason"] == "microdata change" and c["change"] == "changed" for c in changes)
    # the release report shows the same cells, with their reason
    report = tmp_path / "report.html"
    assert main(["report", "--publication", str(tmp_path / "publication.duckdb"), "--ledger", str(ledger),
                 "--out", str(report)]) == 0
    text = report.read_text()
    assert f"Release 1 &rarr; 2: {len(changes)} changed (microdata change)." in text
    assert text.count("<td>microdata change</td>") == len(changes)
    regions = {dict(cell).get("region") for _, cell in changed_cells}
    assert regions <= {"R0", "R1"} and {"R0", "R1"} <= regions
    assert not any(dict(cell).get("region") in {"R2", "R3", "R4"} for _, cell in changed_cells)
    # the totals over all regions did not change their records (the same 400 persons): not in the diff
    assert not any(dict(cell).get("region") == "Total" for _, cell in changed_cells)

    # a new ptable: cells whose records did not change would get other noise: refused, nothing written
    seed = built.project / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "4", "--V", "2.5", "--js", "2", "--out", str(seed)]) == 0
    dbt(built, "build")
    publication = (tmp_path / "publication.duckdb").read_bytes()
    with pytest.raises(SdcError, match=r"whose records did not change would be published with other values than in "
                                       r"release 2, because the parameters of .*protected.by_region.* changed .* "
                                       r"publish with --accept-parameter-change"):
        month(built, tmp_path, 3)
    assert (tmp_path / "publication.duckdb").read_bytes() == publication
    assert [r["release"] for r in list_releases(ledger)] == [1, 2]
    # accepted, the new ptable hands readers a second noise of every unchanged cell: over both releases the
    # standard error falls below the floor (red team R4-5), refused; under a lower floor recorded
    with pytest.raises(SdcError, match=r"^the releases in the ledger let a reader average the CKM noise: the cell .* is "
                                       r"estimated from this release and the earlier independent noises of \d+ "
                                       r"unchanged count\(s\) of raw.persons \(releases 2, each the last under other "
                                       r"record keys or parameters\) with a standard error of 0.\d+, below the "
                                       r"floor of 1"):
        month(built, tmp_path, 3, accept_parameter_change=True)
    assert [r["release"] for r in list_releases(ledger)] == [1, 2]
    third = month(built, tmp_path, 3, accept_parameter_change=True, min_standard_error=0.4)
    assert third["release"] == 3 and third["averaging"]["over_releases"]["noise_epochs"] == 2
    changes = diff_releases(ledger, 2, 3)
    assert changes and {c["reason"] for c in changes} == {"parameter change"}
    assert list_releases(ledger)[-1]["accepted_parameter_changes"] == len(changes)

    # a re-key on purpose: every cell may change, and the diff says why
    reload(built, tmp_path, persons(moved=2), key_mode="random", secret=None, rekey=True)
    # a third draw of every unchanged cell (new user D4: a re-key was accepted silently)
    with pytest.raises(SdcError, match=r"earlier independent noises of \d+ unchanged count\(s\) of raw.persons "
                                       r"\(releases 2, 3, each the last under other record keys"):
        month(built, tmp_path, 4)
    fourth = month(built, tmp_path, 4, min_standard_error=0.4)
    assert fourth["release"] == 4 and fourth["averaging"]["over_releases"]["noise_epochs"] == 3
    changes = diff_releases(ledger, 3, 4)
    assert changes and {c["reason"] for c in changes} == {"re-key"}

    # a table no longer published: the publication is exactly the release, and the command says what went
    model = built.project / "models" / "protected" / "by_region.sql"
    text = model.read_text()
    model.unlink()
    try:
        dbt(built, "build")
        capsys.readouterr()
        assert main(["publish", "--db", str(built.db), "--manifest", str(built.manifest),
                     "--out", str(tmp_path / "publication.duckdb"), "--min-standard-error", "0.4"]) == 0
        out = capsys.readouterr().out
        assert "withdrawn: main_protected.by_region (published in release 4, not in this one: not in the new " \
               "publication)" in out, out
        import duckdb

        con = duckdb.connect(str(tmp_path / "publication.duckdb"), read_only=True)
        assert [n for (n,) in con.execute("select name from sdc_publication.relations").fetchall()] == ["persons"]
        con.close()
    finally:
        model.write_text(text)
    dbt(built, "build")

    # the CLI: list and diff
    capsys.readouterr()
    assert main(["release", "list", "--db", str(built.db)]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()] == [f"release {n}" for n in range(1, 6)]
    # how many more draws the floor of each release allows (D4, R4-5): none at the floor of 1 (a second draw takes
    # the smallest standard error, 1.1 alone, to 0.8); under the floor of 0.4, five more after three epochs
    lines = out.splitlines()
    assert lines[0].endswith("; noise epochs 1 (re-keys and parameter changes give readers another draw of every "
                             "unchanged cell: the floor allows 0 more)"), out
    assert lines[3].endswith("; noise epochs 3 (re-keys and parameter changes give readers another draw of every "
                             "unchanged cell: the floor allows 5 more)"), out
    assert main(["release", "diff", "1", "2", "--ledger", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("release 1 -> 2: ") and "changed (microdata change)" in out
    assert main(["release", "diff", "1", "9", "--ledger", str(ledger)]) == 2
    assert "has no release 9 (releases: 1, 2, 3, 4, 5)" in capsys.readouterr().err


def test_going_back_to_an_earlier_secret_goes_back_to_its_noise_and_is_no_further_draw(office, tmp_path):
    """A keyed secret's keys are one series of noise: release 1 under the office's secret, release 2 under
    another (a re-key: a second draw of every unchanged cell), release 3 under the first secret again publishes
    release 1's noise, so readers hold two draws, not three, and release 3's earlier epoch is release 2 alone
    (counting each release before a re-key made it three and refused a return to the old keys)."""
    built = office
    first = month(built, tmp_path, 1)
    reload(built, tmp_path, persons(), secret=b"another office secret", rekey=True)
    second = month(built, tmp_path, 2, min_standard_error=0.5)
    assert second["averaging"]["over_releases"]["noise_epochs"] == 2
    assert second["averaging"]["over_releases"]["earlier_releases"] == [1]
    reload(built, tmp_path, persons(), rekey=True)
    third = month(built, tmp_path, 3, min_standard_error=0.5)
    over = third["averaging"]["over_releases"]
    assert over["noise_epochs"] == 2 and over["earlier_releases"] == [2]
    assert over["smallest_standard_error"] == second["averaging"]["over_releases"]["smallest_standard_error"]
    # release 3 publishes release 1's cells, value for value
    ledger = open_ledger(built.db.parent / "sdc_ledger.duckdb", create=False, read_only=True)
    try:
        one, three = (sorted(ledger.execute(f"select relation, cell, published from cells where release_id = {r}")
                             .fetchall()) for r in (1, 3))
    finally:
        ledger.close()
    assert one == three and first["release"] == 1


def test_a_cell_whose_records_and_parameters_did_not_change_may_not_change(tmp_path):
    """What no parameter and no microdata explains (a suppression pattern that hides another cell than last
    month, a table changed after sdc verified it) is refused, naming the cell and both values."""
    con = open_ledger(tmp_path / "ledger.duckdb", create=True)
    before = [LedgerCell("protected.t", json.dumps({"region": "R1"}), json.dumps({"freq": 12}), "r1", "p"),
              LedgerCell("protected.t", json.dumps({"region": "R2"}), json.dumps({"freq": 3}), "r2", "p")]
    record_release(con, before, {}, {"published_at": "then"}, "p.duckdb", [])
    now = [LedgerCell("protected.t", json.dumps({"region": "R1"}), json.dumps({"freq": None}), "r1", "p"),
           LedgerCell("protected.t", json.dumps({"region": "R2"}), json.dumps({"freq": 4}), "r2 new", "p")]
    with pytest.raises(SdcError, match=r"1 cell\(s\) would be published with other values than in an earlier release although "
                                       r"their records did not change .*protected.t region=R1: freq=12 in release 1, "
                                       r"freq=None now"):
        check_against_last(con, now, {}, accept_parameter_change=True)
    # the cell whose records changed may change
    assert check_against_last(con, now[1:], {}, accept_parameter_change=False) == []
    con.close()


def test_a_ledger_that_is_not_one_is_refused_and_left_alone(office, tmp_path):
    other = tmp_path / "mine.duckdb"
    import duckdb

    con = duckdb.connect(str(other))
    con.execute("create table notes (x int)")
    con.close()
    before = other.read_bytes()
    with pytest.raises(SdcError, match=r"--ledger .*mine.duckdb is no ledger of sdc publish \(it holds other tables\)"):
        month(office, tmp_path, 1, ledger=other)
    assert other.read_bytes() == before and not (tmp_path / "publication.duckdb").exists()
    with pytest.raises(SdcError, match=r"--ledger .* is the input file"):
        month(office, tmp_path, 1, ledger=office.db)


# ------------------------------------------------------------------------------------------ suppression, a-priori
# tests/test_suppression_a_priori.py's table (regions A-C by kinds x-z) as microdata of the warehouse. Release 1
# suppresses A/x (2 persons) with A/y, C/x and C/y. Month 2 takes three persons out of B/y, every other cell keeps
# its records; the heuristic alone would now hide B/x and B/y and publish C/x = 11 and C/y = 6
SUPPRESSION = {
    "sources.yml": BASE["sources.yml"],
    "audit/supp_cells.sql": "{{ sdc.suppression_cells(source('raw', 'persons'), dims=['region', 'sex']) }}\n",
    "audit/supp_primary.sql": "{{ sdc.suppression_primary(ref('supp_cells'), ['freq:3']) }}\n",
    "audit/supp_relations.sql": "{{ sdc.suppression_constraints(ref('supp_cells'), ['region', 'sex']) }}\n",
    "audit/supp_pattern.py": (
        "def model(dbt, session):\n"
        "    from sdc.suppression.warehouse import suppression_pattern\n\n"
        "    return suppression_pattern(session, dbt.ref('supp_primary'), dbt.ref('supp_relations'),\n"
        "                                 dims=['region', 'sex'], cost='freq', method='heuristic'{a_priori})\n"),
    "protected/by_region_kind.sql": "{{ sdc.suppression_published(ref('supp_pattern'), ['region', 'sex'], "
                                    "value='freq') }}\n",
}


def kinds(leaving: int = 0) -> str:
    """The table's persons, ids fixed per cell; the last ``leaving`` persons of B/y are gone."""
    from test_suppression_a_priori import MONTH_1

    rows, i = [], 0
    for (region, kind), n in MONTH_1.items():
        for k in range(n):
            if not ((region, kind) == ("B", "y") and k >= n - leaving):
                rows.append(f"{i},{kind},{region},{1000 + i}\n")
            i += 1
    return "id,sex,region,income\n" + "".join(rows)


def test_two_months_of_a_suppression_table_keep_the_last_pattern_through_a_priori_cells(tmp_path, capsys):
    models = {**SUPPRESSION, "audit/supp_pattern.py": SUPPRESSION["audit/supp_pattern.py"].format(a_priori="")}
    built = make(tmp_path / "office", models, persons=kinds())
    ledger = built.db.parent / "sdc_ledger.duckdb"
    assert month(built, tmp_path, 1)["release"] == 1

    # month 2 without the last pattern: the heuristic publishes C/x and C/y, which release 1 hid: refused
    reload(built, tmp_path, kinds(leaving=3))
    with pytest.raises(SdcError, match=r"would be published with other values than in an earlier release although "
                                       r"their records did not change .*region=C, sex=x: freq=None, published_text=x in "
                                       r"release 1, freq=11, published_text=11 now"):
        month(built, tmp_path, 2)

    # the last release's cells as a seed of a-priori cells for the pattern
    seed = built.project / "seeds" / "supp_a_priori.csv"
    capsys.readouterr()
    assert main(["release", "a-priori", "by_region_kind", "--db", str(built.db), "--out", str(seed)]) == 0
    assert capsys.readouterr().out.strip() == (f"wrote the a-priori cells of by_region_kind in release 1 to {seed}: "
                                               "4 suppressed, 12 published")
    lines = seed.read_text().splitlines()
    assert lines[0] == "region,sex,status,value" and "C,x,suppressed," in lines and "A,z,published,12" in lines
    (built.project / "models" / "audit" / "supp_pattern.py").write_text(
        SUPPRESSION["audit/supp_pattern.py"].format(a_priori=", a_priori=dbt.ref('supp_a_priori')"))
    dbt(built, "seed")
    dbt(built, "build")
    assert month(built, tmp_path, 2)["release"] == 2
    changes = diff_releases(ledger, 1, 2)
    # only the cells whose records changed: B/y and its totals; release 1's pattern holds
    assert sorted("/".join((c["cell"]["region"], c["cell"]["sex"])) for c in changes) == \
        ["B/Total", "B/y", "Total/Total", "Total/y"]
    import duckdb

    con = duckdb.connect(str(tmp_path / "publication.duckdb"), read_only=True)
    hidden = con.execute("select region || '/' || sex from by_region_kind where freq is null order by 1").fetchall()
    con.close()
    assert [h for (h,) in hidden] == ["A/x", "A/y", "C/x", "C/y"]
    assert {c["reason"] for c in changes} == {"microdata change"}

    # a relation the release did not publish, a release the ledger does not hold
    assert main(["release", "a-priori", "nothing", "--db", str(built.db), "--out", str(tmp_path / "x.csv")]) == 2
    assert "published no relation 'nothing' (it published: main_protected.by_region_kind)" in capsys.readouterr().err
    assert main(["release", "a-priori", "by_region_kind", "--release", "7", "--db", str(built.db),
                 "--out", str(tmp_path / "x.csv")]) == 2
    assert "has no release 7 (releases: 1, 2)" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_a_fresh_ledger_cannot_start_at_release_1_over_a_publication_that_has_releases(office, tmp_path, capsys):
    """Red team R4-7: the ledger lay beside the warehouse, so a warehouse rebuilt in a fresh folder (keyed keys, as
    the docs recommend for rebuilds) started a new ledger at release 1 and replaced the readers' publication
    without comparing anything. The publication names its release and the ledger that recorded it (an identity, no
    path): a ledger that did not record that release is refused, and the publication stays as it was; its own
    ledger publishes on."""
    built = office
    out = tmp_path / "publication.duckdb"
    month(built, tmp_path, 1)
    from test_publish import public_audit

    held = public_audit(out)
    assert held["release"] == 1 and len(held["ledger"]) == 16 and "/" not in held["ledger"]
    before = out.read_bytes()
    fresh = tmp_path / "rebuilt" / "sdc_ledger.duckdb"
    fresh.parent.mkdir()
    args = ["publish", "--db", str(built.db), "--manifest", str(built.manifest), "--out", str(out)]
    assert main(args + ["--ledger", str(fresh)]) == 2
    err = capsys.readouterr().err
    assert err == (f"sdc publish: error: the publication {out} holds release 1 of the ledger {held['ledger']}, and "
                   f"the ledger {fresh} has no release: a release recorded there would not be checked against what "
                   "the readers of the publication hold (cells whose records did not change published with new "
                   "noise). Give the ledger of that publication (sdc publish --ledger; on PostgreSQL the build "
                   "database that published it); nothing was published\n")
    assert out.read_bytes() == before and not fresh.exists()
    # another ledger with releases of its own is refused alike, naming them
    other = tmp_path / "other.duckdb"
    assert main(["publish", "--db", str(built.db), "--manifest", str(built.manifest), "--out", str(other),
                 "--ledger", str(fresh)]) == 0
    assert main(args + ["--ledger", str(fresh)]) == 2
    assert f"and the ledger {fresh} is another ledger (its releases: 1)" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert main(args) == 0 and public_audit(out)["release"] == 2 and public_audit(out)["ledger"] == held["ledger"]


# ------------------------------------------------------------------------------------------ revised values
REVISED = {
    **{k: v for k, v in BASE.items() if k == "sources.yml"},
    "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], value='income', audit=true) }}\n",
    "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n",
    "audit/ckm_weighted.sql": "{{ sdc.ckm_count(source('raw', 'persons'), dims=['region'], weight='w') }}\n",
    "protected/weighted.sql": "{{ sdc.ckm_published(ref('ckm_weighted')) }}\n",
}


def weighted_persons(income_of_7: float = 0.0, weight_of_11: float = 0.0) -> str:
    """400 persons with an income and a weight; person 7's income and person 11's weight revised by the amounts."""
    return "id,sex,region,income,w\n" + "".join(
        f"{i},{'mw'[i % 2]},R{i % 5},{1000 + (i * 7919) % 5000 + (income_of_7 if i == 7 else 0)},"
        f"{80 + (i * 37) % 50 + (weight_of_11 if i == 11 else 0)}\n" for i in range(400))


def test_a_revised_value_or_weight_gets_new_noise_in_every_cell_it_is_in(tmp_path):
    """New user D11: one respondent's income corrected by +1,000, then one record's weight by -86, the records of
    every cell the same. The magnitude noise came from the record keys alone, so it stayed, and the difference of
    the two releases was the exact revision in every cell that holds the record (+1,000, -986). Each record's key
    is now its key for the version of its contributions: the cells that hold the revised record get a new cell
    key, so the difference of the releases carries two noises, and the ledger says why the cells changed."""
    from test_release_verification import magnitude_project

    built = magnitude_project(tmp_path / "office", REVISED, weighted_persons())
    out = tmp_path / "publication.duckdb"
    ledger = built.db.parent / "sdc_ledger.duckdb"

    def state():
        from test_publish import rows

        income = {(s, r): (v, k) for s, r, v, k in rows(built.db, "select p.sex, p.region, p.value, a.cell_key_int "
                                                                   "from main_protected.income as p join "
                                                                   "main_audit.ckm_income as a using (sex, region)")}
        return income

    # one revision at a time, as the new user made them (so without the minimum of changed records: R4-4's test)
    publish(built.db, out, manifest=built.manifest)
    before = state()
    reload(built, tmp_path, weighted_persons(income_of_7=1000))
    publish(built.db, out, manifest=built.manifest, min_changed_records=0)
    after = state()
    holding = [("w", "R2"), ("w", "Total"), ("Total", "R2"), ("Total", "Total")]  # person 7: w, R2
    assert all(after[c][1] != before[c][1] for c in holding)  # a new cell key in every cell that holds the record
    assert all(after[c] == before[c] for c in before if c not in holding)  # and nowhere else
    differences = [after[c][0] - before[c][0] for c in holding]
    assert sum(d == 1000 for d in differences) <= 1, differences  # not the revision itself: two noises
    assert {((c["cell"]["sex"], c["cell"]["region"]), c["reason"]) for c in diff_releases(ledger, 1, 2)
            if c["relation"] == "main_protected.income"} == {(c, "microdata change") for c in holding}

    from test_publish import rows

    weights_before = dict(rows(built.db, "select region, weighted_count from main_protected.weighted"))
    reload(built, tmp_path, weighted_persons(income_of_7=1000, weight_of_11=-86))
    publish(built.db, out, manifest=built.manifest, min_changed_records=0)
    weights_after = dict(rows(built.db, "select region, weighted_count from main_protected.weighted"))
    changed = {r: weights_after[r] - weights_before[r] for r in weights_after if weights_after[r] != weights_before[r]}
    assert set(changed) == {"R1", "Total"}  # person 11 lives in R1
    assert all(d != -86 for d in changed.values()), changed


def test_a_withdrawn_or_added_table_is_named_as_such_in_the_diff(office, tmp_path, capsys):
    """New user D5: a table removed from the release, later put back, showed every cell as "disappeared
    (microdata change)" and "appeared (microdata change)", though the microdata had not changed."""
    from test_publish import edited_manifest

    built = office
    out = tmp_path / "publication.duckdb"
    ledger = built.db.parent / "sdc_ledger.duckdb"
    publish(built.db, out, manifest=built.manifest)
    publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=("by_region",)))
    publish(built.db, out, manifest=built.manifest)
    withdrawn, added = diff_releases(ledger, 1, 2), diff_releases(ledger, 2, 3)
    assert withdrawn and {(c["relation"], c["change"], c["reason"]) for c in withdrawn} == {
        ("main_protected.by_region", "disappeared", "table withdrawn")}
    assert added and {(c["relation"], c["change"], c["reason"]) for c in added} == {
        ("main_protected.by_region", "appeared", "table added")}
    assert main(["release", "diff", "1", "2", "--ledger", str(ledger)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"release 1 -> 2: {len(withdrawn)} disappeared (table withdrawn)"


def test_a_release_that_changes_a_handful_of_records_is_refused_for_its_changed_cells(office, tmp_path):
    """Red team R4-4: with stable keys the cells that differ between two releases are exactly those of the records
    added or removed; one person joined, and the changed cells of the two tables intersect in that person's codes.
    Measured here (the publication published anyway, with no minimum), then refused at the default minimum of 10
    changed records; twelve joiners are published, their changes counted from the ledger's sketch of the records."""
    built = office
    ledger = built.db.parent / "sdc_ledger.duckdb"
    out = tmp_path / "publication.duckdb"
    publish(built.db, out, manifest=built.manifest)
    joiner = "400,m,R3,4321\n"
    reload(built, tmp_path, persons() + joiner)
    with pytest.raises(SdcError, match=r"^1 record change\(s\) of raw.persons since release 1 \(a record added or "
                                       r"removed counts 1, one revised 2, in the columns its tables read\), fewer than 10 \(sdc publish "
                                       r"--min-changed-records\): the cells that change between the two releases are "
                                       r"exactly those of these records"):
        publish(built.db, out, manifest=built.manifest)
    # the measurement: without a minimum the release goes out, and a reader of both finds the joiner's codes
    report: dict = {}
    publish(built.db, tmp_path / "measured.duckdb", manifest=built.manifest, min_changed_records=0, report=report)
    assert {c["reason"] for c in diff_releases(ledger, 1, 2)} == {"microdata change"}
    import duckdb

    def cells(path):
        con = duckdb.connect(str(path), read_only=True)
        found = {(t, tuple(r[:-1])): r[-1] for t, sql in (("by_region", "select region, count from by_region"),
                                                          ("persons", "select sex, region, count from persons"))
                 for r in con.execute(sql).fetchall()}
        con.close()
        return found

    first, second = cells(out), cells(tmp_path / "measured.duckdb")
    moved = {key for key in first if first[key] != second[key]}
    leaves = {key[1] for key in moved if key[0] == "persons" and "Total" not in key[1]}
    assert leaves <= {("m", "R3")} and {k[1] for k in moved if k[0] == "by_region"} <= {("R3",), ("Total",)}
    assert report["changed_records"] == {"raw.persons": 1}
    # twelve joiners instead of the one (its record revised: 2 changes, 11 added): published, the changes counted
    reload(built, tmp_path, persons() + "".join(f"{400 + k},{'mw'[k % 2]},R{k % 5},{1000 + k}\n" for k in range(12)))
    report = {}
    publish(built.db, tmp_path / "measured.duckdb", manifest=built.manifest, report=report)
    assert report["changed_records"] == {"raw.persons": 13} and report["release"] == 3


def renamed(built, old: str, new: str) -> None:
    """The published model ``old`` renamed ``new`` (its file moved), as a project might between two months."""
    folder = built.project / "models" / "protected"
    (folder / f"{old}.sql").rename(folder / f"{new}.sql")


def test_a_renamed_table_is_compared_with_the_cells_it_published_under_its_old_name(office, tmp_path):
    """The red team of issue 48 (F5): renaming the published tables before each publish let four re-keys through
    the averaging floor over the releases, and a new ptable through without --accept-parameter-change: both
    matched cells by relation name. Cells are now matched by the loaded tables and dimensions (averaging) and by
    their records (the values of unchanged cells), whatever the relation is called."""
    built = office
    ledger = built.db.parent / "sdc_ledger.duckdb"
    month(built, tmp_path, 1)
    for old in ("persons", "by_region"):
        renamed(built, old, f"{old}_r2")
    reload(built, tmp_path, persons(), secret=b"a second office secret", rekey=True)
    with pytest.raises(SdcError, match=r"^the releases in the ledger let a reader average the CKM noise: .* unchanged "
                                       r"count\(s\) of raw.persons \(releases 1, each the last under other record keys "
                                       r"or parameters\)"):
        month(built, tmp_path, 2)
    second = month(built, tmp_path, 2, min_standard_error=0.5)
    assert second["published"] == ["main_protected.by_region_r2", "main_protected.persons_r2"]
    assert second["averaging"]["over_releases"]["noise_epochs"] == 2
    # back to the first secret under a third name, with a new ptable: release 1's cells under release 1's keys
    for old in ("persons", "by_region"):
        renamed(built, f"{old}_r2", f"{old}_r3")
    seed = built.project / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "4", "--V", "2.5", "--js", "2", "--out", str(seed)]) == 0
    reload(built, tmp_path, persons(), rekey=True)
    with pytest.raises(SdcError, match=r"cell\(s\) whose records did not change would be published with other values "
                                       r"than in release 1, because the parameters of main_protected.by_region_r3, "
                                       r"main_protected.persons_r3 changed"):
        month(built, tmp_path, 3, min_standard_error=0.1)
    assert [r["release"] for r in list_releases(ledger)] == [1, 2]


def test_a_table_left_out_of_a_release_is_compared_with_the_release_that_last_published_it(office, tmp_path):
    """F6: release 2 publishes the regions only; release 3 brings the table by sex and region back with a new
    ptable. Its cells are compared with release 1, which published them (the last release has none of them): a
    parameter change, refused without --accept-parameter-change, and with it a second noise epoch."""
    built = office
    month(built, tmp_path, 1)
    out = tmp_path / "publication.duckdb"
    publish(built.db, out, manifest=edited_manifest(built, tmp_path, untag=("persons",)), min_changed_records=0)
    seed = built.project / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "4", "--V", "2.5", "--js", "2", "--out", str(seed)]) == 0
    dbt(built, "build")
    with pytest.raises(SdcError, match=r"would be published with other values than in release 1, 2, because the "
                                       r"parameters of main_protected.by_region, main_protected.persons changed"):
        month(built, tmp_path, 3)
    third = month(built, tmp_path, 3, accept_parameter_change=True, min_standard_error=0.4)
    assert third["release"] == 3 and third["averaging"]["over_releases"]["noise_epochs"] == 2


def test_changed_records_are_counted_against_every_earlier_release_in_the_columns_the_tables_read(office, tmp_path):
    """F6, F7: twelve joiners (release 2), then eleven of them gone again: 11 changes against release 2, but one
    against release 1, which a reader also holds: refused. And the count is of what the tables read (sex, region,
    the record key): a revised income, which no published table reads, is no change; one joiner beside ten such
    revisions is one change, refused; two such revisions alone are none, published (they were refused before)."""
    built = office
    ledger = built.db.parent / "sdc_ledger.duckdb"
    out = tmp_path / "publication.duckdb"
    publish(built.db, out, manifest=built.manifest)
    joiners = [f"{400 + k},{'mw'[k % 2]},R{k % 5},{1000 + k}\n" for k in range(12)]
    reload(built, tmp_path, persons() + "".join(joiners))
    report: dict = {}
    publish(built.db, out, manifest=built.manifest, report=report)
    assert report["changed_records"] == {"raw.persons": 12}
    reload(built, tmp_path, persons() + joiners[0])
    with pytest.raises(SdcError, match=r"^1 record change\(s\) of raw.persons since release 1 \(a record added or "
                                       r"removed counts 1, one revised 2, in the columns its tables read\), fewer than "
                                       r"10"):
        publish(built.db, out, manifest=built.manifest)
    revised = persons().splitlines(keepends=True)
    for k in range(1, 11):  # ten incomes revised
        i, sex, region, income = revised[k].strip().split(",")
        revised[k] = f"{i},{sex},{region},{int(income) + 100}\n"
    reload(built, tmp_path, "".join(revised) + "".join(joiners) + "412,w,R2,2024\n")
    with pytest.raises(SdcError, match=r"^1 record change\(s\) of raw.persons since release 2"):
        publish(built.db, out, manifest=built.manifest)
    reload(built, tmp_path, "".join(revised[:3]) + "".join(persons().splitlines(keepends=True)[3:]) + "".join(joiners))
    report = {}
    publish(built.db, out, manifest=built.manifest, report=report)
    assert report["changed_records"] == {"raw.persons": 0} and report["release"] == 3
    assert diff_releases(ledger, 2, 3) == []


# ------------------------------------------------------------------------------------------ three months
def month_persons(revised: int = 0, joined: int = 0) -> str:
    """400 persons; the first ``revised`` of them with a corrected income, and ``joined`` new ones."""
    rows = [f"{i},{'mw'[i % 2]},R{i % 5},{1000 + (i * 7919) % 5000 + (250 if i < revised else 0)}\n"
            for i in range(400 + joined)]
    return "id,sex,region,income\n" + "".join(rows)


def test_three_months_with_a_revision_and_a_re_key_run_with_the_documented_commands(tmp_path, capsys, monkeypatch):
    """The issue's monthly job on DuckDB, with the commands the guides give and nothing else, each exit 0: month 1
    load, build, publish, the office and the public report; month 2 a revision (twelve incomes corrected, three
    persons joined); month 3 a new secret (a re-key). The guide's ptable (V = 4) leaves one count table two draws
    above the floor; the ledger says so."""
    from test_publication_gate import MAGNITUDE_VARS, NUMS_SEED_TYPES, dbt_result
    from test_release_verification import magnitude_project

    models = {**BASE, "audit/ckm_income.sql": "{{ sdc.ckm_sum(source('raw', 'persons'), dims=['sex', 'region'], "
                                              "value='income', zero_with_counts=ref('sdc_ptable')) }}\n",
              "protected/income.sql": "{{ sdc.ckm_published(ref('ckm_income')) }}\n"}
    built = magnitude_project(tmp_path / "office", models, month_persons())
    seed = built.project / "seeds" / "sdc_ptable.csv"
    seed.unlink()
    assert main(["ptable", "--D", "5", "--V", "4", "--js", "2", "--out", str(seed)]) == 0  # the guide's step 5
    micro, out, ledger = tmp_path / "persons.csv", tmp_path / "publication.duckdb", tmp_path / "sdc_ledger.duckdb"

    def run_month(text: str, secret: str, *load_options: str) -> str:
        micro.write_text(text)
        monkeypatch.setenv("SDC_KEY_SECRET", secret)
        assert main(["load", "--db", str(built.db), "--input", str(micro), "--table", "persons", "--id", "id",
                     "--key-mode", "keyed", *load_options]) == 0
        for command in (("seed",), ("build",)):
            result = dbt_result(built, *command)
            assert result.returncode == 0, result.stdout[-3000:]
        capsys.readouterr()
        assert main(["publish", "--db", str(built.db), "--project-dir", str(built.project), "--out", str(out),
                     "--ledger", str(ledger)]) == 0
        printed = capsys.readouterr().out
        assert main(["report", "--publication", str(out), "--ledger", str(ledger), "--out",
                     str(tmp_path / "office.html")]) == 0
        assert main(["report", "--publication", str(out), "--public", "--out", str(tmp_path / "public.html")]) == 0
        return printed

    secret = "gate test secret"  # the secret of the first load (make), as the load log remembers it
    assert "recorded as release 1" in run_month(month_persons(), secret)
    assert "recorded as release 2" in run_month(month_persons(revised=12, joined=3), secret)
    assert "recorded as release 3" in run_month(month_persons(revised=12, joined=3), "a new secret for month three",
                                                "--rekey")
    capsys.readouterr()
    assert main(["release", "list", "--ledger", str(ledger)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["release 1", "release 2", "release 3"]
    assert "noise epochs 2 (" in lines[2], lines
    assert {c["reason"] for c in diff_releases(ledger, 1, 2)} == {"microdata change"}
    assert {c["reason"] for c in diff_releases(ledger, 2, 3)} == {"re-key"}
    from sdc.release.ledger import release_audit

    assert release_audit(ledger, 2)["changed_records"] == {"raw.persons": 27}  # 12 revised (2 each), 3 joined
    # the office report of an earlier release, from the ledger (new user D13: only the last one could be had)
    earlier = tmp_path / "release1.html"
    assert main(["report", "--publication", str(out), "--ledger", str(ledger), "--release", "1",
                 "--out", str(earlier)]) == 0
    assert capsys.readouterr().out.startswith("wrote the office report (internal: never give it to readers) of "
                                              "release 1, 2 tables")
    text = earlier.read_text()
    assert ", release 1, published " in text and "The first release in the ledger." in text
    assert main(["report", "--publication", str(out), "--ledger", str(ledger), "--release", "9",
                 "--out", str(earlier)]) == 2
    assert "has no release 9 (releases: 1, 2, 3)" in capsys.readouterr().err
