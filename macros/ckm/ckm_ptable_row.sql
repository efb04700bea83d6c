{#
  ckm_ptable_row: SQL for the ptable row of an original value n: least(n, max i), or, when reuse_from is
  given, rows reuse_from..max i in turn for counts above max i (ONS: 501..750, row ((n-1) mod 250) + 501).
  Python twin: sdc.ptable.table.ptable_row.
#}
{% macro ckm_ptable_row(n, max_i, reuse_from=none) -%}
{%- if reuse_from is none -%}
least({{ n }}, {{ max_i }})
{%- else -%}
case when {{ n }} <= {{ max_i }} then {{ n }}
     else {{ reuse_from }} + ({{ n }} - {{ reuse_from }}) % ({{ max_i }} - {{ reuse_from }} + 1) end
{%- endif -%}
{%- endmacro %}
