{#- Private helper of ckm_count (and of sdc publish's recomputation of its calls). -#}

{#- ckm_count_counted(fact): what a cell of ckm_count counts, {'original': its count, SQL over the grouped records;
    'key_column': the column whose record keys it sums}; sdc publish sums the cells of several calls with them -#}
{% macro ckm_count_counted(fact) %}
{{ return({'original': 'count(*)' if fact is none else 'sum(' ~ sdc.sql_identifier(fact) ~ ')',
           'key_column': sdc.setting('sdc_record_key_column') if fact is none else sdc.setting('sdc_key_fact_prefix') ~ fact}) }}
{% endmacro %}
