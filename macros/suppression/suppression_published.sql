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


{#- suppression_pattern_cells_call(pattern): the recorded suppression_cells call behind a pattern ({} where none is
    found): the pattern's suppression_primary table is the one its record names (sdc suppress --target), else its
    parent in dbt's graph (a dbt Python model's suppression_pattern); that table reads the cells -#}
{% macro suppression_pattern_cells_call(pattern) %}
{%- if not execute -%}{{ return({}) }}{%- endif -%}
{%- if pattern.identifier is not defined -%}{#- a name as text ('schema.table', sdc suppress --target's) -#}
  {%- set parts = (pattern | string).split('.') -%}
  {%- set pattern = adapter.get_relation(database=parts[-3].strip('"') if parts | length > 2 else target.database,
                                         schema=parts[-2].strip('"'), identifier=parts[-1].strip('"')) if parts | length > 1 else none -%}
  {%- if pattern is none -%}{{ return({}) }}{%- endif -%}
{%- endif -%}
{%- set candidates = [] -%}
{%- set record = sdc.build_record_of_relation(pattern.database, pattern.schema, pattern.identifier) or {} -%}
{%- if record.get('cells') is string -%}
  {%- set parts = record['cells'].split('.') -%}
  {%- do candidates.append(adapter.get_relation(database=pattern.database, schema=parts[-2].strip('"') if parts | length > 1 else pattern.schema,
                                                identifier=parts[-1].strip('"'))) -%}
{%- endif -%}
{%- for parent_id in model.depends_on.nodes if parent_id in graph.nodes -%}
  {%- for id in graph.nodes[parent_id].depends_on.nodes if id in graph.nodes -%}
    {%- set node = graph.nodes[id] -%}
    {%- do candidates.append(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias or node.name)) -%}
  {%- endfor -%}
{%- endfor -%}
{%- for primary in candidates if primary is not none -%}
  {%- set primary_record = sdc.build_record_of_relation(primary.database, primary.schema, primary.identifier) or {} -%}
  {%- if primary_record.get('step') == 'suppression_primary' and (primary_record.get('reads') or []) | length == 1 -%}
    {%- set cells = primary_record['reads'][0] -%}
    {%- set cells_record = sdc.build_record_of_relation(cells['database'] or primary.database, cells['schema'] or primary.schema, cells['name']) or {} -%}
    {%- if cells_record.get('call') is mapping -%}{{ return(cells_record['call']) }}{%- endif -%}
  {%- endif -%}
{%- endfor -%}
{{ return({}) }}
{% endmacro %}
