{#- engine_setup: run by the package's on-run-start hook (dbt_project.yml): what an engine needs before the
    models run. PostgreSQL: sdc_raise_error(message) in the target schema, a function that raises the message
    (ckm_fail_if stops a query with it). -#}
{% macro engine_setup() %}
  {{ return(adapter.dispatch('engine_setup', 'sdc')()) }}
{% endmacro %}

{% macro default__engine_setup() %}{{ return('select 1') }}{% endmacro %}

{# Spark: no ${...} substitution in the SQL text of the session's later statements (see macros/_quoting.sql) #}
{% macro spark__engine_setup() %}{{ return('set spark.sql.variable.substitute=false') }}{% endmacro %}

{% macro postgres__engine_setup() -%}
create schema if not exists {{ sdc.sql_identifier(target.schema) }};
create or replace function {{ sdc.engine_function('sdc_raise_error') }}(message text) returns boolean
language plpgsql as $sdc$ begin raise exception '%', message; end $sdc$
{%- endmacro %}
