{#
  Data test on a ckm_count relation: zero stays zero, nothing published below 0, |noise| <= the largest
  |v| of the perturbation table, count = original + noise, cell key in [0, M), and every cell once.
#}
{% test sdc_ckm_invariants(model, ptable=none) %}
{%- set ptable = ptable if ptable is not none else ref('sdc_ptable') -%}
with max_noise as (
    select max(abs(v)) as d from {{ ptable }}
),
problems as (
    select 'zero cell changed' as problem, count(*) as cells from {{ model }} where original = 0 and "count" <> 0
    union all
    select 'published count below 0', count(*) from {{ model }} where "count" < 0
    union all
    select 'noise beyond the perturbation table', count(*) from {{ model }}, max_noise where abs(noise) > max_noise.d
    union all
    select 'count is not original + noise', count(*) from {{ model }} where original > 0 and "count" <> original + noise
    union all
    select 'cell key outside [0, M)', count(*) from {{ model }}
    where cell_key_int < 0 or cell_key_int >= {{ sdc.setting('sdc_key_modulus') }}
)
select * from problems where cells > 0
{% endtest %}
