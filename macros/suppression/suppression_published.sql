{#
  suppression_published: the columns of a suppression pattern that may be published: the dimension
  codes, the value of every published cell (NULL where suppressed) and published_text (the value, or
  the mark / interval of a suppressed cell). Status, rule, protection levels and the true values of
  suppressed cells stay in the audit schema.

  Per dimension d it adds the columns a BI tool filters and sorts on (macros/_published_dimension_columns.sql):
  d__level (0 the total, 1 the codes directly under it, ...), d__is_total (a code with codes under it), d__parent
  (NULL for the total) and d__sort (pre-order of the hierarchy; flat: the total 0, then by code), from the
  hierarchy and total label of the suppression_cells call the pattern was solved from (found as sdc publish finds
  it: suppression_pattern_cells_call).
#}
{% macro suppression_published(pattern, dims, value='value') %}
{{- sdc.build_record_hook() -}}
{%- set cells_call = sdc.suppression_pattern_cells_call(pattern) -%}
{%- set hierarchy = sdc.recorded_relation(cells_call.get('hierarchy'), 'suppression_published') -%}
{%- set step_sql -%}
with published_cells as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        case when status in ('published', 'empty') then {{ sdc.sql_identifier(value) }} end as {{ sdc.sql_identifier(value) }},
        published_text
    from {{ pattern }}
),
{{ sdc.published_dimension_columns('published_cells', dims, hierarchy, (cells_call.get('settings') or {}).get('sdc_total_label')) }}

select * from dimension_columns
{%- endset -%}
{%- set details = {'call': {'dims': dims, 'value': value}} -%}
{%- if hierarchy is not none -%}{%- do details.update({'hierarchy': sdc.step_relations([hierarchy])[0]}) -%}{%- endif -%}
{{ sdc.step('suppression_published', [pattern], step_sql, details) }}
{% endmacro %}
