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
    {%- do ptables.update({kind: sdc.relation_content_md5(relation, once_per_invocation=true) if relation is not none else none}) -%}
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
