{#
  Data test on a ckm_count relation: zero stays zero, nothing published below 0, |noise| <= the largest
  |v| of the perturbation table, count = original + noise, cell key in [0, M), and every cell once.
  The ptable and modulus are those of the model's own ckm_count call (its build record), so a table built with
  ptable=ref('another_ptable') or modulus= is checked against them (new-user N6); `ptable=` overrides, and a
  model without a recorded call is checked against ref('sdc_ptable') and var sdc_key_modulus.
#}
{% test sdc_ckm_invariants(model, ptable=none) %}
{%- set call = {} -%}
{%- if execute -%}
  {%- set call = (sdc.build_record_of_relation(model.database, model.schema, model.identifier) or {}).get('call') or {} -%}
{%- endif -%}
{%- set recorded = sdc.gate_named_relation(call['ptable'], model, 'ptable', 'sdc_ckm_invariants', [model | string])
                   if ptable is none and call.get('ptable') else none -%}
{%- set ptable = ptable if ptable is not none else (recorded if recorded is not none else ref('sdc_ptable')) -%}
{%- set modulus = call.get('modulus') or sdc.setting('sdc_key_modulus') -%}
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
    where cell_key_int < 0 or cell_key_int >= {{ modulus }}
)
select * from problems where cells > 0
{% endtest %}
