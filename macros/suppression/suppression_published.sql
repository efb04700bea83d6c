{#
  suppression_published: the columns of a suppression pattern that may be published: the dimension
  codes, the value of every published cell (NULL where suppressed) and published_text (the value, or
  the mark / interval of a suppressed cell). Status, rule, protection levels and the true values of
  suppressed cells stay in the audit schema.
#}
{% macro suppression_published(pattern, dims, value='value') %}
{{- sdc.build_record_hook() -}}
{%- set step_sql -%}
select
    {%- for dim in dims %}
    {{ sdc.sql_identifier(dim) }},
    {%- endfor %}
    case when status in ('published', 'empty') then {{ sdc.sql_identifier(value) }} end as {{ sdc.sql_identifier(value) }},
    published_text
from {{ pattern }}
{%- endset -%}
{{ sdc.step('suppression_published', [pattern], step_sql, {'call': {'dims': dims, 'value': value}}) }}
{% endmacro %}
