"""Cell suppression inside `dbt build`: SQL macros for cells, rules and relations, dbt-duckdb Python models
for the secondary step and the audit, and the data test sdc_suppression_audit that fails a disclosive
pattern."""

import duckdb
import pytest

from dbt_project_helper import ScratchProject
from test_suppression_primary import STUDENTS

DIMS = "['fach', 'geschlecht']"


def python_model(p: ScratchProject, name: str, body: str) -> None:
    (p.root / "models" / f"{name}.py").write_text(f"def model(dbt, session):\n{body}")


def students_project(root):
    """A project over raw.students with the suppression steps before the pattern: cells, primary_cells, relations."""
    p = ScratchProject(root)
    con = duckdb.connect(str(p.db))
    con.execute("create schema raw")
    con.execute("create table raw.students (fach varchar, geschlecht varchar)")
    con.executemany("insert into raw.students values (?, ?)", [(f, g) for (f, g), n in STUDENTS.items() for _ in range(n)])
    con.close()
    p.sources(["students"])
    p.model("cells", f"{{{{ sdc.suppression_cells(source('raw', 'students'), dims={DIMS}) }}}}")
    p.model("primary_cells", "{{ sdc.suppression_primary(ref('cells'), ['freq:3']) }}")
    p.model("relations", f"{{{{ sdc.suppression_constraints(ref('cells'), {DIMS}) }}}}")
    return p


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    p = students_project(tmp_path_factory.mktemp("suppression_dbt") / "project")
    python_model(p, "pattern", "    from sdc.suppression.warehouse import suppression_pattern\n"
                 "    return suppression_pattern(session, dbt.ref('primary_cells'), dbt.ref('relations'),\n"
                 f"                                 dims={DIMS}, cost='freq', mark='.')\n")
    python_model(p, "pattern_audit", "    from sdc.suppression.warehouse import suppression_audit\n"
                 f"    return suppression_audit(session, dbt.ref('pattern'), dbt.ref('relations'), dims={DIMS})\n")
    p.model("published", f"{{{{ sdc.suppression_published(ref('pattern'), {DIMS}, value='freq') }}}}")
    # a pattern that suppresses only the primary cell (seed 001: the margins give it away)
    p.model("primary_only", "select * exclude (status), status from ref_primary".replace(
        "ref_primary", "{{ ref('primary_cells') }}"))
    python_model(p, "primary_only_audit", "    from sdc.suppression.warehouse import suppression_audit\n"
                 f"    return suppression_audit(session, dbt.ref('primary_only'), dbt.ref('relations'), dims={DIMS})\n")
    (p.root / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n"
        "  - name: pattern_audit\n    data_tests: [sdc_suppression_audit]\n"
        "  - name: primary_only_audit\n    data_tests: [sdc_suppression_audit]\n"
    )
    result = p.dbt("build")
    return p, result


def outcome(result, test_name):
    """The result line of one data test in dbt's log (PASS or FAIL n)."""
    return next(line for line in result.stdout.splitlines() if test_name in line and "START" not in line)


def rows(p, sql):
    con = duckdb.connect(str(p.db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_pattern_is_seed001_and_its_audit_passes(built):
    p, result = built
    assert "PASS=10 WARN=0 ERROR=1" in result.stdout, result.stdout[-3000:]  # the error: the next test
    hidden = rows(p, "select fach, geschlecht, status from pattern where status in ('primary', 'secondary') "
                     "order by 1, 2")
    # seed 001 "Sekundärsperrung": Bauingenieurwesen m/w and Medizin m/w, Medizin/w the primary
    assert hidden == [("Bauingenieurwesen", "m", "secondary"), ("Bauingenieurwesen", "w", "secondary"),
                      ("Medizin", "m", "secondary"), ("Medizin", "w", "primary")]
    audit = rows(p, "select fach, geschlecht, feasible_lower, feasible_upper, protected from pattern_audit "
                    "where status = 'primary'")
    # Bau w + Med w = 4 with both at least 1: Medizin/w lies in [1, 3]
    assert audit == [("Medizin", "w", 1.0, 3.0, True)]
    assert "PASS" in outcome(result, "sdc_suppression_audit_pattern_audit")


def test_the_audit_test_fails_a_disclosive_pattern(built):
    p, result = built
    assert "FAIL 1" in outcome(result, "sdc_suppression_audit_primary_only_audit")
    assert rows(p, "select fach, geschlecht, feasible_lower, feasible_upper from primary_only_audit") == [
        ("Medizin", "w", 1.0, 1.0)]


def test_published_relation_hides_suppressed_values(built):
    p, _ = built
    columns = [r[0] for r in rows(p, "select column_name from information_schema.columns "
                                     "where table_name = 'published' order by ordinal_position")]
    assert columns == ["fach", "geschlecht", "freq", "published_text"] + [
        f"{d}__{c}" for d in ("fach", "geschlecht") for c in ("level", "is_total", "parent", "sort")]
    shown = dict(((f, g), (v, t)) for f, g, v, t in rows(p, "select fach, geschlecht, freq, published_text from published"))
    assert shown[("Medizin", "w")] == (None, ".") and shown[("Bauingenieurwesen", "m")] == (None, ".")
    assert shown[("Informatik", "w")] == (12, "12") and shown[("Total", "Total")] == (53, "53")


def test_the_quickstart_s_first_suppression_step_builds_on_a_fresh_project(tmp_path):
    """New user F1: docs/quickstart/postgresql.md's first suppression step selected the primary and relations
    models alone, which fail on a fresh project where a cell table lies in front of them (as
    docs/concepts/suppression.md builds it). The step as the page gives it (its model names made this project's)
    builds them with what they read."""
    import re
    import shlex
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "quickstart" / "postgresql.md").read_text(encoding="utf-8")
    (line,) = [l for l in page.splitlines() if l.startswith("dbt build --select") and "supp_persons_primary" in l]
    command = shlex.split(line.split("#")[0])[1:]
    command = [re.sub(r"supp_persons_primary", "primary_cells", re.sub(r"supp_persons_relations", "relations", a))
               for a in command]
    p = students_project(tmp_path / "project")
    result = p.dbt(*command)
    assert result.returncode == 0, result.stdout[-3000:]
    assert rows(p, "select count(*) from main.primary_cells")[0][0] > 0
