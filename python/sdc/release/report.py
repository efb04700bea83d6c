"""The release report: one self-contained HTML file per release (no server, no network, no script), in two kinds.

* The **office report** (the default) is made from the publication's tables and the ledger of releases
  (release/ledger.py), which keeps the full release audit: for each table its cells (suppressed cells marked,
  their interval or mark shown as published), its quality figures and the histogram of its relative deviations;
  for the release the audit's risk figures, the cells that changed since the release before it (change and reason
  per cell) and the ptable's transition matrix. These are computed from the original values, so its first line
  and its heading say that it is internal.
* The **public report** (``public``) is made from the publication alone: its tables, the checks the release passed
  and the method's public parameters (release/public_audit.py), nothing computed from original values.

Plots are matplotlib's, embedded as SVG; every text from the data is escaped.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

from sdc.conventions import (
    DIMENSION_COLUMN_SUFFIXES,
    PUBLICATION_INDEX_TABLE,
    PUBLICATION_SCHEMA,
    RELEASE_AUDIT_TABLE,
)
from sdc.warehouse.dimension_names import dimension_column
from sdc.warehouse.database import connect, first_line
from sdc.errors import SdcError
from sdc.quoting import quote_identifier as q
from sdc.release.public_audit import PUBLISHED_KINDS

REPORT_COMMAND = "sdc report"  # the mark of its files (sdc.files)
# cells shown per table; the rest are in the publication (the report says how many)
CELLS_SHOWN: int = 5000
QUALITY_LABELS: dict[str, str] = {
    "cells": "cells (original not 0)",
    "mean_absolute_deviation": "mean absolute deviation",
    "mean_relative_deviation": "mean relative deviation",
    "stay_share": "share of cells unchanged",
    "changed_share": "share of cells changed",
    "max_abs_noise": "largest absolute noise",
    "max_relative_noise": "largest relative deviation",
    "rad_median": "median relative deviation",
    "rad_p90": "90th percentile of the relative deviation",
    "hellinger_distribution": "Hellinger distance of the distributions",
    "hellinger_utility": "Hellinger utility (1 = unchanged)",
    "false_zeros": "cells with records published as 0",
    "sign_changes": "cells whose sign changed",
}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 70rem; color: #1b1b1b; line-height: 1.4; }
h1 { margin-bottom: 0.2rem; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2rem; margin-top: 2.5rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ddd; padding: 0.15rem 0.5rem; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
td.suppressed { background: #fde2e1; }
td.zero { background: #eef3fb; }
.passed { color: #1a7f37; font-weight: 600; } .note { color: #555; font-size: 0.9rem; }
.internal { background: #fff1c2; border: 1px solid #d4a72c; padding: 0.5rem; font-weight: 600; }
nav ul { columns: 2; } figure { margin: 0.5rem 0; } figure svg { max-width: 100%; height: auto; }
"""


