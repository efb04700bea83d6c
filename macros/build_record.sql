{#
  build_record: which load of the loaded source tables a relation was built from, so that `sdc publish`
  can refuse a publication mixed from two loads (a build killed half-way leaves new tables next to old).

  The sdc macros that build relations (ckm_count, ckm_published, suppression_cells / _primary / _constraints /
  _published) add `post_hook: "{{ sdc.build_record() }}"` to the model that calls them; a post-hook runs inside
  the model's transaction, so the record is committed together with the relation. It is the relation's comment:

    {"sdc_build": {"invocation_id": "<dbt invocation>", "loads": {"raw.<table>": ["<loaded_at>", ...]},
                   "sql_md5": "<md5 of the model's compiled SQL>",
                   "step": "ckm_count", "reads": [{"database": ..., "schema": ..., "name": ...}],
                   "ptables": {"count": "<md5 of the ptable's rows>"},
                   "hierarchy": {...}}}    (a publishing step: the hierarchy of its dimension columns)

  step, reads and ptables only when the model's whole SQL is one sdc step (macro step below): a model of
  one's own with this hook gets no step, so the record alone never makes a relation publishable.

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
{%- set record = {'sdc_build': {'invocation_id': invocation_id, 'loads': loads, 'sql_md5': local_md5(model.compiled_code or '')}} -%}
{%- set header = sdc.step_of_sql(model.compiled_code) -%}
{%- if header is not none -%}
  {%- set ptables = {} -%}
  {%- for kind, found in (header.get('ptables') or {}).items() -%}
    {%- set relation = adapter.get_relation(database=found['database'], schema=found['schema'], identifier=found['name']) -%}
    {%- do ptables.update({kind: sdc.relation_content_md5(relation) if relation is not none else none}) -%}
  {%- endfor -%}
  {%- do record['sdc_build'].update({'step': header['step'], 'reads': header['reads'], 'ptables': ptables}) -%}
  {%- if header.get('call') is not none -%}{%- do record['sdc_build'].update({'call': header['call']}) -%}{%- endif -%}
  {#- the hierarchy a publishing step reads for its dimension columns (d__level, ...) only -#}
  {%- if header.get('hierarchy') is not none -%}{%- do record['sdc_build'].update({'hierarchy': header['hierarchy']}) -%}{%- endif -%}
  {#- the loads of what the step reads, also where dbt does not know it (a pattern sdc suppress --target wrote) -#}
  {%- for item in header['reads'] if item['schema'] is not none -%}
    {%- set read = sdc.build_record_of_relation(item['database'] or target.database, item['schema'], item['name']) -%}
    {%- for table, at in ((read or {}).get('loads') or {}).items() -%}
      {%- do loads.update({table: (loads.get(table, []) + at) | unique | sort | list}) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- if header.get('params') is not none -%}
    {%- do record['sdc_build'].update({'params_md5': local_md5(tojson(header['params']))}) -%}
  {%- endif -%}
{%- endif -%}
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
{%- set record = sdc.build_record_of_relation(node.database, node.schema, node.alias or node.name) -%}
{{ return(record['loads'] if record else none) }}
{% endmacro %}


{# the build record (the object under sdc_build) of a relation, or none when it has none #}
{% macro build_record_of_relation(database, schema, name) %}
{%- set text = sdc.relation_comment(database, schema, name) -%}
{%- set record = fromjson(text) if text and text.startswith('{"sdc_build"') else none -%}
{{ return(record['sdc_build'] if record else none) }}
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
union all
select comment from duckdb_views() where database_name = {{ sdc.sql_string(database) }}
    and lower(schema_name) = lower({{ sdc.sql_string(schema) }}) and lower(view_name) = lower({{ sdc.sql_string(name) }})
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


{#
  step(name, reads, sql, details): the SQL of one sdc step between two markers that build_record reads back
  from the model's compiled SQL:

    /* sdc-step {"step": "<name>", "reads": [{"database": ..., "schema": ..., "name": ...}], ...details} */
    <sql>
    /* sdc-step-end <md5 of sql> */

  A model whose whole compiled SQL (outside SQL comments and white space) is one such block was built by that
  step and nothing else: build_record writes the step and what it reads into the relation's build record,
  where `sdc publish` and grant_published look for it. The md5 ties the end marker to its own block, so
  `<step A> union all <step B>` or a step inside a query of one's own is no step. (python/sdc/conventions.py
  STEP_MARKER / STEP_END_MARKER hold the same texts.) Names are JSON with every * escaped, so no name ends the
  comment early.
#}
{% macro step(name, reads, sql, details=none) %}
{%- set header = {'step': name, 'reads': sdc.step_relations(reads)} -%}
{%- do header.update(details or {}) -%}
{{- '/* sdc-step ' ~ (tojson(header) | replace('*', '\\u002a')) ~ ' */\n' ~ sql ~ '\n/* sdc-step-end ' ~ local_md5(sql) ~ ' */' -}}
{% endmacro %}


{# a step's arguments for its header: relations as {database, schema, name}, the rules of the names that the
   macros use (labels, key columns) beside them under 'settings' #}
{% macro step_call(arguments) %}
{%- set found = {} -%}
{%- for name, value in arguments.items() -%}
  {%- if value is not none and value is not string and value.identifier is defined and value.identifier is not none -%}
    {%- do found.update({name: sdc.step_relations([value])[0]}) -%}
  {%- else -%}
    {%- do found.update({name: value}) -%}
  {%- endif -%}
{%- endfor -%}
{%- set settings = {} -%}
{%- for name in ['sdc_total_label', 'sdc_record_key_column', 'sdc_key_fact_prefix', 'sdc_interval_decimals'] -%}
  {%- do settings.update({name: sdc.setting(name)}) -%}
{%- endfor -%}
{%- do found.update({'settings': settings}) -%}
{{ return(found) }}
{% endmacro %}


{# relations as {database, schema, name} #}
{% macro step_relations(relations) %}
{%- set found = [] -%}
{%- for relation in relations if relation is not none -%}
  {%- if relation.identifier is defined and relation.identifier is not none -%}
    {%- do found.append({'database': relation.database, 'schema': relation.schema, 'name': relation.identifier}) -%}
  {%- else -%}{# a name given as text ('schema.table'): its parts, without the quotes of quoted parts #}
    {%- set parts = [] -%}
    {%- for part in (relation | string).split('.') -%}{%- do parts.append(part.strip().strip('"')) -%}{%- endfor -%}
    {%- do found.append({'database': parts[-3] if parts | length > 2 else none,
                         'schema': parts[-2] if parts | length > 1 else none, 'name': parts[-1]}) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(found) }}
{% endmacro %}


{# the header of the one step that is the whole SQL `code`, or none (SQL of one's own, two steps, none) #}
{% macro step_of_sql(code) %}
{%- set outside = '(?:\\s|--[^\\n]*|/\\*(?!\\s*sdc-step)(?:(?!\\*/).)*\\*/)*' -%}
{%- set found = modules.re.fullmatch(outside ~ '/\\* sdc-step (\\{.*?\\}) \\*/\\n(.*)\\n/\\* sdc-step-end ([0-9a-f]{32}) \\*/' ~ outside,
                                     code or '', modules.re.DOTALL) -%}
{%- if found is none or local_md5(found.group(2)) != found.group(3) -%}{{ return(none) }}{%- endif -%}
{{ return(fromjson(found.group(1))) }}
{% endmacro %}


{# md5 of a relation's rows (each row's columns as text, sorted): which ptable a CKM table was built with #}
{% macro relation_content_md5(relation) %}
{%- set columns = [] -%}
{%- for column in adapter.get_columns_in_relation(relation) -%}
  {%- do columns.append("coalesce(cast(" ~ sdc.sql_identifier(column.name) ~ " as " ~ sdc.text_type() ~ "), '')") -%}
{%- endfor -%}
{%- set row_text = "concat_ws(',', " ~ columns | join(', ') ~ ")" -%}
{%- set found = run_query(adapter.dispatch('relation_content_md5_sql', 'sdc')(relation, row_text)) -%}
{{ return(found.rows[0][0] if found.rows else none) }}
{% endmacro %}
{% macro default__relation_content_md5_sql(relation, row_text) -%}
select md5(coalesce(string_agg({{ row_text }}, ';' order by {{ row_text }}), '')) from {{ relation }}
{%- endmacro %}
{% macro spark__relation_content_md5_sql(relation, row_text) -%}
select md5(concat_ws(';', sort_array(collect_list({{ row_text }})))) from {{ relation }}
{%- endmacro %}


{# the ptables of a CKM step by kind, for its build record (content md5 there) #}
{% macro step_ptables(count_ptable, nums_ptable) %}
{%- set found = {} -%}
{%- if count_ptable is not none -%}{%- do found.update({'count': sdc.step_relations([count_ptable])[0]}) -%}{%- endif -%}
{%- if nums_ptable is not none -%}{%- do found.update({'nums': sdc.step_relations([nums_ptable])[0]}) -%}{%- endif -%}
{{ return(found) }}
{% endmacro %}
