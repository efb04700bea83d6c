{#- Private helpers of grant_published and ckm_table_builder: the tagged relations of a release, each checked as sdc publish checks it. -#}

{#- the tagged relations in the database, each checked as sdc publish checks it, and the release's rules across
    them (one load of each source, one value per cell): {relations, schemas, loads, behind}. `checker` names the
    macro in the messages (the table builder applies the same rules to the release beside its cube) -#}
{% macro gate_release(checker, copy=false) %}
{%- set relations = [] -%}
{%- set schemas = [] -%}
{%- set loads = {} -%}
{%- set behind = {'audits': [], 'patterns': []} -%}
{%- for node in graph.nodes.values() if node.resource_type in ['model', 'seed', 'snapshot'] and 'sdc_publish' in node.tags -%}
  {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias or node.name) -%}
  {%- if relation is not none -%}
    {%- do sdc.check_publishable(node, relation, checker) -%}
    {%- do sdc.gate_check_relation(relation, [relation | string], loads, behind, checker=checker) -%}
    {%- if node.schema not in schemas -%}{%- do schemas.append(node.schema) -%}{%- endif -%}
    {%- do relations.append(relation) -%}
  {%- endif -%}
{%- endfor -%}
{%- do sdc.gate_check_one_load(loads, checker) -%}
{%- do sdc.gate_check_one_value_per_cell(behind, checker) -%}
{#- copy=true: each relation read once, into a table of this session only; a step is verified on its copy -#}
{%- set copies = {} -%}
{%- for relation in relations if copy -%}
  {%- set name = 'sdc_publication_copy_' ~ loop.index -%}
  {%- do run_query('drop table if exists pg_temp.' ~ name ~ '; create temporary table ' ~ name ~ ' as select * from ' ~ relation) -%}
  {%- do copies.update({relation | string: api.Relation.create(schema='pg_temp', identifier=name, type='table')}) -%}
{%- endfor -%}
{#- grant_published (copy=true, PostgreSQL): the ckm_count tables of one source from one pass over it per largest set
    of their dimensions -#}
{%- set shared = sdc.gate_shared_leaf_cells(behind.get('steps', []), checker) if copy else {'leaf_cells': {}, 'tables': []} -%}
{%- for relation, record, step, reads, path in behind.get('steps', []) -%}
  {%- do sdc.gate_verify_step(relation, record, step, reads, path, checker, content=copies.get(relation | string), shared=shared['leaf_cells']) -%}
{%- endfor -%}
{%- for table in shared['tables'] -%}{%- do run_query('drop table if exists pg_temp.' ~ table) -%}{%- endfor -%}
{{ return({'relations': relations, 'schemas': schemas, 'loads': loads, 'behind': behind, 'copies': copies}) }}
{% endmacro %}

{#- stop when a tagged relation reaches raw data or an audit relation without a protection step, or has a column
    that undoes the protection (the rules of python/sdc/release/publish.py, for engines that publish by GRANT) -#}
{% macro check_publishable(node, relation, checker='grant_published') %}
{%- set protection = ['macro.sdc.ckm_published', 'macro.sdc.suppression_published'] -%}
{%- set audit = ['macro.sdc.ckm_count', 'macro.sdc.ckm_sum', 'macro.sdc.ckm_finest_cells', 'macro.sdc.suppression_cells',
                 'macro.sdc.suppression_cells_from_aggregate', 'macro.sdc.suppression_primary'] -%}
{%- set stack = [[node.unique_id, [node.name]]] -%}
{%- set seen = [] -%}
{%- for _ in range(10000) if stack -%}
  {%- set item = stack.pop() -%}
  {%- set id, path = item[0], item[1] -%}
  {%- if id in graph.sources -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " reaches raw data, source " ~ graph.sources[id].source_name ~ "." ~ graph.sources[id].name ~ ", without a protection step (ckm_published, suppression_published): " ~ path | join(' <- ')) }}
  {%- endif -%}
  {%- if id not in seen and id in graph.nodes -%}
    {%- do seen.append(id) -%}
    {%- set current = graph.nodes[id] -%}
    {%- set macros = current.depends_on.macros -%}
    {%- set parents = current.depends_on.nodes -%}
    {%- set protected = (macros | select('in', protection) | list) and parents | length == 1 and parents[0] not in graph.sources -%}
    {%- if not protected -%}
      {%- if macros | select('in', audit) | list -%}
        {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is or reads the audit relation " ~ current.name ~ ", which holds the original values, without a protection step (ckm_published, suppression_published): " ~ path | join(' <- ')) }}
      {%- endif -%}
      {%- for parent in parents -%}
        {%- do stack.append([parent, path + [graph.nodes[parent].name if parent in graph.nodes else parent]]) -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
{%- endfor -%}
{#- the columns python/sdc/release/publish.py refuses (unpublishable), from the same conventions -#}
{%- set names = adapter.get_columns_in_relation(relation) | map(attribute='name') | map('lower') | list -%}
{%- for name in names if sdc.unpublishable_column(name, names) -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " has the column " ~ name ~ ", which undoes the protection; publish the dimensions and protected measures only (ckm_published, suppression_published)") }}
{%- endfor -%}
{% endmacro %}

{#- true for a column name that undoes the protection in a relation with the columns `names` (lower case): the
    rule of python/sdc/release/publish.py unpublishable, on the settings that hold its conventions -#}
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

{#- the gate of python/sdc/release/gate.py on PostgreSQL: stop unless `relation` is a protection step over inputs
    of the right kind (a view of one's own is refused, after what it reads); collect the loads behind it into `loads`
    ({source table: {loaded_at: relation}}) -#}
{% macro gate_check_relation(relation, path, loads, behind, depth=0, checker='grant_published') %}
{%- if depth > 20 -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ path | join(' <- ') ~ ": relations read each other too deep") }}
{%- endif -%}
{%- set route = path | join(' <- ') -%}
{%- if relation.schema | lower == sdc.setting('sdc_raw_schema') | lower -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is raw microdata; refusing to grant " ~ path[0] ~ " (path: " ~ route ~ ")") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(relation.database, relation.schema, relation.identifier) -%}
{%- set step = record.get('step') if record is not none else none -%}
{#- a view reads its parents live: their loads count (below), not those of its build -#}
{%- for table, at in ((record or {}).get('loads') or {}).items() if relation.type != 'view' -%}
  {%- for one in at -%}
    {%- do loads.setdefault(table, {}).setdefault(one, relation | string) -%}
  {%- endfor -%}
{%- endfor -%}
{%- set live = sdc.gate_view_reads(relation) if relation.type == 'view' else none -%}
{%- if step in ['ckm_published', 'suppression_published', 'ckm_mean'] -%}
  {#- a view is computed again whenever it is read: read by another relation, what that relation publishes would
      be another evaluation than the one sdc verified (a view of the audit relation can tell them apart) -#}
  {%- if relation.type == 'view' and path | length > 1 -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is a view of the protection step " ~ step ~ " that " ~ path[-2] ~ " reads: a view is computed again each time it is read, so " ~ path[0] ~ " would not publish the cells sdc verified; build the step as a table (materialized='table') or publish the step itself; refusing to grant " ~ path[0]) }}
  {%- endif -%}
  {%- set reads = [] -%}
  {%- for item in record.get('reads') or [] -%}
    {%- set found = adapter.get_relation(database=item['database'] or relation.database, schema=item['schema'] or relation.schema, identifier=item['name']) -%}
    {%- if found is none -%}
      {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is the output of " ~ step ~ ", but the relation it read (" ~ item['name'] ~ ") is not in the database any more; run dbt build") }}
    {%- endif -%}
    {%- do reads.append(found) -%}
  {%- endfor -%}
  {%- if live is not none -%}
    {%- set declared = reads | map('string') | map('lower') | list -%}
    {#- beside its input a publishing step reads the hierarchy of its dimension columns (d__level, ...) -#}
    {%- set hierarchy = record.get('hierarchy') -%}
    {%- if hierarchy is mapping -%}
      {%- set found = adapter.get_relation(database=hierarchy['database'] or relation.database, schema=hierarchy['schema'] or relation.schema, identifier=hierarchy['name']) -%}
      {%- if found is not none -%}{%- do declared.append(found | string | lower) -%}{%- endif -%}
    {%- endif -%}
    {%- for other in live if other | string | lower not in declared -%}
      {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is a view that reads " ~ other ~ " beside what its step " ~ step ~ " read: the view was replaced after dbt built it; refusing to grant " ~ path[0]) }}
    {%- endfor -%}
  {%- endif -%}
  {%- for parent in reads -%}
    {%- set here = path + [parent | string] -%}
    {%- if step == 'ckm_published' -%}
      {%- set parent_record = sdc.build_record_of_relation(parent.database, parent.schema, parent.identifier) -%}
      {%- if (parent_record or {}).get('step') not in ['ckm_count', 'ckm_sum'] -%}
        {{ exceptions.raise_compiler_error(checker ~ ": " ~ parent ~ " is read by ckm_published but is not the output of ckm_count or ckm_sum, so its numbers are not protected; refusing to grant " ~ path[0] ~ " (path: " ~ here | join(' <- ') ~ ")") }}
      {%- endif -%}
      {%- for table, at in ((parent_record or {}).get('loads') or {}).items() -%}
        {%- for one in at -%}{%- do loads.setdefault(table, {}).setdefault(one, parent | string) -%}{%- endfor -%}
      {%- endfor -%}
      {%- do behind['audits'].append([parent, parent_record]) -%}
    {%- elif step == 'suppression_published' -%}
      {%- set names = adapter.get_columns_in_relation(parent) | map(attribute='name') | map('lower') | list -%}
      {%- if 'status' not in names or 'published_text' not in names or parent.schema | lower == sdc.setting('sdc_raw_schema') | lower -%}
        {{ exceptions.raise_compiler_error(checker ~ ": " ~ parent ~ " is read by suppression_published but is no suppression pattern (no column status / published_text); refusing to grant " ~ path[0]) }}
      {%- endif -%}
      {%- set parent_record = sdc.build_record_of_relation(parent.database, parent.schema, parent.identifier) -%}
      {%- for table, at in ((parent_record or {}).get('loads') or {}).items() -%}
        {%- for one in at -%}{%- do loads.setdefault(table, {}).setdefault(one, parent | string) -%}{%- endfor -%}
      {%- endfor -%}
      {%- do behind['patterns'].append([parent, parent_record]) -%}
    {%- else -%}
      {%- do sdc.gate_check_relation(parent, here, loads, behind, depth + 1, checker) -%}
    {%- endif -%}
  {%- endfor -%}
  {#- content, not lineage: the step's cells against sdc's own recomputation (macros/_gate_verify.sql), once the
      simpler rules of the release have named their mistakes (gate_release) -#}
  {%- do behind.setdefault('steps', []).append([relation, record, step, reads, path]) -%}
{%- elif step in ['ckm_count', 'ckm_sum', 'ckm_finest_cells'] -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is an audit relation: " ~ step ~ " built it, and its audit columns hold the original values; refusing to grant " ~ path[0] ~ " (path: " ~ route ~ ")") }}
{%- elif live is not none -%}
  {#- what it reads first, so that a path to raw or audit data is named; then refused as a relation of one's own -#}
  {%- do sdc.gate_check_view_functions(relation, path, checker) -%}
  {%- for parent in live -%}
    {%- do sdc.gate_check_relation(parent, path + [parent | string], loads, behind, depth + 1, checker) -%}
  {%- endfor -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is a view of one's own (no protection step): " ~ sdc.gate_own_relation() ~ "; refusing to grant " ~ path[0] ~ (" (path: " ~ route ~ ")" if path | length > 1 else "")) }}
{%- else -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is no protection step (its build record names none: its SQL is not one call of ckm_published, suppression_published or ckm_mean): " ~ sdc.gate_own_relation() ~ "; refusing to grant " ~ path[0] ~ (" (path: " ~ route ~ ")" if path | length > 1 else "")) }}
{%- endif -%}
{% endmacro %}

{#- why a relation of one's own is not published (python/sdc/release/gate.py OWN_RELATION, red team R4-2) -#}
{% macro gate_own_relation() -%}
what it publishes is what its SQL says, and SQL can carry numbers that sdc does not compute (literals a query wrote from the raw data when dbt compiled it, names, the shape of the query; red team R4-2). Readers get sdc's steps only (ckm_published, suppression_published, ckm_mean): tag those, and filter, join or label them in the BI tool
{%- endmacro %}

{#- the comment on a publication schema that grant_published made (it drops and makes that schema anew) -#}
{% macro gate_publication_marker() -%}
sdc publication: grant_published copies the verified release here and replaces the schema each time
{%- endmacro %}

{#- a schema of that name that grant_published did not make is not dropped; nor the raw schema -#}
{% macro gate_check_publication_schema(publication) %}
{%- if publication | lower == sdc.setting('sdc_raw_schema') | lower or not publication -%}
  {{ exceptions.raise_compiler_error("grant_published: var sdc_publication_schema is '" ~ publication ~ "', which is not a schema name grant_published may replace; nothing granted") }}
{%- endif -%}
{%- set found = run_query("select coalesce(obj_description(oid, 'pg_namespace'), '') from pg_catalog.pg_namespace where nspname = " ~ sdc.sql_string(publication)) -%}
{%- if found.rows and found.rows[0][0] != sdc.gate_publication_marker() -%}
  {{ exceptions.raise_compiler_error("grant_published: the schema " ~ publication ~ " exists and was not made by grant_published, which replaces its publication schema each time: drop it, or set var sdc_publication_schema to the name of a schema of sdc's own; nothing granted") }}
{%- endif -%}
{% endmacro %}

{#- the relations a view reads, from PostgreSQL's dependencies of its rewrite rule -#}
{% macro gate_view_reads(relation) %}
{%- set found = run_query(sdc.gate_view_dependencies(relation, 'pg_class', 'n.nspname, c.relname, c.relkind', 'c.relnamespace',
                                                         'c.oid <> v.oid') ~ ' order by 1, 2') -%}
{%- set reads = [] -%}
{%- for row in found.rows -%}
  {%- do reads.append(api.Relation.create(database=relation.database, schema=row[0], identifier=row[1], type='view' if row[2] == 'v' else 'table')) -%}
{%- endfor -%}
{{ return(reads) }}
{% endmacro %}

{#- every granted relation from one load of each source table, the last one in the load log (red team 20,
    new-user D6: a suppression pattern sdc suppress --target wrote before a reload carries the older load) -#}
{% macro gate_check_one_load(loads, checker='grant_published') %}
{%- for table, found in loads.items() if found | length > 1 -%}
  {%- set shown = [] -%}
  {%- for at, relation in found.items() | sort -%}{%- do shown.append('load of ' ~ at ~ ': ' ~ relation) -%}{%- endfor -%}
  {{ exceptions.raise_compiler_error(checker ~ ": the tagged relations were built from different loads of " ~ table ~ " (" ~ shown | join('; ') ~ "): a stale pattern or a rebuild of part of the project after sdc load; run the whole build (sdc suppress --target again for a suppression pattern) before granting") }}
{%- endfor -%}
{%- set log = sdc.build_record_load_log() -%}
{%- set raw = sdc.setting('sdc_raw_schema') | lower ~ '.' -%}
{%- for table, found in loads.items() -%}
  {%- set last = log.get(table[raw | length:] if table.startswith(raw) else table) -%}
  {%- for at, relation in found.items() if last is not none and at != last -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " was built from the load of " ~ table ~ " of " ~ at ~ ", but its last sdc load is of " ~ last ~ ": run the whole build (sdc suppress --target again for a suppression pattern) after the last sdc load before granting") }}
  {%- endfor -%}
{%- endfor -%}
{% endmacro %}

{#- one value per cell across the granted relations, as python/sdc/release/gate.py check_release: one ptable of
    each kind and one set of magnitude parameters behind the CKM tables (new-user D5); no population and
    variable both by the CKM and by cell suppression (D3: the same grand total over the same source) -#}
{% macro gate_check_one_value_per_cell(behind, checker='grant_published') %}
{%- set used = {} -%}
{%- for audit, record in behind['audits'] -%}
  {%- for kind, digest in ((record or {}).get('ptables') or {}).items() -%}
    {%- do used.setdefault(kind ~ ' ptable', {}).setdefault(digest, audit | string) -%}
  {%- endfor -%}
  {%- if (record or {}).get('params_md5') -%}
    {%- do used.setdefault('magnitude parameters', {}).setdefault(record['params_md5'], audit | string) -%}
  {%- endif -%}
{%- endfor -%}
{%- for thing, digests in used.items() if digests | length > 1 -%}
  {%- set shown = digests.values() | sort -%}
  {{ exceptions.raise_compiler_error(checker ~ ": the release mixes two " ~ thing ~ ": " ~ shown[0] ~ " and " ~ shown[1] ~ " were built with different ones, so a cell can be published with two noisy values; build every CKM table with one " ~ thing ~ " (dbt build after changing it)") }}
{%- endfor -%}
{%- for pattern, pattern_record in behind['patterns'] -%}
  {%- set pattern_columns = adapter.get_columns_in_relation(pattern) | map(attribute='name') | map('lower') | list -%}
  {%- for audit, audit_record in behind['audits'] -%}
    {%- set pattern_sources = ((pattern_record or {}).get('loads') or {}).keys() | list -%}
    {%- set audit_sources = ((audit_record or {}).get('loads') or {}).keys() | list -%}
    {%- set may_share = not (pattern_sources and audit_sources) or (pattern_sources | select('in', audit_sources) | list) -%}
    {%- set audit_columns = adapter.get_columns_in_relation(audit) | map(attribute='name') | map('lower') | list -%}
    {%- for ckm_column, supp_column in [('original', 'freq'), ('original_value', 'value'), ('original_weighted_count', 'value')]
          if may_share and ckm_column in audit_columns and supp_column in pattern_columns -%}
      {%- set found = run_query('select (select max(cast(' ~ sdc.sql_identifier(ckm_column) ~ ' as double precision)) from ' ~ audit
                                 ~ '), (select max(cast(' ~ sdc.sql_identifier(supp_column) ~ ' as double precision)) from ' ~ pattern ~ ')').rows[0] -%}
      {#- agate gives Decimals: as floats, for the tolerance below -#}
      {%- set totals = found | map('float') | list if found[0] is not none and found[1] is not none else [none, none] -%}
      {%- if totals[0] is not none and totals[1] is not none and totals[0] > 0 and (totals[0] - totals[1]) | abs <= 1e-9 * [1, totals[0] | abs] | max -%}
        {{ exceptions.raise_compiler_error(checker ~ ": " ~ audit ~ " (Cell Key Method) and " ~ pattern ~ " (cell suppression) hold the same population and variable (both have the grand total " ~ totals[0] ~ "): the suppression table would show the true value of cells the CKM perturbs and the CKM a value for cells suppression hides; publish this table by one method only") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
{%- endfor -%}
{% endmacro %}