def write_report(publication: str | Path, out: str | Path, *, ledger: str | Path | None = None,
                 release: int | None = None, public: bool = False) -> dict:
    """Writes the report of the publication file ``publication`` (sdc publish --out) to ``out`` (new, or an
    earlier report: sdc writes over no other file); returns a summary {tables, cells, out, office}.

    The office report (the default) needs the ``ledger`` of the publication: the release audit's figures, which are
    computed from the original values, are kept there (never in the publication); its first line says that it is
    internal. ``release``: another release of the ledger than the one the publication holds (its cells from the
    ledger). ``public``: the report for readers, made from the publication alone (its tables, the checks passed,
    the public parameters). A file that is no publication of sdc publish is refused before anything is written.

    >>> import json, pathlib, shutil, tempfile
    >>> import duckdb
    >>> from sdc.release import publish, write_report
    >>> def build(folder, sql):  # what dbt seed leaves: a seed's file and table, the manifest that tags it
    ...     with duckdb.connect(str(folder / "warehouse.duckdb")) as con:
    ...         _ = con.execute(f"create schema if not exists protected; create or replace table protected.cells as {sql}")
    ...         _ = con.execute(f"copy protected.cells to '{folder / 'cells.csv'}' (header)")
    ...     node = {"resource_type": "seed", "name": "cells", "alias": "cells", "schema": "protected",
    ...             "database": "warehouse", "tags": ["sdc_publish"], "config": {"materialized": "seed"},
    ...             "depends_on": {"macros": [], "nodes": []}, "root_path": str(folder), "original_file_path": "cells.csv"}
    ...     _ = (folder / "manifest.json").write_text(json.dumps({"nodes": {"seed.census.cells": node}}))
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> build(folder, "select * from (values ('N', 3), ('S', 4)) t(region, count)")
    >>> publish(folder / "warehouse.duckdb", folder / "publication.duckdb", manifest=folder / "manifest.json")
    ['cells']
    >>> summary = write_report(folder / "publication.duckdb", folder / "report.html",
    ...                        ledger=folder / "sdc_ledger.duckdb")
    >>> summary["tables"], summary["cells"], (folder / "report.html").read_text().startswith("<!-- INTERNAL")
    (1, 2, True)
    >>> summary = write_report(folder / "publication.duckdb", folder / "public.html", public=True)
    >>> (folder / "public.html").read_text().startswith("<!doctype html>")
    True
    >>> write_report(folder / "warehouse.duckdb", folder / "report.html", public=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: .../warehouse.duckdb is no publication of sdc publish with its release audit ...
    >>> shutil.rmtree(folder)
    """
    from sdc.files import check_not_an_input, check_output_file, write_text_atomically

    check_not_an_input(out, publication, *([ledger] if ledger is not None else []))
    check_output_file(out, REPORT_COMMAND)
    held = read_publication(publication)
    if public:
        if ledger is not None or release is not None:
            raise SdcError("--public makes the readers' report from the publication alone: --ledger and --release "
                           "belong to the office report")
        report = {**held, "office": False}
    else:
        if ledger is None:
            raise SdcError(f"the office report of {publication} needs its ledger of releases (--ledger; sdc publish "
                           "keeps the audit's figures there, never in the publication); --public writes the report "
                           "for readers from the publication alone")
        from sdc.release.ledger import open_ledger

        con = open_ledger(ledger, create=False, read_only=True)
        try:
            report = office_release(con, held, release, f"the ledger {ledger}", f"the publication {publication}")
        finally:
            con.close()
    write_text_atomically(Path(out), render(report), command=REPORT_COMMAND)
    return {"tables": len(report["tables"]), "cells": sum(len(t["rows"]) for t in report["tables"]),
            "out": str(out), "office": report["office"], "release": report["audit"].get("release")}


def office_release(con, held: dict, release: int | None, ledger: str, publication: str) -> dict:
    """The office's report of ``release`` (default: the one the publication ``held`` holds, read_publication's)
    from the ledger on the DuckDB connection ``con``: the full audit, the changes since the release before, and
    the tables (the publication's, or for another release the cells the ledger recorded)."""
    from sdc.release.ledger import audit_in, check_publication_release, diff_in

    check_publication_release(con, held["audit"], publication, ledger)
    holds = held["audit"].get("release")
    number = holds if release is None else release
    audit = audit_in(con, number, ledger)
    tables = held["tables"] if number == holds else ledger_tables(con, number)
    changes = diff_in(con, number - 1, number, ledger) if number > 1 else None
    return {"tables": tables, "audit": audit, "file": held["file"], "office": True, "changes": changes}


def ledger_tables(con, release: int) -> list[dict]:
    """The tables of ``release`` as the ledger recorded their cells: the dimensions' codes and the measures."""
    from sdc.release.ledger import LEDGER_SCHEMA

    tables: dict[str, dict] = {}
    for relation, cell, published in con.execute(
            f"select relation, cell, published from {LEDGER_SCHEMA}.cells where release_id = ? order by 1, 2",
            [release]).fetchall():
        codes, values = json.loads(cell), json.loads(published or "{}")
        table = tables.setdefault(relation, {"name": relation.rsplit(".", 1)[-1], "label": relation,
                                             "columns": [*codes, *values], "rows": []})
        table["rows"].append(tuple([*codes.values(), *values.values()]))
    return list(tables.values())


