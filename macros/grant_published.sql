{#
  grant_published(roles): on an engine with access control (PostgreSQL), publish every relation tagged for
  publication (conventions.PUBLISH_TAG, sdc_publish) as a verified copy in a schema of sdc's own (var
  sdc_publication_schema, default sdc_publication), and let the reader roles (e.g. a BI tool's bi_reader) read
  that schema and nothing else. For the project's on-run-end hook:

      on-run-end: ["{{ sdc.grant_published(['bi_reader']) }}"]

  Raw microdata, record keys, the audit layer and the ptables are never tagged, so the roles get nothing on
  them. Before anything is published, each tagged relation is checked as `sdc publish` checks it: its lineage
  passes a protection step (ckm_published, suppression_published on one parent) before it reaches a source or an
  audit relation, and none of its columns undoes the protection (original, noise, cell keys, record keys,
  top_<n>, ...); what each relation reads is judged from the database (build records, pg_depend), and all
  published relations come from one load of each source table, its last. Then each tagged relation is read once
  into a temporary table of this session and every protection step's copy is compared, cell by cell, with sdc's
  own recomputation from the microdata (macros/_gate_verify.sql). Only then is the publication schema replaced by
  those copies, in one transaction: the roles read tables holding exactly what was verified, never a view that
  computes again as whoever reads it, and what this release no longer publishes is gone. A tagged relation that
  fails stops it naming the relation; the publication stays the last verified release. After a run in which a
  node failed or was skipped it publishes nothing (one line says so), as `sdc publish` publishes nothing then,
  and after a run that built no tagged relation (dbt build --select of other models) it leaves the publication as
  it is (one line says so).

  Outside a hook, e.g. to publish again after the grants were lost, it runs the same checks and publishes,
  naming what it published:

      dbt run-operation grant_published --args '{roles: [bi_reader]}'

  A role that does not exist stops it before anything is changed. On DuckDB, which has no GRANT, the hook does
  nothing (`sdc publish` writes a separate file instead) and the operation stops saying so.
#}
{% macro grant_published(roles) %}
  {{ return(adapter.dispatch('grant_published', 'sdc')(roles)) }}
{% endmacro %}

{#- in a hook on an engine without GRANT: nothing to do; asked for by dbt run-operation, say so rather than exit 0 -#}
{% macro default__grant_published(roles) %}
{%- if execute and results is not defined -%}
  {{ exceptions.raise_compiler_error("grant_published: " ~ target.type ~ " has no GRANT, so nothing is granted; publish with sdc publish instead") }}
{%- endif -%}
{{ return('select 1') }}
{% endmacro %}

{% macro postgres__grant_published(roles) -%}
{%- if roles is string or roles | length == 0 -%}
  {{ exceptions.raise_compiler_error("grant_published: roles must be a non-empty list of role names") }}
{%- endif -%}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{#- dbt gives an on-run-end hook the run's results; outside a hook (dbt run-operation) there are none -#}
{%- set in_hook = results is defined -%}
{%- if in_hook -%}
  {#- after a failed run old relations lie beside new ones: grant nothing, as sdc publish
      (python/sdc/release/publish.py FAILED_STATUSES) publishes nothing (new-user N5) -#}
  {%- set failed = [] -%}
  {%- for result in results if (result.status | string | lower) in ['error', 'fail', 'runtime error', 'skipped'] -%}
    {%- do failed.append(result.node.unique_id) -%}
  {%- endfor -%}
  {%- if failed -%}
    {%- do log("grant_published: the dbt run did not succeed: " ~ failed | length ~ " node(s) failed or were skipped, first "
               ~ failed[0] ~ "; nothing granted: fix it and run dbt build", info=true) -%}
    {{ return('select 1') }}
  {%- endif -%}
  {#- a run of part of the project that built no tagged relation (the suppression's cells before sdc suppress
      --target, month after month: new user D3) changes nothing the readers read: the publication stays the last
      release, and the run is no reason to judge it -#}
  {%- set built = [] -%}
  {%- for result in results if result.node.resource_type in ['model', 'seed', 'snapshot'] and 'sdc_publish' in (result.node.tags or []) -%}
    {%- do built.append(result.node.unique_id) -%}
  {%- endfor -%}
  {%- if not built -%}
    {%- do log("grant_published: this run built no relation tagged sdc_publish; the publication is left as it is "
               "(the last release published)", info=true) -%}
    {{ return('select 1') }}
  {%- endif -%}
{%- endif -%}
{%- set names = [] -%}
{%- for role in roles -%}{%- do names.append(role | string | trim) -%}{%- endfor -%}
{#- a role that does not exist stops before any grant, with its name (public is PostgreSQL's every role) -#}
{%- set quoted = [] -%}
{%- for name in names -%}{%- do quoted.append(sdc.sql_string(name)) -%}{%- endfor -%}
{%- set existing = run_query("select rolname from pg_catalog.pg_roles where rolname in (" ~ quoted | join(', ') ~ ")").columns[0].values() | list -%}
{%- for name in names if name not in existing and name != 'public' -%}
  {{ exceptions.raise_compiler_error("grant_published: no role " ~ name ~ " in the database (create it, or correct the name); nothing granted") }}
{%- endfor -%}
{%- set to = [] -%}
{%- for name in names -%}{%- do to.append(sdc.sql_identifier(name)) -%}{%- endfor -%}
{%- set publication = sdc.setting('sdc_publication_schema') | string -%}
{%- do sdc.gate_check_publication_schema(publication) -%}
{#- every tagged relation copied (session-only), each step verified on its copy: what the roles read is what sdc
    verified, not a view or table that user SQL (a function, a later hook) computes again when read -#}
{%- set release = sdc.gate_release('grant_published', copy=true) -%}
{%- set names_seen = {} -%}
{%- for relation in release['relations'] -%}
  {%- set name = relation.identifier | lower -%}
  {%- if name in names_seen -%}
    {{ exceptions.raise_compiler_error("grant_published: " ~ names_seen[name] ~ " and " ~ relation ~ " would both be published as " ~ publication ~ "." ~ name ~ ": give one of them another alias; nothing granted") }}
  {%- endif -%}
  {%- do names_seen.update({name: relation | string}) -%}
  {%- if relation.schema | lower == publication | lower -%}
    {{ exceptions.raise_compiler_error("grant_published: " ~ relation ~ " is built into the publication schema " ~ publication ~ ", which grant_published makes anew from the verified copies: build it into another schema (or set var sdc_publication_schema to another name); nothing granted") }}
  {%- endif -%}
{%- endfor -%}
{%- set schema = sdc.sql_identifier(publication) -%}
{%- set statements = ['drop schema if exists ' ~ schema ~ ' cascade', 'create schema ' ~ schema,
                      'comment on schema ' ~ schema ~ ' is ' ~ sdc.sql_string(sdc.gate_publication_marker())] -%}
{%- for relation in release['relations'] -%}
  {%- do statements.append('create table ' ~ schema ~ '.' ~ sdc.sql_identifier(relation.identifier) ~ ' as select * from '
                           ~ release['copies'][relation | string]) -%}
  {#- grants an older sdc made in place, withdrawn: the publication schema is what the roles read -#}
  {%- do statements.append('revoke all on ' ~ relation ~ ' from ' ~ to | join(', ')) -%}
{%- endfor -%}
{%- do statements.append('grant usage on schema ' ~ schema ~ ' to ' ~ to | join(', ')) -%}
{%- do statements.append('grant select on all tables in schema ' ~ schema ~ ' to ' ~ to | join(', ')) -%}
{%- for copy in release['copies'].values() -%}{%- do statements.append('drop table ' ~ copy) -%}{%- endfor -%}
{%- do run_query(statements | join(';\n')) -%}
{%- do run_query('commit') -%}
{%- set published = [] -%}
{%- for relation in release['relations'] -%}{%- do published.append(relation.identifier) -%}{%- endfor -%}
{%- do log("grant_published: copied " ~ published | length ~ " verified relation(s) into schema " ~ publication
           ~ (" (" ~ published | sort | join(", ") ~ ")" if published else " (none tagged sdc_publish is in the database)")
           ~ " and granted it to " ~ names | join(', '), info=true) -%}
{{ return('select 1') }}
{%- endmacro %}
