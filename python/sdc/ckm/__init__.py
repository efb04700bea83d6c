"""The Cell Key Method on one table, in this process: frequency tables (counts, weighted counts) and
magnitude tables (sums), their quality figures and means, from a file, a DataFrame or an Arrow table.

The method is implemented once, in SQL (the dbt macros ckm_count, ckm_sum, ckm_mean): these functions render
those macros (sdc.warehouse.macro_renderer) and run them on an in-memory DuckDB, so a table protected here
has the numbers the warehouse publishes.
"""

from sdc.ckm.counts import count_table, protect_table, weighted_count_table
from sdc.ckm.magnitudes import mean_table, protect_sum_table, sum_quality, sum_table

__all__ = ["count_table", "mean_table", "protect_sum_table", "protect_table", "sum_quality", "sum_table",
           "weighted_count_table"]