def read_publication(path: str | Path) -> dict:
    """The publication's tables (name, relation, columns, rows) and its public release audit."""
    path = Path(path)
    if not path.is_file():
        raise SdcError(f"publication file not found: {path}")
    con = connect(path, read_only=True, must_exist=True, what="the publication")
    try:
        schema = q(PUBLICATION_SCHEMA)
        try:
            index = con.execute(f"select name, relation from {schema}.{q(PUBLICATION_INDEX_TABLE)} order by name").fetchall()
            (audit,) = con.execute(f"select report from {schema}.{q(RELEASE_AUDIT_TABLE)}").fetchone()
        except Exception as exc:  # duckdb.Error, or no row
            raise SdcError(f"{path} is no publication of sdc publish with its release audit ({first_line(exc)}); "
                           "publish with this sdc first") from None
        tables = []
        for name, relation in index:
            cursor = con.execute(f"select * from main.{q(name)} order by all")
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
            label = ".".join(relation.split(".")[-2:])
            tables.append({"name": name, "label": label, "columns": columns, "rows": rows})
        return {"tables": tables, "audit": json.loads(audit), "file": str(path)}
    finally:
        con.close()


def write_target_report(pg, schema: str, out: str | Path, *, release: int | None = None,
                        public: bool = False) -> dict:
    """The report of the release that sdc publish --target audited on the PostgreSQL database ``pg`` (psycopg2):
    the tables of its publication schema ``schema``; the office report (default) with the audit and the changes
    from the ledger there (``release``: another release of it), ``public`` the readers' from the schema alone."""
    from sdc.release.ledger_postgres import read_existing_ledger

    return _warehouse_report(lambda: read_target_publication(pg, schema), lambda: read_existing_ledger(pg, "all"),
                             f"schema {schema}", out, release, public)


def write_spark_report(wh, shown: str, schema: str, out: str | Path, *, release: int | None = None,
                       public: bool = False) -> dict:
    """write_target_report of a Spark warehouse ``wh`` (sdc.warehouse.spark_target.SparkWarehouse): its publication
    database ``schema`` and the ledger database sdc publish --target keeps there."""
    from sdc.release.publish_spark import read_spark_ledger

    return _warehouse_report(lambda: read_spark_publication(wh, shown, schema),
                             lambda: read_spark_ledger(wh, shown, "all"), f"database {schema}", out, release, public)


def _warehouse_report(read_held, read_ledger, shown: str, out: str | Path, release: int | None,
                      public: bool) -> dict:
    """The report of a warehouse's release: ``read_held()`` its publication as read_publication gives a file's,
    ``read_ledger()`` its ledger (con, where, close)."""
    from sdc.files import check_output_file, write_text_atomically
    from sdc.release.ledger import audit_in, diff_in

    check_output_file(out, REPORT_COMMAND)
    try:
        held = read_held()
    except SdcError:
        if release is None or public:
            raise
        held = None  # an earlier release: the ledger alone holds it (the schema may hold a build not yet audited)
    if public:
        if release is not None:
            raise SdcError("--public makes the readers' report from the publication alone: --release belongs to the "
                           "office report")
        report = {**held, "office": False}
    else:
        ledger = read_ledger()
        try:
            if held is None:
                report = {"tables": ledger_tables(ledger.con, release), "audit": audit_in(ledger.con, release, ledger.where),
                          "file": f"{shown}, as recorded in {ledger.where}", "office": True,
                          "changes": diff_in(ledger.con, release - 1, release, ledger.where) if release > 1 else None}
            else:
                report = office_release(ledger.con, held, release, ledger.where, f"the publication {shown}")
        finally:
            ledger.close()
    write_text_atomically(Path(out), render(report), command=REPORT_COMMAND)
    return {"tables": len(report["tables"]), "cells": sum(len(t["rows"]) for t in report["tables"]),
            "out": str(out), "office": report["office"], "release": report["audit"].get("release")}


