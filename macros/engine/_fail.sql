{#- Private helpers: stopping a query with a message (an engine's raise_error / error / sdc_raise_error), and the text of a cell for such messages. -#}

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

{#- The cell of a record or leaf cell as text for an error message, e.g. wz = 10, region = Schwaben: the
    published codes name where the problem is; a record key never appears in a message (messages reach
    logs, and the keys undo the protection). -#}
{% macro ckm_cell_text(dims) -%}
{%- for dim in dims -%}
'{{ sdc.sql_text(dim) }} = ' || coalesce(cast({{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}), 'NULL'){{ " || ', ' || " if not loop.last }}
{%- endfor -%}
{%- endmacro %}

{#- The qualified name of a helper function engine_setup creates. -#}
{% macro engine_function(name) -%}
{{ sdc.sql_identifier(target.schema) }}.{{ sdc.sql_identifier(name) }}
{%- endmacro %}
