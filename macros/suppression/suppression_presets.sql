{#
  suppression_presets: boundary semantics and protection defaults of the primary rules, by tool
  (reference suppression.md §2.2, §2.3). "n = 3" means f in {1, 2} for tau-Argus and the Handbook,
  but f in {1, 2, 3} for sdcTable and sas-anon; (n,k) is strict (>) except in ACRO (>=).

    freq_inclusive   true: unsafe if 0 < f <= n; false: unsafe if 0 < f < n
    nk_inclusive     true: sum of the n largest >= k% of the total; false: > k%
    zeros_unsafe     cells with f > 0 and value 0 are unsafe (ACRO: zeros are disclosive)
    freq_protection  protection level of a frequency-unsafe cell, in units of the value (1 = cannot be
                     recomputed exactly; sdcTable's default lower and upper protection level)
#}
{% macro suppression_presets() %}
{{ return({
    'handbook': {'freq_inclusive': false, 'nk_inclusive': false, 'zeros_unsafe': false, 'freq_protection': 1},
    'tauargus': {'freq_inclusive': false, 'nk_inclusive': false, 'zeros_unsafe': false, 'freq_protection': 1},
    'sdctable': {'freq_inclusive': true,  'nk_inclusive': false, 'zeros_unsafe': false, 'freq_protection': 1},
    'acro':     {'freq_inclusive': false, 'nk_inclusive': true,  'zeros_unsafe': true,  'freq_protection': 1},
    'sas_anon': {'freq_inclusive': true,  'nk_inclusive': false, 'zeros_unsafe': false, 'freq_protection': 1},
}) }}
{% endmacro %}
