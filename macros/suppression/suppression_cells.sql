{#
  suppression_cells: the long cell table of a published table, for cell suppression. One row per cell,
  every subtotal included (GROUPING SETS over the same dimension levels as ckm_count):

    <dims...>      codes; a total carries the root code (hierarchy root, or var sdc_total_label)
    freq           number of records
    contributors   number of contributors: holdings when a holding column is given, else records
    value          cell value (sum of the value column); freq when no value column is given
    top_1..top_n   the largest contributions (per holding when given), 0 where there are fewer

  A holding's contributions are summed before the rules see them, at every level (tau-Argus "holding
  indicator"): a holding present in two leaf cells is one contributor of their total, so every holding's sum is
  ranked in every cell. Without holdings a record is a contributor of one finest cell and of every cell above
  it with the same value: a cell's largest contributions are among the largest of its finest cells, and only
  those are ranked above the finest cells (suppression_record_cells).

  Arguments: relation, dims, value=none, holding=none, hierarchy=none, totals='cube', top_n=3.
#}
{% macro suppression_cells(relation, dims, value=none, holding=none, hierarchy=none, totals='cube', top_n=3) %}
{%- do sdc.check_dimension_names(dims, sdc.setting('sdc_suppression_own_columns'), 'suppression_cells',
      roles={value: 'value column', holding: 'holding column'}, top_contributions=true) -%}
{{- sdc.build_record_hook() -}}
{%- set step_sql -%}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, totals) -%}
{%- set sets = sdc.ckm_grouping_sets(dims, levels, totals) -%}
{%- set value_expr = 'cast(' ~ sdc.sql_identifier(value) ~ ' as ' ~ sdc.double_type() ~ ')' if value is not none else 'cast(1 as ' ~ sdc.double_type() ~ ')' -%}
{%- if value is none and holding is none %}
{{ sdc.suppression_count_cells(relation, dims, levels, sets, top_n) }}
{%- elif holding is none %}
{{ sdc.suppression_record_cells(relation, dims, levels, sets, top_n, value_expr) }}
{%- else %}

with records as (
    select
        m.*,
        {{ value_expr }} as sdc_value,
        {{ 'cast(' ~ sdc.sql_identifier(holding) ~ ' as ' ~ sdc.text_type() ~ ')' if holding is not none else 'cast(' ~ sdc.row_id() ~ ' as ' ~ sdc.text_type() ~ ')' }} as sdc_contributor
    from {{ relation }} as m
),

leaf_contributions as (
    -- one pass over the microdata: each contributor's sum and record count per finest cell
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        sdc_contributor,
        sum(sdc_value) as contribution,
        count(*) as records
    from records
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}, {% endfor %}sdc_contributor
),

leaf_levels as (
{{ sdc.ckm_leaf_levels('leaf_contributions', dims, levels) }}
),

checked_leaf_levels as (
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels) }}
),

cell_contributions as (
    -- each contributor's sum in every cell, subtotals included
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        sdc_contributor,
        sum(contribution) as contribution,
        sum(records) as records
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, ['sdc_contributor'], levels=levels) }}
),

ranked as (
{{ sdc.suppression_ranked('cell_contributions', dims) }}
),

cells as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        cast(sum(records) as bigint) as freq,
        count(*) as contributors,
        {{ 'sum(contribution)' if value is not none else 'cast(sum(records) as ' ~ sdc.double_type() ~ ')' }} as value,
        {{- sdc.suppression_top_columns(top_n) }}
    from ranked
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
)

select * from cells
{%- endif %}
{%- endset -%}
{{ sdc.step('suppression_cells', [relation], step_sql, {'call': sdc.step_call({'dims': dims, 'value': value, 'holding': holding, 'hierarchy': hierarchy, 'totals': totals, 'top_n': top_n})}) }}
{% endmacro %}
