{#
  microaggregate_fixed: fixed-size microaggregation of one numeric column in SQL, the same as
  sdc.microaggregation.microaggregate(method='fixed'): order by value, then id_column; consecutive groups
  of k, the remainder (n mod k) joins the last group; each value replaced by its group's mean
  (replacement='mean') or by Höhne's variance-preserving values (replacement='hoehne': the bigger half,
  b = round_even(size / 2) and at least 1, the last b in the order by (value, id), gets mean + sqrt((size - b) / b) * sd, the rest
  mean - sqrt(b / (size - b)) * sd, sd the population sd). NULLs stay NULL. Every other column and the
  row count are unchanged.

  Arguments: relation, column, k, id_column (breaks ties between equal values), replacement='mean'.
#}
{% macro microaggregate_fixed(relation, column, k, id_column, replacement='mean') %}
{%- if k is not number or k < 2 -%}
  {{ exceptions.raise_compiler_error("microaggregate_fixed: k must be an integer of at least 2, got " ~ k) }}
{%- endif -%}
{%- if replacement not in ('mean', 'hoehne') -%}
  {{ exceptions.raise_compiler_error("microaggregate_fixed: replacement must be 'mean' or 'hoehne', got " ~ replacement) }}
{%- endif -%}
{%- set x = sdc.sql_identifier(column) -%}
{%- set id = sdc.sql_identifier(id_column) -%}
{%- set double = sdc.double_type() -%}
{#- the relation's columns in their order: the output lists them, the microaggregated one replaced -#}
{%- set columns = adapter.get_columns_in_relation(relation) | map(attribute='name') | list if execute else [column] -%}
{%- if execute and column | lower not in columns | map('lower') | list -%}
  {{ exceptions.raise_compiler_error("microaggregate_fixed: column '" ~ column ~ "' is not in " ~ relation) }}
{%- endif -%}

with ranked as (
    -- non-NULL values get ranks 0 .. n-1 by (value, id)
    select
        *,
        row_number() over (order by {{ x }} nulls last, {{ id }}) - 1 as sdc_rank,
        count({{ x }}) over () as sdc_n
    from {{ relation }}
),

grouped as (
    select
        *,
        case when {{ x }} is not null then least({{ sdc.ckm_integer_div('sdc_rank', k) }}, {{ sdc.ckm_integer_div('sdc_n', k) }} - 1) end as sdc_group
    from ranked
),

group_statistics as (
    select
        *,
        avg({{ x }}) over group_window as sdc_mean,
        stddev_pop({{ x }}) over group_window as sdc_sd,
        count({{ x }}) over group_window as sdc_size,
        row_number() over (partition by sdc_group order by {{ x }} desc, {{ id }} desc) as sdc_rank_in_group
    from grouped
    window group_window as (partition by sdc_group)
),

bigger_halves as (
    -- b = round_even(size / 2), at least 1, in integers: size / 2 rounded half to even
    select
        *,
        greatest(case
            when sdc_size % 2 = 0 or {{ sdc.ckm_integer_div('sdc_size', 2) }} % 2 = 0 then {{ sdc.ckm_integer_div('sdc_size', 2) }}
            else {{ sdc.ckm_integer_div('sdc_size', 2) }} + 1
        end, 1) as sdc_bigger
    from group_statistics
)

select
    {%- for name in columns %}
    {%- if name | lower == column | lower %}
    {%- if replacement == 'mean' %}
    case when {{ x }} is not null then sdc_mean end as {{ x }}
    {%- else %}
    case
        when {{ x }} is null then null
        when sdc_size = 1 then {{ x }}
        when sdc_rank_in_group <= sdc_bigger then sdc_mean + sqrt(cast(sdc_size - sdc_bigger as {{ double }}) / sdc_bigger) * sdc_sd
        else sdc_mean - sqrt(cast(sdc_bigger as {{ double }}) / (sdc_size - sdc_bigger)) * sdc_sd
    end as {{ x }}
    {%- endif %}
    {%- else %}
    {{ sdc.sql_identifier(name) }}
    {%- endif %}{{ ',' if not loop.last }}
    {%- endfor %}
from bigger_halves
{% endmacro %}
