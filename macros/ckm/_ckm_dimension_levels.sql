{#
  ckm_dimension_levels: for each dimension the columns of its levels (top to leaf), its root label, and
  for a hierarchical dimension the SQL that maps a leaf code to its ancestors (leaf, level_1 .. level_{L-1}).
  A hierarchy is a relation (dimension, code, parent); the root has no parent and its code labels the total.
  Its leaves may lie at different depths, as in statistical classifications (a code without sub-codes beside
  codes with them): a leaf above the deepest level has no code at the levels below its own (NULL), and the
  groups those NULLs form are no cells (group_by_grouping_sets drops them), so every code is one cell.
  Anything else that is not a tree under one root is an error naming the codes.
#}
{% macro ckm_dimension_levels(dims, hierarchy, totals) %}
{%- do sdc.ckm_check_hierarchy_dimensions(dims, hierarchy) -%}
{%- set result = {} -%}
{%- for dim in dims -%}
  {%- set shape = sdc.ckm_hierarchy_shape(hierarchy, dim) if hierarchy is not none else none -%}
  {%- if shape is none -%}
    {%- do result.update({dim: {'columns': [dim], 'root': sdc.setting('sdc_total_label'), 'paths': none, 'padded': false}}) -%}
  {%- else -%}
    {%- set columns = [] -%}
    {%- for level in range(1, shape.depth) -%}
      {%- do columns.append(dim ~ '__level_' ~ level) -%}
    {%- endfor -%}
    {%- do columns.append(dim) -%}
    {%- do result.update({dim: {'columns': columns, 'root': shape.root, 'padded': not shape.balanced,
                               'paths': sdc.ckm_hierarchy_paths(hierarchy, dim, shape.depth)}}) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(result) }}
{% endmacro %}


{% macro ckm_hierarchy_shape(hierarchy, dim) %}
{%- set max_depth = 50 -%}
{#- none if the dimension has no rows in the hierarchy; else {'depth': L (the deepest leaf's), 'root': code,
    'balanced': whether every leaf lies at depth L} -#}
{%- if not execute -%}{{ return(none) }}{%- endif -%}
{%- set known = sdc.ckm_hierarchy_dimensions(hierarchy) -%}
{#- a dimension without rows needs no walk; only where every name came back as text (dbt's result tables read
    '1' as a number), else the query below looks for the rows itself -#}
{%- if dim not in known and known | reject('string') | list | length == 0 -%}{{ return(none) }}{%- endif -%}
{%- set walk_ctes -%}
with recursive nodes as (
    select cast(code as {{ sdc.text_type() }}) as code, nullif(cast(parent as {{ sdc.text_type() }}), '') as parent
    from {{ hierarchy }} where dimension = {{ sdc.sql_string(dim) }}
),
walk as (
    select code, 0 as depth from nodes where parent is null
    union all
    select nodes.code, walk.depth + 1 from nodes join walk on nodes.parent = walk.code where walk.depth < {{ max_depth }}
)
{%- endset -%}
{%- set query -%}
{{ walk_ctes }},
node_figures as (
    select
        count(*) as node_count,
        count(distinct code) as distinct_codes,
        {{ sdc.ckm_sorted_list('case when parent is null then code end') }} as roots,
        count(case when parent is null then 1 end) as root_count,
        count(case when parent = 'None' then 1 end) as none_parents,
        count(case when code = 'None' then 1 end) as none_codes
    from nodes
),
walk_figures as (
    -- one pass over the walk: an engine that inlines CTEs (Spark) runs the recursion once per reference
    select
        count(*) as reached,
        count(distinct case when parents.parent is null and walk.code is not null then walk.depth end) as leaf_depth_count,
        max(case when parents.parent is null and walk.code is not null then walk.depth end) as leaf_depth
    from walk
    left join (select distinct parent from nodes where parent is not null) as parents on walk.code = parents.parent
)
select
    node_figures.*,
    walk_figures.*,
    (select {{ sdc.ckm_sorted_list("code || ' (under ' || parents || ')'") }} from (
        select code, {{ sdc.ckm_sorted_list("coalesce(parent, 'no parent')") }} as parents
        from nodes group by code having count(*) > 1) as repeated) as repeated_codes
