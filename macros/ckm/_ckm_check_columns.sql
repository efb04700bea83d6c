{#
  ckm_check_columns(relation, dims, fact, caller_name, others={}): stops the build, naming the column, when a
  dimension, the fact or another column the macro reads (others: name -> role, e.g. the weight) is not in
  `relation`, instead of the engine's binder error (new-user trial D13). A fact f is counted with its key column
  rk_f (`sdc load --config` writes both): a fact whose key column is missing is named with the loaded facts.
#}
{% macro ckm_check_columns(relation, dims, fact, caller_name, others={}) %}
{%- if not execute or relation is string or (model is defined and model.resource_type == 'unit_test') -%}{{ return(none) }}{%- endif -%}
{%- set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
{#- a relation dbt cannot describe (an ephemeral CTE): the engine names a missing column -#}
{%- if names | length == 0 -%}{{ return(none) }}{%- endif -%}
{%- set lower = names | map('lower') | list -%}
{%- set shown = names[:30] | join(', ') ~ (', ...' if names | length > 30 else '') -%}
{%- for dim in dims if dim | lower not in lower -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": dimension '" ~ dim ~ "' is not a column of " ~ relation ~ " (its columns: " ~ shown ~ ")") }}
{%- endfor -%}
{%- for name, role in others.items() if name is not none and name | lower not in lower -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ role ~ " '" ~ name ~ "' is not a column of " ~ relation ~ " (its columns: " ~ shown ~ ")") }}
{%- endfor -%}
{%- if fact is not none -%}
  {%- set prefix = sdc.setting('sdc_key_fact_prefix') -%}
  {%- set loaded = [] -%}
  {%- for name in names if (prefix ~ name) | lower in lower -%}{%- do loaded.append(name) -%}{%- endfor -%}
  {%- if fact | lower not in lower or (prefix ~ fact) | lower not in lower -%}
    {{ exceptions.raise_compiler_error(caller_name ~ ": fact '" ~ fact ~ "' is not a loaded fact of " ~ relation
        ~ " (a fact is a 0/1 column with its key column " ~ prefix ~ fact ~ ", as sdc load --config writes them; "
        ~ (("the loaded facts: " ~ loaded | join(', ')) if loaded else "it has none") ~ ")") }}
  {%- endif -%}
{%- endif -%}
{% endmacro %}
