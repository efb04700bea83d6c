{#
  grant_published(roles): on an engine with access control (PostgreSQL), let the reader roles (e.g. a BI tool's
  bi_reader) read every relation tagged for publication (conventions.PUBLISH_TAG, sdc_publish) and nothing
  else: USAGE on the schemas that hold them and SELECT on each. For the project's on-run-end hook:

      on-run-end: ["{{ sdc.grant_published(['bi_reader']) }}"]

  Raw microdata, record keys, the audit layer and the ptables are never tagged, so the roles get nothing on
  them. Before any grant, each tagged relation is checked as `sdc publish` checks it: its lineage passes a
  protection step (ckm_published, suppression_published on one parent) before it reaches a source or an audit
  relation (ckm_count, ckm_sum, suppression_cells / _primary ...), and none of its columns undoes the protection
  (original, noise, cell keys, record keys, top_<n>, ...); a tagged relation that fails stops the hook naming
  it, and nothing is granted. On DuckDB, which has no GRANT, it does nothing (`sdc publish` writes a separate
  file instead).
#}
{% macro grant_published(roles) %}
  {{ return(adapter.dispatch('grant_published', 'sdc')(roles)) }}
{% endmacro %}

{% macro default__grant_published(roles) %}{{ return('select 1') }}{% endmacro %}

{% macro postgres__grant_published(roles) -%}
{%- if roles is string or roles | length == 0 -%}
  {{ exceptions.raise_compiler_error("grant_published: roles must be a non-empty list of role names") }}
{%- endif -%}
{%- set to = [] -%}
{%- for role in roles -%}{%- do to.append(sdc.sql_identifier(role | string | trim)) -%}{%- endfor -%}
{%- set statements = [] -%}
{%- set schemas = [] -%}
{%- if execute -%}
  {%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] and 'sdc_publish' in node.tags -%}
    {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias or node.name) -%}
    {%- if relation is not none -%}
      {%- do sdc.check_publishable(node, relation) -%}
      {%- if node.schema not in schemas -%}
        {%- do schemas.append(node.schema) -%}
        {%- do statements.append('grant usage on schema ' ~ sdc.sql_identifier(node.schema) ~ ' to ' ~ to | join(', ')) -%}
      {%- endif -%}
      {%- do statements.append('grant select on ' ~ relation ~ ' to ' ~ to | join(', ')) -%}
    {%- endif -%}
  {%- endfor -%}
{%- endif -%}
{{ statements | join(';\n') if statements else 'select 1' }}
{%- endmacro %}


{#- stop when a tagged relation reaches raw data or an audit relation without a protection step, or has a column
    that undoes the protection (the rules of python/sdc/publish.py, for engines that publish by GRANT) -#}
{% macro check_publishable(node, relation) %}
{%- set protection = ['macro.sdc.ckm_published', 'macro.sdc.suppression_published'] -%}
{%- set audit = ['macro.sdc.ckm_count', 'macro.sdc.ckm_sum', 'macro.sdc.ckm_finest_cells', 'macro.sdc.suppression_cells',
                 'macro.sdc.suppression_cells_from_aggregate', 'macro.sdc.suppression_primary'] -%}
{%- set stack = [[node.unique_id, [node.name]]] -%}
{%- set seen = [] -%}
{%- for _ in range(10000) if stack -%}
  {%- set item = stack.pop() -%}
  {%- set id, path = item[0], item[1] -%}
  {%- if id in graph.sources -%}
    {{ exceptions.raise_compiler_error("grant_published: " ~ relation ~ " reaches raw data, source " ~ graph.sources[id].source_name ~ "." ~ graph.sources[id].name ~ ", without a protection step (ckm_published, suppression_published): " ~ path | join(' <- ')) }}
  {%- endif -%}
  {%- if id not in seen and id in graph.nodes -%}
    {%- do seen.append(id) -%}
    {%- set current = graph.nodes[id] -%}
    {%- set macros = current.depends_on.macros -%}
    {%- set parents = current.depends_on.nodes -%}
    {%- set protected = (macros | select('in', protection) | list) and parents | length == 1 and parents[0] not in graph.sources -%}
    {%- if not protected -%}
      {%- if macros | select('in', audit) | list -%}
        {{ exceptions.raise_compiler_error("grant_published: " ~ relation ~ " is or reads the audit relation " ~ current.name ~ ", which holds the original values, without a protection step (ckm_published, suppression_published): " ~ path | join(' <- ')) }}
      {%- endif -%}
      {%- for parent in parents -%}
        {%- do stack.append([parent, path + [graph.nodes[parent].name if parent in graph.nodes else parent]]) -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}
{#- the columns python/sdc/publish.py refuses (unpublishable), from the same conventions -#}
{%- set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
{%- for name in names if sdc.unpublishable_column(name, names) -%}
    {{ exceptions.raise_compiler_error("grant_published: " ~ relation ~ " has the column " ~ name ~ ", which undoes the protection; publish the dimensions and protected measures only (ckm_published, suppression_published)") }}
{%- endfor -%}
{% endmacro %}


{#- true for a column name that undoes the protection in a relation with the columns `names` (lower case): the
    rule of python/sdc/publish.py unpublishable, on the settings that hold its conventions -#}
{% macro unpublishable_column(name, names) %}
{%- set also_dimensions = sdc.setting('sdc_suppression_columns_also_dimensions') -%}
{%- if name in also_dimensions and names is not none -%}
  {%- for other in names if other != name and (other in sdc.setting('sdc_suppression_layer_columns')
        or (other not in also_dimensions and sdc.unpublishable_column(other, none))) -%}
    {{ return(true) }}
  {%- endfor -%}
  {{ return(false) }}
{%- endif -%}
{%- if name in sdc.setting('sdc_unpublishable_columns') or name.startswith(sdc.setting('sdc_key_fact_prefix')) -%}
  {{ return(true) }}
{%- endif -%}
{%- for prefix in sdc.setting('sdc_unpublishable_prefixes') if name.startswith(prefix) and (prefix != 'top_' or name[4:].isdigit()) -%}
  {{ return(true) }}
{%- endfor -%}
{{ return(sdc.name_matches_any(name, sdc.setting('sdc_ckm_sum_audit_patterns'))) }}
{% endmacro %}
