{#
  install_sql_macros (run-operation): DuckDB macros for protecting ad-hoc SQL with the Cell Key Method,
  built from the same pieces as ckm_count (ckm_ptable_row, ckm_interval_match), so an ad-hoc
  GROUP BY / ROLLUP gets the numbers the dbt models publish. Idempotent.

    sdc_cell_key(key_sum)        key_sum mod M (the cell key in units of 1/M)
    sdc_noise(n, key_sum)        the noise of a cell with original count n and key sum key_sum
    sdc_ckm(n, key_sum)          the published count n + noise (zero stays zero)

  Arguments: ptable (a relation with the sdc ptable columns), modulus M, reuse_from (see ckm_count).
  The macros read the intervals from sdc_ckm.ptable_intervals, which this operation (re)creates.
#}
{% macro install_sql_macros(ptable, modulus=none, reuse_from=none) %}
{%- set modulus = modulus if modulus is not none else var('sdc_key_modulus') -%}
{%- set reuse_from = reuse_from if reuse_from is not none else var('sdc_ptable_reuse_from', none) -%}
{%- set scale = 10 ** var('sdc_interval_decimals') -%}
{%- set wide = sdc.wide_integer_type() -%}
{%- set max_i = run_query('select max(i) from ' ~ ptable).columns[0].values()[0] -%}
{%- set statements = [
    "create schema if not exists sdc_ckm",
    "create or replace table sdc_ckm.ptable_intervals as select i, v, "
        ~ "cast(round(p_int_lb * " ~ scale ~ ") as " ~ wide ~ ") * " ~ modulus ~ " as lb_scaled, "
        ~ "cast(round(p_int_ub * " ~ scale ~ ") as " ~ wide ~ ") * " ~ modulus ~ " as ub_scaled from " ~ ptable,
    "create or replace macro sdc_cell_key(key_sum) as cast(key_sum % " ~ modulus ~ " as bigint)",
    "create or replace macro sdc_ptable_row(n) as " ~ sdc.ckm_ptable_row('n', max_i, reuse_from),
    "create or replace macro sdc_noise(n, key_sum) as case when n = 0 then 0 else coalesce("
        ~ "(select p.v from sdc_ckm.ptable_intervals as p where p.i = sdc_ptable_row(n) and "
        ~ sdc.ckm_interval_match('sdc_cell_key(key_sum)', 'p.lb_scaled', 'p.ub_scaled') ~ "), "
        ~ "error('the perturbation table has no interval for i = ' || cast(sdc_ptable_row(n) as varchar))) end",
    "create or replace macro sdc_ckm(n, key_sum) as n + sdc_noise(n, key_sum)",
] -%}
{%- for statement in statements -%}
  {%- do run_query(statement) -%}
{%- endfor -%}
{{ log("installed sdc_cell_key, sdc_noise, sdc_ckm (modulus " ~ modulus ~ ", ptable rows 0.." ~ max_i ~ ")", info=true) }}
{% endmacro %}
