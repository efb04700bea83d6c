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

  A tagged relation that is not a protection step (a view of one's own) is refused, as on every engine: what it
  publishes is what its SQL says, which can carry numbers no step computed (red team R4-2); tag the steps and
  build views of your own beside the tag, for the office. Stops at the first relation that
  is not what its step gives, naming the cell and both values; says what it verified otherwise, and which tagged
  nodes it found no relation of (not built: nothing to verify). After a run in which a node failed it verifies
  nothing (old and new tables lie side by side) and says so.

  It checks each relation alone, so on Spark it refuses two tagged relations whose CKM steps read one microdata
  source (red team R4-6: a count beside a magnitude of the same cells told which published zeros hold records),
  before anything is verified or copied. `sdc publish --target` is the release on Spark: the release audit of
  DuckDB and PostgreSQL, the ledger of releases, and the publication database made from the cells it audited
  (python/sdc/release/publish_spark.py); this operation is for clusters that sdc's Python cannot reach.

  On DuckDB it runs too, and says that it is not the release's check there: `sdc publish` audits the release as a
  whole (published zeros, two methods over one population, linked suppression tables, averaging CKM noise), which
  this operation does not.
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
{%- set engine = sdc.verify_published_engine() -%}
{%- if engine.one_per_source -%}{%- do sdc.verify_published_one_per_source(tagged) -%}{%- endif -%}
{%- set publication = engine.publication -%}
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
{%- if engine.closing_note is not none -%}
  {%- do log("verify_published: " ~ engine.closing_note, info=true) -%}
{%- endif -%}
{{ return('select 1') }}
{% endmacro %}
