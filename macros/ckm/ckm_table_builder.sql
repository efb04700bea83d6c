{#- ckm_table_builder: step 2 of the table builder, the PostgreSQL function over a cube that ckm_finest_cells built
    (the whole of it is described in ckm_finest_cells.sql; the macro's properties in ckm.yml). -#}
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
{%- set name = sdc.sql_text(sdc.one_line(function_name)) | replace('%', '%%') -%}
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
