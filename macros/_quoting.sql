{#
  Text that reaches SQL from names and codes goes through these (one place):
    sql_string(text)  a SQL string literal: '...' with every ' doubled
    sql_text(text)    the same text for the inside of a literal that is already open (quotes doubled)
  Identifiers go through adapter.quote.
#}
{% macro sql_string(text) -%}
'{{ sdc.sql_text(text) }}'
{%- endmacro %}

{% macro sql_text(text) -%}
{{ (text | string).replace("'", "''") }}
{%- endmacro %}