def read_spark_publication(wh, shown: str, schema: str) -> dict:
    """read_publication of a Spark publication database (sdc publish --target's): its tables and its public
    release audit."""
    from sdc.quoting import quote_spark_identifier as qs

    session = wh.session
    try:
        (audit,) = session.sql(f"select report from {qs(schema)}.{qs(RELEASE_AUDIT_TABLE)}").collect()[0]
        audit = json.loads(audit)
        names = sorted(r.tableName for r in session.sql(f"show tables in {qs(schema)}").collect()
                       if r.tableName != RELEASE_AUDIT_TABLE and not r.isTemporary)
    except Exception as exc:  # Spark's errors: no such database or table, or no row
        raise SdcError(f"database {schema} of {shown} holds no release that sdc publish --target audited "
                       f"({first_line(exc)}): run sdc publish --target first") from None
    labels = {label.rsplit(".", 1)[-1]: label for label in audit.get("published") or []}
    tables = []
    for name in names:
        columns = list(session.table(f"{qs(schema)}.{qs(name)}").columns)
        frame = session.sql(f"select * from {qs(schema)}.{qs(name)} order by "
                            + ", ".join(str(k + 1) for k in range(len(columns))))
        tables.append({"name": name, "label": labels.get(name, name), "columns": columns,
                       "rows": [tuple(row) for row in frame.collect()]})
    return {"tables": tables, "audit": audit, "file": f"database {schema} of {shown}"}


def read_target_publication(pg, schema: str) -> dict:
    """read_publication of a PostgreSQL publication schema (grant_published's copy, audited by sdc publish
    --target): its tables and its public release audit."""
    import psycopg2

    try:
        with pg.cursor() as cur:
            cur.execute("select current_database()")
            (database,) = cur.fetchone()
            cur.execute(f"select report::text from {q(schema)}.{q(RELEASE_AUDIT_TABLE)}")
            (audit,) = cur.fetchone()
            audit = json.loads(audit)
            cur.execute("select tablename from pg_tables where schemaname = %s and tablename <> %s order by 1",
                        (schema, RELEASE_AUDIT_TABLE))
            names = [n for (n,) in cur.fetchall()]
            labels = {label.rsplit(".", 1)[-1]: label for label in audit.get("published") or []}
            tables = []
            for name in names:
                cur.execute(f"select * from {q(schema)}.{q(name)} order by " + ", ".join(
                    str(k + 1) for k in range(_column_count(cur, schema, name))))
                columns = [d[0] for d in cur.description]
                tables.append({"name": name, "label": labels.get(name, name), "columns": columns,
                               "rows": [tuple(row) for row in cur.fetchall()]})
        pg.rollback()
    except (psycopg2.Error, TypeError) as exc:
        pg.rollback()
        raise SdcError(f"schema {schema} holds no release that sdc publish --target audited ({first_line(exc)}): "
                       "run sdc publish --target first") from None
    return {"tables": tables, "audit": audit, "file": f"schema {schema} of database {database}"}


def _column_count(cur, schema: str, name: str) -> int:
    cur.execute("select count(*) from information_schema.columns where table_schema = %s and table_name = %s",
                (schema, name))
    return cur.fetchone()[0]


INTERNAL_LINE = ("<!-- INTERNAL: the office report of an sdc release. It holds figures computed from the original "
                 "values (quality, standard errors, the ptable, the reasons of changes): never give it to readers; "
                 "sdc report --public writes theirs. -->\n")


def render(release: dict) -> str:
    """The report's HTML: the office's (``release["office"]``: its first line says it is internal) with the full
    audit and ``release["changes"]`` (the ledger's diff of this release against the one before it), or the
    readers' with the public audit only."""
    audit, office = release["audit"], release.get("office", False)
    quality = audit.get("quality", {}) if office else {}
    title = "Release report (internal: the office's)" if office else "Release report"
    parts = [INTERNAL_LINE if office else "",
             f"<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{_e(title)}: "
             f"{_e(Path(release['file']).name)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
             f"<h1>{_e(title)}</h1>\n",
             ("<p class=\"internal\">Internal: figures computed from the original values. Never give this report to "
              "readers; <code>sdc report --public</code> writes theirs.</p>\n") if office else "",
             f"<p class=\"note\">{len(release['tables'])} tables of the publication {_e(release['file'])}"
             + (f", release {_e(audit['release'])}" if audit.get("release") is not None else "")
             + (f", published {_e(audit['published_at'])}" if audit.get("published_at") else "") + ".</p>\n",
             _contents(release, office)]
    if office:
        parts += [_risk(audit), _changes(audit, release.get("changes")), _ptables(audit)]
    else:
        parts.append(_public_checks(audit))
    for table in release["tables"]:
        parts.append(_table(table, quality.get(table["label"]), audit))
    parts.append("</body>\n</html>\n")
    return "".join(parts)


