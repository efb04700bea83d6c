"""Column types of the tables sdc writes into a target (PostgreSQL, DuckDB, Spark) from Python values: one
module that both sdc.warehouse.profiles and sdc.warehouse.spark_target import, so neither imports the other."""

from __future__ import annotations


def column_type(target, values: list) -> str:
    """boolean, bigint, double or text (the target's names), from the values (NULLs aside); a column of only
    NULLs is text."""
    present = [plain_value(v) for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "boolean"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "bigint"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return target.double_type
    return target.text_type


def plain_value(value):
    """numpy scalars and Decimals as Python numbers for the driver."""
    if value is None:
        return None
    if type(value).__module__ == "numpy":
        return value.item()
    if type(value).__name__ == "Decimal":
        return float(value)
    return value
