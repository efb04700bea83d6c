{#
  Data test: a perturbation table the CKM lookup can rely on. Returns one row per problem:
  intervals of each i partition [0, 1) in order, p = p_int_ub - p_int_lb, j = i + v, no result below 0,
  row 0 is {0 -> 0}, rows 1..max(i) without a gap, and |v| <= max_noise when given.
  Bounds are compared as integers in units of 10^-sdc_interval_decimals.
#}
{% test sdc_ptable_valid(model, max_noise=none) %}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}

with units as (
    select
        i, j, v,
        cast(p * {{ scale }} as bigint) as p_units,
        cast(p_int_lb * {{ scale }} as bigint) as lb_units,
        cast(p_int_ub * {{ scale }} as bigint) as ub_units
    from {{ model }}
),

ordered as (
    select
        *,
        lag(ub_units) over (partition by i order by lb_units, ub_units) as previous_ub,
        row_number() over (partition by i order by lb_units desc, ub_units desc) as from_last
    from units
),

row_values as (
    -- rows 0..max(i) without a gap: the next row of each row is there, up to the last (portable SQL: no series)
    select distinct i from units
),

problems as (
    select i, j, v, 'interval does not start where the previous one ends' as problem
    from ordered where lb_units <> coalesce(previous_ub, 0)
    union all
    select i, j, v, 'last interval does not end at 1'
    from ordered where from_last = 1 and ub_units <> {{ scale }}
    union all
    select i, j, v, 'p differs from p_int_ub - p_int_lb'
    from units where p_units <> ub_units - lb_units or ub_units < lb_units
    union all
    select i, j, v, 'j is not i + v'
    from units where j <> i + v
    union all
    select i, j, v, 'perturbed value below 0'
    from units where i + v < 0
    union all
    select i, j, v, 'zero cell does not stay zero'
    from units where i = 0 and (v <> 0 or lb_units <> 0 or ub_units <> {{ scale }})
    union all
    select r.i + 1, null, null, 'row missing'
    from row_values as r
    where r.i < (select max(i) from units) and not exists (select 1 from row_values as n where n.i = r.i + 1)
    union all
    select 0, null, null, 'row missing'
    from (select min(i) as low from units) as m where m.low > 0
    {%- if max_noise is not none %}
    union all
    select i, j, v, 'noise larger than {{ max_noise }}'
    from units where abs(v) > {{ max_noise }}
    {%- endif %}
)

select * from problems

{% endtest %}
