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
#}
{% macro ckm_published(audit_relation) %}
{{- sdc.build_record_hook() -}}
{#- the CKM call in the input's build record: its dimensions, hierarchy and total label -#}
{%- set call = (sdc.ckm_published_check_input(audit_relation).get('call') or {}) if execute else {} -%}
{%- set hierarchy = sdc.recorded_relation(call.get('hierarchy'), 'ckm_published') -%}
{%- set step_sql -%}
{%- set audit_columns = (sdc.setting('sdc_audit_columns') + sdc.setting('sdc_ckm_sum_audit_columns')) | map('lower') | list -%}
{%- set audit_patterns = sdc.setting('sdc_ckm_sum_audit_patterns') -%}
{%- set columns = [] -%}
{%- if execute -%}
  {%- for column in adapter.get_columns_in_relation(audit_relation) if column.name | lower not in audit_columns and not sdc.name_matches_any(column.name | lower, audit_patterns) -%}
    {%- do columns.append(sdc.sql_identifier(column.name)) -%}
  {%- endfor -%}
{%- endif %}
with published_cells as (
    select {{ columns | join(', ') if columns else '*' }}
    from {{ audit_relation }}
),
{{ sdc.published_dimension_columns('published_cells', call.get('dims') or [], hierarchy, (call.get('settings') or {}).get('sdc_total_label')) }}

select * from dimension_columns
{%- endset -%}
{{ sdc.step('ckm_published', [audit_relation], step_sql, {'hierarchy': sdc.step_relations([hierarchy])[0]} if hierarchy is not none else none) }}
{% endmacro %}


{% macro ckm_published_check_input(audit_relation) %}
{%- if audit_relation.identifier is not defined or audit_relation.identifier is none -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " is no relation: give the ckm_count or ckm_sum model as ref('...')") }}
{%- endif -%}
{#- built out of order (dbt run --select of the published model alone): say that, not "no build record" (N7) -#}
{%- if adapter.get_relation(database=audit_relation.database, schema=audit_relation.schema, identifier=audit_relation.identifier) is none -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " does not exist in the database yet: build it first (dbt build, or dbt run --select +" ~ audit_relation.identifier ~ ")") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(audit_relation.database, audit_relation.schema, audit_relation.identifier) -%}
{%- set step = record.get('step') if record is not none else none -%}
{%- if step not in ['ckm_count', 'ckm_sum'] -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " is not the output of ckm_count or ckm_sum ("
     ~ ("it has no build record" if record is none else "its build record names " ~ ("no sdc step: its SQL is not one ckm_count or ckm_sum call" if step is none else "the step " ~ step))
     ~ "), so its numbers are not protected; publish ckm_published(ref('<a model that is one call of ckm_count or ckm_sum>'))") }}
{%- endif -%}
{%- if step == 'ckm_count' -%}
  {%- set q = sdc.sql_identifier -%}
  {%- set found = run_query("select count(*) from " ~ audit_relation ~ " where " ~ q('count') ~ " is not null and "
                            ~ q('count') ~ " <> " ~ q('original') ~ " + " ~ q('noise')) -%}
  {%- if found.rows[0][0] | int > 0 -%}
    {{ exceptions.raise_compiler_error("ckm_published: in " ~ audit_relation ~ ", " ~ found.rows[0][0] ~ " cell(s) have a count other than original + noise: the table was changed after ckm_count built it; run dbt build") }}
  {%- endif -%}
{%- endif -%}
{{ return(record) }}
{% endmacro %}