def _contents(release: dict, office: bool) -> str:
    items = "".join(f"<li><a href=\"#{_anchor(t['name'])}\">{_e(t['name'])}</a></li>" for t in release["tables"])
    sections = ("<li><a href=\"#risk\">Risk: the release audit</a></li>"
                "<li><a href=\"#changes\">Changes since the last release</a></li>"
                "<li><a href=\"#ptable\">Perturbation table</a></li>") if office else \
        "<li><a href=\"#checks\">The release's checks</a></li>"
    return f"<nav><h2>Contents</h2><ul>{sections}{items}</ul></nav>\n"


def _public_checks(audit: dict) -> str:
    """The readers' part of the audit (release/public_audit.py): the checks passed and the public parameters."""
    checks = "".join(f"<tr><td>{_e(name.replace('_', ' '))}</td><td class=\"passed\">{_e(result)}</td></tr>"
                     for name, result in (audit.get("checks") or {}).items())
    parameters = audit.get("parameters") or {}
    rows = "".join(f"<tr><td>{_e(name)}</td><td class=\"number\">{_e(p.get('D'))}</td>"
                   f"<td class=\"number\">{_e(p.get('V'))}</td><td class=\"number\">{_e(p.get('js'))}</td></tr>"
                   for name, p in (parameters.get("ptables") or {}).items())
    floor = parameters.get("min_standard_error")
    return ("<section id=\"checks\"><h2>The release's checks</h2>\n"
            f"<table><tr><th>check</th><th>result</th></tr>{checks}</table>\n"
            + (f"<p>Cell Key Method: no count with records can be estimated from the release's tables to a standard "
               f"error below {_e(floor)}.</p>\n" if floor is not None else "")
            + (f"<table><tr><th>perturbation table</th><th>largest noise D</th><th>noise variance V</th>"
               f"<th>counts 1..js never published, js</th></tr>{rows}</table>\n" if rows else "")
            + "</section>\n")


def _risk(audit: dict) -> str:
    checks = audit.get("checks", {})
    rows = "".join(f"<tr><td>{_e(name.replace('_', ' '))}</td><td class=\"passed\">{_e(result)}</td></tr>"
                   for name, result in sorted(checks.items()))
    linked = audit.get("linked_suppression", {})
    rows += (f"<tr><td>linked suppression tables</td><td class=\"passed\">"
             f"{'passed' if linked.get('passed') else _e(linked)}</td></tr>"
             f"<tr><td>cells of the two methods compared</td><td>{_e(audit.get('cells_compared_across_methods', 0))}</td></tr>")
    averaging = audit.get("averaging") or {}
    per_table = "".join(
        f"<tr><td>{_e(t['table'])}</td><td class=\"number\">{_e(t.get('smallest_standard_error'))}</td>"
        f"<td>{_e(t.get('cell'))}</td><td>{_e(t.get('method'))}</td></tr>" for t in averaging.get("tables", []))
    floor = averaging.get("min_standard_error")
    return ("<section id=\"risk\"><h2>Risk: the release audit</h2>\n"
            f"<table><tr><th>check</th><th>result</th></tr>{rows}</table>\n"
            "<h3>Averaging CKM noise</h3>\n<p>The smallest standard error of the reader's best linear unbiased "
            "estimate of a count with records, from all CKM count tables of its population"
            + (f" (floor {_e(floor)})" if floor is not None else "") + ":</p>\n"
            "<table><tr><th>table</th><th>smallest standard error</th><th>cell</th><th>method</th></tr>"
            f"{per_table}</table>{_over_releases(averaging.get('over_releases') or {})}</section>\n")


def _over_releases(over: dict) -> str:
    """The averaging audit over the releases in the ledger (release/averaging_releases.py), in words."""
    if not over:
        return ""
    epochs = over.get("noise_epochs") or 1
    earlier = over.get("earlier_releases") or []
    text = (f"<p>Over the releases in the ledger: {_e(epochs)} independent noise(s) of every unchanged count"
            + (f" (this release and releases {_e(', '.join(map(str, earlier)))}, each the last under other record "
               "keys or parameters)" if earlier else " (no re-key or parameter change so far)"))
    if over.get("smallest_standard_error") is not None:
        text += (f"; the smallest standard error of a count averaged over them is "
                 f"{_e(over['smallest_standard_error'])} ({_e(over.get('method'))}), {_e(over.get('cell'))}")
    allowed = over.get("more_epochs_allowed")
    if allowed is not None:
        text += (f". The floor allows {_e(allowed)} more re-key(s) or accepted parameter change(s) of these tables "
                 "before it refuses a release")
    return text + ".</p>\n"


