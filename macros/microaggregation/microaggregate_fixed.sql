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
        case when {{ x }} is not null then least(sdc_rank // {{ k }}, sdc_n // {{ k }} - 1) end as sdc_group
    from ranked
),

group_statistics as (
    select
        *,
        avg({{ x }}) over group_window as sdc_mean,
        stddev_pop({{ x }}) over group_window as sdc_sd,
        count({{ x }}) over group_window as sdc_size,
        greatest(round_even(count({{ x }}) over group_window / 2, 0), 1) as sdc_bigger,
        row_number() over (partition by sdc_group order by {{ x }} desc, {{ id }} desc) as sdc_rank_in_group
    from grouped
    window group_window as (partition by sdc_group)
),

replaced as (
    select * replace (
        {%- if replacement == 'mean' %}
        case when {{ x }} is not null then sdc_mean end as {{ x }}
        {%- else %}
        case
            when {{ x }} is null then null
            when sdc_size = 1 then {{ x }}
            when sdc_rank_in_group <= sdc_bigger then sdc_mean + sqrt((sdc_size - sdc_bigger) / sdc_bigger) * sdc_sd
            else sdc_mean - sqrt(sdc_bigger / (sdc_size - sdc_bigger)) * sdc_sd
        end as {{ x }}
        {%- endif %}
    )
    from group_statistics
)

select * exclude (sdc_rank, sdc_n, sdc_group, sdc_mean, sdc_sd, sdc_size, sdc_bigger, sdc_rank_in_group)
from replaced
{% endmacro %}
