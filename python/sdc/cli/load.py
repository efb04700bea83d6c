"""sdc load: microdata with record keys and fact columns into a DuckDB file or a dbt target."""

from __future__ import annotations

import argparse
import os

from sdc.conventions import DEFAULT_KEY_MODULUS
from sdc.errors import SdcError

from sdc.cli._common import add_profile_options, profile


def add_parser(commands) -> None:
    load = commands.add_parser(
        "load",
        help="load microdata with record keys and fact columns into a DuckDB file or a dbt target (PostgreSQL, Spark)",
        description="Read CSV or Parquet microdata into raw.<table> with an integer record key rk in [0, M), "
        "0/1 fact columns from a YAML config and their key facts rk_<fact>. Atomic: on error nothing changes.",
    )
    where = load.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="DuckDB database file")
    where.add_argument("--target", help="or the warehouse of this dbt target (postgres, duckdb or spark of method session; run in the folder dbt runs in)")
    add_profile_options(load, "with --target: ")
    load.add_argument("--input", required=True, help="microdata file (.csv, .tsv, .txt or .parquet)")
    load.add_argument("--table", required=True, help="target table name in schema raw")
    load.add_argument("--id", dest="id_column", help="record id column (needed by key modes random and keyed)")
    load.add_argument("--key-mode", default="random", choices=("random", "keyed", "existing"),
                      help="random: fresh secure keys, stored by id (default); keyed: HMAC of the id under a secret; "
                      "existing: a column of the file")
    load.add_argument("--modulus", type=int, default=DEFAULT_KEY_MODULUS, help="record keys lie in [0, M); default 10^8")
    load.add_argument("--secret-env", default="SDC_KEY_SECRET",
                      help="environment variable holding the keyed-mode secret (at least 16 bytes)")
    load.add_argument("--allow-demo-secret", action="store_true",
                      help="accept the demo's published secret (the demo only: anyone can recompute its keys)")
    load.add_argument("--allow-all-new-keys", action="store_true",
                      help="accept a random-mode reload in which no record keeps its stored key (every published "
                      "number changes; refused by default, as it usually means the ids changed)")
    load.add_argument("--rekey", action="store_true",
                      help="accept a reload with another key mode, modulus or secret than the table's last load: "
                      "every record gets a new key and every published number may change; the load log records "
                      "the break (refused by default)")
    load.add_argument("--key-column", help="column with existing record keys (key mode existing); keys that cannot "
                      "be uniform random (all equal, few distinct values, bunched) are refused")
    load.add_argument("--config", help="YAML file with 'facts: {f_name: condition}'")
    load.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from sdc.warehouse.loader import load_microdata, read_facts_config

    secret = None
    if args.key_mode == "keyed":
        value = os.environ.get(args.secret_env)
        if not value:
            raise SdcError(f"key mode keyed: the environment variable {args.secret_env} holding the secret is not set")
        secret = value.encode("utf-8")
    options = dict(id_column=args.id_column, key_mode=args.key_mode, modulus=args.modulus, secret=secret,
                   key_column=args.key_column, facts=read_facts_config(args.config) if args.config else {},
                   allow_demo_secret=args.allow_demo_secret, allow_all_new_keys=args.allow_all_new_keys,
                   rekey=args.rekey)
    if args.target:  # the same load, into the warehouse of a dbt target
        from sdc.warehouse.target_load import load_into_target

        report = load_into_target(*profile(args), args.target, args.input, args.table, **options)
    else:
        report = load_microdata(args.db, args.input, args.table, **options)
    for line in report.lines():
        print(line)
    return 0
