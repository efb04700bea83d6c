{#-
  Private helper of the build-time checks: one query per dbt invocation for the same check of the same relation.
-#}

{#
  run_check_query(sql): run_query(sql), made once per dbt invocation for the same SQL text; later calls get the
  first call's result. For the checks that read a relation the DAG builds before the models that read it (a
  hierarchy, a perturbation table): a build of many tables on one hierarchy checked it once per table and
  dimension, and on Spark each check is a job of seconds (the demo's 21 hierarchy checks took 93 s of its
  237 s build, 2 cores). Not for the microdata or the load log (record keys, modulus, build record): `sdc
  load` may replace a table while a build runs, and each model checks what it reads.

  The results live in the invocation's graph dict under its invocation_id: dbt builds that dict anew for each
  invocation, and a later invocation in the same process (a reloaded seed) would not find an earlier one's
  results under its own id either.
#}
{% macro run_check_query(sql) %}
{%- set cache = sdc.check_query_cache() -%}
{%- if sql not in cache -%}
  {%- do cache.update({sql: run_query(sql)}) -%}
{%- endif -%}
{{ return(cache[sql]) }}
{% endmacro %}

{#- the invocation's results of run_check_query (and of other checks made once per invocation: a ptable's md5) -#}
{% macro check_query_cache() %}
{{ return(graph.setdefault('sdc_check_queries', {}).setdefault(invocation_id, {})) }}
{% endmacro %}
