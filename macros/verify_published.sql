{#
  verify_published(): every relation tagged for publication (conventions.PUBLISH_TAG, sdc_publish) compared, cell
  by cell, with sdc's own recomputation from the microdata (macros/_gate_verify.sql: the ckm_count / ckm_sum call
  behind ckm_published, ckm_mean over its inputs, the cells and primary rules behind suppression_published). For
  engines where sdc neither copies (DuckDB: `sdc publish`) nor grants (PostgreSQL: grant_published, which runs the
  same checks) what is published, e.g. Spark on a governed cluster that grants by the catalog's own rules: run it
  before those grants, as an on-run-end hook or as an operation:

      on-run-end: ["{{ sdc.verify_published() }}"]
      dbt run-operation verify_published

  A tagged relation that is not a protection step (a view of one's own) is refused: on these engines sdc cannot
  tell what it reads; tag the steps and build views of your own beside the tag. Stops at the first relation that
  is not what its step gives, naming the cell and both values; says what it verified otherwise. After a run in
  which a node failed it verifies nothing (old and new tables lie side by side) and says so.
#}
{% macro verify_published() %}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- if results is defined -%}
  {%- for result in results if (result.status | string | lower) in ['error', 'fail', 'runtime error', 'skipped'] -%}
    {{ exceptions.raise_compiler_error("verify_published: the dbt run did not succeed (first " ~ result.node.unique_id ~ "); nothing verified: fix it and run dbt build") }}
  {%- endfor -%}
{%- endif -%}
{%- set verified = [] -%}
{%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] and 'sdc_publish' in node.tags -%}
  {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias or node.name) -%}
  {%- if relation is not none -%}
    {%- do sdc.verify_published_relation(relation, [relation | string], 0) -%}
    {%- do verified.append(relation | string) -%}
  {%- endif -%}
{%- endfor -%}
{%- do log("verify_published: " ~ verified | length ~ " relation(s) hold what sdc computes from the microdata for their steps"
           ~ (": " ~ verified | join(', ') if verified else ""), info=true) -%}
{{ return('select 1') }}
{% endmacro %}


{% macro verify_published_relation(relation, path, depth) %}
{%- if depth > 20 -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ path | join(' <- ') ~ ": relations read each other too deep") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(relation.database, relation.schema, relation.identifier) or {} -%}
{%- set step = record.get('step') -%}
{%- if step not in ['ckm_published', 'ckm_mean', 'suppression_published'] -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ relation ~ " is no protection step (its build record names " ~ (step or 'none') ~ ": its SQL is not one call of ckm_published, ckm_mean or suppression_published); on this engine sdc verifies protection steps only; refusing " ~ path[0]) }}
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
{%- do sdc.gate_verify_step(relation, record, step, reads, path, 'verify_published') -%}
{% endmacro %}
