{# Engine-specific SQL used by the CKM macros (adapter.dispatch: default__ and duckdb__). #}

{% macro wide_integer_type() %}
  {{ return(adapter.dispatch('wide_integer_type', 'sdc')()) }}
{% endmacro %}

{# Key sums and scaled interval bounds exceed 64 bits for large moduli: a 128-bit integer type. #}
{% macro default__wide_integer_type() %}{{ return('decimal(38, 0)') }}{% endmacro %}
{% macro duckdb__wide_integer_type() %}{{ return('hugeint') }}{% endmacro %}


{% macro double_type() %}
  {{ return(adapter.dispatch('double_type', 'sdc')()) }}
{% endmacro %}

{# A 64-bit float: `double` in DuckDB and Spark; PostgreSQL spells it `double precision` (its `float` would do
   too, but DuckDB's `float` is 32 bits). #}
{% macro default__double_type() %}{{ return('double') }}{% endmacro %}
{% macro postgres__double_type() %}{{ return('double precision') }}{% endmacro %}


{% macro ckm_fail_if(condition, message_sql) %}
  {{ return(adapter.dispatch('ckm_fail_if', 'sdc')(condition, message_sql)) }}
{% endmacro %}

{# A boolean expression that is true, or stops the query with the message when the condition holds. #}
{% macro default__ckm_fail_if(condition, message_sql) -%}
(case when {{ condition }} then raise_error({{ message_sql }}) is null else true end)
{%- endmacro %}
{% macro duckdb__ckm_fail_if(condition, message_sql) -%}
(case when {{ condition }} then error({{ message_sql }}) is null else true end)
{%- endmacro %}
{# PostgreSQL has no function that raises: sdc_raise_error, created by the package's on-run-start hook
   (engine_setup), raises the message. #}
{% macro postgres__ckm_fail_if(condition, message_sql) -%}
(case when {{ condition }} then {{ sdc.engine_function('sdc_raise_error') }}({{ message_sql }}) else true end)
{%- endmacro %}


{% macro ckm_fail_if_any(failures) %}
  {{ return(adapter.dispatch('ckm_fail_if_any', 'sdc')(failures)) }}
{% endmacro %}

{# ckm_fail_if for a list of (condition, message_sql): the first condition that holds stops the query with its
   message (one CASE: a later condition is only tested when the earlier ones do not hold). #}
{% macro default__ckm_fail_if_any(failures) -%}
(case{% for condition, message in failures %} when {{ condition }} then raise_error({{ message }}) is null{% endfor %} else true end)
{%- endmacro %}
{% macro duckdb__ckm_fail_if_any(failures) -%}
(case{% for condition, message in failures %} when {{ condition }} then error({{ message }}) is null{% endfor %} else true end)
{%- endmacro %}
{% macro postgres__ckm_fail_if_any(failures) -%}
(case{% for condition, message in failures %} when {{ condition }} then {{ sdc.engine_function('sdc_raise_error') }}({{ message }}){% endfor %} else true end)
{%- endmacro %}


{% macro ckm_key_sum(column) %}
  {{ return(adapter.dispatch('ckm_key_sum', 'sdc')(column)) }}
{% endmacro %}

{# Exact sum of record keys: DuckDB's sum over BIGINT is already a 128-bit HUGEINT; elsewhere widen first. #}
{% macro default__ckm_key_sum(column) %}{{ return('sum(cast(' ~ column ~ ' as decimal(38, 0)))') }}{% endmacro %}
{% macro duckdb__ckm_key_sum(column) %}{{ return('sum(' ~ column ~ ')') }}{% endmacro %}


{% macro ckm_integer_div(numerator, denominator) %}
  {{ return(adapter.dispatch('ckm_integer_div', 'sdc')(numerator, denominator)) }}
{% endmacro %}

{# floor(a / b) of non-negative integers, exactly. #}
{% macro default__ckm_integer_div(numerator, denominator) %}{{ return('floor((' ~ numerator ~ ') / (' ~ denominator ~ '))') }}{% endmacro %}
{% macro duckdb__ckm_integer_div(numerator, denominator) %}{{ return('((' ~ numerator ~ ') // (' ~ denominator ~ '))') }}{% endmacro %}


{% macro ckm_distinct_count(column) %}
  {{ return(adapter.dispatch('ckm_distinct_count', 'sdc')(column)) }}
{% endmacro %}

{# Distinct values for the record-key check, which allows a factor 2: DuckDB's HyperLogLog (a few per cent off,
   15 times faster than an exact count at 10^7 rows); exact elsewhere. #}
{% macro default__ckm_distinct_count(column) %}{{ return('count(distinct ' ~ column ~ ')') }}{% endmacro %}
{% macro duckdb__ckm_distinct_count(column) %}{{ return('approx_count_distinct(' ~ column ~ ')') }}{% endmacro %}


{% macro ckm_weight_invalid(column) %}
  {{ return(adapter.dispatch('ckm_weight_invalid', 'sdc')(column)) }}
{% endmacro %}

{# A weight that is not a positive, finite number: NULL, NaN, ±infinity, 0 or less. #}
{% macro default__ckm_weight_invalid(column) -%}
{{ return('(' ~ column ~ ' is null or not (cast(' ~ column ~ " as double precision) > 0 and cast(" ~ column ~ " as double precision) < 'Infinity'))") }}
{%- endmacro %}
{% macro duckdb__ckm_weight_invalid(column) -%}
{{ return('(' ~ column ~ ' is null or isnan(cast(' ~ column ~ ' as double)) or isinf(cast(' ~ column ~ ' as double)) or cast(' ~ column ~ ' as double) <= 0)') }}
{%- endmacro %}


{#- The cell of a record or leaf cell as text for an error message, e.g. wz = 10, region = Schwaben: the
    published codes name where the problem is; a record key never appears in a message (messages reach
    logs, and the keys undo the protection). -#}
{% macro ckm_cell_text(dims) -%}
{%- for dim in dims -%}
'{{ sdc.sql_text(dim) }} = ' || coalesce(cast({{ sdc.sql_identifier(dim) }} as varchar), 'NULL'){{ " || ', ' || " if not loop.last }}
{%- endfor -%}
{%- endmacro %}


{#- engine_setup: run by the package's on-run-start hook (dbt_project.yml): what an engine needs before the
    models run. PostgreSQL: sdc_raise_error(message) in the target schema, a function that raises the message
    (ckm_fail_if stops a query with it). -#}
{% macro engine_setup() %}
  {{ return(adapter.dispatch('engine_setup', 'sdc')()) }}
{% endmacro %}
{% macro default__engine_setup() %}{{ return('select 1') }}{% endmacro %}
{% macro postgres__engine_setup() -%}
create schema if not exists {{ adapter.quote(target.schema) }};
create or replace function {{ sdc.engine_function('sdc_raise_error') }}(message text) returns boolean
language plpgsql as $sdc$ begin raise exception '%', message; end $sdc$
{%- endmacro %}


{#- The qualified name of a helper function engine_setup creates. -#}
{% macro engine_function(name) -%}
{{ adapter.quote(target.schema) }}.{{ name }}
{%- endmacro %}
