{#
  ckm_published: the publishable columns of a ckm_count relation: its dimensions, `count` and, with a
  threshold, `count_reason`. The audit columns (var sdc_audit_columns: original, key_sum, cell_key_int,
  cell_key, ptable_row, noise, perturbed, in any letter case, as `sdc publish` compares them) stay behind,
  because they undo the protection.
#}
{% macro ckm_published(audit_relation) %}
{{- sdc.build_record_hook() -}}
{%- set audit_columns = sdc.setting('sdc_audit_columns') | map('lower') | list -%}
{%- set columns = [] -%}
{%- if execute -%}
  {%- for column in adapter.get_columns_in_relation(audit_relation) if column.name | lower not in audit_columns -%}
    {%- do columns.append(sdc.sql_identifier(column.name)) -%}
  {%- endfor -%}
{%- endif -%}
select {{ columns | join(', ') if columns else '*' }}
from {{ audit_relation }}
{% endmacro %}
