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
        on path_{{ loop.index }}.leaf = cast({{ source_cte }}.{{ sdc.sql_identifier(dim) }} as varchar)
    {%- endfor %}
{% endmacro %}


{% macro ckm_check_leaves(source_cte, dims, levels) %}
    {#- every leaf value is a leaf of its hierarchy; a flat dimension has no NULL and no category that
        carries the code of its total (a category "Total" would publish two cells named Total) -#}
    select * from {{ source_cte }}
    where true
    {%- for dim in dims %}
    {%- set column = sdc.sql_identifier(dim) %}
    {%- if levels[dim].paths %}
      and {{ sdc.ckm_fail_if(sdc.sql_identifier(dim ~ '__leaf') ~ ' is null',
            "'value ' || coalesce(cast(" ~ column ~ " as varchar), 'NULL') || ' of dimension " ~ sdc.sql_text(dim) ~ " is not a leaf of the hierarchy'") }}
    {%- else %}
      and {{ sdc.ckm_fail_if(column ~ ' is null',
            "'dimension " ~ sdc.sql_text(dim) ~ " is NULL in some records: give missing values a code of their own'") }}
      and {{ sdc.ckm_fail_if('cast(' ~ column ~ ' as varchar) = ' ~ sdc.sql_string(levels[dim].root),
            "'dimension " ~ sdc.sql_text(dim) ~ " has a category " ~ sdc.sql_text(levels[dim].root) ~ ", the code of its total: rename the category or set var sdc_total_label'") }}
    {%- endif %}
    {%- endfor %}
{% endmacro %}


{% macro ckm_dimension_labels(dims, levels) %}
    {%- for dim in dims %}
        case
            {%- for column in levels[dim].columns | reverse %}
            when grouping({{ sdc.sql_identifier(column) }}) = 0 then cast({{ sdc.sql_identifier(column) }} as varchar)
            {%- endfor %}
            else {{ sdc.sql_string(levels[dim].root) }}
        end as {{ sdc.sql_identifier(dim) }},
    {%- endfor %}
{% endmacro %}
