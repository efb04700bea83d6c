{#- Private helpers of ckm_table_builder: the cube's totals and the checks its hook makes before it creates the function. -#}

{#- the code of each dimension's total (its hierarchy's root, else var sdc_total_label); the hook stops unless
    the relation is a cube over the dimensions with those totals (ckm_finest_cells with the same hierarchy) -#}
{% macro ckm_table_builder_roots(finest, cells, dims, hierarchy) %}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, 'cube') -%}
{%- set roots = {} -%}
{%- for dim in dims -%}{%- do roots.update({dim: levels[dim].root}) -%}{%- endfor -%}
{%- set columns = adapter.get_columns_in_relation(finest) | map(attribute='name') | list -%}
{%- for column in dims + ['count'] if column not in columns -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ cells ~ " has no column " ~ column ~ "; build it with sdc.ckm_finest_cells over the same dimensions") }}
{%- endfor -%}
{%- set query -%}
select count(*) from {{ cells }} where {% for dim in dims %}{{ sdc.sql_identifier(dim) }} = {{ sdc.sql_string(roots[dim]) }}{{ ' and ' if not loop.last }}{% endfor %}
{%- endset -%}
{%- if run_query(query).rows[0][0] != 1 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ cells ~ " has no grand total (" ~ (roots.values() | join(', ')) ~ "); build it with sdc.ckm_finest_cells over the same dimensions and hierarchy= as the builder") }}
{%- endif -%}
{{ return(roots) }}
{% endmacro %}

{#- red team 20: the hook stops when the cube was built from another load than the load log's last -#}
{% macro ckm_table_builder_check_loads(finest, record) %}
{%- set log = sdc.build_record_load_log() -%}
{%- set raw = sdc.setting('sdc_raw_schema') | lower -%}
{%- for table, loads in record['loads'].items() -%}
  {%- if loads != [log.get(table[raw | length + 1:])] -%}
    {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ finest ~ " was built from another load of " ~ table ~ " (" ~ (loads | join(', ')) ~ ") than its last (" ~ log.get(table[raw | length + 1:], 'none') ~ "); rebuild it") }}
  {%- endif -%}
{%- endfor -%}
{% endmacro %}

{#- red team R3-11: without a code list a dimension's codes in the cube are those of its records, so a code shown
    with every count 0 still says that a record has it; declared codes say nothing about records -#}
{% macro ckm_table_builder_check_declared(dims, hierarchy) %}
{%- set declared = [] if hierarchy is none else sdc.ckm_hierarchy_dimensions(hierarchy) -%}
{%- set undeclared = dims | reject('in', declared) | list -%}
{%- if undeclared -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: no code list (hierarchy=) declares the codes of " ~ undeclared | join(', ') ~ ": the cube's codes would be those of the records, so a code whose every cell is 0 would still say that a record has it. Give hierarchy= a relation (dimension, code, parent) with every dimension, a flat one as its total and its codes below it, and build the cube with the same") }}
{%- endif -%}
{% endmacro %}

{#- the cube's codes are those its code list declares: a cube built without hierarchy= (its codes from the
    records) or over another code list stops the hook, naming up to 5 codes that differ -#}
{% macro ckm_table_builder_check_codes(cells, dims, hierarchy) %}
{%- set text = sdc.text_type() -%}
{%- set query -%}
with in_cells as (
    {%- for dim in dims %}
    {{ 'union ' if not loop.first }}select {{ sdc.sql_string(dim) }} as dimension, cast({{ sdc.sql_identifier(dim) }} as {{ text }}) as code from {{ cells }}
    {%- endfor %}
),
declared as (
    select cast(dimension as {{ text }}) as dimension, cast(code as {{ text }}) as code from {{ hierarchy }}
    where cast(dimension as {{ text }}) in ({% for dim in dims %}{{ sdc.sql_string(dim) }}{{ ', ' if not loop.last }}{% endfor %})
)
select * from (
    select dimension, code, 'not declared' as found from (select * from in_cells except select * from declared) as extra
    union all
    select dimension, code, 'declared, not in the cells' from (select * from declared except select * from in_cells) as missing
) as differences
order by 1, 2
limit 5
{%- endset -%}
{%- set differences = run_query(query).rows -%}
{%- if differences | length > 0 -%}
  {%- set shown = [] -%}
  {%- for row in differences -%}{%- do shown.append(row[0] ~ ' ' ~ row[1] ~ ': ' ~ row[2]) -%}{%- endfor -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: the codes of " ~ cells ~ " are not those its code list declares (" ~ shown | join('; ') ~ "); build it with sdc.ckm_finest_cells(..., hierarchy=) the builder's code list") }}
{%- endif -%}
{% endmacro %}

{#- whether the function's owner (the dbt role) may give the function log_min_error_statement: a superuser, or on
    PostgreSQL 15 a role granted SET on that parameter -#}
{% macro ckm_table_builder_may_set_log_min_error_statement() %}
{%- set version = run_query("select cast(current_setting('server_version_num') as integer)").rows[0][0] -%}
{%- if version >= 150000 -%}
  {{ return(run_query("select has_parameter_privilege('log_min_error_statement', 'SET')").rows[0][0]) }}
{%- endif -%}
{{ return(run_query("select rolsuper from pg_catalog.pg_roles where rolname = current_user").rows[0][0]) }}
{% endmacro %}

{#- the cube against sdc's own recomputation of its ckm_finest_cells call (macros/_gate_verify.sql) -#}
{% macro ckm_table_builder_verify_cube(finest, record) %}
{%- set call = record.get('call') -%}
{%- if call is not mapping or (record.get('reads') or []) | length != 1 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ finest ~ " has a build record without the ckm_finest_cells call that sdc can compute again: run dbt build (with this sdc)") }}
{%- endif -%}
{%- set path = [finest | string] -%}
{%- set source = sdc.gate_named_relation(record['reads'][0], finest, 'microdata relation', 'ckm_table_builder', path) -%}
{%- set arguments = sdc.gate_call_arguments(call, finest, 'ckm_table_builder', path) -%}
{%- do sdc.gate_check_count_ptable(arguments.get('ptable'), finest, 'ckm_table_builder', path) -%}
{%- do sdc.gate_compare(finest, sdc.ckm_finest_cells(source, call['dims'], **arguments),
                        'ckm_finest_cells over ' ~ source ~ ' (recomputed from the microdata)', 'ckm_table_builder', path) -%}
{% endmacro %}
