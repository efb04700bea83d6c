{#
  Text that reaches SQL from names and codes goes through these (one place):
    sql_string(text)  a SQL string literal: '...' with every ' doubled
    sql_text(text)    the same text for the inside of a literal that is already open (quotes doubled)
    sql_identifier(name)  a double-quoted SQL name with every " doubled (adapter.quote does not double
                      them, so a column name holding " would end the name and run the rest as SQL)
#}
{% macro sql_string(text) -%}
'{{ sdc.sql_text(text) }}'
{%- endmacro %}

{% macro sql_text(text) -%}
{{ (text | string).replace("'", "''") }}
{%- endmacro %}


{% macro sql_identifier(name) -%}
"{{ (name | string).replace('"', '""') }}"
{%- endmacro %}