def _changes(audit: dict, changes: list[dict] | None) -> str:
    """The cells that changed since the release before this one, from the ledger (release/ledger.py)."""
    from sdc.release.ledger import diff_summary

    release = audit.get("release")
    head = "<section id=\"changes\"><h2>Changes since the last release</h2>\n"
    if release == 1 or changes is None:
        return head + "<p class=\"note\">The first release in the ledger.</p></section>\n"
    summary = diff_summary(changes)
    rows = "".join(
        f"<tr><td>{_e(c['relation'])}</td><td>{_e(', '.join(f'{k}={v}' for k, v in c['cell'].items()))}</td>"
        f"<td>{_e(c['change'])}</td><td>{_e(c['reason'])}</td><td>{_e(_values(c['before']))}</td>"
        f"<td>{_e(_values(c['now']))}</td></tr>" for c in changes[:CELLS_SHOWN])
    withdrawn = audit.get("withdrawn") or []
    return (head + f"<p>Release {release - 1} &rarr; {release}: {_e(summary) if changes else 'no cell changed'}."
            + (f" Withdrawn: {_e(', '.join(withdrawn))}." if withdrawn else "") + "</p>\n"
            + (f"<table><tr><th>table</th><th>cell</th><th>change</th><th>reason</th><th>before</th><th>now</th></tr>"
               f"{rows}</table>" if changes else "") + "</section>\n")


def _ptables(audit: dict) -> str:
    ptables = audit.get("ptables") or {}
    if not ptables:
        return ("<section id=\"ptable\"><h2>Perturbation table</h2><p class=\"note\">The release has no CKM count "
                "table.</p></section>\n")
    figures = "".join(f"<figure>{_transition_svg(rows, name)}<figcaption>{_e(name)}: transition probabilities "
                      "p(i &rarr; j) of the original count i to the published count j</figcaption></figure>"
                      for name, rows in sorted(ptables.items()))
    return f"<section id=\"ptable\"><h2>Perturbation table</h2>{figures}</section>\n"


def _table(table: dict, quality: dict | None, audit: dict) -> str:
    entry = next((t for t in audit.get("tables", []) if t["table"] == table["label"]), {})
    kind = (audit.get("kinds") or {}).get(table["label"])
    method = (quality or {}).get("method") or entry.get("method") or PUBLISHED_KINDS.get(kind, kind) or "a table"
    # the office's audit keeps them in "described", the public one in its table entries
    entry = {**entry, **{k: v for k, v in ((audit.get("described") or {}).get(table["label"]) or {}).items() if v}}
    title, unit = entry.get("title"), entry.get("unit")
    heading = _e(title) if title else _e(table["name"])
    parts = [f"<section id=\"{_anchor(table['name'])}\"><h2>{heading}</h2>\n"
             f"<p>{_e(method)}; {len(table['rows'])} cells ({_e(table['label'])})"
             + (f"; unit: {_e(unit)}" if unit else "") + ".</p>\n"]
    if quality and quality.get("cells"):
        shown = ", ".join(f"{n}: {v}" for n, v in quality["cells"].items())
        parts.append(f"<p>Cells by status: {_e(shown)}.</p>\n")
    for measure, figures in ((quality or {}).get("measures") or {}).items():
        rows = "".join(f"<tr><td>{_e(QUALITY_LABELS.get(n, n.replace('_', ' ')))}</td>"
                       f"<td class=\"number\">{_e(v)}</td></tr>" for n, v in figures.items()
                       if n in QUALITY_LABELS)
        parts.append(f"<h3>Quality of {_e(measure)}</h3>\n<table>{rows}</table>\n"
                     f"<figure>{_histogram_svg(figures.get('relative_deviation_histogram') or [], measure)}"
                     f"<figcaption>cells by relative deviation |published &minus; original| / original"
                     f"</figcaption></figure>\n")
    parts.append(_cells(table))
    parts.append("</section>\n")
    return "".join(parts)


