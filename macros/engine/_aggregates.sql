{#- Private helpers: aggregate and window expressions that differ between engines (adapter.dispatch): key sums, distinct counts, the n largest values, sorted lists, row ids. -#}

{#- ckm_key_sum(column, modulus, condition=none): an aggregate, the exact sum of the record keys (in [0, modulus),
    checked elsewhere) of the grouped rows, of those where condition holds when one is given. -#}
{% macro ckm_key_sum(column, modulus, condition=none) %}
  {{ return(adapter.dispatch('ckm_key_sum', 'sdc')(column, modulus, condition)) }}
{% endmacro %}

{% macro key_sum_filter(condition) %}{{ return(' filter (where ' ~ condition ~ ')' if condition is not none else '') }}{% endmacro %}

{# DuckDB's sum over BIGINT is already a 128-bit HUGEINT; PostgreSQL's is numeric. Elsewhere widen first. #}
{% macro default__ckm_key_sum(column, modulus, condition) -%}
{{ return('sum(cast(' ~ column ~ ' as decimal(38, 0)))' ~ sdc.key_sum_filter(condition)) }}
{%- endmacro %}

{% macro duckdb__ckm_key_sum(column, modulus, condition) -%}
{{ return('sum(' ~ column ~ ')' ~ sdc.key_sum_filter(condition)) }}
{%- endmacro %}

{#- Spark: a decimal(38, 0) sum costs as much as the rest of the query (0.9 s more than a bigint sum at 10^7
    records). The keys of n records are below n * modulus, so a bigint sum is exact while n stays at most
    (2^63 - 1) / modulus (9.2 * 10^10 records at M = 10^8); a group of more stops the build, whatever
    spark.sql.ansi.enabled says (without ANSI mode an overflowing sum would wrap silently). -#}
{% macro spark__ckm_key_sum(column, modulus, condition) -%}
{%- set bound = 9223372036854775807 // modulus -%}
{{ return('case when count(*) > ' ~ bound ~ ' then cast(raise_error(' ~ sdc.sql_string('a cell of more than ' ~ bound
    ~ ' records: its key sum could pass the range of bigint for record keys below ' ~ modulus) ~ ') as decimal(38, 0))'
    ~ ' else cast(sum(cast(' ~ column ~ ' as bigint))' ~ sdc.key_sum_filter(condition) ~ ' as decimal(38, 0)) end') }}
{%- endmacro %}

{% macro ckm_distinct_count(column) %}
  {{ return(adapter.dispatch('ckm_distinct_count', 'sdc')(column)) }}
{% endmacro %}

{# Distinct values for the record-key check, which allows a factor 2: DuckDB's HyperLogLog (a few per cent off,
   15 times faster than an exact count at 10^7 rows); exact elsewhere. #}
{% macro default__ckm_distinct_count(column) %}{{ return('count(distinct ' ~ column ~ ')') }}{% endmacro %}

{% macro duckdb__ckm_distinct_count(column) %}{{ return('approx_count_distinct(' ~ column ~ ')') }}{% endmacro %}

{#- Whether ckm_distinct_count counts exactly: the record-key check then takes its count for the repeated records
    instead of counting again. -#}
{% macro ckm_distinct_count_is_exact() %}
  {{ return(adapter.dispatch('ckm_distinct_count_is_exact', 'sdc')()) }}
{% endmacro %}

{% macro default__ckm_distinct_count_is_exact() %}{{ return(true) }}{% endmacro %}

{% macro duckdb__ckm_distinct_count_is_exact() %}{{ return(false) }}{% endmacro %}

{#- ckm_top_values(expr, n, condition, element_type): an aggregate, the n largest values of expr (of type
    element_type, default double) among the rows where condition holds, in descending order, as an array
    (shorter when there are fewer; NULL when none). ckm_merge_top_values(column, n): the n largest of the arrays
    of column over the grouped rows (a subtotal's largest contributions are the largest of its leaves'). Arrays
    are 1-based: top[1] is the largest. -#}
{% macro ckm_top_values(expr, n, condition, element_type=none) %}
  {{ return(adapter.dispatch('ckm_top_values', 'sdc')(expr, n, condition, element_type or sdc.double_type())) }}
{% endmacro %}

{% macro duckdb__ckm_top_values(expr, n, condition, element_type) -%}
max({{ expr }}, {{ n }}) filter (where {{ condition }})
{%- endmacro %}

{# PostgreSQL: padded with NULLs to exactly n values, so that arrays of leaves stack into one 2-d array; the
   NULLs of the values' type (an array of another type would convert the values) #}
{% macro default__ckm_top_values(expr, n, condition, element_type) -%}
(array_agg({{ expr }} order by {{ expr }} desc) filter (where {{ condition }}))[1:{{ n }}]
    || array_fill(null::{{ element_type }}, array[{{ n }} - coalesce(cardinality((array_agg({{ expr }} order by {{ expr }} desc) filter (where {{ condition }}))[1:{{ n }}]), 0)])
{%- endmacro %}

{# Spark: collect_list skips NULLs; an empty array is NULL as on the other engines #}
{% macro spark__ckm_top_values(expr, n, condition, element_type) -%}
case when count(case when {{ condition }} then 1 end) > 0 then slice(sort_array(collect_list(case when {{ condition }} then {{ expr }} end), false), 1, {{ n }}) end
{%- endmacro %}

{% macro ckm_merge_top_values(column, n) %}
  {{ return(adapter.dispatch('ckm_merge_top_values', 'sdc')(column, n)) }}
{% endmacro %}

{% macro duckdb__ckm_merge_top_values(column, n) -%}
list_slice(list_sort(flatten(list({{ column }}) filter (where {{ column }} is not null)), 'DESC'), 1, {{ n }})
{%- endmacro %}

{#- PostgreSQL: an empty cell of a complete frame has NULL for its list, and array_agg cannot stack a NULL array
    among the 2-d ones ("cannot accumulate null arrays", red team 16): those are left out, as on DuckDB -#}
{% macro default__ckm_merge_top_values(column, n) -%}
(select (array_agg(x order by x desc) filter (where x is not null))[1:{{ n }}] from unnest(array_agg({{ column }}) filter (where {{ column }} is not null)) as x)
{%- endmacro %}

{% macro spark__ckm_merge_top_values(column, n) -%}
case when count({{ column }}) > 0 then slice(sort_array(flatten(collect_list({{ column }})), false), 1, {{ n }}) end
{%- endmacro %}

{#- An aggregate: the distinct values of a text expression, sorted, joined by ', ' (for messages). -#}
{% macro ckm_sorted_list(expr) %}
  {{ return(adapter.dispatch('ckm_sorted_list', 'sdc')(expr)) }}
{% endmacro %}

{% macro default__ckm_sorted_list(expr) -%}
string_agg(distinct {{ expr }}, ', ' order by {{ expr }})
{%- endmacro %}

{% macro spark__ckm_sorted_list(expr) -%}
array_join(array_sort(collect_set({{ expr }})), ', ')
{%- endmacro %}

{#- A window expression that numbers the rows 1, 2, ... in no particular order (an id per record where the
    order does not matter). Spark requires an ordered window for row_number(): its increasing row id instead. -#}
{% macro row_id() %}
  {{ return(adapter.dispatch('row_id', 'sdc')()) }}
{% endmacro %}

{% macro default__row_id() %}{{ return('row_number() over ()') }}{% endmacro %}

{% macro spark__row_id() %}{{ return('monotonically_increasing_id() + 1') }}{% endmacro %}
