{#
  Text that reaches SQL from names and codes goes through these (one place):
    sql_string(text)  a SQL string literal: '...' with every ' doubled
    sql_text(text)    the same text for the inside of a literal that is already open (quotes doubled)
    sql_identifier(name)  a double-quoted SQL name with every " doubled (adapter.quote does not double
                      them, so a column name holding " would end the name and run the rest as SQL); on Spark
                      a backquoted name with every ` doubled
  On Spark a text holding "${" is refused: Spark replaces ${...} by a variable's value before it parses the
  SQL, inside literals and names alike (${env:SDC_KEY_SECRET} would publish the secret), unless the session
  sets spark.sql.variable.substitute=false; sdc's profiles set it, and this holds without it.
#}
{#- one_line(text): user text for an error message, its line breaks shown as \n and \r (an error is one line) -#}
{% macro one_line(text) -%}
{{ return((text | string).replace('\n', '\\n').replace('\r', '\\r')) }}
{%- endmacro %}

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
{{ sdc.spark_no_substitution(text | string).replace("\\", "\\\\").replace("'", "\\'") }}
{%- endmacro %}
{# the text itself, or a compiler error when it holds "${" (Spark's variable substitution) #}
{% macro spark_no_substitution(text) -%}
{%- if '${' in text -%}
  {{ exceptions.raise_compiler_error("sdc: the text '" ~ text ~ "' holds '${', which Spark SQL replaces by the "
     ~ "value of a variable (spark.sql.variable.substitute): sdc does not send it to Spark; rename that code or name") }}
{%- endif -%}
{{ return(text) }}
{%- endmacro %}
