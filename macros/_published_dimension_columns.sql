{#
  published_dimension_columns(cells, dims, hierarchy=none, total_label=none): CTEs that give, beside every column
  of `cells` (a relation or an earlier CTE), per dimension d the columns a BI tool filters and sorts on instead of
  summing leaves, subtotals and totals together (names: d + var sdc_dimension_column_suffixes, as
  python/sdc/conventions.py DIMENSION_COLUMN_SUFFIXES):

    d__level     0 for the dimension's total (a hierarchy's root code, else total_label), 1 for the codes directly
                 under it, 2 for the codes under those, ...
    d__is_total  true for a code with codes under it: the total or a subtotal
    d__parent    the code directly above; NULL for the total
    d__sort      an integer to sort by: a hierarchy's pre-order (the total 0, then each code followed by the codes
                 under it, the codes under one code in the order of their codes, or of the hierarchy's column
                 `sort` where it has one: a statistical classification's own order, new user D9); a flat
                 dimension: the total 0, the other codes 1, 2, ... in the order of their codes

  A dimension with rows in `hierarchy` (dimension, code, parent) takes them from there, any other is flat (its
  codes are those of `cells`; total_label, default var sdc_total_label, is its total). The last CTE is
  dimension_columns; ckm_published and suppression_published end with it, and sdc publish / grant_published
  compute it again over their own recomputation of the cells and compare every column.
#}
{% macro published_dimension_columns(cells, dims, hierarchy=none, total_label=none) %}
{%- set suffixes = sdc.setting('sdc_dimension_column_suffixes') -%}
{%- set total_label = total_label if total_label is not none else sdc.setting('sdc_total_label') -%}
{%- set q = sdc.sql_identifier -%}
{%- set ordered = hierarchy is not none and execute and 'sort' in (adapter.get_columns_in_relation(hierarchy) | map(attribute='name') | map('lower') | list) -%}
{%- for dim in dims %}
dimension_nodes_{{ loop.index }} as (
    {%- set shape = sdc.ckm_hierarchy_shape(hierarchy, dim) if hierarchy is not none else none %}
    -- the codes of dimension {{ loop.index }} with their level, parent and place in the sort order
{{ sdc.flat_dimension_nodes(cells, dim, total_label) if shape is none else sdc.hierarchy_dimension_nodes(hierarchy, dim, shape, ordered) }}
),
{%- endfor %}

dimension_columns as (
    select
        {{ cells }}.*
        {%- for dim in dims %},
        n{{ loop.index }}.level as {{ q(dim ~ suffixes['level']) }},
        n{{ loop.index }}.is_total as {{ q(dim ~ suffixes['is_total']) }},
        n{{ loop.index }}.parent as {{ q(dim ~ suffixes['parent']) }},
        n{{ loop.index }}.sort as {{ q(dim ~ suffixes['sort']) }}
        {%- endfor %}
    from {{ cells }}
    {%- for dim in dims %}
    left join dimension_nodes_{{ loop.index }} as n{{ loop.index }}
        on cast({{ cells }}.{{ q(dim) }} as {{ sdc.text_type() }}) = n{{ loop.index }}.code
    {%- endfor %}
)
{%- endmacro %}


