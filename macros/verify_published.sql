{#
  verify_published(): every relation tagged for publication (conventions.PUBLISH_TAG, sdc_publish) compared, cell
  by cell, with sdc's own recomputation from the microdata (macros/_gate_verify.sql: the ckm_count / ckm_sum call
  behind ckm_published, ckm_mean over its inputs, the cells and primary rules behind suppression_published). For
  engines where sdc neither copies (DuckDB: `sdc publish`) nor grants (PostgreSQL: grant_published, which runs the
  same checks) what is published, e.g. Spark on a governed cluster that grants by the catalog's own rules: run it
  before those grants, as an on-run-end hook or as an operation:

      on-run-end: ["{{ sdc.verify_published() }}"]
      dbt run-operation verify_published

  On Spark, each tagged relation is first copied (read once) into a staging database (<publication>__staging),
  each copy verified, and then the publication database (var sdc_publication_schema, default sdc_publication) is
  made anew from the verified copies: grant the catalog's readers that database only, so that what they read
  is what sdc verified and what a release no longer publishes is gone. A database of that name that
  verify_published did not make (its comment) is refused before anything is written; after a refusal the
  staging database (sdc's own, never the publication) stays until the next run replaces it.

  A tagged relation that is not a protection step (a view of one's own) is refused: on these engines sdc cannot
  tell what it reads; tag the steps and build views of your own beside the tag. Stops at the first relation that
  is not what its step gives, naming the cell and both values; says what it verified otherwise, and which tagged
  nodes it found no relation of (not built: nothing to verify). After a run in which a node failed it verifies
  nothing (old and new tables lie side by side) and says so.

  On DuckDB it runs too, and says that it is not the release's check there: `sdc publish` verifies relations of
  one's own as well and audits the release as a whole (published zeros, two methods over one population, linked
  suppression tables, averaging CKM noise), which this operation does not.
#}
{% macro verify_published() %}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- if results is defined -%}
  {%- for result in results if (result.status | string | lower) in ['error', 'fail', 'runtime error', 'skipped'] -%}
    {{ exceptions.raise_compiler_error("verify_published: the dbt run did not succeed (first " ~ result.node.unique_id ~ "); nothing verified: fix it and run dbt build") }}
  {%- endfor -%}
{%- endif -%}
{%- set tagged, missing = [], [] -%}
{%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] and 'sdc_publish' in node.tags -%}
  {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias or node.name) -%}
  {%- if relation is not none -%}{%- do tagged.append(relation) -%}{%- else -%}{%- do missing.append(node.unique_id) -%}{%- endif -%}
{%- endfor -%}
{#- Spark: each tagged relation copied (read once) into a staging database, the copy verified, and the publication
    database made anew from the copies: what the catalog grants is what sdc verified -#}
{%- set publication = sdc.setting('sdc_publication_schema') | string if target.type == 'spark' else none -%}
{%- set copies = sdc.verify_published_copies(tagged, publication) if publication is not none else {} -%}
{%- set verified = [] -%}
{%- for relation in tagged -%}
  {%- do sdc.verify_published_relation(relation, [relation | string], 0, copies.get(relation | string)) -%}
  {%- do verified.append(relation | string) -%}
{%- endfor -%}
{%- if publication is not none -%}
  {%- do sdc.verify_published_replace(tagged, copies, publication) -%}
{%- endif -%}
{%- if not verified and not missing -%}
  {%- do log("verify_published: no node of the project is tagged sdc_publish; nothing verified", info=true) -%}
{%- else -%}
  {%- do log("verify_published: " ~ verified | length ~ " relation(s) hold what sdc computes from the microdata for their steps"
             ~ (": " ~ verified | join(', ') if verified else "")
             ~ ("; " ~ missing | length ~ " tagged node(s) have no relation in the database (not built, nothing verified): "
                ~ missing | sort | join(', ') if missing else "")
             ~ ("; copied into the publication database " ~ publication if publication is not none else ""), info=true) -%}
{%- endif -%}
{%- if target.type == 'duckdb' -%}
  {%- do log("verify_published: on DuckDB publish with sdc publish, which verifies relations of one's own too and "
             ~ "audits the release as a whole (published zeros, two methods over one population, linked suppression, "
             ~ "averaging CKM noise); this operation does not", info=true) -%}
{%- endif -%}
{{ return('select 1') }}
{% endmacro %}


{% macro verify_published_relation(relation, path, depth, content=none) %}
{%- if depth > 20 -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ path | join(' <- ') ~ ": relations read each other too deep") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(relation.database, relation.schema, relation.identifier) or {} -%}
{%- set step = record.get('step') -%}
{%- if step not in ['ckm_published', 'ckm_mean', 'suppression_published'] -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ relation ~ " is no protection step (its build record names " ~ (step or 'none') ~ ": its SQL is not one call of ckm_published, ckm_mean or suppression_published); "
      ~ ("this operation verifies protection steps only: on DuckDB publish with sdc publish, which verifies relations of one's own too; " if target.type == 'duckdb' else "on this engine sdc verifies protection steps only; ")
      ~ sdc.gate_refusing('verify_published', path)) }}
{%- endif -%}
{%- set reads = [] -%}
{%- for item in record.get('reads') or [] -%}
  {%- do reads.append(sdc.gate_named_relation(item, relation, 'input', 'verify_published', path)) -%}
{%- endfor -%}
{%- if (reads | length) != (2 if step == 'ckm_mean' else 1) -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ relation ~ " has a build record that names " ~ reads | length ~ " input(s) for its step " ~ step ~ "; refusing " ~ path[0]) }}
{%- endif -%}
{%- if step == 'ckm_mean' -%}
  {%- for parent in reads -%}{%- do sdc.verify_published_relation(parent, path + [parent | string], depth + 1) -%}{%- endfor -%}
{%- endif -%}
{%- do sdc.gate_verify_step(relation, record, step, reads, path, 'verify_published', content=content) -%}
{% endmacro %}


