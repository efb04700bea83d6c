{#
  Content, not lineage, for engines that publish by GRANT (grant_published, the table builder): the rules of
  python/sdc/release/verify.py, which `sdc publish` applies on DuckDB.

  A protection step's relation is compared, cell by cell, with what sdc's own macros compute from the microdata
  for the call its build record names: the ckm_count / ckm_sum call behind ckm_published (rendered again here,
  with every record key check on), ckm_mean over its two inputs, and for suppression_published the cells and
  primary rules of the suppression_primary / suppression_cells calls behind its pattern (every published value
  its cell's original, every primary cell suppressed; the LP audit of the pattern is `sdc suppress --target`'s,
  which wrote it). A post-hook that rewrites a step's table, a forged record or step, or a "pattern" of one's
  own is refused, naming the cell and both values. A view of one's own may not call a function of the
  database's own (pg_depend on pg_proc outside pg_catalog): what a function reads cannot be told.
#}

{#- the end of a refusal: what `checker` will not do with the tagged relation path[0] (verify_published grants
    nothing) -#}
{% macro gate_refusing(checker, path) %}
{{- return(('refusing ' if checker == 'verify_published' else 'refusing to grant ') ~ path[0]) -}}
{% endmacro %}


{#- the relation a build record names ({database, schema, name} or 'schema.name'), or a refusal -#}
{% macro gate_named_relation(item, near, what, checker, path) %}
{%- if item is string -%}
  {%- set parts = item.split('.') -%}
  {%- set item = {'database': none, 'schema': parts[-2].strip('"') if parts | length > 1 else none, 'name': parts[-1].strip('"')} -%}
{%- endif -%}
{%- set found = adapter.get_relation(database=item.get('database') or near.database, schema=item.get('schema') or near.schema,
                                     identifier=item.get('name')) if item is mapping and item.get('name') else none -%}
{%- if found is none -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ near ~ " names a " ~ what ~ " (" ~ item ~ ") that is not in the database; run dbt build; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{{ return(found) }}
{% endmacro %}


{#- the arguments of a recorded call, relations as relations -#}
{% macro gate_call_arguments(call, near, checker, path) %}
{%- set arguments = {} -%}
{%- for name, value in call.items() if name not in ['dims', 'settings'] -%}
  {%- if name in ['hierarchy', 'ptable', 'nums_ptable', 'zero_with_counts'] and value is not none -%}
    {%- do arguments.update({name: sdc.gate_named_relation(value, near, name, checker, path)}) -%}
  {%- else -%}
    {%- do arguments.update({name: value}) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(arguments) }}
{% endmacro %}


{#- stop unless the protection step `relation` holds what sdc computes for its record; `content`: the relation
    whose cells are compared, a copy of `relation` that is published (default `relation` itself) -#}
{% macro gate_verify_step(relation, record, step, reads, path, checker, content=none, shared=none) %}
{%- if step == 'ckm_published' -%}
  {%- set audit = reads[0] -%}
  {%- set audit_record = sdc.build_record_of_relation(audit.database, audit.schema, audit.identifier) or {} -%}
  {%- set call = audit_record.get('call') -%}
  {%- if call is not mapping or (audit_record.get('reads') or []) | length != 1 -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ audit ~ " is read by ckm_published, but its build record names no ckm_count or ckm_sum call that sdc can compute again: run dbt build (with this sdc); " ~ sdc.gate_refusing(checker, path)) }}
  {%- endif -%}
  {%- set source = sdc.gate_named_relation(audit_record['reads'][0], audit, 'microdata relation', checker, path) -%}
  {%- set arguments = sdc.gate_call_arguments(call, audit, checker, path) -%}
  {%- do sdc.gate_check_ptables_unchanged(audit, audit_record, arguments, checker, path) -%}
  {%- if audit_record['step'] == 'ckm_count' -%}
    {%- do sdc.gate_check_count_ptable(arguments.get('ptable'), relation, checker, path) -%}
    {#- its leaf cells summed from the source's shared ones where grant_published made them (gate_shared_leaf_cells) -#}
    {%- set leaf_cells = (shared or {}).get((source | string) ~ ' ' ~ (call | tojson)) -%}
    {%- if leaf_cells is not none -%}{%- do arguments.update({'leaf_cells': leaf_cells}) -%}{%- endif -%}
    {%- set recomputed = sdc.ckm_count(source, call['dims'], check_keys=true, check_cell_keys=true, **arguments) -%}
  {%- else -%}
    {%- set recomputed = sdc.ckm_sum(source, call['dims'], check_keys=true, audit=true, **arguments) -%}
  {%- endif -%}
  {#- the magnitudes rounded as ckm_published rounded them (its record's call.digits), the unrounded beside them -#}
  {%- set digits = (record.get('call') or {}).get('digits') if (record.get('call') is mapping) else none -%}
  {%- set digits = sdc.ckm_published_digits(digits) -%}
  {%- set kept, rounded = [], {} -%}
  {%- set names = run_query('select * from (' ~ recomputed ~ ') as recomputed where 1 = 0').column_names -%}
  {%- for name in names if not sdc.gate_audit_column(name | lower) -%}
    {%- if digits is not none and name | lower in ['weighted_count', 'value', 'weighted_value'] -%}
      {%- do kept.append(sdc.ckm_published_rounded(sdc.sql_identifier(name), digits) ~ ' as ' ~ sdc.sql_identifier(name)) -%}
      {%- do kept.append(sdc.sql_identifier(name) ~ ' as ' ~ sdc.sql_identifier('sdc_exact_' ~ name)) -%}
      {%- do rounded.update({name | lower: digits}) -%}
    {%- else -%}
      {%- do kept.append(sdc.sql_identifier(name)) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set cells = 'select ' ~ kept | join(', ') ~ ' from (' ~ recomputed ~ ') as recomputed' -%}
  {%- do sdc.gate_compare(relation, sdc.gate_with_dimension_columns(cells, call, cells_call=call, hierarchy=arguments.get('hierarchy')),
                          audit_record['step'] ~ ' over ' ~ source ~ ' (recomputed from the microdata)', checker, path, content, rounded) -%}
{%- elif step == 'ckm_mean' -%}
  {%- set call = record.get('call') -%}
  {%- if call is not mapping -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is the output of ckm_mean, but its build record holds no call that sdc can compute again: run dbt build (with this sdc)") }}
  {%- endif -%}
  {%- do sdc.gate_compare(relation, sdc.ckm_mean(reads[0], reads[1], call['dims'], numerator=call['numerator'], denominator=call['denominator']),
                          'ckm_mean of ' ~ reads[0] ~ ' and ' ~ reads[1], checker, path, content) -%}
{%- elif step == 'suppression_published' -%}
  {%- do sdc.gate_verify_suppression(relation, record, reads[0], path, checker, content) -%}
{%- endif -%}
{% endmacro %}


{#- a ptable whose rows changed since the step was built (a new seed): the step cannot be computed again -#}
{% macro gate_check_ptables_unchanged(audit, audit_record, arguments, checker, path) %}
{%- set used = [('count', arguments.get('ptable')), ('nums', arguments.get('nums_ptable'))] if audit_record['step'] == 'ckm_count'
               else [('nums', arguments.get('ptable')), ('count', arguments.get('zero_with_counts'))] -%}
{%- for kind, ptable in used -%}
  {%- set recorded = (audit_record.get('ptables') or {}).get(kind) -%}
  {%- if recorded and ptable is not none and sdc.relation_content_md5(ptable) != recorded -%}
    {{ exceptions.raise_compiler_error(checker ~ ": " ~ audit ~ " was built with other rows of the ptable " ~ ptable ~ " than it holds now (the seed changed since): run dbt build, which builds every CKM table with the new ptable; " ~ sdc.gate_refusing(checker, path)) }}
  {%- endif -%}
{%- endfor -%}
{% endmacro %}


{#- the columns ckm_published leaves behind (python/sdc/release/verify.py ckm_audit_column) -#}
{% macro gate_audit_column(name) %}
{{ return(name in (sdc.setting('sdc_audit_columns') + sdc.setting('sdc_ckm_sum_audit_columns')) | map('lower') | list
          or sdc.name_matches_any(name, sdc.setting('sdc_ckm_sum_audit_patterns'))) }}
{% endmacro %}


{#- a ptable row that never changes a count publishes such counts as they are -#}
{% macro gate_check_count_ptable(ptable, relation, checker, path) %}
{%- if ptable is none -%}{{ return(none) }}{%- endif -%}
{%- set found = run_query('select min(i) from (select i from ' ~ ptable ~ ' where i >= 1 group by i having coalesce(sum(case when v <> 0 then p_int_ub - p_int_lb end), 0) <= 0) as still') -%}
{%- if found.rows[0][0] is not none -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is built with the ptable " ~ ptable ~ ", whose row i = " ~ found.rows[0][0] ~ " never changes a count: such counts would be published as they are; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{% endmacro %}


{#- `cells` (SQL) with the columns the publishing steps add per dimension (d__level, ...), computed from the
    dimensions of `call` and the hierarchy and total label of `cells_call`, the call that made the cells -#}
{% macro gate_with_dimension_columns(cells, call, cells_call, hierarchy) %}
{{- return('with published_cells as (\n' ~ cells ~ '\n),\n'
           ~ sdc.published_dimension_columns('published_cells', call['dims'], hierarchy, (cells_call.get('settings') or {}).get('sdc_total_label'))
           ~ '\nselect * from dimension_columns') -}}
{% endmacro %}


{#- stop unless `relation` (read from `content`, its copy, where given) holds exactly the cells of `expected_sql`:
    the same columns, the same cells, counts equal and magnitudes to 1e-9 relative -#}
{% macro gate_compare(relation, expected_sql, what, checker, path, content=none, rounded=none) %}
{%- set content = content if content is not none else relation -%}
{#- a copy has the columns of what it copied (the catalog of another session's temporary schema holds none) -#}
{%- set have = adapter.get_columns_in_relation(relation) -%}
{#- the recomputation run once, where the engine keeps a session's table: the comparison and the count read it -#}
{%- set expected = sdc.gate_expected_cells(expected_sql) -%}
{%- set want = [] -%}
{%- for name in run_query('select * from ' ~ expected ~ ' as expected where 1 = 0').column_names if not (name | lower).startswith('sdc_exact_') -%}{%- do want.append(name) -%}{%- endfor -%}
{%- if have | map(attribute='name') | map('lower') | sort | list != want | map('lower') | sort | list -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " has the columns " ~ have | map(attribute='name') | join(', ') ~ ", but " ~ what ~ " gives " ~ want | join(', ') ~ "; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{%- set measures = ['count', 'count_reason', 'weighted_count', 'value', 'weighted_value', 'freq', 'published_text'] -%}
{%- set dims, numbers, texts = [], [], [] -%}
{%- for column in have -%}
  {%- set name = column.name | lower -%}
  {#- the measures and the columns that describe a dimension's codes (d__level, ...) are compared -#}
  {%- if name not in measures and not name.startswith('mean_') and not sdc.dimension_column(name) -%}{%- do dims.append(column.name) -%}
  {%- elif column.is_number() -%}{%- do numbers.append(column.name) -%}
  {%- else -%}{%- do texts.append(column.name) -%}{%- endif -%}
{%- endfor -%}
{%- set q = sdc.sql_identifier -%}
{%- set on = [] -%}
{#- codes compared as text, NULL as chr(1), which no code holds: a full join needs an equality (PostgreSQL) -#}
{%- for dim in dims -%}{%- do on.append(sdc.gate_join_code('p.' ~ q(dim)) ~ ' = ' ~ sdc.gate_join_code('e.' ~ q(dim))) -%}{%- endfor -%}
{%- set differs = [] -%}
{%- for m in numbers -%}
  {%- set p, e = 'cast(p.' ~ q(m) ~ ' as ' ~ sdc.double_type() ~ ')', 'cast(e.' ~ q(m) ~ ' as ' ~ sdc.double_type() ~ ')' -%}
  {%- if (rounded or {}).get(m | lower) is not none -%}
    {#- rounded (python/sdc/release/verify.py differ_rounded): equal to a quarter of the last digit's unit, or the
        other neighbour of a recomputation within 1e-9 relative of the half-way point between the two -#}
    {%- set x = 'cast(e.' ~ q('sdc_exact_' ~ m | lower) ~ ' as ' ~ sdc.double_type() ~ ')' -%}
    {%- set unit = 'cast(1e' ~ (0 - rounded[m | lower]) ~ ' as ' ~ sdc.double_type() ~ ')' -%}
    {%- set tolerance = 'least(1e-9 * greatest(1, abs(' ~ e ~ ')), ' ~ unit ~ ' / 4)' -%}
    {%- do differs.append('(' ~ p ~ ' is null) <> (' ~ e ~ ' is null) or (abs(' ~ p ~ ' - ' ~ e ~ ') > ' ~ tolerance
                          ~ ' and not (abs(abs(' ~ p ~ ' - ' ~ e ~ ') - ' ~ unit ~ ') <= ' ~ tolerance
                          ~ ' and abs(abs(' ~ p ~ ' - ' ~ x ~ ') - ' ~ unit ~ ' / 2) <= 1e-9 * greatest(1, abs(' ~ x ~ '))))') -%}
  {%- else -%}
  {%- do differs.append('(' ~ p ~ ' is null) <> (' ~ e ~ ' is null) or abs(' ~ p ~ ' - ' ~ e ~ ') > 1e-9 * greatest(1, abs(' ~ e ~ '))') -%}
  {%- endif -%}
{%- endfor -%}
{%- for m in texts -%}{%- do differs.append('cast(p.' ~ q(m) ~ ' as ' ~ sdc.text_type() ~ ') is distinct from cast(e.' ~ q(m) ~ ' as ' ~ sdc.text_type() ~ ')') -%}{%- endfor -%}
{%- set shown = [] -%}
{%- for dim in dims -%}{%- do shown.append("'" ~ dim ~ "=' || coalesce(cast(p." ~ q(dim) ~ " as " ~ sdc.text_type() ~ "), cast(e." ~ q(dim) ~ " as " ~ sdc.text_type() ~ "), 'NULL')") -%}{%- endfor -%}
{%- set values = [] -%}
{%- for m in numbers + texts -%}{%- do values.append("'" ~ m ~ " ' || coalesce(cast(p." ~ q(m) ~ " as " ~ sdc.text_type() ~ "), 'NULL') || ' there, ' || coalesce(cast(e." ~ q(m) ~ " as " ~ sdc.text_type() ~ "), 'NULL') || ' in sdc''s recomputation'") -%}{%- endfor -%}
{%- set found = run_query(
    "select " ~ (shown | join(" || ', ' || ") if shown else "''") ~ ", p.sdc_present is not null, e.sdc_present is not null, "
    ~ (values | join(" || '; ' || ") if values else "''")
    ~ " from (select *, 1 as sdc_present from " ~ content ~ ") as p full join (select *, 1 as sdc_present from "
    ~ expected ~ " as recomputed) as e on " ~ (on | join(' and ') if on else 'true')
    ~ " where p.sdc_present is null or e.sdc_present is null" ~ (" or " ~ differs | join(' or ') if differs else '') ~ " limit 1") -%}
{%- if found.rows -%}
  {%- set row = found.rows[0] -%}
  {%- set why = "lacks the cell (" ~ row[0] ~ ") that " ~ what ~ " gives" if not row[1] else
                "holds the cell (" ~ row[0] ~ "), which " ~ what ~ " does not give" if not row[2] else
                "differs from " ~ what ~ " in the cell (" ~ row[0] ~ "): " ~ row[3] ~ "; the relation was changed after its step (a hook, an update) or its build record does not fit it" -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " " ~ why ~ "; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{%- set counts = run_query('select (select count(*) from ' ~ content ~ '), (select count(*) from ' ~ expected ~ ' as recomputed)').rows[0] -%}
{%- if counts[0] != counts[1] -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " holds " ~ counts[0] ~ " rows where " ~ what ~ " gives " ~ counts[1] ~ " (a cell twice); " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{%- do sdc.gate_drop_expected_cells(expected) -%}
{% endmacro %}


{#- gate_compare's recomputed cells: a table of the session on engines that keep one (PostgreSQL, DuckDB), so that
    the recomputation, which reads the microdata, runs once per relation and not once per query; elsewhere (Spark)
    the query itself, in parentheses -#}
{% macro gate_expected_cells(expected_sql) %}
{{- return(adapter.dispatch('gate_expected_cells', 'sdc')(expected_sql)) -}}
{% endmacro %}
{% macro default__gate_expected_cells(expected_sql) %}
{{- return('(' ~ expected_sql ~ ')') -}}
{% endmacro %}
{% macro postgres__gate_expected_cells(expected_sql) %}
{%- do run_query('drop table if exists pg_temp.sdc_gate_expected; create temporary table sdc_gate_expected as ' ~ expected_sql) -%}
{{- return('pg_temp.sdc_gate_expected') -}}
{% endmacro %}
{% macro duckdb__gate_expected_cells(expected_sql) %}
{%- do run_query('create or replace temporary table sdc_gate_expected as ' ~ expected_sql) -%}
{{- return('temp.main.sdc_gate_expected') -}}
{% endmacro %}

{% macro gate_drop_expected_cells(expected) %}
{%- if not expected.startswith('(') -%}{%- do run_query('drop table if exists ' ~ expected) -%}{%- endif -%}
{% endmacro %}


{#- a suppression table: its cells and primary rules computed again from the microdata; every published value
    its original and every primary cell suppressed (the pattern's LP audit is sdc suppress --target's) -#}
{% macro gate_verify_suppression(relation, record, pattern, path, checker, content=none) %}
{%- set content = content if content is not none else relation -%}
{%- set call = record.get('call') -%}
{%- set pattern_record = sdc.build_record_of_relation(pattern.database, pattern.schema, pattern.identifier) or {} -%}
{%- set primary = sdc.gate_named_relation(pattern_record['cells'], pattern, 'cell table', checker, path) if pattern_record.get('cells') is string else none -%}
{%- set primary_record = sdc.build_record_of_relation(primary.database, primary.schema, primary.identifier) or {} if primary is not none else {} -%}
{%- if call is not mapping or primary_record.get('step') != 'suppression_primary' -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ pattern ~ " is read by suppression_published, but no suppression_primary table that it was solved from can be found in its build record (a pattern of one's own is no suppression step): solve it with sdc suppress --target; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{%- set cells = sdc.gate_named_relation(primary_record['reads'][0], primary, 'cell table', checker, path) -%}
{%- set cells_record = sdc.build_record_of_relation(cells.database, cells.schema, cells.identifier) or {} -%}
{%- if cells_record.get('step') != 'suppression_cells' or cells_record.get('call') is not mapping -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ cells ~ " is read by suppression_primary, but its build record names no suppression_cells call that sdc can compute again: run dbt build (with this sdc); " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{%- set records = sdc.gate_named_relation(cells_record['reads'][0], cells, 'microdata relation', checker, path) -%}
{%- set arguments = sdc.gate_call_arguments(cells_record['call'], cells, checker, path) -%}
{%- set recomputed_cells = sdc.suppression_cells(records, cells_record['call']['dims'], **arguments) -%}
{%- do run_query(adapter.dispatch('gate_temporary_relation', 'sdc')('sdc_gate_cells', recomputed_cells)) -%}
{%- set rules = primary_record.get('call') or {} -%}
{%- set recomputed = sdc.suppression_primary(api.Relation.create(identifier='sdc_gate_cells'), rules.get('rules') or [], preset=rules.get('preset', 'handbook')) -%}
{%- set value = call.get('value') or 'value' -%}
{%- set original = 'freq' if value == 'freq' else 'value' -%}
{%- set q = sdc.sql_identifier -%}
{%- set on = [] -%}
{%- set shown = [] -%}
{%- for dim in call['dims'] -%}
  {%- do on.append(sdc.gate_join_code('p.' ~ q(dim)) ~ ' = ' ~ sdc.gate_join_code('c.' ~ q(dim))) -%}
  {%- do shown.append("'" ~ dim ~ "=' || coalesce(cast(p." ~ q(dim) ~ " as " ~ sdc.text_type() ~ "), cast(c." ~ q(dim) ~ " as " ~ sdc.text_type() ~ "), 'NULL')") -%}
{%- endfor -%}
{%- set p, c = 'cast(p.' ~ q(value) ~ ' as ' ~ sdc.double_type() ~ ')', 'cast(c.' ~ q(original) ~ ' as ' ~ sdc.double_type() ~ ')' -%}
{%- set found = run_query(
    "select " ~ shown | join(" || ', ' || ") ~ ", case when p.sdc_present is null then 'lacks the cell' when c.sdc_present is null "
    ~ "then 'holds the cell, which sdc''s recomputation of its cells does not give,' when c.status = 'primary' and p." ~ q(value) ~ " is not null "
    ~ "then 'publishes ' || cast(p." ~ q(value) ~ " as " ~ sdc.text_type() ~ ") || ' in the cell, which the primary rules flag as unsafe: it must be suppressed;' "
    ~ "else 'publishes ' || cast(p." ~ q(value) ~ " as " ~ sdc.text_type() ~ ") || ' in the cell, where sdc''s recomputation from the microdata gives ' || cast(c." ~ q(original) ~ " as " ~ sdc.text_type() ~ ") || ';' end "
    ~ "from (select *, 1 as sdc_present from " ~ content ~ ") as p full join (select *, 1 as sdc_present from (" ~ recomputed ~ ") as primary_cells) as c on "
    ~ on | join(' and ') ~ " where p.sdc_present is null or c.sdc_present is null or (c.status = 'primary' and p." ~ q(value) ~ " is not null) "
    ~ "or (p." ~ q(value) ~ " is not null and abs(" ~ p ~ " - " ~ c ~ ") > 1e-9 * greatest(1, abs(" ~ c ~ "))) limit 1") -%}
{%- do run_query(adapter.dispatch('gate_drop_temporary_relation', 'sdc')('sdc_gate_cells')) -%}
{%- if found.rows -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " " ~ found.rows[0][1] ~ " (" ~ found.rows[0][0] ~ "); " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{#- the published cells are sdc's: with the columns that describe their codes, computed from the hierarchy of
    the cells' call, they must be the relation, column by column -#}
{%- set published = [] -%}
{%- for column in call['dims'] + [value, 'published_text'] -%}{%- do published.append(q(column)) -%}{%- endfor -%}
{%- do sdc.gate_compare(relation, sdc.gate_with_dimension_columns('select ' ~ published | join(', ') ~ ' from ' ~ content, call,
                                                                  cells_call=cells_record['call'], hierarchy=arguments.get('hierarchy')),
                        'suppression_published of ' ~ call['dims'] | join(', ') ~ ' (its dimension columns computed by sdc)', checker, path, content) -%}
{% endmacro %}


{#- a view of one's own that calls a function of the database's own: what it reads cannot be told (red team R3-1) -#}
{% macro gate_check_view_functions(relation, path, checker) %}
{%- set found = run_query(sdc.gate_view_dependencies(relation, 'pg_proc', "n.nspname || '.' || c.proname",
                                                         "c.pronamespace", "n.nspname not in ('pg_catalog', 'information_schema')")
                          ~ " order by 1 limit 1") -%}
{%- if found.rows -%}
  {{ exceptions.raise_compiler_error(checker ~ ": " ~ relation ~ " is a view that calls " ~ found.rows[0][0] ~ ", a function of the database's own: what it reads cannot be told; use PostgreSQL's built-in functions only; " ~ sdc.gate_refusing(checker, path)) }}
{%- endif -%}
{% endmacro %}


{#- a code as text for a full join's equality, NULL as chr(1) -#}
{% macro gate_join_code(column) -%}
coalesce(cast({{ column }} as {{ sdc.text_type() }}), chr(1))
{%- endmacro %}


{#- a relation for this session only: PostgreSQL's temporary table, Spark's temporary view -#}
{% macro default__gate_temporary_relation(name, sql) -%}
create temporary table {{ name }} as {{ sql }}
{%- endmacro %}
{% macro spark__gate_temporary_relation(name, sql) -%}
create or replace temporary view {{ name }} as {{ sql }}
{%- endmacro %}
{% macro default__gate_drop_temporary_relation(name) -%}
drop table {{ name }}
{%- endmacro %}
{% macro spark__gate_drop_temporary_relation(name) -%}
drop view {{ name }}
{%- endmacro %}


{#- the objects of catalog table `refclass` (pg_class, pg_proc) that a view's rewrite rule depends on, as c (n: their
    schema): select `columns` where `condition` -#}
{% macro gate_view_dependencies(relation, refclass, columns, namespace, condition) -%}
select distinct {{ columns }} from pg_catalog.pg_rewrite as r
join pg_catalog.pg_depend as d on d.classid = 'pg_catalog.pg_rewrite'::regclass and d.objid = r.oid
    and d.refclassid = 'pg_catalog.{{ refclass }}'::regclass
join pg_catalog.{{ refclass }} as c on c.oid = d.refobjid join pg_catalog.pg_namespace as n on n.oid = {{ namespace }}
join pg_catalog.pg_class as v on v.oid = r.ev_class join pg_catalog.pg_namespace as vn on vn.oid = v.relnamespace
where vn.nspname = {{ sdc.sql_string(relation.schema) }} and v.relname = {{ sdc.sql_string(relation.identifier) }}
    and {{ condition }}
{%- endmacro %}


{#- grant_published's recomputation of the ckm_count tables of one source from one pass over it per largest set of
    their dimensions (python/sdc/release/verify.py _shared_cells, the same rules): each call's count and key sum per
    cell of those dimensions, as ckm_count_counted and ckm_key_sum compute them, in a table of the session; a call
    sums its own cells from them (ckm_count's leaf_cells: counts and key sums are sums over records, the same in any
    grouping), its record key checks still reading the source. Only a plan: a call left out (weight, a column the
    source lacks) is recomputed from the microdata alone, and every relation is still compared with its
    recomputation. {source and call: its leaf cells} -#}
{% macro gate_shared_leaf_cells(steps, checker) %}
{%- set planned = {} -%}
{%- for relation, record, step, reads, path in steps if step == 'ckm_published' -%}
  {%- set audit = reads[0] -%}
  {%- set audit_record = sdc.build_record_of_relation(audit.database, audit.schema, audit.identifier) or {} -%}
  {%- set call = audit_record.get('call') -%}
  {%- if audit_record.get('step') == 'ckm_count' and sdc.gate_shareable(call) and (audit_record.get('reads') or []) | length == 1 -%}
    {%- set source = sdc.gate_named_relation(audit_record['reads'][0], audit, 'microdata relation', checker, path) -%}
    {%- set entry = planned.setdefault(source | string, {'source': source, 'calls': {}}) -%}
    {%- do entry['calls'].update({call | tojson: call}) -%}
  {%- endif -%}
{%- endfor -%}
{%- set found = {} -%}
{%- set made = [] -%}
{%- for name, entry in planned.items() -%}
  {%- set columns = adapter.get_columns_in_relation(entry['source']) | map(attribute='name') | list -%}
  {%- set sums = {} -%}
  {%- for key, call in entry['calls'].items() -%}
    {%- set counting = sdc.ckm_count_counted(call.get('fact')) -%}
    {%- set modulus = call.get('modulus') if call.get('modulus') is not none else sdc.setting('sdc_key_modulus') -%}
    {%- set read = call['dims'] + [counting.key_column] + ([call['fact']] if call.get('fact') is not none else []) -%}
    {%- if read | reject('in', columns) | list | length == 0 -%}
      {%- do sums.update({key: [counting.original, sdc.ckm_key_sum(sdc.sql_identifier(counting.key_column), modulus)]}) -%}
    {%- endif -%}
  {%- endfor -%}
  {#- the largest sets of dimensions (a call's set, sorted, under no other call's set: whatever their order); each
      call under the first that holds its dimensions -#}
  {%- set sets = [] -%}
  {%- for key in sums -%}
    {%- set dims = entry['calls'][key]['dims'] | sort -%}
    {%- if dims not in sets -%}{%- do sets.append(dims) -%}{%- endif -%}
  {%- endfor -%}
  {%- set largest = [] -%}
  {%- for dims in sets -%}
    {%- set covered = [] -%}
    {%- for other in sets if other | length > dims | length and dims | reject('in', other) | list | length == 0 -%}{%- do covered.append(other) -%}{%- endfor -%}
    {%- if not covered -%}{%- do largest.append(dims) -%}{%- endif -%}
  {%- endfor -%}
  {%- for dims in largest -%}
    {%- set keys = [] -%}
    {%- for key in sums -%}
      {%- set first = [] -%}
      {%- for candidate in largest if not first and entry['calls'][key]['dims'] | reject('in', candidate) | list | length == 0 -%}{%- do first.append(candidate) -%}{%- endfor -%}
      {%- if first and first[0] == dims -%}{%- do keys.append(key) -%}{%- endif -%}
    {%- endfor -%}
    {%- if keys -%}
      {%- set table = 'sdc_gate_leaf_cells_' ~ (made | length + 1) -%}
      {%- set measures = [] -%}
      {%- for key in keys if sums[key] not in measures -%}{%- do measures.append(sums[key]) -%}{%- endfor -%}
      {%- set listed = [] -%}
      {%- for dim in dims -%}{%- do listed.append(sdc.sql_identifier(dim)) -%}{%- endfor -%}
      {%- set selected = [] -%}
      {%- for measure in measures -%}
        {%- do selected.append(measure[0] ~ ' as sdc_original_' ~ loop.index ~ ', ' ~ measure[1] ~ ' as sdc_key_sum_' ~ loop.index) -%}
      {%- endfor -%}
      {%- do run_query('drop table if exists pg_temp.' ~ table ~ '; create temporary table ' ~ table ~ ' as select '
                       ~ listed | join(', ') ~ ', ' ~ selected | join(', ') ~ ' from ' ~ entry['source'] ~ ' group by '
                       ~ listed | join(', ')) -%}
      {%- do made.append(table) -%}
      {%- for key in keys -%}
        {%- set own = [] -%}
        {%- for dim in entry['calls'][key]['dims'] -%}{%- do own.append(sdc.sql_identifier(dim)) -%}{%- endfor -%}
        {%- set k = measures.index(sums[key]) + 1 -%}
        {%- do found.update({name ~ ' ' ~ key: '(select ' ~ own | join(', ') ~ ', sdc_original_' ~ k ~ ' as original, sdc_key_sum_'
                                                ~ k ~ ' as key_sum from pg_temp.' ~ table ~ ')'}) -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
{%- endfor -%}
{{ return({'leaf_cells': found, 'tables': made}) }}
{% endmacro %}

{#- a recorded ckm_count call whose leaf cells can be summed with others' (python/sdc/release/verify.py shareable) -#}
{% macro gate_shareable(call) %}
{%- if call is not mapping or 'leaf_cells' in call or call.get('weight') is not none -%}{{ return(false) }}{%- endif -%}
{%- set dims = call.get('dims') -%}
{%- if dims is string or dims is not iterable or dims | length == 0 -%}{{ return(false) }}{%- endif -%}
{%- set lowered = [] -%}
{%- for dim in dims -%}
  {%- if dim is not string or (dim | lower).startswith('sdc_') or (dim | lower) in ['original', 'key_sum'] or (dim | lower) in lowered -%}{{ return(false) }}{%- endif -%}
  {%- do lowered.append(dim | lower) -%}
{%- endfor -%}
{{ return(call.get('fact') is none or call.get('fact') is string) }}
{% endmacro %}
