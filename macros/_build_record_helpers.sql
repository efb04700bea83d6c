{#- Private helpers of build_record: the load log, the loads behind a node, a relation's comment and the md5 of a relation's rows. -#}

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

{# md5 of a relation's rows (each row's columns as text, sorted): which ptable a CKM table was built with.
   once_per_invocation: the first result of this dbt invocation for the relation (the build record of each CKM
   model reads the ptable the DAG built before them; on Spark each md5 is a job of about half a second); the gate
   reads the relation each time. #}
{% macro relation_content_md5(relation, once_per_invocation=false) %}
{%- set cache = sdc.check_query_cache() -%}
{%- set key = 'relation_content_md5 ' ~ relation -%}
{%- if once_per_invocation and key in cache -%}{{ return(cache[key]) }}{%- endif -%}
{%- set columns = [] -%}
{%- for column in adapter.get_columns_in_relation(relation) -%}
  {%- do columns.append("coalesce(cast(" ~ sdc.sql_identifier(column.name) ~ " as " ~ sdc.text_type() ~ "), '')") -%}
{%- endfor -%}
{%- set row_text = "concat_ws(',', " ~ columns | join(', ') ~ ")" -%}
{%- set found = run_query(adapter.dispatch('relation_content_md5_sql', 'sdc')(relation, row_text)) -%}
{%- set md5 = found.rows[0][0] if found.rows else none -%}
{%- if once_per_invocation -%}{%- do cache.update({key: md5}) -%}{%- endif -%}
{{ return(md5) }}
{% endmacro %}

{% macro default__relation_content_md5_sql(relation, row_text) -%}
select md5(coalesce(string_agg({{ row_text }}, ';' order by {{ row_text }}), '')) from {{ relation }}
{%- endmacro %}

{% macro spark__relation_content_md5_sql(relation, row_text) -%}
select md5(concat_ws(';', sort_array(collect_list({{ row_text }})))) from {{ relation }}
{%- endmacro %}
