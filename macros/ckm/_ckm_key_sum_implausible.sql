{#
  ckm_key_sum_implausible(n, key_sum, modulus): SQL that is true when key_sum cannot be the sum of the record
  keys of n records. Keys are uniform on [0, M), so by Hoeffding's inequality the sum S of n keys satisfies
  P(|S - n(M-1)/2| >= t) <= 2 exp(-2 t^2 / (n (M-1)^2)); the condition is |S - n(M-1)/2| > t with
  t = (M-1) sqrt(n ln(2/1e-15) / 2), where that bound is 1e-15: a legitimate cell trips it with
  probability at most 1e-15. It binds from 71 records on (below, t exceeds the range of S).
  It catches keys drawn for another modulus (keys below 256 summed as if below 10^8: S is about n * 128,
  not n * 5 * 10^7) and a sum of values passed as a count (sdc_ckm(sum(income), sum(rk))).
  Used by ckm_count (every cell) and by the ad-hoc SQL macros (sdc_ckm_check).
#}
{% macro ckm_key_sum_implausible(n, key_sum, modulus) -%}
{%- set wide = sdc.wide_integer_type() -%}
abs(cast(2 * cast({{ key_sum }} as {{ wide }}) - cast({{ n }} as {{ wide }}) * {{ modulus - 1 }} as {{ sdc.double_type() }}))
    > 2 * {{ modulus - 1 }} * sqrt(cast({{ n }} as {{ sdc.double_type() }}) * ln(2 / 1e-15) / 2)
{%- endmacro %}
