{#
  build_record: which load of the loaded source tables a relation was built from, so that `sdc publish`
  can refuse a publication mixed from two loads (a build killed half-way leaves new tables next to old).

  The sdc macros that build relations (ckm_count, ckm_published, suppression_cells / _primary / _constraints /
  _published) add `post_hook: "{{ sdc.build_record() }}"` to the model that calls them; a post-hook runs inside
  the model's transaction, so the record is committed together with the relation. It is the relation's comment:

    {"sdc_build": {"invocation_id": "<dbt invocation>", "loads": {"raw.<table>": ["<loaded_at>", ...]}}}

  (dbt's persist_docs for relations writes a model's description over the comment after the hook: such a
  model has no record, and `sdc publish` refuses it.)
  A load is named by its `loaded_at` in the load log (<sdc_raw_schema>.<sdc_load_log>, written by `sdc load`).
  The loads of a relation are those of its parents, at the moment it is built:
    a source of the raw schema      the load the log shows for it
    a table with a record           the loads of its record (what that table was built from)
    a view, or a table without one  the loads of its own parents (a view reads them live; a table built by
                                    other code, e.g. a Python model, is looked through)
#}
{% macro build_record() %}
{%- if not execute -%}{{ return('') }}{%- endif -%}
{%- set loads = sdc.build_record_loads(model.depends_on.nodes, sdc.build_record_load_log()) -%}
{%- set record = {'sdc_build': {'invocation_id': invocation_id, 'loads': loads}} -%}
comment on {{ 'view' if config.get('materialized') == 'view' else 'table' }} {{ this }} is {{ sdc.sql_string(tojson(record)) }}
{%- endmacro %}


{# the load log as {table name (lower case): loaded_at}; empty when nothing was loaded by `sdc load` #}
{% macro build_record_load_log() %}
{%- set log = adapter.get_relation(database=target.database, schema=sdc.setting('sdc_raw_schema'),
                                   identifier=sdc.setting('sdc_load_log')) -%}
{%- set loads = {} -%}
{%- if log is not none -%}
  {%- for row in run_query('select table_name, cast(loaded_at as ' ~ sdc.text_type() ~ ') as loaded_at from ' ~ log).rows -%}
    {%- do loads.update({row['table_name'] | lower: row['loaded_at']}) -%}
  {%- endfor -%}
{%- endif -%}
{{ return(loads) }}
{% endmacro %}


{# the loads behind the nodes `parents` (unique ids): {"raw.<table>": [loaded_at, ...]} #}
{% macro build_record_loads(parents, load_log) %}
{%- set raw = sdc.setting('sdc_raw_schema') | lower -%}
{%- set loads = {} -%}
{%- for parent in parents -%}
  {%- set found = {} -%}
  {%- if parent in graph.sources -%}
    {%- set source = graph.sources[parent] -%}
    {%- set table = source.identifier | lower -%}
    {%- if source.schema | lower == raw and table in load_log -%}
      {%- do found.update({raw ~ '.' ~ table: [load_log[table]]}) -%}
    {%- endif -%}
  {%- elif parent in graph.nodes and graph.nodes[parent].resource_type in ['model', 'snapshot'] -%}
    {%- set node = graph.nodes[parent] -%}
    {%- set recorded = sdc.build_record_of(node) if node.config.materialized not in ['view', 'ephemeral'] else none -%}
    {%- do found.update(recorded if recorded is not none else sdc.build_record_loads(node.depends_on.nodes, load_log)) -%}
  {%- endif -%}
  {%- for table, ids in found.items() -%}
    {%- do loads.update({table: (loads.get(table, []) + ids) | unique | sort | list}) -%}
  {%- endfor -%}
{%- endfor -%}
{{ return(loads) }}
{% endmacro %}


{# the loads in the record of a built node's relation, or none when it has no record #}
{% macro build_record_of(node) %}
{%- set text = sdc.relation_comment(node.database, node.schema, node.alias or node.name) -%}
{%- set record = fromjson(text) if text and text.startswith('{"sdc_build"') else none -%}
{{ return(record['sdc_build']['loads'] if record else none) }}
{% endmacro %}


{# the comment of a table, or none #}
{% macro relation_comment(database, schema, name) %}
  {{ return(adapter.dispatch('relation_comment', 'sdc')(database, schema, name)) }}
{% endmacro %}
{% macro default__relation_comment(database, schema, name) %}
{%- set found = run_query(sdc.relation_comment_sql(database, schema, name)) -%}
{{ return(found.rows[0][0] if found.rows else none) }}
{% endmacro %}
{# Spark: the row Comment of describe table extended #}
{% macro spark__relation_comment(database, schema, name) %}
{%- set relation = adapter.get_relation(database=database, schema=schema, identifier=name) -%}
{%- if relation is none -%}{{ return(none) }}{%- endif -%}
{%- for row in run_query('describe table extended ' ~ relation).rows if row[0] == 'Comment' -%}
  {{ return(row[1]) }}
{%- endfor -%}
{{ return(none) }}
{% endmacro %}

{# a query of the comment of a table (one row, or none when there is no such table) #}
{% macro relation_comment_sql(database, schema, name) %}
  {{ return(adapter.dispatch('relation_comment_sql', 'sdc')(database, schema, name)) }}
{% endmacro %}
{% macro default__relation_comment_sql(database, schema, name) -%}
select comment from duckdb_tables() where database_name = {{ sdc.sql_string(database) }}
    and lower(schema_name) = lower({{ sdc.sql_string(schema) }}) and lower(table_name) = lower({{ sdc.sql_string(name) }})
{%- endmacro %}
{% macro postgres__relation_comment_sql(database, schema, name) -%}
select obj_description(c.oid, 'pg_class') from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
where lower(n.nspname) = lower({{ sdc.sql_string(schema) }}) and lower(c.relname) = lower({{ sdc.sql_string(name) }})
    and c.relkind in ('r', 'v', 'm', 'p')
{%- endmacro %}


{# called by the protection macros: the model that calls one records its build (build_record), and gets the
   engine's settings for the model's transaction (engine_model_settings) #}
{% macro build_record_hook() %}
{{- config(post_hook="{{ sdc.build_record() }}") -}}
{%- set settings = sdc.engine_model_settings() -%}
{%- if settings -%}{{- config(pre_hook=settings) -}}{%- endif -%}
{% endmacro %}
