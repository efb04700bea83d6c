{#
  ckm_published: the publishable columns of a ckm_count or ckm_sum relation: its dimensions and measures
  (count, count_reason, weighted_count; value, weighted_value). The audit columns (var sdc_audit_columns:
  original, key_sum, cell_key_int, cell_key, ptable_row, noise, perturbed, original_weighted_count; of
  ckm_sum: var sdc_ckm_sum_audit_columns and the families of var sdc_ckm_sum_audit_patterns; in any letter
  case, as `sdc publish` compares them) stay behind, because they undo the protection.
#}
{% macro ckm_published(audit_relation) %}
{{- sdc.build_record_hook() -}}
{%- set audit_columns = (sdc.setting('sdc_audit_columns') + sdc.setting('sdc_ckm_sum_audit_columns')) | map('lower') | list -%}
{%- set audit_patterns = sdc.setting('sdc_ckm_sum_audit_patterns') -%}
{%- set columns = [] -%}
{%- if execute -%}
  {%- for column in adapter.get_columns_in_relation(audit_relation) if column.name | lower not in audit_columns and not sdc.name_matches_any(column.name | lower, audit_patterns) -%}
    {%- do columns.append(sdc.sql_identifier(column.name)) -%}
  {%- endfor -%}
{%- endif -%}
select {{ columns | join(', ') if columns else '*' }}
from {{ audit_relation }}
{% endmacro %}
