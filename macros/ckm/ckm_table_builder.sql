{#
  An ad-hoc table builder for analysts without access to the microdata (PostgreSQL), as statistical offices'
  table builders (ABS TableBuilder, ONS's flexible table builder) offer, restricted as theirs are: every cell it
  can ever return is a cell of ONE fixed cube, built by dbt and perturbed once; a request only chooses which of
  those cells it sees. So any set of requests, however many and however combined, reveals nothing beyond the
  cube's noisy cells (issue 25, red team 1: with free code filters every filtered subset was a new cell with
  independent noise, and least squares over 1,500 requests gave every finest cell's original).

  1. A model of the cube (an audit relation: it holds the unperturbed counts beside the published ones):
       -- models/audit/persons_cube.sql
       {{ sdc.ckm_finest_cells(source('raw', 'persons'), ['state', 'sex', 'age_group'], hierarchy=ref('sdc_hierarchies')) }}
     It is ckm_count over the dimensions with every total and the hierarchy levels declared for them
     (totals='cube'), complete (every cell of the frame, empty ones as 0 through the ptable, so a published 0
     does not tell an empty cell from a small one: red team 2), with ckm_count's checks (keys, modulus, NULL
     codes, a code equal to a total's label: red team 18) and its codes (a hierarchy's total carries its root
     code, e.g. All, as in every dbt model over that hierarchy). threshold= as ckm_count's (NULL below it).
     The hierarchy must declare every dimension's codes (a flat one: its total, e.g. Total, and its codes below
     it): without it the frame's codes would be those of the records, and a code shown with every count 0
     would still say that a record has it (red team R3-11).
  2. The function, its request log and its budgets, created after the build (on-run-end) for the analysts' roles:
       on-run-end: ["{{ sdc.ckm_table_builder(ref('persons_cube'), ['state', 'sex', 'age_group'], ['analyst'],
                                               hierarchy=ref('sdc_hierarchies'), budget=1000, min_population=50) }}"]
     hierarchy  the cube's code list: it must declare every dimension, and the cube's codes must be exactly
                those it declares (the cube built with the same hierarchy=); a cube without its grand total
                under its root codes stops the hook
     budget     requests per role (default 10000), counted by a sequence per role inside the function: a
                request refused or rolled back counts too; beyond it every request is refused. The office
                gives more with `alter sequence <schema>.<log_table>_budget_<md5 of the role, 12> restart`
     min_population  a request whose population (the cube cell with each dimension asked for at its filter's
                code when the filter keeps one code, else at its total) has a perturbed count below it is
                refused; default none
     ptable, modulus  not used (the cube carries its counts: give them to ckm_finest_cells); kept so that
                earlier hooks keep working
  3. The analyst asks for a table: the cells of the cube with the dimensions asked for at any of their codes
     (leaves, hierarchy levels and total) and every other dimension at its total. Filters, lists of codes per
     dimension asked for, keep only the rows with those codes; a filter on a dimension not asked for would make
     a new cell (the sum over a subset of its codes) and is refused:
       select * from main_audit.sdc_ckm_table(array['state', 'sex'], '{"state": ["NSW", "VIC"]}');
       -- codes text[] (in the order asked for), count bigint

  The function runs with its owner's rights (security definer, a fixed search_path): the analyst may execute
  it and nothing else in that schema. It refuses to answer when the cube was built from another load of a raw
  table than the load log's last (red team 20: published relations of a new load beside a builder of the old).
  The hook stops when the cube was built with another ptable than the CKM tables tagged for publication (the
  release's rule of one value per cell, grant_published's gate_release: red team R3-10).
  Every request is logged to the server log (RAISE LOG, kept when the analyst rolls back) and to a table the
  analyst cannot read (role, time, dimensions, filters, request number from a sequence: a rolled-back request
  leaves a gap); analyst text reaches log and error lines only as JSON strings (a newline is \n: red team 21).
  PostgreSQL itself logs a statement's text raw after its errors and LOG lines (STATEMENT, at the default
  log_min_error_statement = error): the function sets that parameter to panic for its own lines where its
  owner may (a superuser, or GRANT SET ON PARAMETER log_min_error_statement on PostgreSQL 15); otherwise the
  hook says so (red team R3-9).
