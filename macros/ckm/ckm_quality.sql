{#
  ckm_quality: quality figures of one ckm_count relation (one row), on the cells with original > 0
  (zero cells stay zero by construction and would only inflate the stay share):

    cells                    number of such cells
    mean_absolute_deviation  mean |count - original|
    stay_share               share of cells published unchanged (empirical stay probability)
    changed_share            share of cells changed
    max_abs_noise            largest |count - original|
    hellinger_counts         HD on counts (Shlomo, Antal & Elliot 2015): sqrt(1/2 * sum (sqrt(o) - sqrt(p))^2)
    hellinger_utility        1 - hellinger_counts / sqrt(sum o), in [0, 1]
    hellinger_distribution   HD of the normalised distributions (INSEE ckm):
                             sqrt(1/2 * sum (sqrt(o / sum o) - sqrt(p / sum p))^2), in [0, 1]
    false_zeros              cells with original > 0 published as 0
#}
{% macro ckm_quality(audit_relation, table_name) %}
with cells as (
    select cast(original as {{ sdc.double_type() }}) as o, cast({{ sdc.sql_identifier('count') }} as {{ sdc.double_type() }}) as p
    from {{ audit_relation }}
    where original > 0
),

totals as (
    select sum(o) as sum_o, sum(p) as sum_p from cells
),

measures as (
    select
        {{ sdc.sql_string(table_name) }} as table_name,
        count(*) as cells,
        avg(abs(p - o)) as mean_absolute_deviation,
        avg(case when p = o then 1 else 0 end) as stay_share,
        avg(case when p <> o then 1 else 0 end) as changed_share,
        cast(max(abs(p - o)) as integer) as max_abs_noise,
        sqrt(0.5 * sum(power(sqrt(o) - sqrt(p), 2))) as hellinger_counts,
        sqrt(0.5 * sum(power(sqrt(o / totals.sum_o) - sqrt(p / nullif(totals.sum_p, 0)), 2))) as hellinger_distribution,
        sum(case when p = 0 then 1 else 0 end) as false_zeros,
        max(totals.sum_o) as sum_original
    from cells cross join totals
)

select
    table_name, cells, mean_absolute_deviation, stay_share, changed_share, max_abs_noise,
    hellinger_counts,
    1 - hellinger_counts / sqrt(sum_original) as hellinger_utility,
    hellinger_distribution,
    false_zeros
from measures
{% endmacro %}