{#- a flat dimension: its total at level 0, every other code of `cells` at level 1 under it -#}
{% macro flat_dimension_nodes(cells, dim, total_label) %}
{%- set text = sdc.text_type() -%}
{%- set codes = '(select distinct cast(' ~ sdc.sql_identifier(dim) ~ ' as ' ~ text ~ ') as code from ' ~ cells ~ ') as codes' -%}
    select code, cast(null as {{ text }}) as parent, cast(0 as integer) as level, true as is_total, cast(0 as integer) as sort
    from {{ codes }}
    where code = {{ sdc.sql_string(total_label) }}
    union all
    select code, cast({{ sdc.sql_string(total_label) }} as {{ text }}) as parent, cast(1 as integer) as level, false as is_total,
        cast(row_number() over (order by code) as integer) as sort
    from {{ codes }}
    where code <> {{ sdc.sql_string(total_label) }}
{%- endmacro %}


{#- a hierarchy (shape: ckm_hierarchy_shape, its deepest leaves at depth shape.depth): each code with the codes on its
    path from the root (path_1 directly under the root .. path_<depth>), which sort it in pre-order. A branch of the
    union names each column of the hierarchy once (its ancestors above it, the code itself at its own level in the
    sort): Spark's optimizer (RemoveRedundantAliases) breaks a union whose branch selects one column twice -#}
{% macro hierarchy_dimension_nodes(hierarchy, dim, shape, ordered=false) %}
{%- set text = sdc.text_type() -%}
{%- set number = sdc.double_type() -%}
{%- set depth = shape.depth -%}
{%- set dimension = sdc.sql_string(dim) -%}
    select code, parent, level, is_total,
        cast(row_number() over (order by {% for k in range(1, depth + 1) %}{% if ordered %}case when level = {{ k }} then own_order else order_{{ k }} end nulls first, {% endif %}case when level = {{ k }} then code else path_{{ k }} end nulls first{{ ', ' if not loop.last }}{% endfor %}) - 1 as integer) as sort
    from (
        select cast({{ sdc.sql_string(shape.root) }} as {{ text }}) as code, cast(null as {{ text }}) as parent,
            cast(0 as integer) as level, true as is_total
            {%- for k in range(1, depth + 1) %}, cast(null as {{ text }}) as path_{{ k }}{% endfor %}
            {%- if ordered %}, cast(null as {{ number }}) as own_order{% for k in range(1, depth + 1) %}, cast(null as {{ number }}) as order_{{ k }}{% endfor %}{% endif %}
        {%- for level in range(1, depth + 1) %}
        union all
        select cast(h{{ level }}.code as {{ text }}), cast(h{{ level }}.parent as {{ text }}), cast({{ level }} as integer),
            {{ 'kids.parent is not null' if level < depth else 'false' }}
            {%- for k in range(1, depth + 1) %}, {{ 'cast(h' ~ k ~ '.code as ' ~ text ~ ')' if k < level else 'cast(null as ' ~ text ~ ')' }}{% endfor %}
            {%- if ordered %}, cast(h{{ level }}.{{ sdc.sql_identifier('sort') }} as {{ number }}){% for k in range(1, depth + 1) %}, {{ 'cast(h' ~ k ~ '.' ~ sdc.sql_identifier('sort') ~ ' as ' ~ number ~ ')' if k < level else 'cast(null as ' ~ number ~ ')' }}{% endfor %}{% endif %}
        from {{ hierarchy }} as h{{ level }}
        {%- if level < depth %}
        left join (select distinct cast(parent as {{ text }}) as parent from {{ hierarchy }} where dimension = {{ dimension }}) as kids
            on kids.parent = cast(h{{ level }}.code as {{ text }})
        {%- endif %}
        {%- for k in range(level - 1, 0, -1) %}
        join {{ hierarchy }} as h{{ k }}
            on h{{ k }}.dimension = {{ dimension }} and cast(h{{ k }}.code as {{ text }}) = cast(h{{ k + 1 }}.parent as {{ text }})
        {%- endfor %}
        where h{{ level }}.dimension = {{ dimension }} and cast(h1.parent as {{ text }}) = {{ sdc.sql_string(shape.root) }}
        {%- endfor %}
    ) as paths
{%- endmacro %}


{#- recorded_relation(item, macro_name): the relation a build record names ({database, schema, name}), or none -#}
{% macro recorded_relation(item, macro_name) %}
{%- if item is none or not execute -%}{{ return(none) }}{%- endif -%}
{%- set found = adapter.get_relation(database=item.get('database'), schema=item.get('schema'), identifier=item.get('name')) if item is mapping else none -%}
{%- if found is none -%}
  {{ exceptions.raise_compiler_error(macro_name ~ ": the relation " ~ item ~ " that a build record names is not in the database: run dbt build") }}
{%- endif -%}
{{ return(found) }}
{% endmacro %}
