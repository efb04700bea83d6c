{% macro sql_identifier(name) -%}
{{ adapter.dispatch('sql_identifier', 'sdc')(name) }}
{%- endmacro %}

{% macro default__sql_identifier(name) -%}
"{{ (name | string).replace('"', '""') }}"
{%- endmacro %}

{# Spark SQL reads "..." as a string: names go in backticks, every ` doubled #}
{% macro spark__sql_identifier(name) -%}
`{{ sdc.spark_no_substitution(name | string).replace('`', '``') }}`
{%- endmacro %}
