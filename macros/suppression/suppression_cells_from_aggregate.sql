{#
  suppression_cells_from_aggregate: the cell table of suppression_cells, built from an aggregate table
  instead of microdata: one row per finest cell with its frequency, value and largest contributions.
  Every subtotal is formed here (freq, contributors and value are sums; a subtotal's top contributions
  are the largest among its cells' top contributions, which is exact when no contributor appears in two
  finest cells: with holdings spread over cells, build from microdata with suppression_cells instead).

  Arguments: relation, dims, freq='freq', value=none (none: the value is the frequency), top=[] (columns
  with the largest contributions of each cell, largest first; 0 or NULL where there are fewer),
  contributors=none (column with the number of contributors; default freq), hierarchy=none,
  totals='cube', top_n=3. A duplicate finest cell or a row that already is a total stops the build with
  a message naming the cell.
#}
{% macro suppression_cells_from_aggregate(relation, dims, freq='freq', value=none, top=[], contributors=none,
                                          hierarchy=none, totals='cube', top_n=3) %}
{%- set roles = {freq: 'freq column', value: 'value column', contributors: 'contributors column'} -%}
{%- for column in top %}{% do roles.update({column: 'top contribution column'}) %}{% endfor -%}
{%- do sdc.check_dimension_names(dims, sdc.setting('sdc_suppression_own_columns'), 'suppression_cells_from_aggregate',
      roles=roles, top_contributions=true) -%}
{{- sdc.build_record_hook() -}}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, totals) -%}
{%- set sets = sdc.ckm_grouping_sets(dims, levels, totals) -%}
{%- set q = sdc.sql_identifier -%}
{%- set partition = [] -%}
{%- for dim in dims %}{% do partition.append(q(dim)) %}{% endfor -%}
{%- set cell_name -%}
{% for dim in dims %}{{ sdc.sql_string(dim ~ '=') }} || coalesce(cast({{ q(dim) }} as {{ sdc.text_type() }}), 'NULL'){{ " || ', ' || " if not loop.last }}{% endfor %}
{%- endset %}

with aggregate as (
    select
        {%- for dim in dims %}
        cast({{ q(dim) }} as {{ sdc.text_type() }}) as {{ q(dim) }},
        {%- endfor %}
        cast({{ q(freq) }} as bigint) as freq,
        cast({{ q(contributors) if contributors is not none else q(freq) }} as bigint) as contributors,
        cast({{ q(value) if value is not none else q(freq) }} as {{ sdc.double_type() }}) as value
        {%- for column in top %},
        coalesce(cast({{ q(column) }} as {{ sdc.double_type() }}), 0) as sdc_top_{{ loop.index }}
        {%- endfor %}
    from {{ relation }}
),

checked_aggregate as (
    -- finest cells only, each once
    select * from aggregate
    where true
    {%- for dim in dims %}
      and {{ sdc.ckm_fail_if(q(dim) ~ ' = ' ~ sdc.sql_string(levels[dim].root),
                             "'row ' || " ~ cell_name ~ " || ' is a total; give the finest cells only (subtotals are formed from them)'") }}
    {%- endfor %}
    qualify {{ sdc.ckm_fail_if('count(*) over (partition by ' ~ partition | join(', ') ~ ') > 1',
                               "'duplicate cell ' || " ~ cell_name ~ " || ' in the aggregate table'") }}
),

leaf_levels as (
{{ sdc.ckm_leaf_levels('checked_aggregate', dims, levels) }}
),

checked_leaf_levels as (
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels) }}
),

cell_sums as (
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        cast(sum(freq) as bigint) as freq,
        cast(sum(contributors) as bigint) as contributors,
        sum(value) as value
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, levels=levels) }}
),

{%- if top %}

leaf_contributions as (
    -- each finest cell's top contributions as rows, with an id per contribution
    select *, {{ sdc.row_id() }} as sdc_contribution_id
    from (
        {%- for column in top %}
        select *, sdc_top_{{ loop.index }} as contribution from checked_leaf_levels where sdc_top_{{ loop.index }} > 0
        {{- ' union all' if not loop.last }}
        {%- endfor %}
    )
),

cell_contributions as (
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        max(contribution) as contribution
    from leaf_contributions
    {{ sdc.group_by_grouping_sets(sets, ['sdc_contribution_id'], levels=levels) }}
),

ranked as (
    select
        *,
        row_number() over (partition by {% for dim in dims %}{{ q(dim) }}{{ ', ' if not loop.last }}{% endfor %}
                           order by contribution desc) as contribution_rank
    from cell_contributions
),

cell_tops as (
    select
        {%- for dim in dims %}
        {{ q(dim) }},
        {%- endfor %}
        {%- for k in range(1, top_n + 1) %}
        max(case when contribution_rank = {{ k }} then contribution end) as top_{{ k }}{{ ',' if not loop.last }}
        {%- endfor %}
    from ranked
    group by all
),
{%- endif %}

cells as (
    select
        {%- for dim in dims %}
        s.{{ q(dim) }},
        {%- endfor %}
        s.freq,
        s.contributors,
        s.value
        {%- for k in range(1, top_n + 1) %},
        {{ 'coalesce(t.top_' ~ k ~ ', 0)' if top else '0' }} as top_{{ k }}
        {%- endfor %}
    from cell_sums as s
    {%- if top %}
    left join cell_tops as t
        on {% for dim in dims %}t.{{ q(dim) }} = s.{{ q(dim) }}{{ ' and ' if not loop.last }}{% endfor %}
    {%- endif %}
)

select * from cells
{% endmacro %}
