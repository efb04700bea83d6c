{#- Private helpers of verify_published. -#}

{#- What verify_published does differently per engine (adapter.dispatch, rather than a check of the engine inline):
      publication  the database it copies the verified relations into (Spark: var sdc_publication_schema), or
                   none where it only verifies
      closing_note a line it logs after verifying, or none
      steps_only   the start of its refusal of a tagged relation that is not a protection step
      one_per_source  whether it refuses two tagged CKM relations of one microdata source: where nothing audits
                   the release as a whole (published zeros beside magnitudes, averaging noise over margins, red
                   team R4-6), one CKM table per source is what it can vouch for -#}
{% macro verify_published_engine() %}
  {{ return(adapter.dispatch('verify_published_engine', 'sdc')()) }}
{% endmacro %}
{% macro default__verify_published_engine() %}
{{ return({'publication': none, 'closing_note': none, 'one_per_source': true,
           'steps_only': "on this engine sdc verifies protection steps only; "}) }}
{% endmacro %}
{# DuckDB: sdc publish is the release's check there; this operation says so #}
{% macro duckdb__verify_published_engine() %}
{{ return({'publication': none, 'one_per_source': false,
           'closing_note': "on DuckDB publish with sdc publish, which audits the release as a whole (published "
                           ~ "zeros, two methods over one population, linked suppression, averaging CKM noise); this operation does not",
           'steps_only': "readers get protection steps only (a relation of one's own publishes what its SQL says, red team R4-2); "}) }}
{% endmacro %}
{# PostgreSQL: grant_published publishes, and sdc publish --target audits that release as a whole #}
{% macro postgres__verify_published_engine() %}
{{ return({'publication': none, 'closing_note': none, 'one_per_source': false,
           'steps_only': "on this engine sdc verifies protection steps only; "}) }}
{% endmacro %}
{# Spark: each tagged relation copied (read once) into a staging database, the copy verified, and the publication
   database made anew from the copies #}
{% macro spark__verify_published_engine() %}
{{ return({'publication': sdc.setting('sdc_publication_schema') | string, 'closing_note': none,
           'one_per_source': true, 'steps_only': "on this engine sdc verifies protection steps only; "}) }}
{% endmacro %}


{% macro verify_published_relation(relation, path, depth, content=none) %}
{%- if depth > 20 -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ path | join(' <- ') ~ ": relations read each other too deep") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(relation.database, relation.schema, relation.identifier) or {} -%}
{%- set step = record.get('step') -%}
{%- if step not in ['ckm_published', 'ckm_mean', 'suppression_published'] -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ relation ~ " is no protection step (its build record names " ~ (step or 'none') ~ ": its SQL is not one call of ckm_published, ckm_mean or suppression_published); "
      ~ sdc.verify_published_engine().steps_only
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
  {#- a release that sdc publish --target audited as a whole (and recorded in its ledger) is not replaced by copies
      checked one table at a time -#}
  {%- set audited = sdc.setting('sdc_release_audit_table') | lower -%}
  {%- if name == publication and audited in run_query('show tables in ' ~ sdc.sql_identifier(name)).columns[1].values() | map('lower') | list -%}
    {{ exceptions.raise_compiler_error("verify_published: the publication database " ~ name ~ " holds a release that sdc publish --target audited as a whole and recorded in its ledger (table " ~ audited ~ "); verify_published checks each table alone and would replace it: publish with sdc publish --target, and drop verify_published from the project's hooks; nothing was copied") }}
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


{#- where the operation publishes (Spark: sdc publish --target audits the release as a whole): two tagged relations whose CKM steps read one microdata source are
    refused (a count beside a magnitude of the same cells tells which published zeros hold records; several
    margins of one population average its noise: red team R4-6), before anything is verified or written -#}
{% macro verify_published_one_per_source(tagged) %}
{%- set by_source = {} -%}
{%- for relation in tagged -%}
  {%- for source in sdc.verify_published_sources(relation, 0) -%}
    {%- do by_source.setdefault(source, []).append(relation | string) -%}
  {%- endfor -%}
{%- endfor -%}
{%- for source, relations in by_source.items() if relations | length > 1 -%}
  {{ exceptions.raise_compiler_error("verify_published: " ~ relations | join(' and ') ~ " are CKM tables of one microdata source, "
      ~ source ~ "; this operation checks each relation alone and does not audit a release as a whole (published zeros beside magnitudes, averaging the "
      ~ "noise of several tables of one population: red team R4-6), so it publishes one CKM table per source: publish the others "
      ~ "in another release, or publish the release with sdc publish --target, which audits it as a whole; nothing was copied") }}
{%- endfor -%}
{% endmacro %}

{#- the microdata sources a tagged relation's CKM steps read (ckm_published: its ckm_count or ckm_sum's input;
    ckm_mean: those of its two inputs); none for other steps -#}
{% macro verify_published_sources(relation, depth) %}
{%- set record = sdc.build_record_of_relation(relation.database, relation.schema, relation.identifier) or {} -%}
{%- set step = record.get('step') -%}
{%- set reads = record.get('reads') or [] -%}
{%- set found = [] -%}
{%- if step == 'ckm_published' and reads | length == 1 -%}
  {%- set audit = sdc.gate_named_relation(reads[0], relation, 'input', 'verify_published', [relation | string]) -%}
  {%- set audit_record = sdc.build_record_of_relation(audit.database, audit.schema, audit.identifier) or {} -%}
  {%- if (audit_record.get('reads') or []) | length == 1 -%}
    {%- do found.append(sdc.gate_named_relation(audit_record['reads'][0], audit, 'microdata relation', 'verify_published', [relation | string]) | string) -%}
  {%- endif -%}
{%- elif step == 'ckm_mean' and depth < 2 -%}
  {%- for item in reads -%}
    {%- set parent = sdc.gate_named_relation(item, relation, 'input', 'verify_published', [relation | string]) -%}
    {%- for source in sdc.verify_published_sources(parent, depth + 1) if source not in found -%}{%- do found.append(source) -%}{%- endfor -%}
  {%- endfor -%}
{%- endif -%}
{{ return(found) }}
{% endmacro %}
