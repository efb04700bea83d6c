"""The warehouse layer: what runs SQL. The macro renderer (the dbt macros rendered in process), DuckDB
connections and the shared in-memory database, loading microdata with record keys, dbt profiles and targets
(DuckDB, PostgreSQL, Spark), build records, and installing the SQL macros for analysts."""
