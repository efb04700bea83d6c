{#
  ckm_interval_match: SQL condition "cell key in [p_int_lb, p_int_ub)", exactly, in integers:
  cell_key_int / M in [lb_units / 10^8, ub_units / 10^8)  <=>  ck * 10^8 >= lb_units * M and ck * 10^8 < ub_units * M,
  with lb_scaled = lb_units * M and ub_scaled = ub_units * M computed once per ptable row.
#}
{% macro ckm_interval_match(cell_key_int, lb_scaled, ub_scaled) -%}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}
cast({{ cell_key_int }} as {{ sdc.wide_integer_type() }}) * {{ scale }} >= {{ lb_scaled }}
and cast({{ cell_key_int }} as {{ sdc.wide_integer_type() }}) * {{ scale }} < {{ ub_scaled }}
{%- endmacro %}
