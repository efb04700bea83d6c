{#
  suppression_constraints: the additivity constraints of a suppression_cells table, as a long table
  (constraint_id, dimension, <dims...>, coefficient): along every dimension, every parent cell equals
  the sum of its children, for every combination of the other dimensions' codes.
  The parent has coefficient 1, each child -1, so sum(coefficient * value) = 0 holds for every
  constraint. Parent-child pairs come from the hierarchy for hierarchical dimensions, and are
  (total, code) for flat ones.
#}
{% macro suppression_constraints(cells, dims, hierarchy=none) %}
{{- sdc.build_record_hook() -}}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, 'cube') -%}
{%- set q = sdc.sql_identifier -%}

with
{%- for dim in dims %}
edges_{{ loop.index }} as (
    {%- if levels[dim].paths %}
    select cast(parent as {{ sdc.text_type() }}) as parent, cast(code as {{ sdc.text_type() }}) as child
    from {{ hierarchy }} where dimension = {{ sdc.sql_string(dim) }} and parent is not null and cast(parent as {{ sdc.text_type() }}) <> ''
    {%- else %}
    select distinct {{ sdc.sql_string(levels[dim].root) }} as parent, {{ q(dim) }} as child
    from {{ cells }} where {{ q(dim) }} <> {{ sdc.sql_string(levels[dim].root) }}
    {%- endif %}
),

members_{{ loop.index }} as (
    -- each parent with its children and itself (coefficient 1)
    select parent, child as member from edges_{{ loop.index }}
    union
    select parent, parent as member from edges_{{ loop.index }}
),

constraints_{{ loop.index }} as (
    {%- set others = dims | reject('equalto', dim) | list %}
    select
        {{ sdc.sql_string(dim ~ ':') }} || p.{{ q(dim) }}{% for other in others %} || '|' || p.{{ q(other) }}{% endfor %} as constraint_id,
        {{ sdc.sql_string(dim) }} as dimension,
        {%- for d in dims %}
        member.{{ q(d) }},
        {%- endfor %}
        case when member.{{ q(dim) }} = p.{{ q(dim) }} then 1 else -1 end as coefficient
    from {{ cells }} as p
    join members_{{ loop.index }} as m on m.parent = p.{{ q(dim) }}
    join {{ cells }} as member
        on member.{{ q(dim) }} = m.member
        {%- for other in others %}
        and member.{{ q(other) }} = p.{{ q(other) }}
        {%- endfor %}
),
{%- endfor %}

all_constraints as (
    {%- for dim in dims %}
    select * from constraints_{{ loop.index }}{{ ' union all' if not loop.last }}
    {%- endfor %}
)

select * from all_constraints
{% endmacro %}
