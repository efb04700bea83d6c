{#
  ckm_grouping_sets: the grouping sets of a table, as lists of quoted level columns.
  Each dimension is at one of its levels: leaf, an intermediate level of its hierarchy, or its root
  (not grouped). 'cube' takes every combination, 'rollup' only those in which every dimension after one
  that is above its leaf is at its root (SQL ROLLUP order), 'none' only the leaves (no total, no intermediate level).
#}
{% macro ckm_grouping_sets(dims, levels, totals) %}
{%- set state = namespace(combos=[[]]) -%}
{%- for dim in dims -%}
  {%- set options = [] -%}
  {%- if totals == 'none' -%}
    {#- the leaf only; grouped with its ancestors, which it determines, so that every level column is grouped -#}
    {%- set columns = [] -%}
    {%- for column in levels[dim].columns -%}{%- do columns.append(sdc.sql_identifier(column)) -%}{%- endfor -%}
    {%- do options.append({'columns': columns, 'leaf': true, 'root': false}) -%}
  {%- else -%}
    {%- for column in levels[dim].columns | reverse -%}
      {%- do options.append({'columns': [sdc.sql_identifier(column)], 'leaf': loop.first, 'root': false}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if totals != 'none' -%}
    {%- do options.append({'columns': [], 'leaf': false, 'root': true}) -%}
  {%- endif -%}
  {%- set extended = [] -%}
  {%- for combo in state.combos -%}
    {%- for option in options -%}
      {%- do extended.append(combo + [option]) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- set state.combos = extended -%}
{%- endfor -%}
{%- set sets = [] -%}
{%- for combo in state.combos -%}
  {%- set ns = namespace(keep=true, aggregated=false) -%}
  {%- for option in combo -%}
    {%- if totals == 'rollup' and ns.aggregated and not option.root -%}{%- set ns.keep = false -%}{%- endif -%}
    {%- if not option.leaf -%}{%- set ns.aggregated = true -%}{%- endif -%}
  {%- endfor -%}
  {%- if ns.keep -%}
    {%- set columns = [] -%}
    {%- for option in combo -%}{%- for column in option.columns -%}{%- do columns.append(column) -%}{%- endfor -%}{%- endfor -%}
    {%- do sets.append(columns) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(sets) }}
{% endmacro %}


{#- The GROUP BY clause of the sets (lists of column expressions), each with the `extra` columns added. -#}
{% macro group_by_grouping_sets(sets, extra=[]) -%}
group by grouping sets (
        {%- for set in sets %}
        ({{ (set + extra) | join(', ') }}){{ ',' if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}
