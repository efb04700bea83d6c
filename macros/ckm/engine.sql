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


{#- A number as a double. A literal such as 100.0 is a decimal on Spark, whose decimal division keeps 6 digits
    (85 / 100.0 = 0.85, but 2 / 85.0 = 0.023529): the rules' thresholds in double arithmetic on every engine. -#}
{% macro double_value(number) %}{{ return('cast(' ~ number ~ ' as ' ~ sdc.double_type() ~ ')') }}{% endmacro %}


{% macro text_type() %}
  {{ return(adapter.dispatch('text_type', 'sdc')()) }}
{% endmacro %}

{# Text of any length: varchar in DuckDB and PostgreSQL; Spark's varchar needs a length, its string does not. #}
{% macro default__text_type() %}{{ return('varchar') }}{% endmacro %}
{% macro spark__text_type() %}{{ return('string') }}{% endmacro %}


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


{% macro ckm_integer_div(numerator, denominator) %}
  {{ return(adapter.dispatch('ckm_integer_div', 'sdc')(numerator, denominator)) }}
{% endmacro %}

{# floor(a / b) of non-negative integers, exactly. #}
{% macro default__ckm_integer_div(numerator, denominator) %}{{ return('cast(floor((' ~ numerator ~ ') / (' ~ denominator ~ ')) as bigint)') }}{% endmacro %}
{% macro duckdb__ckm_integer_div(numerator, denominator) %}{{ return('((' ~ numerator ~ ') // (' ~ denominator ~ '))') }}{% endmacro %}

{#- ceil(a / b) of integers a >= 0, b > 0 (NULL where b is), exactly on every engine: the quotient of a multiple
    of b, which no engine rounds (floor(a / b) of wide integers need not be exact: Spark cuts a decimal quotient
    to 6 decimals) -#}
{% macro ckm_ceil_div(numerator, denominator) -%}
cast((({{ numerator }}) + ({{ denominator }}) - 1 - ((({{ numerator }}) + ({{ denominator }}) - 1) % ({{ denominator }}))) / ({{ denominator }}) as bigint)
{%- endmacro %}


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
{%- set double = sdc.double_type() -%}
{{ return('(' ~ column ~ ' is null or not (cast(' ~ column ~ ' as ' ~ double ~ ') > 0 and cast(' ~ column ~ ' as ' ~ double ~ ") < cast('Infinity' as " ~ double ~ ')))') }}
{%- endmacro %}
{% macro duckdb__ckm_weight_invalid(column) -%}
{{ return('(' ~ column ~ ' is null or isnan(cast(' ~ column ~ ' as double)) or isinf(cast(' ~ column ~ ' as double)) or cast(' ~ column ~ ' as double) <= 0)') }}
{%- endmacro %}


{#- The cell of a record or leaf cell as text for an error message, e.g. wz = 10, region = Schwaben: the
    published codes name where the problem is; a record key never appears in a message (messages reach
    logs, and the keys undo the protection). -#}
{% macro ckm_cell_text(dims) -%}
{%- for dim in dims -%}
'{{ sdc.sql_text(dim) }} = ' || coalesce(cast({{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}), 'NULL'){{ " || ', ' || " if not loop.last }}
{%- endfor -%}
{%- endmacro %}


{#- engine_setup: run by the package's on-run-start hook (dbt_project.yml): what an engine needs before the
    models run. PostgreSQL: sdc_raise_error(message) in the target schema, a function that raises the message
    (ckm_fail_if stops a query with it). -#}
{% macro engine_setup() %}
  {{ return(adapter.dispatch('engine_setup', 'sdc')()) }}
{% endmacro %}
{% macro default__engine_setup() %}{{ return('select 1') }}{% endmacro %}
{# Spark: no ${...} substitution in the SQL text of the session's later statements (see macros/_quoting.sql) #}
{% macro spark__engine_setup() %}{{ return('set spark.sql.variable.substitute=false') }}{% endmacro %}
{% macro postgres__engine_setup() -%}
create schema if not exists {{ sdc.sql_identifier(target.schema) }};
create or replace function {{ sdc.engine_function('sdc_raise_error') }}(message text) returns boolean
language plpgsql as $sdc$ begin raise exception '%', message; end $sdc$
{%- endmacro %}


{#- The qualified name of a helper function engine_setup creates. -#}
{% macro engine_function(name) -%}
{{ sdc.sql_identifier(target.schema) }}.{{ sdc.sql_identifier(name) }}
{%- endmacro %}



{#- An expression that is true for a number that is not finite (NULL, NaN, ±infinity). -#}
{% macro ckm_not_finite(column) %}
  {{ return(adapter.dispatch('ckm_not_finite', 'sdc')(column)) }}
{% endmacro %}
{% macro default__ckm_not_finite(column) -%}
{%- set double = sdc.double_type() -%}
{{ return('(' ~ column ~ ' is null or not (' ~ column ~ " > cast('-Infinity' as " ~ double ~ ') and ' ~ column ~ " < cast('Infinity' as " ~ double ~ ')))') }}
{%- endmacro %}
{% macro duckdb__ckm_not_finite(column) -%}
{{ return('(' ~ column ~ ' is null or isnan(' ~ column ~ ') or isinf(' ~ column ~ '))') }}
{%- endmacro %}


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

{#- The n-th element (1-based) of an array column, NULL past its end. Spark's [] is 0-based and fails past the
    end under ANSI mode: try_element_at. -#}
{% macro array_element(column, n) %}
  {{ return(adapter.dispatch('array_element', 'sdc')(column, n)) }}
{% endmacro %}
{% macro default__array_element(column, n) %}{{ return(column ~ '[' ~ n ~ ']') }}{% endmacro %}
{% macro spark__array_element(column, n) %}{{ return('try_element_at(' ~ column ~ ', ' ~ n ~ ')') }}{% endmacro %}



{#- A CTE computed once and read as a table: each component of ckm_sum adds noise to the value the previous one
    left, and an engine that inlines the chain (PostgreSQL inlines a CTE read once) copies every earlier step's
    expression into the next, an expression that doubles with each step. -#}
{% macro cte_materialized() %}
  {{ return(adapter.dispatch('cte_materialized', 'sdc')()) }}
{% endmacro %}
{% macro default__cte_materialized() %}{{ return('') }}{% endmacro %}
{% macro postgres__cte_materialized() %}{{ return('materialized ') }}{% endmacro %}



{#- Settings for the transaction of a model built by an sdc macro. PostgreSQL: no JIT compilation. Its cost
    estimate of the ptable's range join passes jit_above_cost, and compiling the query's many small expressions
    took 0.6 s of a 0.7 s count table at 10^5 records (0.1 s without). Spark: its analyzer resolves a chain of
    CTEs one level per iteration and stops at 100; ckm_sum's chain (about 40 steps for two measures of three
    components) needs more. -#}
{% macro engine_model_settings() %}
  {{ return(adapter.dispatch('engine_model_settings', 'sdc')()) }}
{% endmacro %}
{% macro default__engine_model_settings() %}{{ return(none) }}{% endmacro %}
{% macro postgres__engine_model_settings() %}{{ return('set local jit = off') }}{% endmacro %}
{% macro spark__engine_model_settings() %}{{ return('set spark.sql.analyzer.maxIterations=1000') }}{% endmacro %}



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