{#- Spark: {relation: its copy in the staging database <publication>__staging}; a database of the publication's
    name that verify_published did not make (its comment) is refused before anything is written -#}
{% macro verify_published_copies(tagged, publication) %}
{%- if publication | lower == sdc.setting('sdc_raw_schema') | lower or not publication -%}
  {{ exceptions.raise_compiler_error("verify_published: var sdc_publication_schema is '" ~ publication ~ "', which is not a database name verify_published may replace") }}
{%- endif -%}
{%- set existing = run_query('show databases').columns[0].values() | map('lower') | list -%}
{%- for name in [publication, publication ~ '__staging'] if name | lower in existing -%}
  {%- set comment = [] -%}
  {%- for row in run_query('describe database ' ~ sdc.sql_identifier(name)).rows if row[0] | lower == 'comment' -%}
    {%- do comment.append(row[1]) -%}
  {%- endfor -%}
  {%- if comment != [sdc.gate_publication_marker()] -%}
    {{ exceptions.raise_compiler_error("verify_published: the database " ~ name ~ " exists and was not made by verify_published, which replaces its publication database each time: drop it, or set var sdc_publication_schema to the name of a database of sdc's own") }}
  {%- endif -%}
{%- endfor -%}
{%- set names = {} -%}
{%- for relation in tagged -%}
  {%- if relation.schema | lower in [publication | lower, (publication ~ '__staging') | lower] -%}
    {{ exceptions.raise_compiler_error("verify_published: " ~ relation ~ " is built into the publication database " ~ relation.schema ~ ", which verify_published makes anew: build it into another schema") }}
  {%- endif -%}
  {%- if relation.identifier | lower in names -%}
    {{ exceptions.raise_compiler_error("verify_published: " ~ names[relation.identifier | lower] ~ " and " ~ relation ~ " would both be published as " ~ publication ~ "." ~ relation.identifier | lower ~ ": give one of them another alias") }}
  {%- endif -%}
  {%- do names.update({relation.identifier | lower: relation | string}) -%}
{%- endfor -%}
{%- set staging = sdc.sql_identifier(publication ~ '__staging') -%}
{%- do run_query('drop database if exists ' ~ staging ~ ' cascade') -%}
{%- do run_query('create database ' ~ staging ~ ' comment ' ~ sdc.sql_string(sdc.gate_publication_marker())) -%}
{%- set copies = {} -%}
{%- for relation in tagged -%}
  {%- set copy = staging ~ '.' ~ sdc.sql_identifier(relation.identifier) -%}
  {%- do run_query('create table ' ~ copy ~ ' as select * from ' ~ relation) -%}
  {%- do copies.update({relation | string: api.Relation.create(schema=publication ~ '__staging', identifier=relation.identifier, type='table')}) -%}
{%- endfor -%}
{{ return(copies) }}
{% endmacro %}


{#- Spark: the publication database made anew from the verified copies, the staging database dropped -#}
{% macro verify_published_replace(tagged, copies, publication) %}
{%- set database = sdc.sql_identifier(publication) -%}
{%- do run_query('drop database if exists ' ~ database ~ ' cascade') -%}
{%- do run_query('create database ' ~ database ~ ' comment ' ~ sdc.sql_string(sdc.gate_publication_marker())) -%}
{%- for relation in tagged -%}
  {%- do run_query('create table ' ~ database ~ '.' ~ sdc.sql_identifier(relation.identifier) ~ ' as select * from ' ~ copies[relation | string]) -%}
{%- endfor -%}
{%- do run_query('drop database if exists ' ~ sdc.sql_identifier(publication ~ '__staging') ~ ' cascade') -%}
{% endmacro %}
