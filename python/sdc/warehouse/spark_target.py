"""A dbt-spark target of method ``session`` for the steps sdc runs between two dbt selections (`sdc load
--target`, `sdc suppress --target`): a PySpark session built as dbt-spark builds its own (Hive support, the
profile's server_side_parameters), so it sees the same catalog; with spark.sql.variable.substitute=false
always, so no ${...} in a name or code is replaced by a variable's value.

A local session keeps its catalog (a Derby metastore_db) and its tables (spark-warehouse) in the folder it
starts in, unless server_side_parameters name others: run sdc in the folder dbt runs in. Derby admits one
session at a time, so not while dbt runs.

Spark has no transactions. A table is replaced by writing it in full under a staging name first and then
swapping it in (drop, rename), all tables of one step written before the first swap: a failure while writing
leaves every table as it was; only a failure between the swaps, which are catalog operations, could leave
some replaced and some not.
"""

from __future__ import annotations

from pathlib import Path

from sdc.errors import SdcError
from sdc.warehouse.column_types import column_type
from sdc.quoting import quote_spark_identifier as quote_spark
from sdc.quoting import quote_spark_literal

STAGING_SUFFIX = "__sdc_staging"
# Spark replaces ${...} in SQL text by a variable's value (env:, system:) unless this is false
NO_SUBSTITUTION = "spark.sql.variable.substitute"


def _is_connect_session(session) -> bool:
    """A session on a Spark Connect server ($SPARK_REMOTE): the builder returns one where that is set."""
    return type(session).__module__.startswith("pyspark.sql.connect")


class SparkWarehouse:
    type = "spark"
    text_type = "string"
    double_type = "double"

    def __init__(self, output: dict, name: str):
        if output.get("method") != "session":
            raise SdcError(f"target {name!r} is a Spark target of method {output.get('method')!r}; sdc connects to "
                           "Spark through a PySpark session (method: session) only. On a cluster reached by Thrift "
                           "or ODBC, run sdc's Spark steps on the cluster's driver with a session profile")
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise SdcError("a Spark target needs pyspark: pip install 'sdc[spark]'") from None
        builder = SparkSession.builder.enableHiveSupport()
        for parameter, value in (output.get("server_side_parameters") or {}).items():
            builder = builder.config(str(parameter), str(value))
        # no ${...} substitution in SQL text, whatever the profile says (${env:SDC_KEY_SECRET} in a name would
        # be replaced by the secret); also on a session that already existed
        self.session = builder.config(NO_SUBSTITUTION, "false").getOrCreate()
        self.session.conf.set(NO_SUBSTITUTION, "false")
        if not _is_connect_session(self.session):  # a Spark Connect session has no SparkContext of its own
            self.session.sparkContext.setLogLevel("ERROR")  # its warnings are no news to a user of sdc
        self.schema = output.get("schema", "default")

    def quote(self, name: str) -> str:
        return quote_spark(name)

    def query(self, sql: str) -> tuple[list[str], list[tuple]]:
        frame = self.session.sql(sql)
        return list(frame.columns), [tuple(row) for row in frame.collect()]

    def column_names(self, relation_sql: str) -> list[str]:
        return list(self.session.sql(f"select * from {relation_sql} where 1 = 0").columns)

    def has_table(self, schema: str, table: str) -> bool:
        return bool(self.session.catalog.tableExists(f"{quote_spark(schema)}.{quote_spark(table)}"))

    def existing_relation(self, name: str) -> tuple[str, str, str | None] | None:
        """(schema, 'table' or 'view', its comment) of the relation ``name`` ('schema.table', or a table in the
        target's schema), or None when there is none."""
        schema, table = name.split(".") if "." in name else (self.schema, name)
        rows = self.described(schema, table)
        if rows is None:
            return None
        return schema, "view" if rows.get("Type") == "VIEW" else "table", rows.get("Comment")

    def described(self, schema: str, table: str) -> dict | None:
        """What `describe table extended` says of schema.table (Type, Comment, a view's View Text, ...), or None
        when there is no such relation."""
        relation = f"{quote_spark(schema)}.{quote_spark(table)}"
        if not self.session.catalog.tableExists(relation):
            return None
        return {row[0]: row[1] for row in self.session.sql(f"describe table extended {relation}").collect()}

    def export_parquet(self, schema: str, table: str, folder: Path) -> Path:
        """The table as a folder of Parquet files (types as they are)."""
        path = folder / f"pull_{table}"
        self.session.table(f"{quote_spark(schema)}.{quote_spark(table)}").write.parquet(str(path))
        return path

    def replace_from_parquet(self, schema: str, tables: dict[str, Path]) -> None:
        """Replace schema.<name> for each name by the Parquet file or folder given (see the module docstring)."""
        self._replace(schema, {name: self.session.read.parquet(str(path)) for name, path in tables.items()})

    def replace_tables(self, tables: list[tuple[str, dict]], comment: str | None = None) -> None:
        """Replace each table ('schema.table' of plain names, or a table in the target's schema) by the columns given (name -> list
        of Python values), typed as sdc.warehouse.column_types.column_type says; each new table carries ``comment`` (the mark of
        the command that wrote it)."""

        by_schema: dict[str, dict] = {}
        for relation, columns in tables:
            schema, table = relation.split(".") if "." in relation else (self.schema, relation)
            ddl = ", ".join(f"{quote_spark(c)} {column_type(self, values)}" for c, values in columns.items())
            rows = [tuple(row) for row in zip(*columns.values())]
            by_schema.setdefault(schema, {})[table] = self.session.createDataFrame(rows, schema=ddl)
        for schema, frames in by_schema.items():
            self._replace(schema, frames, comment)

    def _replace(self, schema: str, frames: dict, comment: str | None = None) -> None:
        self.session.sql(f"create database if not exists {quote_spark(schema)}")
        staged = {}
        try:
            for table, frame in frames.items():
                staging = f"{quote_spark(schema)}.{quote_spark(table + STAGING_SUFFIX)}"
                self.session.sql(f"drop table if exists {staging}")
                frame.write.mode("overwrite").saveAsTable(f"{schema}.{table}{STAGING_SUFFIX}")
                staged[table] = staging
                if comment is not None:  # on the staged table: the rename keeps it
                    self.session.sql(f"comment on table {staging} is {quote_spark_literal(comment)}")
        except Exception:
            for staging in staged.values():
                self.session.sql(f"drop table if exists {staging}")
            raise
        for table, staging in staged.items():
            target = f"{quote_spark(schema)}.{quote_spark(table)}"
            self.session.sql(f"drop table if exists {target}")
            self.session.sql(f"alter table {staging} rename to {target}")

    def close(self) -> None:
        self.session.stop()
