{#- Private helpers: SQL types and typed values per engine (adapter.dispatch): wide integers for key sums, 64-bit doubles, array elements. text_type, which projects call too, has its own file. -#}

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


{#- A number as a double. A literal such as 100.0 is a decimal on Spark, whose decimal division keeps 6 digits
    (85 / 100.0 = 0.85, but 2 / 85.0 = 0.023529): the rules' thresholds in double arithmetic on every engine. -#}
{% macro double_value(number) %}{{ return('cast(' ~ number ~ ' as ' ~ sdc.double_type() ~ ')') }}{% endmacro %}

{#- The n-th element (1-based) of an array column, NULL past its end. Spark's [] is 0-based and fails past the
    end under ANSI mode: try_element_at. -#}
{% macro array_element(column, n) %}
  {{ return(adapter.dispatch('array_element', 'sdc')(column, n)) }}
{% endmacro %}
{% macro default__array_element(column, n) %}{{ return(column ~ '[' ~ n ~ ']') }}{% endmacro %}
{% macro spark__array_element(column, n) %}{{ return('try_element_at(' ~ column ~ ', ' ~ n ~ ')') }}{% endmacro %}