#}
{% macro ckm_finest_cells(relation, dims, modulus=none, hierarchy=none, ptable=none, threshold=none) %}
{%- if dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_finest_cells: dims must be a non-empty list of column names") }}
{%- endif -%}
{%- set step_sql -%}
select
    {%- for dim in dims %}
    {{ sdc.sql_identifier(dim) }},
    {%- endfor %}
    original,
    key_sum,
    {{ sdc.sql_identifier('count') }}
from (
{{ sdc.ckm_count(relation, dims, totals='cube', hierarchy=hierarchy, ptable=ptable, modulus=modulus, complete=true, threshold=threshold) }}
) as cube
{%- endset -%}
{#- one step, so that the cube's build record names its ptable: the builder's hook compares it with the release's -#}
{#- the call with its defaults resolved: the builder's hook computes the cube again from it (macros/_gate_verify.sql) -#}
{%- set call = {'dims': dims, 'modulus': modulus if modulus is not none else sdc.setting('sdc_key_modulus'), 'hierarchy': hierarchy,
    'ptable': ptable if ptable is not none else ref('sdc_ptable'), 'threshold': threshold} -%}
{{ sdc.step('ckm_finest_cells', [relation], step_sql, {'ptables': sdc.step_ptables(ptable if ptable is not none else ref('sdc_ptable'), none), 'call': sdc.step_call(call)}) }}
{% endmacro %}


{% macro ckm_table_builder(finest, dims, roles, ptable=none, modulus=none, function_name='sdc_ckm_table', log_table='sdc_ckm_table_requests', hierarchy=none, budget=10000, min_population=none) %}
  {{ return(adapter.dispatch('ckm_table_builder', 'sdc')(finest, dims, roles, function_name, log_table, hierarchy, budget, min_population)) }}
{% endmacro %}

{% macro default__ckm_table_builder(finest, dims, roles, function_name, log_table, hierarchy, budget, min_population) %}
  {{ exceptions.raise_compiler_error("ckm_table_builder: the table builder needs an engine with roles and security-definer functions (PostgreSQL); on DuckDB, analysts use sdc sql install") }}
{% endmacro %}

{% macro postgres__ckm_table_builder(finest, dims, roles, function_name, log_table, hierarchy, budget, min_population) -%}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- if roles is string or roles | length == 0 or dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: dims and roles must be non-empty lists") }}
{%- endif -%}
{%- if budget is not number or budget != budget | int or budget < 1 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: budget must be a whole number of requests of at least 1, got " ~ budget) }}
{%- endif -%}
{%- if min_population is not none and (min_population is not number or min_population != min_population | int or min_population < 0) -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: min_population must be a whole number of at least 0, got " ~ min_population) }}
{%- endif -%}
{#- a relation not built yet (a run of part of the project) is named, not a database error (new-user N7) -#}
{%- for what, relation in [('cells', finest), ('hierarchy', hierarchy)] if relation is not none -%}
  {%- if adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is none -%}
    {{ exceptions.raise_compiler_error("ckm_table_builder: the " ~ what ~ " " ~ relation ~ " do" ~ ("" if what == 'cells' else "es") ~ " not exist in the database yet: build them first (dbt build)") }}
  {%- endif -%}
{%- endfor -%}
{%- set cells = sdc.sql_identifier(finest.schema) ~ '.' ~ sdc.sql_identifier(finest.identifier) -%}
{%- set record = sdc.build_record_of_relation(finest.database, finest.schema, finest.identifier) -%}
{%- if (record or {}).get('step') != 'ckm_finest_cells' -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ finest ~ " has no build record of ckm_finest_cells (it is not one sdc.ckm_finest_cells call, an older sdc built it, or its description replaced the record); build it with sdc.ckm_finest_cells") }}
{%- endif -%}
{%- do sdc.ckm_table_builder_check_declared(dims, hierarchy) -%}
{%- set roots = sdc.ckm_table_builder_roots(finest, cells, dims, hierarchy) -%}
{%- do sdc.ckm_table_builder_check_codes(cells, dims, hierarchy) -%}
{%- do sdc.ckm_table_builder_check_loads(finest, record) -%}
{#- the cube holds what ckm_finest_cells gives from the microdata, whatever a hook did to it (red team R3-1, PG3) -#}
{%- do sdc.ckm_table_builder_verify_cube(finest, record) -%}
{#- the release's rule of one ptable, with the cube as one more CKM table beside the tagged ones (red team R3-10) -#}
{%- set release = sdc.gate_release('ckm_table_builder') -%}
{%- do release['behind']['audits'].append([finest, record]) -%}
{%- do sdc.gate_check_one_value_per_cell(release['behind'], 'ckm_table_builder') -%}
{%- set quiet = sdc.ckm_table_builder_may_set_log_min_error_statement() -%}
{%- if not quiet -%}
  {%- do log("ckm_table_builder: the role " ~ target.user ~ " may not set log_min_error_statement, so the server log's STATEMENT lines after a request and after a refusal carry the analyst's raw text; as a superuser, GRANT SET ON PARAMETER log_min_error_statement TO " ~ target.user ~ " (PostgreSQL 15) to leave it out", info=true) -%}
{%- endif -%}
{%- set schema = sdc.sql_identifier(finest.schema) -%}
{%- set fn = schema ~ '.' ~ sdc.sql_identifier(function_name) -%}
{#- the function's name in its messages: RAISE formats them (% is a placeholder); one line -#}
{%- set name = sdc.sql_text(function_name | replace('\n', '\\n') | replace('\r', '\\r')) | replace('%', '%%') -%}
{%- set log = schema ~ '.' ~ sdc.sql_identifier(log_table) -%}
{%- set request_numbers = schema ~ '.' ~ sdc.sql_identifier(log_table ~ '_no') -%}
{%- set load_log = sdc.sql_identifier(sdc.setting('sdc_raw_schema')) ~ '.' ~ sdc.sql_identifier(sdc.setting('sdc_load_log')) -%}
{%- set grantees = [] -%}
{%- set budgets = [] -%}
{%- for role in roles -%}
  {%- do grantees.append(sdc.sql_identifier(role)) -%}
  {%- do budgets.append((role, schema ~ '.' ~ sdc.sql_identifier(log_table ~ '_budget_' ~ local_md5(role)[:12]))) -%}
{%- endfor -%}
{%- set published = [] -%}
{%- for dim in dims -%}{%- do published.append(sdc.sql_string(dim)) -%}{%- endfor -%}
{%- set body -%}
declare
    published text[] := cast(array[{{ published | join(', ') }}] as text[]);
    roots jsonb := cast({{ sdc.sql_string(tojson(roots)) }} as jsonb);
    cells text := {{ sdc.sql_string(cells) }};
    request_no bigint := nextval({{ sdc.sql_string(request_numbers) }});
    used bigint;
    dim text;
    code text;
    shown text;
    conditions text := '';
    population_cell text := '';
    population bigint;
    recorded jsonb;
    loaded text;
    known boolean;
begin
    -- analyst text only as JSON (a newline is \n): it cannot write a line of the server log
    raise log '{{ name }} request % by %: dims %, filters %', request_no, to_jsonb(cast(session_user as text)),
        coalesce(cast(to_jsonb(dims) as text), 'null'), coalesce(cast(filters as text), 'null');
    -- the budget: every request counts, refused and rolled-back ones too (a sequence does not roll back)
    {%- for role, sequence in budgets %}
    if pg_has_role(session_user, {{ sdc.sql_string(role) }}, 'member') then
        used := nextval({{ sdc.sql_string(sequence) }});
        if used > {{ budget }} then
            raise exception '{{ name }}: role % has spent its budget of {{ budget }} requests', to_jsonb(cast({{ sdc.sql_string(role) }} as text));
        end if;
    end if;
    {%- endfor %}
    insert into {{ log }} (requested_by, requested_at, dims, filters, request_no)
        values (session_user, now(), dims, filters, request_no);
    -- the cube's cells from the load the log shows last (red team 20)
    recorded := case when obj_description(cast(cells as regclass), 'pg_class') like '{"sdc_build"%'
                     then cast(obj_description(cast(cells as regclass), 'pg_class') as jsonb) -> 'sdc_build' -> 'loads' end;
    if recorded is null then
        raise exception '{{ name }}: the cells have no build record; rebuild them with dbt';
    end if;
    for dim in select jsonb_object_keys(recorded) loop
        select cast(loaded_at as varchar) into loaded from {{ load_log }}
         where lower(table_name) = substr(dim, {{ sdc.setting('sdc_raw_schema') | length + 2 }});
        if recorded -> dim is distinct from jsonb_build_array(loaded) then
            raise exception '{{ name }}: the cells were built from another load of % than its last (%); rebuild them with dbt', dim, coalesce(loaded, 'none');
        end if;
    end loop;
    if dims is null or cardinality(dims) = 0 then
        raise exception '{{ name }}: give the dimensions of the table, e.g. array[%]', to_jsonb(published[1]);
    end if;
    if array_ndims(dims) <> 1 then
        raise exception '{{ name }}: give the dimensions as a one-dimensional list';
    end if;
    foreach dim in array dims loop
        if dim is null or not dim = any(published) then
            raise exception '{{ name }}: % is not a published dimension (published: %)', coalesce(cast(to_jsonb(dim) as text), 'NULL'), to_jsonb(published);
        end if;
    end loop;
    if (select count(distinct d) from unnest(dims) as d) < cardinality(dims) then
        raise exception '{{ name }}: a dimension is asked for twice: %', to_jsonb(dims);
    end if;
    if filters is null or jsonb_typeof(filters) <> 'object' then
        raise exception '{{ name }}: filters must be a JSON object of dimension -> list of codes';
    end if;
    for dim in select jsonb_object_keys(filters) loop
        if not dim = any(published) then
            raise exception '{{ name }}: filter on %, which is not a published dimension (published: %)', to_jsonb(dim), to_jsonb(published);
        end if;
        if not dim = any(dims) then
            raise exception '{{ name }}: filter on %, which is not asked for: a filter only chooses rows of the table, it does not sum a subset of codes; ask for % too', to_jsonb(dim), to_jsonb(dim);
        end if;
        if jsonb_typeof(filters -> dim) <> 'array' then
            raise exception '{{ name }}: the filter on % must be a list of codes', to_jsonb(dim);
        end if;
        -- a code the table does not have is named, not answered as a population below the minimum (N7); the
        -- cube holds every declared code, so this tells nothing the code lists do not
        for code in select jsonb_array_elements_text(filters -> dim) loop
            execute format('select exists (select 1 from %s where cast(%I as text) = %L)', cells, dim, code) into known;
            if not known then
                raise exception '{{ name }}: unknown code % of %: not a code of the published table', to_jsonb(code), to_jsonb(dim);
            end if;
        end loop;
        conditions := conditions || format(' and %I = any(array(select jsonb_array_elements_text(%L::jsonb)))', dim, filters -> dim);
    end loop;
    -- every dimension not asked for at its total; the population: a one-code filter's code, else the total
    foreach dim in array published loop
        code := roots ->> dim;
        if not dim = any(dims) then
            conditions := conditions || format(' and %I = %L', dim, code);
        elsif jsonb_typeof(filters -> dim) = 'array' and jsonb_array_length(filters -> dim) = 1 then
            code := filters -> dim ->> 0;
        end if;
        population_cell := population_cell || format(' and %I = %L', dim, code);
    end loop;
    {%- if min_population is not none %}
    execute format('select %I from %s where true%s', 'count', cells, population_cell) into population;
    if population is null or population < {{ min_population }} then
        raise exception '{{ name }}: the table''s population is below the minimum of {{ min_population }} records; ask for a larger one';
    end if;
    {%- endif %}
    select string_agg(format('cast(%I as text)', d), ', ' order by n) into shown from unnest(dims) with ordinality as u(d, n);
    return query execute format('select cast(array[%s] as text[]), cast(%I as bigint) from %s where true%s order by 1',
                                shown, 'count', cells, conditions);
end
{%- endset -%}
{%- if '$sdc$' in body -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: a dimension, role or relation name contains $sdc$, which would end the function's body") }}
{%- endif -%}
create table if not exists {{ log }} (requested_by text, requested_at timestamptz, dims text[], filters jsonb);
alter table {{ log }} add column if not exists request_no bigint;
revoke all on {{ log }} from public;
create sequence if not exists {{ request_numbers }};
revoke all on sequence {{ request_numbers }} from public;
{%- for role, sequence in budgets %}
create sequence if not exists {{ sequence }};
revoke all on sequence {{ sequence }} from public;
{%- endfor %}
create or replace function {{ fn }}(dims text[], filters jsonb default '{}'::jsonb)
returns table(codes text[], count bigint)
language plpgsql security definer set search_path = pg_catalog, pg_temp
{#- PostgreSQL logs the statement's text after an error or LOG line (log_min_error_statement = error): the
    analyst's text unquoted, whose further lines read like lines of the log (red team R3-9) -#}
{%- if quiet %} set log_min_error_statement = panic{% endif %} as $sdc$
{{ body }}
$sdc$;
revoke all on function {{ fn }}(text[], jsonb) from public;
grant usage on schema {{ schema }} to {{ grantees | join(', ') }};
grant execute on function {{ fn }}(text[], jsonb) to {{ grantees | join(', ') }}
{%- endmacro %}


{#- the code of each dimension's total (its hierarchy's root, else var sdc_total_label); the hook stops unless
    the relation is a cube over the dimensions with those totals (ckm_finest_cells with the same hierarchy) -#}
{% macro ckm_table_builder_roots(finest, cells, dims, hierarchy) %}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, 'cube') -%}
{%- set roots = {} -%}
{%- for dim in dims -%}{%- do roots.update({dim: levels[dim].root}) -%}{%- endfor -%}
{%- set columns = adapter.get_columns_in_relation(finest) | map(attribute='name') | list -%}
{%- for column in dims + ['count'] if column not in columns -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ cells ~ " has no column " ~ column ~ "; build it with sdc.ckm_finest_cells over the same dimensions") }}
{%- endfor -%}
{%- set query -%}
select count(*) from {{ cells }} where {% for dim in dims %}{{ sdc.sql_identifier(dim) }} = {{ sdc.sql_string(roots[dim]) }}{{ ' and ' if not loop.last }}{% endfor %}
{%- endset -%}
{%- if run_query(query).rows[0][0] != 1 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ cells ~ " has no grand total (" ~ (roots.values() | join(', ')) ~ "); build it with sdc.ckm_finest_cells over the same dimensions and hierarchy= as the builder") }}
{%- endif -%}
{{ return(roots) }}
{% endmacro %}


{#- red team 20: the hook stops when the cube was built from another load than the load log's last -#}
{% macro ckm_table_builder_check_loads(finest, record) %}
{%- set log = sdc.build_record_load_log() -%}
{%- set raw = sdc.setting('sdc_raw_schema') | lower -%}
{%- for table, loads in record['loads'].items() -%}
  {%- if loads != [log.get(table[raw | length + 1:])] -%}
    {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ finest ~ " was built from another load of " ~ table ~ " (" ~ (loads | join(', ')) ~ ") than its last (" ~ log.get(table[raw | length + 1:], 'none') ~ "); rebuild it") }}
  {%- endif -%}
{%- endfor -%}
{% endmacro %}


{#- red team R3-11: without a code list a dimension's codes in the cube are those of its records, so a code shown
    with every count 0 still says that a record has it; declared codes say nothing about records -#}
{% macro ckm_table_builder_check_declared(dims, hierarchy) %}
{%- set declared = [] if hierarchy is none else run_query('select distinct cast(dimension as ' ~ sdc.text_type() ~ ') from ' ~ hierarchy).columns[0].values() | list -%}
{%- set undeclared = dims | reject('in', declared) | list -%}
{%- if undeclared -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: no code list (hierarchy=) declares the codes of " ~ undeclared | join(', ') ~ ": the cube's codes would be those of the records, so a code whose every cell is 0 would still say that a record has it. Give hierarchy= a relation (dimension, code, parent) with every dimension, a flat one as its total and its codes below it, and build the cube with the same") }}
{%- endif -%}
{% endmacro %}


{#- the cube's codes are those its code list declares: a cube built without hierarchy= (its codes from the
    records) or over another code list stops the hook, naming up to 5 codes that differ -#}
{% macro ckm_table_builder_check_codes(cells, dims, hierarchy) %}
{%- set text = sdc.text_type() -%}
{%- set query -%}
with in_cells as (
    {%- for dim in dims %}
    {{ 'union ' if not loop.first }}select {{ sdc.sql_string(dim) }} as dimension, cast({{ sdc.sql_identifier(dim) }} as {{ text }}) as code from {{ cells }}
    {%- endfor %}
),
declared as (
    select cast(dimension as {{ text }}) as dimension, cast(code as {{ text }}) as code from {{ hierarchy }}
    where cast(dimension as {{ text }}) in ({% for dim in dims %}{{ sdc.sql_string(dim) }}{{ ', ' if not loop.last }}{% endfor %})
)
select * from (
    select dimension, code, 'not declared' as found from (select * from in_cells except select * from declared) as extra
    union all
    select dimension, code, 'declared, not in the cells' from (select * from declared except select * from in_cells) as missing
) as differences
order by 1, 2
limit 5
{%- endset -%}
{%- set differences = run_query(query).rows -%}
{%- if differences | length > 0 -%}
  {%- set shown = [] -%}
  {%- for row in differences -%}{%- do shown.append(row[0] ~ ' ' ~ row[1] ~ ': ' ~ row[2]) -%}{%- endfor -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: the codes of " ~ cells ~ " are not those its code list declares (" ~ shown | join('; ') ~ "); build it with sdc.ckm_finest_cells(..., hierarchy=) the builder's code list") }}
{%- endif -%}
{% endmacro %}


{#- whether the function's owner (the dbt role) may give the function log_min_error_statement: a superuser, or on
    PostgreSQL 15 a role granted SET on that parameter -#}
{% macro ckm_table_builder_may_set_log_min_error_statement() %}
{%- set version = run_query("select cast(current_setting('server_version_num') as integer)").rows[0][0] -%}
{%- if version >= 150000 -%}
  {{ return(run_query("select has_parameter_privilege('log_min_error_statement', 'SET')").rows[0][0]) }}
{%- endif -%}
{{ return(run_query("select rolsuper from pg_catalog.pg_roles where rolname = current_user").rows[0][0]) }}
{% endmacro %}


{#- the cube against sdc's own recomputation of its ckm_finest_cells call (macros/_gate_verify.sql) -#}
{% macro ckm_table_builder_verify_cube(finest, record) %}
{%- set call = record.get('call') -%}
{%- if call is not mapping or (record.get('reads') or []) | length != 1 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: " ~ finest ~ " has a build record without the ckm_finest_cells call that sdc can compute again: run dbt build (with this sdc)") }}
{%- endif -%}
{%- set path = [finest | string] -%}
{%- set source = sdc.gate_named_relation(record['reads'][0], finest, 'microdata relation', 'ckm_table_builder', path) -%}
{%- set arguments = sdc.gate_call_arguments(call, finest, 'ckm_table_builder', path) -%}
{%- do sdc.gate_check_count_ptable(arguments.get('ptable'), finest, 'ckm_table_builder', path) -%}
{%- do sdc.gate_compare(finest, sdc.ckm_finest_cells(source, call['dims'], **arguments),
                        'ckm_finest_cells over ' ~ source ~ ' (recomputed from the microdata)', 'ckm_table_builder', path) -%}
{% endmacro %}