def _cells(table: dict) -> str:
    """The table's first CELLS_SHOWN cells in the order of its dimensions' sort keys (d__sort: each total before
    the codes under it), without the per-dimension columns that only describe the codes: a code indented by its
    level (d__level), numbers as published (whole numbers without decimals, thousands separated; new user D8)."""
    every = table["columns"]
    kept = [k for k, c in enumerate(every) if not dimension_column(c)]
    sort_keys = [every.index(c + DIMENSION_COLUMN_SUFFIXES["sort"]) for c in every
                 if c + DIMENSION_COLUMN_SUFFIXES["sort"] in every]
    levels = {c: every.index(c + DIMENSION_COLUMN_SUFFIXES["level"]) for c in every
              if c + DIMENSION_COLUMN_SUFFIXES["level"] in every}
    rows = table["rows"]
    if sort_keys:
        rows = sorted(rows, key=lambda r: tuple(-1 if r[k] is None else r[k] for k in sort_keys))
    columns = [every[k] for k in kept]
    text_column = columns.index("published_text") if "published_text" in columns else None
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for full in rows[:CELLS_SHOWN]:
        row = [full[k] for k in kept]
        suppressed = text_column is not None and any(
            v is None for c, v in zip(columns, row) if c in ("freq", "value", "count"))
        cells = []
        for column, value in zip(columns, row):
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            kind = "suppressed" if suppressed and column in ("published_text", "freq", "value", "count") else \
                "zero" if number and value == 0 and column in ("count", "value", "weighted_count") else \
                "number" if number else ""
            level = full[levels[column]] if column in levels else None
            indent = f" style=\"padding-left: {0.5 + 1.2 * level:.1f}em\"" if isinstance(level, int) and level > 0 else ""
            cells.append(f"<td class=\"{kind}\"{indent}>{_e(_number(value) if number else '' if value is None else value)}</td>")
        marked = ' class="suppressed"' if suppressed else ""
        body.append(f"<tr{marked}>{''.join(cells)}</tr>")
    more = len(table["rows"]) - CELLS_SHOWN
    note = (f"<p class=\"note\">The first {CELLS_SHOWN} of {len(table['rows'])} cells; the publication holds "
            "them all.</p>") if more > 0 else ""
    return f"<h3>Cells</h3>\n<table><tr>{head}</tr>{''.join(body)}</table>{note}\n"


def _values(values: dict | None) -> str:
    """A cell's published values in the change list ("value 7 420 599"), "-" where it had none."""
    if values is None:
        return "-"
    return ", ".join(f"{k} {_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v}"
                     for k, v in values.items())


def _number(value) -> str:
    """A published number as a reader reads it: a whole number without decimals, thousands separated by a thin
    space (3 640 278 904), other numbers with their decimals."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}".replace(",", "\u202f")


def _histogram_svg(bins: list[dict], measure: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [("0" if b["upto"] == 0 else f"\u2264 {b['upto']:.0%}") if b["upto"] is not None else "> 20%"
              for b in bins]
    fig, ax = plt.subplots(figsize=(6, 2.4))
    ax.bar(range(len(bins)), [b["cells"] for b in bins], color="#4c72b0")
    ax.set_xticks(range(len(bins)), labels)
    ax.set_ylabel("cells")
    ax.set_title(f"relative deviation of {measure}", fontsize=10)
    fig.tight_layout()
    return _svg(fig, plt)


def _transition_svg(rows: list[list], name: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    size = max(max(r[0] for r in rows), max(r[1] for r in rows)) + 1
    matrix = np.full((size, size), np.nan)
    for i, j, p, _ in rows:
        matrix[i, j] = p
    fig, ax = plt.subplots(figsize=(5, 4))
    image = ax.imshow(matrix, cmap="viridis", origin="upper", vmin=0, vmax=1)
    ax.set_xlabel("published count j")
    ax.set_ylabel("original count i")
    ax.set_title(name, fontsize=10)
    fig.colorbar(image, ax=ax, label="p(i \u2192 j)")
    fig.tight_layout()
    return _svg(fig, plt)


def _svg(fig, plt) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: no XML declaration or doctype


def _anchor(name: str) -> str:
    return "t-" + "".join(c if c.isalnum() or c in "_-" else "-" for c in name)


def _e(value) -> str:
    return html.escape(str(value), quote=True)
