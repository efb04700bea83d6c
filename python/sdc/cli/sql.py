"""sdc sql install: the CKM macros for ad-hoc SQL in a DuckDB warehouse."""

from __future__ import annotations

import argparse


def add_parser(commands) -> None:
    sql = commands.add_parser("sql", help="CKM macros for ad-hoc SQL in a DuckDB database",
                              description="CKM macros for ad-hoc SQL in a DuckDB database (sdc sql install).")
    sql_commands = sql.add_subparsers(dest="sql_command", required=True)
    install = sql_commands.add_parser(
        "install",
        help="install the macros sdc_ckm, sdc_noise, sdc_cell_key into a warehouse (idempotent)",
        description="After this, an analyst protects an ad-hoc query in plain SQL, e.g. "
        "select a, b, sdc_ckm(sum(f), sum(rk_f)) from raw.t group by rollup (a, b). The macros use the "
        "warehouse's own ptable (the relation sdc_ptable that dbt seeded) and the modulus the keys were loaded with.",
    )
    install.add_argument("--db", required=True, help="existing DuckDB warehouse file")
    install.add_argument("--ptable", help="perturbation table file (any format sdc ptable imports); refused if the "
                         "warehouse's sdc_ptable has other intervals (default: the warehouse's sdc_ptable)")
    install.add_argument("--ptable-relation", metavar="SCHEMA.NAME",
                         help="the warehouse's ptable when it has several relations named sdc_ptable")
    install.add_argument("--modulus", type=int, help="record-key modulus M (default: the one raw.sdc_loads records, "
                         "else 10^8); must agree with the loads")
    install.add_argument("--reuse-from", type=int, metavar="ROW",
                         help="counts above the last ptable row cycle through rows ROW..last, as the dbt var "
                         "sdc_ptable_reuse_from (ONS: 501; default: an imported ONS file's rule, else the last row)")
    install.set_defaults(run=run_install)


def run_install(args: argparse.Namespace) -> int:
    from sdc.warehouse.sql_install import install

    print(install(args.db, args.ptable, args.modulus, ptable_relation=args.ptable_relation, reuse_from=args.reuse_from))
    return 0
