"""Print the demo's protected Table 2b (seed 002) with its quality figures, the cell-suppression tables' patterns,
and the turnover table by the magnitude CKM beside its suppression."""

from __future__ import annotations

import duckdb

from sdc.errors import SdcError
from sdc.warehouse.database import duckdb_connect

TABLE_2B = "protected.beurlaubte_nach_hochschulart_geschlecht"
SUPPRESSION_TABLES = [
    ("studierende_nach_fach_geschlecht_hochschule", "supp_studierende_pattern", "supp_studierende_audit"),
    ("umsatz_nach_wz_region", "supp_umsatz_pattern", "supp_umsatz_audit"),
]


def print_report(db: str) -> None:
    try:
        con = duckdb_connect(db, read_only=True)
    except duckdb.Error as exc:
        raise SdcError(f"cannot open {db}: {exc}") from None
    try:
        cells = con.execute(f'select hochschulart, geschlecht, "count" from {TABLE_2B}').fetchall()
        quality = con.execute("select * from audit.ckm_quality order by table_name").fetchall()
        quality_columns = [d[0] for d in con.description]
        suppression = [
            (name, *con.execute(
                f"select count(*), count(*) filter (where status = 'primary'), count(*) filter (where status = 'secondary'), "
                f"(select count(*) filter (where protected) from audit.{audit}) from audit.{pattern}").fetchone())
            for name, pattern, audit in SUPPRESSION_TABLES
        ]
        turnover = con.execute(
            "select region, published_text from compared.umsatz_nach_wz_region where wz = '29' order by region"
        ).fetchall()
        magnitude = con.execute(
            "select cells, changed_share, rad_median, rad_p90, max_relative_noise, sign_changes "
            "from audit.ckm_umsatz_quality").fetchone()
        side = con.execute(
            "select region, suppression_published, ckm_value from audit.umsatz_ckm_vs_suppression "
            "where wz = '29' order by region").fetchall()
    except duckdb.Error as exc:
        raise SdcError(f"{db}: the demo tables are missing ({exc}); run dbt build first") from None
    finally:
        con.close()
    value = {(row, col): count for row, col, count in cells}
    rows = sorted({r for r, _ in value if r != "Total"}) + ["Total"]
    cols = ["m", "w", "Total"]
    print("\nStudents on leave by Hochschulart and sex, CKM-protected (seed 002, Table 2b):")
    print(f"{'Hochschulart':<18}" + "".join(f"{c:>9}" for c in cols) + f"{'sum m+w':>10}")
    for r in rows:
        line = f"{r:<18}" + "".join(f"{value.get((r, c), 0):>9,}".replace(",", " ") for c in cols)
        print(line + f"{value.get((r, 'm'), 0) + value.get((r, 'w'), 0):>10,}".replace(",", " "))
    sums = [sum(value.get((r, c), 0) for r in rows if r != "Total") for c in cols]
    print(f"{'sum of rows':<18}" + "".join(f"{s:>9,}".replace(",", " ") for s in sums))
    print("Totals are perturbed on their own: they need not equal the sum of the cells (non-additivity).")
    print("\nQuality of the protected tables (cells with original > 0):")
    show = ["table_name", "cells", "mean_absolute_deviation", "stay_share", "max_abs_noise", "hellinger_utility", "false_zeros"]
    index = [quality_columns.index(c) for c in show]
    print(f"{'table':<42}{'cells':>6}{'MAD':>8}{'stay':>8}{'max|v|':>8}{'HDutil':>9}{'0s':>5}")
    for row in quality:
        t, n, mad, stay, mx, hdu, fz = (row[k] for k in index)
        print(f"{t:<42}{n:>6}{mad:>8.3f}{stay:>8.3f}{mx:>8}{hdu:>9.5f}{fz:>5}")
    print("\nCell suppression (every suppressed cell audited by LP):")
    print(f"{'table':<46}{'cells':>6}{'primary':>9}{'secondary':>11}{'protected':>11}")
    for name, cells_n, primary, secondary, protected in suppression:
        print(f"{name:<46}{cells_n:>6}{primary:>9}{secondary:>11}{protected:>11}")
    print("Turnover of WZ 29 (motor vehicles) by Regierungsbezirk, 1,000 euro; suppressed cells as intervals:")
    print("  " + "; ".join(f"{region} {text}" for region, text in turnover))
    cells_m, changed, median, p90, largest, sign_changes = magnitude
    print("\nThe same turnover table by the magnitude Cell Key Method (protected.umsatz_ckm_nach_wz_region):")
    print(f"  {cells_m} cells, {changed:.0%} changed; relative deviation median {median:.2%}, 90th percentile "
          f"{p90:.2%}, largest {largest:.2%}; {sign_changes} sign changes")
    print("  WZ 29 by Regierungsbezirk, suppression | CKM: "
          + "; ".join(f"{region} {text} | {value:,.0f}".replace(",", " ") for region, text, value in side))
