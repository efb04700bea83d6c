{#
  ckm_sum_quality: quality figures of one magnitude table built by ckm_sum(audit=true) (one row), for the
  measure `measure` (value, weighted_value or weighted_count), on the cells whose original sum is not 0
  (zero stays zero by construction). With o the original and p the published sum, rad = |p - o| / |o|:

    cells                      number of such cells
    changed_share              share of cells published changed
    mean_absolute_deviation    mean |p - o|
    mean_relative_deviation    mean rad
    rad_median, rad_p90, rad_p99   the distribution of rad: its median, 90th and 99th percentiles
    max_relative_noise         largest rad
    share_rad_below_1pct, share_rad_below_5pct, share_rad_below_10pct   shares of cells with rad < 1 %, 5 %, 10 %
    sign_changes               cells whose sign changed (0: the method clamps)
#}
{% macro ckm_sum_quality(audit_relation, table_name, measure='value') %}
{%- if measure not in ['value', 'weighted_value', 'weighted_count'] -%}
  {{ exceptions.raise_compiler_error("ckm_sum_quality: measure must be value, weighted_value or weighted_count, got '" ~ measure ~ "'") }}
{%- endif -%}
with cells as (
    select
        cast(original_{{ measure }} as {{ sdc.double_type() }}) as o,
        cast({{ sdc.sql_identifier(measure) }} as {{ sdc.double_type() }}) as p
    from {{ audit_relation }}
    where original_{{ measure }} <> 0
),

deviations as (
    select o, p, abs(p - o) as ad, abs(p - o) / abs(o) as rad from cells
)

select
    {{ sdc.sql_string(table_name) }} as table_name,
    {{ sdc.sql_string(measure) }} as measure,
    count(*) as cells,
    avg(case when p <> o then 1 else 0 end) as changed_share,
    avg(ad) as mean_absolute_deviation,
    avg(rad) as mean_relative_deviation,
    percentile_cont(0.5) within group (order by rad) as rad_median,
    percentile_cont(0.9) within group (order by rad) as rad_p90,
    percentile_cont(0.99) within group (order by rad) as rad_p99,
    max(rad) as max_relative_noise,
    avg(case when rad < 0.01 then 1 else 0 end) as share_rad_below_1pct,
    avg(case when rad < 0.05 then 1 else 0 end) as share_rad_below_5pct,
    avg(case when rad < 0.1 then 1 else 0 end) as share_rad_below_10pct,
    sum(case when sign(p) <> sign(o) then 1 else 0 end) as sign_changes
from deviations
{% endmacro %}
