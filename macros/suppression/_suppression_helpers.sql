{#- Private helpers of the suppression macros: count cells, record cells, ranked contributions, a rule's range,
    the pattern's call. -#}

{#- A count table (no value, no holding): every record is a contributor of 1, so a cell's contributors are its
    records and its top_k is 1 from k records on. Aggregated to the finest cells first, as ckm_count: ranking
    every record of every cell cost 9.9 s and 3.5 GB at 2.2 million records (new-user trial D17;
    bench/suppression_cells_bench.py) -#}
{% macro suppression_count_cells(relation, dims, levels, sets, top_n) %}
with leaf_cells as (
    -- one pass over the microdata: the records of every finest cell
    select
        {%- for dim in dims %}
        m.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        count(*) as records
    from {{ relation }} as m
    group by {% for dim in dims %}m.{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
),

leaf_levels as (
{{ sdc.ckm_leaf_levels('leaf_cells', dims, levels) }}
),

checked_leaf_levels as (
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels) }}
),

cell_records as (
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        cast(sum(records) as bigint) as freq
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, levels=levels) }}
),

cells as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        freq,
        freq as contributors,
        cast(freq as {{ sdc.double_type() }}) as value
        {%- for k in range(1, top_n + 1) %},
        cast(case when freq >= {{ k }} then 1 else 0 end as {{ sdc.double_type() }}) as top_{{ k }}
        {%- endfor %}
    from cell_records
)

select * from cells
{% endmacro %}

{#- A magnitude table without holdings: every record is a contributor of its finest cell, and of each cell above
    it with the same contribution. So the top_n of a cell are among the top_n of its finest cells: the finest
    cells' sums roll up, and only their top_n records are copied into the cells above to be ranked, instead of
    every record into every cell (27 cells per record in three dimensions of three levels) -#}
{% macro suppression_record_cells(relation, dims, levels, sets, top_n, value_expr) %}
with records as (
    -- one pass over the microdata: each record ranked within its finest cell
    select
        {%- for dim in dims %}
        m.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {{ value_expr }} as contribution,
        row_number() over (partition by {% for dim in dims %}m.{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
                           order by {{ value_expr }} desc) as leaf_rank
    from {{ relation }} as m
),

leaf_cells as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        count(*) as records,
        sum(contribution) as contribution
    from records
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
),

leaf_levels as (
{{ sdc.ckm_leaf_levels('leaf_cells', dims, levels) }}
),

checked_leaf_levels as (
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels) }}
),

cell_sums as (
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        cast(sum(records) as bigint) as freq,
        sum(contribution) as value
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, levels=levels) }}
),

leaf_top as (
    -- the top_n records of each finest cell, each with an id of its own
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        contribution,
        {{ sdc.row_id() }} as sdc_contributor
    from records
    where leaf_rank <= {{ top_n }}
),

top_levels as (
{{ sdc.ckm_leaf_levels('leaf_top', dims, levels) }}
),

top_contributions as (
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        sdc_contributor,
        sum(contribution) as contribution
    from top_levels
    {{ sdc.group_by_grouping_sets(sets, ['sdc_contributor'], levels=levels) }}
),

ranked as (
{{ sdc.suppression_ranked('top_contributions', dims) }}
),

cell_tops as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {{- sdc.suppression_top_columns(top_n) }}
    from ranked
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
),

cells as (
    select
        {%- for dim in dims %}
        s.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        s.freq,
        s.freq as contributors,
        s.value
        {%- for k in range(1, top_n + 1) %},
        t.top_{{ k }}
        {%- endfor %}
    from cell_sums as s
    join cell_tops as t
        on {% for dim in dims %}s.{{ sdc.sql_identifier(dim) }} = t.{{ sdc.sql_identifier(dim) }}{{ ' and ' if not loop.last }}{% endfor %}
)

select * from cells
{% endmacro %}


{#- Each contributor's rank in its cell, the largest first (ties by contributor, so that reruns agree) -#}
{% macro suppression_ranked(source_cte, dims) %}
    select
        *,
        row_number() over (partition by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
                           order by contribution desc, sdc_contributor) as contribution_rank
    from {{ source_cte }}
{% endmacro %}


{#- top_1..top_n of a cell from its ranked contributions (0 where it has fewer contributors) -#}
{% macro suppression_top_columns(top_n) %}
        {%- for k in range(1, top_n + 1) %}
        coalesce(max(case when contribution_rank = {{ k }} then contribution end), 0) as top_{{ k }}{{ ',' if not loop.last }}
        {%- endfor %}
{% endmacro %}


{% macro suppression_rule_range(name, numbers) %}
{#- what is wrong with a rule's parameters (empty when nothing): a rule that can never fire, or whose
    formula divides by zero, would pass every cell or stop the build with an engine error -#}
{%- set x = numbers | map('float') | list if name != 'manual' else [] -%}
{%- if name in ('freq', 'holdings') and x | length == 1 and (x[0] < 1 or x[0] != x[0] | int) -%}
  {{ return("the threshold must be a whole number of at least 1") }}
{%- elif name == 'nk' and x | length == 2 and (x[0] < 1 or x[0] != x[0] | int) -%}
  {{ return("n (the number of largest contributions) must be a whole number of at least 1") }}
{%- elif name == 'nk' and x | length == 2 and not (0 < x[1] <= 100) -%}
  {{ return("k must be a percentage above 0 and at most 100") }}
{%- elif name == 'p' and x | length == 1 and not (x[0] > 0) -%}
  {{ return("p must be a percentage above 0") }}
{%- elif name == 'pq' and x | length == 2 and not (x[0] > 0 and x[1] > 0) -%}
  {{ return("p and q must both be above 0") }}
{%- elif name == 'range' and x | length == 1 and not (x[0] > 0) -%}
  {{ return("the width must be above 0") }}
{%- elif name == 'manual' and numbers | length == 1 and not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*$', numbers[0]) -%}
  {{ return("the column must be a plain name (letters, digits, underscore)") }}
{%- endif -%}
{{ return("") }}
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
