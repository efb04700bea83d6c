{#
  ckm_published: the publishable columns of a ckm_count or ckm_sum relation: its dimensions and measures
  (count, count_reason, weighted_count; value, weighted_value). The audit columns (var sdc_audit_columns:
  original, key_sum, cell_key_int, cell_key, ptable_row, noise, perturbed, original_weighted_count; of
  ckm_sum: var sdc_ckm_sum_audit_columns and the families of var sdc_ckm_sum_audit_patterns; in any letter
  case, as `sdc publish` compares them) stay behind, because they undo the protection.

  Per dimension d it adds the columns a BI tool filters and sorts on (macros/_published_dimension_columns.sql):
  d__level (0 the total, 1 the codes directly under it, ...), d__is_total (a code with codes under it), d__parent
  (NULL for the total) and d__sort (pre-order of the hierarchy; flat: the total 0, then by code), from the
  hierarchy and total label of the CKM call in the input's build record.

  Its input must be the output of ckm_count or ckm_sum (the step in its build record, macro step): over any
  other relation (a plain count(*), a copy of the microdata) it would only rename unprotected numbers, so it
  stops. A ckm_count input must also agree with itself: count = original + noise in every published cell.

  digits: the published magnitudes (weighted_count, value, weighted_value) rounded to this many decimals,
  negative ones to tens, hundreds, ... (-2: to hundreds), after the noise; counts are whole numbers already.
  Not given: var sdc_published_digits (default 0, whole units: τ-Argus writes a CKM table's cells with the
  decimals of its response variable, and a frequency table's, weighted counts included, with none:
  libtauargus TauArgus.cpp WriteCSVCell, `%.*f` with nDec, nDec = 0 for a frequency table; reference
  ckm.md §2 A3 `<DECIMALS>`). digits=none publishes them unrounded. The audit relation stays exact; the
  digits are in this step's build record (call.digits), and `sdc publish` rounds its recomputation alike.
#}
{% macro ckm_published(audit_relation) %}
{%- for name in kwargs if name != 'digits' -%}
  {{ exceptions.raise_compiler_error("ckm_published: unknown argument " ~ name ~ " (it takes the audit relation and digits=)") }}
{%- endfor -%}
{%- set digits = sdc.ckm_published_digits(kwargs['digits'] if 'digits' in kwargs else sdc.setting('sdc_published_digits')) -%}
{{- sdc.build_record_hook() -}}
{#- the CKM call in the input's build record: its dimensions, hierarchy and total label -#}
{%- set call = (sdc.ckm_published_check_input(audit_relation).get('call') or {}) if execute else {} -%}
{%- set hierarchy = sdc.recorded_relation(call.get('hierarchy'), 'ckm_published') -%}
{%- set step_sql -%}
{%- set audit_columns = (sdc.setting('sdc_audit_columns') + sdc.setting('sdc_ckm_sum_audit_columns')) | map('lower') | list -%}
{%- set audit_patterns = sdc.setting('sdc_ckm_sum_audit_patterns') -%}
{%- set columns = [] -%}
{%- if execute -%}
  {%- set found = adapter.get_columns_in_relation(audit_relation) -%}
  {%- if 'digits' in kwargs and digits is not none and not (found | map(attribute='name') | map('lower') | select('in', ['weighted_count', 'value', 'weighted_value']) | list) -%}
    {{ exceptions.raise_compiler_error("ckm_published: digits rounds published magnitudes (weighted_count, value, weighted_value); " ~ audit_relation ~ " has none (a ckm_count table has one with a weight)") }}
  {%- endif -%}
  {%- for column in found if column.name | lower not in audit_columns and not sdc.name_matches_any(column.name | lower, audit_patterns) -%}
    {%- if digits is not none and column.name | lower in ['weighted_count', 'value', 'weighted_value'] -%}
      {%- do columns.append(sdc.ckm_published_rounded(sdc.sql_identifier(column.name), digits) ~ ' as ' ~ sdc.sql_identifier(column.name)) -%}
    {%- else -%}
      {%- do columns.append(sdc.sql_identifier(column.name)) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endif %}
with published_cells as (
    select {{ columns | join(', ') if columns else '*' }}
    from {{ audit_relation }}
),
{{ sdc.published_dimension_columns('published_cells', call.get('dims') or [], hierarchy, (call.get('settings') or {}).get('sdc_total_label')) }}

select * from dimension_columns
{%- endset -%}
{%- set header = {'call': {'digits': digits}} -%}
{%- if hierarchy is not none -%}{%- do header.update({'hierarchy': sdc.step_relations([hierarchy])[0]}) -%}{%- endif -%}
{{ sdc.step('ckm_published', [audit_relation], step_sql, header) }}
{% endmacro %}
