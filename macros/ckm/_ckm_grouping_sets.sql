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


{#- The GROUP BY clause of the sets (lists of column expressions), each with the `extra` columns added. With the
    dimensions' levels (ckm_dimension_levels): a group of the NULLs that a hierarchy with leaves at different
    depths has below a shallow leaf is no cell (that leaf is its own cell at the leaf level), and is dropped. The
    condition reads the level column through max() and asks whether it is grouped through is_grouped: Spark
    resolves neither a bare column of a grouping set nor grouping(column) in HAVING. -#}
{% macro group_by_grouping_sets(sets, extra=[], levels=none) -%}
group by grouping sets (
        {%- for set in sets %}
        ({{ (set + extra) | join(', ') }}){{ ',' if not loop.last }}
        {%- endfor %}
    )
{%- set order = [] -%}
{%- for set in sets -%}{%- for column in set + extra if column not in order -%}{%- do order.append(column) -%}{%- endfor -%}{%- endfor -%}
{%- set conditions = [] -%}
{%- for dim, level in (levels or {}).items() if level.padded -%}
  {%- for column in level.columns[:-1] -%}
    {%- set finer = [] -%}
    {%- for other in level.columns[loop.index:] -%}{%- do finer.append(sdc.is_grouped(sdc.sql_identifier(other), order)) -%}{%- endfor -%}
    {%- do conditions.append('(' ~ (['not (' ~ sdc.is_grouped(sdc.sql_identifier(column), order) ~ ')', 'max(' ~ sdc.sql_identifier(column) ~ ') is not null'] + finer) | join(' or ') ~ ')') -%}
  {%- endfor -%}
{%- endfor -%}
{%- if conditions %}
    having {{ conditions | join('\n        and ') }}
{%- endif %}
{%- endmacro %}


{#- SQL: true where the row's grouping set groups `column` (one of `order`, the GROUP BY's columns in the order they
    first appear in its sets) -#}
{% macro is_grouped(column, order) %}{{ return(adapter.dispatch('is_grouped', 'sdc')(column, order)) }}{% endmacro %}

{% macro default__is_grouped(column, order) %}{{ return('grouping(' ~ column ~ ') = 0') }}{% endmacro %}

{#- Spark: grouping_id() is a bit mask over the GROUP BY's columns, the first the highest bit -#}
{% macro spark__is_grouped(column, order) %}
{{ return('(grouping_id() & ' ~ 2 ** (order | length - 1 - order.index(column)) ~ ') = 0') }}
{% endmacro %}
