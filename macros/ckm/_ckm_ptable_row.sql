{#
  ckm_ptable_row: SQL for the ptable row of an original value n: least(n, max i), or, when reuse_from is
  given, rows reuse_from..max i in turn for counts above max i (ONS: 501..750, row ((n-1) mod 250) + 501).
  Python twin: sdc.ptable.table.ptable_row.
#}
{% macro ckm_ptable_row(n, max_i, reuse_from=none) -%}
{%- if reuse_from is none -%}
least({{ n }}, {{ max_i }})
{%- else -%}
case when {{ n }} <= {{ max_i }} then {{ n }}
     else {{ reuse_from }} + ({{ n }} - {{ reuse_from }}) % ({{ max_i }} - {{ reuse_from }} + 1) end
{%- endif -%}
{%- endmacro %}


{#
  ckm_ptable_reuse_from(ptable, reuse_from, caller_name): the rule for counts above the last ptable row. A
  table converted from ONS's format carries ONS's rule in a column reuse_from (one row number on every row,
  python/sdc/ptable/formats.py): the table's rule then applies, and another one asked for (argument or var
  sdc_ptable_reuse_from) stops the build, since one table with two rules gives a cell two noisy values.
#}
{% macro ckm_ptable_reuse_from(ptable, reuse_from, caller_name) %}
{#- a dbt unit test gives the ptable as a CTE, which a query of its own cannot read: its rows have no rule -#}
{%- if not execute or (model is defined and model.resource_type == 'unit_test') -%}{{ return(reuse_from) }}{%- endif -%}
{%- set columns = sdc.run_check_query('select * from ' ~ ptable ~ ' limit 0').column_names | map('lower') | list -%}
{%- if 'reuse_from' not in columns -%}{{ return(reuse_from) }}{%- endif -%}
{%- set rule = sdc.run_check_query('select min(reuse_from) as low, max(reuse_from) as high, count(*) - count(reuse_from) as missing, count(*) as n from ' ~ ptable).rows[0] -%}
{%- if rule['n'] | int == 0 -%}{{ return(reuse_from) }}{%- endif -%}  {#- no rows (dbt build --empty): no rule to read #}
{%- if rule['low'] is none or rule['low'] != rule['high'] or rule['missing'] | int > 0 -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the column reuse_from of the perturbation table " ~ ptable
      ~ " must hold one row number on every row (found " ~ rule['low'] ~ " to " ~ rule['high'] ~ ")") }}
{%- endif -%}
{%- if reuse_from is not none and reuse_from | int != rule['low'] | int -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the perturbation table " ~ ptable ~ " reuses rows from "
      ~ (rule['low'] | int) ~ " on (its column reuse_from), but reuse_from " ~ reuse_from
      ~ " was asked for (argument reuse_from= or var sdc_ptable_reuse_from): one table, one rule") }}
{%- endif -%}
{{ return(rule['low'] | int) }}
{% endmacro %}


{#
  ckm_ptable_max_i(ptable, caller_name): the last row i of the count ptable, read when the model is compiled,
  after the check that no two intervals of a row overlap: an overlap gives a cell two noise values, two
  published rows, one of them the original (issue 17). Read once here, the query that perturbs the cells needs
  neither a window over the ptable nor a subquery for max i. none where there is nothing to read: dbt's parse
  phase, a ptable without rows (dbt build --empty), a dbt unit test (its given rows are a CTE that a query of
  its own cannot read; hand-picked, they publish nothing): the query then reads max(i) itself.
#}
{% macro ckm_ptable_max_i(ptable, caller_name) %}
{%- if not execute or (model is defined and model.resource_type == 'unit_test') -%}{{ return(none) }}{%- endif -%}
{%- set ordered -%}
select i, p_int_ub, lead(p_int_lb) over (partition by i order by p_int_lb, p_int_ub) as next_lb from {{ ptable }}
{%- endset -%}
{%- set row = sdc.run_check_query('select max(i) as max_i, min(case when next_lb < p_int_ub then i end) as overlap_i from ('
                        ~ ordered ~ ') as ordered').rows[0] -%}
{%- if row['overlap_i'] is not none -%}
  {%- set overlap = run_query('select cast(p_int_ub as ' ~ sdc.text_type() ~ ') as ub, cast(next_lb as ' ~ sdc.text_type()
                              ~ ') as lb from (' ~ ordered ~ ') as ordered where i = ' ~ (row['overlap_i'] | int)
                              ~ ' and next_lb < p_int_ub order by next_lb').rows[0] -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the perturbation table has overlapping intervals in row i = " ~ (row['overlap_i'] | int)
      ~ " (one ends at " ~ overlap['ub'] ~ ", the next starts at " ~ overlap['lb'] ~ ")") }}
{%- endif -%}
{{ return(row['max_i'] | int if row['max_i'] is not none else none) }}
{% endmacro %}


{#
  ckm_check_count_ptable(ptable, argument, caller_name): stops unless `ptable`, given as argument=, is a count
  ptable: a relation (ref or source: dbt then builds it before the model, and every engine finds it again by its
  full name), not text or a flag; with the columns i, v, p_int_lb and p_int_ub of a count ptable, and without the
  column type of a magnitude ptable (sdc ptable --table nums), whose v is a factor, not a count's noise.
#}
{% macro ckm_check_count_ptable(ptable, argument, caller_name) %}
{%- if model is defined and model.resource_type == 'unit_test' -%}{{ return(none) }}{%- endif -%}
{%- if ptable is string or ptable.identifier is not defined or ptable.identifier is none -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ argument ~ "= takes the count ptable as a relation, e.g. "
      ~ argument ~ "=ref('sdc_ptable'), so that dbt builds it first; got " ~ (("the text '" ~ ptable ~ "'") if ptable is string else ptable)) }}
{%- endif -%}
{%- if not execute -%}{{ return(none) }}{%- endif -%}
{%- set columns = adapter.get_columns_in_relation(ptable) | map(attribute='name') | map('lower') | list -%}
{%- if not columns -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ argument ~ "=" ~ ptable ~ " is not in the database (dbt seed or dbt build it first)") }}
{%- endif -%}
{%- if 'type' in columns -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ argument ~ "=" ~ ptable ~ " is a magnitude ptable (it has the column type); give the count ptable that ckm_count uses, e.g. " ~ argument ~ "=ref('sdc_ptable')") }}
{%- endif -%}
{%- set missing = ['i', 'v', 'p_int_lb', 'p_int_ub'] | reject('in', columns) | list -%}
{%- if missing -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ argument ~ "=" ~ ptable ~ " is not a count ptable: it has no column " ~ missing | join(', ') ~ " (a count ptable has i, v, p_int_lb and p_int_ub); give the count ptable that ckm_count uses, e.g. " ~ argument ~ "=ref('sdc_ptable')") }}
{%- endif -%}
{% endmacro %}
