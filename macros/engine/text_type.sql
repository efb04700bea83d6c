{% macro text_type() %}
  {{ return(adapter.dispatch('text_type', 'sdc')()) }}
{% endmacro %}

{# Text of any length: varchar in DuckDB and PostgreSQL; Spark's varchar needs a length, its string does not. #}
{% macro default__text_type() %}{{ return('varchar') }}{% endmacro %}

{% macro spark__text_type() %}{{ return('string') }}{% endmacro %}
