{#
  SQL macros for protecting ad-hoc DuckDB queries with the Cell Key Method, built from the same pieces as
  ckm_count (ckm_ptable_row, ckm_interval_match, ckm_fail_if), so an ad-hoc GROUP BY / ROLLUP / CUBE /
  GROUPING SETS gets the numbers the dbt models publish.

    sdc_ckm(n, key_sum)          the published count n + noise (zero stays zero)
    sdc_noise(n, key_sum)        the noise of a cell with original count n and key sum key_sum
    sdc_cell_key(key_sum)        key_sum mod M (the cell key in units of 1/M)
    sdc_ptable_row(n)            the ptable row of a count n (helper)
    sdc_ckm_check(n, key_sum)    true, or stops the query naming what sdc_ckm cannot protect (helper)

  n must be a count of records (count(*), or sum(f) of a 0/1 fact f) and key_sum the sum of their record
  keys (sum(rk), sum(rk_f)). The macros stop the query, naming the value, when
    * n is not a whole number >= 0, or key_sum is not a whole number >= 0;
    * key_sum > n (M - 1): each of the n record keys is below M;
    * n is implausible for key_sum (ckm_key_sum_implausible: a Hoeffding bound with false-alarm
      probability 1e-15), e.g. a sum of values passed as a count (sdc_ckm(sum(income), sum(rk))).
  A NULL count gives NULL; a NULL key sum (sum(rk) over no records) gives 0 for the count 0, else NULL.

  The ptable is read at query time through the view sdc_ckm.ptable_intervals over the given relation
  (the warehouse's own seed, so a new `dbt seed` is used at once), and sdc_ckm.ptable_lookup holds it as
  one map i -> intervals. The lookup is an uncorrelated subquery plus list functions, so the macros work
  on aggregates (a correlated subquery would put the aggregate into a WHERE clause, which DuckDB refuses).

  sdc_sql_macro_statements(ptable, modulus, reuse_from) returns the statements; the operation
  install_sql_macros logs them as JSON for `sdc sql install`, which first checks the ptable and the
  modulus against the warehouse and then runs them in one transaction. Arguments:
    ptable      a quoted relation "schema"."name" with the ptable columns (sdc sql install chooses it)
    modulus     M of the record keys, a whole number in [2, 2^62]
    reuse_from  counts above max i cycle through rows reuse_from..max i (ONS: 501); none: row max i
#}
{% macro install_sql_macros(ptable, modulus, reuse_from=none) %}
{{ log("sdc_sql_macro_statements: " ~ tojson(sdc.sdc_sql_macro_statements(ptable, modulus, reuse_from)), info=true) }}
{% endmacro %}