from node_figures cross join walk_figures
{%- endset -%}
{%- set row = sdc.run_check_query(query).rows[0] -%}
{%- if row['node_count'] == 0 -%}{{ return(none) }}{%- endif -%}
{%- set prefix = "hierarchy of dimension '" ~ dim ~ "': " -%}
{%- if row['distinct_codes'] != row['node_count'] -%}
  {%- set types = [] -%}
  {%- set numeric = [] -%}
  {%- for column in adapter.get_columns_in_relation(hierarchy) if column.name | lower in ['code', 'parent'] -%}
    {%- do types.append(column.name | lower ~ ' ' ~ column.dtype | lower) -%}
    {%- if 'char' not in column.dtype | lower and 'text' not in column.dtype | lower and 'string' not in column.dtype | lower -%}
      {%- do numeric.append(column.name) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ exceptions.raise_compiler_error(prefix ~ "codes appear more than once: " ~ row['repeated_codes']
      ~ (("; the hierarchy's columns are " ~ types | join(', ') ~ ", which drops leading zeros (01 becomes 1): hierarchy seeds need text columns, e.g. column_types: {dimension: varchar, code: varchar, parent: varchar} in the seed's config") if numeric else "")) }}
{%- endif -%}
{%- if row['root_count'] == 0 and row['none_parents'] > 0 and row['none_codes'] == 0 -%}
  {#- dbt-spark's own seed loader writes an empty cell as the text 'None' (macros/engine/spark__load_csv_rows.sql) -#}
  {{ exceptions.raise_compiler_error(prefix ~ "needs exactly one root (a code without parent); its top code has the parent text 'None', which is what dbt-spark's seeds load for an empty cell: dbt-spark seeds need the dispatch step of docs/quickstart/spark.md (dispatch: macro_namespace dbt, search_order [your project, 'sdc', 'dbt']), then dbt seed again") }}
{%- endif -%}
{%- if row['root_count'] != 1 -%}
  {{ exceptions.raise_compiler_error(prefix ~ "needs exactly one root (a code without parent), found: " ~ (row['roots'] or 'none')) }}
{%- endif -%}
{%- if row['reached'] != row['node_count'] -%}
  {#- only on this error: the codes the walk did not reach, and whether it stopped at its depth limit -#}
  {%- set lost = sdc.run_check_query(walk_ctes ~ "\nselect " ~ sdc.ckm_sorted_list("code || ' (under ' || coalesce(parent, 'no parent') || ')'")
        ~ " as codes, (select max(depth) from walk) as depth from nodes where code not in (select code from walk)").rows[0] -%}
  {%- set codes = lost['codes'] if lost['codes'] | length <= 300 else lost['codes'][:300] ~ ' ...' -%}
  {{ exceptions.raise_compiler_error(prefix ~ (row['node_count'] - row['reached']) ~ " code(s) are not below the root " ~ row['roots'] ~ " ("
      ~ ("the hierarchy is deeper than " ~ max_depth ~ " levels, or holds a cycle" if lost['depth'] | int >= max_depth else "unknown parent or a cycle")
      ~ "): " ~ codes) }}
{%- endif -%}
{{ return({'depth': row['leaf_depth'] | int, 'root': row['roots'], 'balanced': row['leaf_depth_count'] | int == 1}) }}
{% endmacro %}


{% macro ckm_hierarchy_paths(hierarchy, dim, depth) %}
{#- SQL: each leaf code with its ancestors level_1 (below the root) .. level_{depth-1}; a leaf at depth d < depth
    has NULL at the levels d .. depth-1. The walk goes up from the leaf (up_1 its parent, ..., up_d the root), and
    the ancestor at level k of a leaf at depth d is up_(d-k) -#}
{%- set text = sdc.text_type() -%}
{%- set dimension = sdc.sql_string(dim) -%}
select
    leaf
    {%- for level in range(1, depth) %},
    case
        {%- for d in range(depth, level, -1) %}
        when up_{{ d }} is not null then up_{{ d - level }}
        {%- endfor %}
    end as level_{{ level }}
    {%- endfor %}
from (
    select
        cast(a0.code as {{ text }}) as leaf
        {%- for k in range(1, depth + 1) %},
        cast(a{{ k }}.code as {{ text }}) as up_{{ k }}
        {%- endfor %}
    from {{ hierarchy }} as a0
    {%- for k in range(1, depth + 1) %}
    left join {{ hierarchy }} as a{{ k }}
        on a{{ k }}.dimension = {{ dimension }} and cast(a{{ k }}.code as {{ text }}) = cast(a{{ k - 1 }}.parent as {{ text }})
    {%- endfor %}
    where a0.dimension = {{ dimension }}
      and cast(a0.code as {{ text }}) not in (
          select cast(parent as {{ text }}) from {{ hierarchy }} where dimension = {{ dimension }} and parent is not null
      )
) as walked_up
{% endmacro %}


{% macro ckm_check_hierarchy_dimensions(dims, hierarchy) %}
{#- a hierarchy given for none of the dims, or for a dim spelt another way (State for state), is a mistake:
    the dimension would silently be flat, its levels missing and its total labelled Total -#}
{%- if hierarchy is none or not execute -%}{{ return(none) }}{%- endif -%}
{%- set known = sdc.ckm_hierarchy_dimensions(hierarchy) -%}
{%- for dim in dims if dim not in known -%}
  {%- for other in known if other | lower == dim | lower -%}
    {{ exceptions.raise_compiler_error("the hierarchy " ~ hierarchy ~ " has dimension '" ~ other ~ "', not '" ~ dim ~ "': spell the dimension the same way in both") }}
  {%- endfor -%}
{%- endfor -%}
{%- if dims | select('in', known) | list | length == 0 -%}
  {{ exceptions.raise_compiler_error("the hierarchy " ~ hierarchy ~ " has none of the dimensions " ~ (dims | join(', ')) ~ " (it has: " ~ (known | join(', ')) ~ "); leave hierarchy= out for flat dimensions") }}
{%- endif -%}
{% endmacro %}


{#- the dimensions a hierarchy has rows for; a dimension without rows is flat, and its shape needs no query (on
    Spark the shape's recursive walk is a job of seconds) -#}
{% macro ckm_hierarchy_dimensions(hierarchy) %}
{{ return(sdc.run_check_query('select distinct cast(dimension as ' ~ sdc.text_type() ~ ') from ' ~ hierarchy ~ ' order by 1').columns[0].values() | list) }}
{% endmacro %}
