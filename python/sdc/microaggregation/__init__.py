"""One-dimensional microaggregation of numeric variables (seed 004; reference
microaggregation-and-measures.md): fixed group size, Höhne's variance-preserving method with variable
group size, and the optimal partition (Hansen–Mukherjee), behind one interface.

The public API (``__all__``): ``microaggregate`` (one column of numbers), its ``MicroaggregationResult``,
``column_report`` (utility and risk figures), and ``microaggregate_file`` / ``microaggregate_table`` (a
protected copy of a CSV/Parquet file or of a DuckDB table, as ``sdc microaggregate``).
"""

from sdc.microaggregation.measures import column_report
from sdc.microaggregation.methods import METHODS, REPLACEMENTS, MicroaggregationResult, microaggregate

__all__ = ["MicroaggregationResult", "column_report", "microaggregate", "microaggregate_file", "microaggregate_table"]

_TABLES = ("microaggregate_file", "microaggregate_table")


def __getattr__(name):
    # the copies of files and tables read and write through sdc.warehouse: loaded when asked for, so that the
    # methods themselves depend on no warehouse
    if name in _TABLES:
        from sdc.microaggregation import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
