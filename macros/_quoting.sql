{#
  Text that reaches SQL from names and codes goes through these (one place):
    sql_string(text)  a SQL string literal: '...' with every ' doubled
    sql_text(text)    the same text for the inside of a literal that is already open (quotes doubled)
    sql_identifier(name)  a double-quoted SQL name with every " doubled (adapter.quote does not double
                      them, so a column name holding " would end the name and run the rest as SQL); on Spark
                      a backquoted name with every ` doubled
#}
{% macro sql_string(text) -%}
'{{ sdc.sql_text(text) }}'
{%- endmacro %}

{% macro sql_text(text) -%}
{{ adapter.dispatch('sql_text', 'sdc')(text) }}
{%- endmacro %}
{% macro default__sql_text(text) -%}
{{ (text | string).replace("'", "''") }}
{%- endmacro %}
{# Spark SQL reads backslash escapes in string literals, and two literals side by side as one #}
{% macro spark__sql_text(text) -%}
{{ (text | string).replace("\\", "\\\\").replace("'", "\\'") }}
{%- endmacro %}


{% macro sql_identifier(name) -%}
{{ adapter.dispatch('sql_identifier', 'sdc')(name) }}
{%- endmacro %}
{% macro default__sql_identifier(name) -%}
"{{ (name | string).replace('"', '""') }}"
{%- endmacro %}
{# Spark SQL reads "..." as a string: names go in backticks, every ` doubled #}
{% macro spark__sql_identifier(name) -%}
`{{ (name | string).replace('`', '``') }}`
{%- endmacro %}
