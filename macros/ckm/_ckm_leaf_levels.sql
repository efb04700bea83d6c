{#
  Shared by ckm_count and suppression_cells: the leaf cells joined to the codes of their hierarchy
  levels, a check that every leaf value belongs to its hierarchy, and the label of a dimension in a
  grouping set (the code at the finest grouped level, or the root code).
#}
{% macro ckm_leaf_levels(source_cte, dims, levels) %}
    select
        {{ source_cte }}.*
        {%- for dim in dims if levels[dim].paths %}
        {%- set path = 'path_' ~ loop.index %},
        {{ path }}.leaf as {{ sdc.sql_identifier(dim ~ '__leaf') }}
        {%- for column in levels[dim].columns[:-1] %},
        {{ path }}.level_{{ loop.index }} as {{ sdc.sql_identifier(column) }}
        {%- endfor %}
        {%- endfor %}
    from {{ source_cte }}
    {%- for dim in dims if levels[dim].paths %}
    left join ({{ levels[dim].paths }}) as path_{{ loop.index }}
        on path_{{ loop.index }}.leaf = cast({{ source_cte }}.{{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }})
    {%- endfor %}
{% endmacro %}


{% macro ckm_check_leaves(source_cte, dims, levels, failures=[]) %}
    {#- every leaf value is a leaf of its hierarchy; a flat dimension has no NULL and no category that
        carries the code of its total (a category "Total" would publish two cells named Total); then the
        caller's own failures (condition, message): one CASE for all, the cheapest to plan -#}
    {%- set checks = [] -%}
    {%- for dim in dims -%}
    {%- set column = sdc.sql_identifier(dim) -%}
    {%- if levels[dim].paths -%}
      {%- do checks.append((sdc.sql_identifier(dim ~ '__leaf') ~ ' is null',
            "'value ' || coalesce(cast(" ~ column ~ " as " ~ sdc.text_type() ~ "), 'NULL') || ' of dimension " ~ sdc.sql_text(dim) ~ " is not a leaf of the hierarchy'")) -%}
    {%- else -%}
      {%- do checks.append((column ~ ' is null',
            "'dimension " ~ sdc.sql_text(dim) ~ " is NULL in some records: give missing values a code of their own'")) -%}
      {%- do checks.append(('cast(' ~ column ~ ' as ' ~ sdc.text_type() ~ ') = ' ~ sdc.sql_string(levels[dim].root),
            "'dimension " ~ sdc.sql_text(dim) ~ " has a category " ~ sdc.sql_text(levels[dim].root) ~ ", the code of its total: rename the category or set var sdc_total_label'")) -%}
    {%- endif -%}
    {%- endfor %}
    select * from {{ source_cte }}
    where {{ sdc.ckm_fail_if_any(checks + failures) }}
{% endmacro %}


{% macro ckm_dimension_labels(dims, levels) %}
    {%- for dim in dims %}
        case
            {%- for column in levels[dim].columns | reverse %}
            when grouping({{ sdc.sql_identifier(column) }}) = 0 then cast({{ sdc.sql_identifier(column) }} as {{ sdc.text_type() }})
            {%- endfor %}
            else {{ sdc.sql_string(levels[dim].root) }}
        end as {{ sdc.sql_identifier(dim) }},
    {%- endfor %}
{% endmacro %}


{#
  The cells of the table's frame at the finest level, for a complete table: every combination of the
  dimensions' codes (the leaves of a hierarchical dimension, with any value of the data that is none, which
  ckm_check_leaves refuses; the observed values of a flat one), each with its leaf cell's columns. A
  combination without records is an empty cell: zero_columns 0, null_columns NULL. The leaf cells are
  followed by every combination as an empty cell (a union, not a join: cheaper to plan and run), so a cell
  with records comes twice; the grouping sets that read this add the two, which changes no sum, minimum or
  maximum, and a hierarchical dimension is text in both parts, as the frame's codes are.
#}
{% macro ckm_complete_leaf_cells(source_cte, dims, levels, zero_columns, null_columns) %}
    select
        {%- for dim in dims %}
        {%- set column = sdc.sql_identifier(dim) %}
        {{ ('cast(' ~ column ~ ' as ' ~ sdc.text_type() ~ ') as ' ~ column) if levels[dim].paths else column }},
        {%- endfor %}
        {{ (zero_columns + null_columns) | join(', ') }}
    from {{ source_cte }}
    union all
    {%- set empty = [] %}
    {%- for column in zero_columns %}{% do empty.append('0 as ' ~ column) %}{% endfor %}
    {%- for column in null_columns %}{% do empty.append('null as ' ~ column) %}{% endfor %}
    select
        {%- for dim in dims %}
        codes_{{ loop.index }}.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {{ empty | join(', ') }}
    from
    {%- for dim in dims %}
    {%- set column = sdc.sql_identifier(dim) %}
        {% if not loop.first %}cross join {% endif -%}
        {%- if levels[dim].paths %}
        (select distinct cast({{ column }} as {{ sdc.text_type() }}) as {{ column }} from {{ source_cte }}
         union
         select leaf from ({{ levels[dim].paths }}) as leaves_{{ loop.index }}) as codes_{{ loop.index }}
        {%- else %}
        (select distinct {{ column }} from {{ source_cte }}) as codes_{{ loop.index }}
        {%- endif %}
    {%- endfor %}
{% endmacro %}
