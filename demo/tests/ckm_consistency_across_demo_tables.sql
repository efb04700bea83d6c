-- The same cell gets the same published count in every table (seed 002, Table 2: "tabellenübergreifende
-- Konsistenz"): on-leave students by Hochschulart in Table 2a, in the totals of Table 2b and at the
-- Hochschulart level of Table 9. Returns the cells that disagree (the column count quoted by the engine's rules).
{%- set count = sdc.sql_identifier('count') %}
with table_2a as (
    select hochschulart as cell, {{ count }} from {{ ref('beurlaubte_nach_hochschulart') }}
),
table_2b as (
    select hochschulart as cell, {{ count }} from {{ ref('beurlaubte_nach_hochschulart_geschlecht') }}
    where geschlecht = '{{ sdc.setting("sdc_total_label") }}'
),
table_9 as (
    select hochschule as cell, {{ count }} from {{ ref('beurlaubte_nach_hochschule') }}
    where hochschule in (select hochschulart from {{ ref('beurlaubte_nach_hochschulart') }})
)
select a.cell, a.{{ count }} as count_2a, b.{{ count }} as count_2b, c.{{ count }} as count_9
from table_2a as a
full join table_2b as b on a.cell = b.cell
full join table_9 as c on coalesce(a.cell, b.cell) = c.cell
where a.{{ count }} is distinct from b.{{ count }} or a.{{ count }} is distinct from c.{{ count }}
