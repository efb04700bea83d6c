{#
  ckm_mean: means of a protected magnitude table, as the perturbed sum over the perturbed count of the same
  cell (both published, so the mean reveals nothing beyond them). The numerator is a measure of a published
  ckm_sum relation (value; weighted_value for a weighted mean), the denominator a measure of a published
  ckm_count relation over the same dimensions (count; weighted_count for a weighted mean). A cell whose
  denominator is 0, NULL or missing (an empty cell, a false zero, a count below the threshold) has no mean.

  cellKey's numtab(mean_before_sum = TRUE) publishes pws * (pws / ws) instead, which needs the original
  weighted sum ws and gives it away with pws: sdc does not offer it.

    sums, counts   the two relations (published: dimensions and measures)
    dims           their common dimensions
    numerator      value (default) or weighted_value
    denominator    count (default) or weighted_count
  Output: the dimensions, mean_<numerator>, and the columns published tables add per dimension (d__level,
  d__is_total, d__parent, d__sort: macros/_published_dimension_columns.sql) as the sums have them.
#}
{% macro ckm_mean(sums, counts, dims, numerator='value', denominator='count') %}
{{- sdc.build_record_hook() -}}
{%- set step_sql -%}
{%- if numerator not in ['value', 'weighted_value'] -%}
  {{ exceptions.raise_compiler_error("ckm_mean: numerator must be value or weighted_value, got '" ~ numerator ~ "'") }}
{%- endif -%}
{%- if denominator not in ['count', 'weighted_count'] -%}
  {{ exceptions.raise_compiler_error("ckm_mean: denominator must be count or weighted_count, got '" ~ denominator ~ "'") }}
{%- endif -%}
{%- if dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_mean: dims must be a non-empty list of column names") }}
{%- endif -%}
{%- set dimension_columns = [] -%}
{%- if execute -%}
  {%- for column in adapter.get_columns_in_relation(sums) if sdc.dimension_column(column.name) -%}
    {%- do dimension_columns.append(column.name) -%}
  {%- endfor -%}
  {%- for relation, measures in [(sums, ['value', 'weighted_value']), (counts, ['count', 'count_reason', 'weighted_count'])] -%}
    {%- set others = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower not in measures and not sdc.dimension_column(column.name) -%}
      {%- do others.append(column.name | lower) -%}
    {%- endfor -%}
    {%- if others | sort != dims | map('lower') | list | sort -%}
      {{ exceptions.raise_compiler_error("ckm_mean: dims " ~ (dims | join(', ')) ~ " are not the dimensions of " ~ relation ~ " (its columns besides the measures: " ~ (others | join(', ') or 'none') ~ "): the sums and the counts must be tables of the same cells, published (ckm_published)") }}
    {%- endif -%}
  {%- endfor -%}
{%- endif %}
with means as (
    select
        {%- for dim in dims %}
        s.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        cast(s.{{ sdc.sql_identifier(numerator) }} as {{ sdc.double_type() }})
            / nullif(cast(c.{{ sdc.sql_identifier(denominator) }} as {{ sdc.double_type() }}), 0) as {{ sdc.sql_identifier('mean_' ~ numerator) }}
        {%- for column in dimension_columns %},
        s.{{ sdc.sql_identifier(column) }}
        {%- endfor %}
    from {{ sums }} as s
    left join {{ counts }} as c
        on {% for dim in dims %}cast(s.{{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}) = cast(c.{{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}){{ '\n        and ' if not loop.last }}{% endfor %}
)

select * from means
{%- endset -%}
{{ sdc.step('ckm_mean', [sums, counts], step_sql, {'call': {'dims': dims, 'numerator': numerator, 'denominator': denominator}}) }}
{% endmacro %}
