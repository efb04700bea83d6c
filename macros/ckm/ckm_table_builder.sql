{#
  An ad-hoc table builder for analysts without access to the microdata (PostgreSQL), as statistical offices'
  table builders (ABS TableBuilder, ONS's flexible table builder) offer: a function that returns the
  CKM-protected counts of any table over the published dimensions, with filters, computed from the finest cells'
  counts and key sums, which the analyst's role cannot read. The same cell gets the same count as in every
  dbt model (its key sum, and so its cell key and noise, is the sum over the same records).

  1. A model of the finest cells (an audit relation: it holds unperturbed counts):
       -- models/audit/persons_finest.sql
       {{ sdc.ckm_finest_cells(source('raw', 'persons'), ['state', 'sex', 'age_group']) }}
  2. The function and its request log, created after the build (on-run-end) for the analysts' roles:
       on-run-end: ["{{ sdc.ckm_table_builder(ref('persons_finest'), ['state', 'sex', 'age_group'], ['analyst'],
                                               ref('sdc_ptable')) }}"]
     (the ptable as an argument: a hook's refs must be visible to dbt as written)
  3. The analyst asks for a table: every cell of the cube over the dimensions asked for, filters as lists of
     codes per dimension (the filtered records only), totals labelled Total (var sdc_total_label):
       select * from main_audit.sdc_ckm_table(array['state', 'sex'], '{"age_group": ["18-29", "30-44"]}');
       -- codes text[] (in the order asked for), count bigint

  The function runs with its owner's rights (security definer, a fixed search_path): the analyst may execute
  it and nothing else in that schema. Every request is logged (role, time, dimensions, filters) to a table
  the analyst cannot read, and to the server log (RAISE LOG), which keeps it even when the analyst rolls the
  transaction back (the table's row goes with the rollback). Threat model: an analyst who sends overlapping requests can difference them; the
  CKM's answer is that the same cell always gets the same noise, so repeating a request or reaching a cell
  two ways gains nothing, while differencing two cells that differ by few records leaves two independent
  noises (the protection the ptable's variance gives). Very many small filtered tables can still narrow a
  record down: the request log lets the office see and limit that; thresholds (ckm_count threshold=) are not
  applied here.
#}
{% macro ckm_finest_cells(relation, dims, modulus=none) %}
{{- sdc.build_record_hook() -}}
{%- if dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_finest_cells: dims must be a non-empty list of column names") }}
{%- endif -%}
{%- do sdc.check_dimension_names(dims, sdc.setting('sdc_ckm_own_columns'), 'ckm_finest_cells',
      roles={sdc.setting('sdc_record_key_column'): 'record key column'}) -%}
{%- set rk = sdc.sql_identifier(sdc.setting('sdc_record_key_column')) -%}
{%- set modulus = modulus if modulus is not none else sdc.setting('sdc_key_modulus') -%}
{%- do sdc.ckm_check_modulus(relation, modulus, 'ckm_finest_cells') -%}
{%- if sdc.setting('sdc_check_record_keys') -%}
  {%- do sdc.ckm_check_record_keys(relation, sdc.setting('sdc_record_key_column'), none, modulus, 'ckm_finest_cells') -%}
{%- endif -%}
with finest_cells as (
    -- per combination of the dimensions' codes: the records and the exact sum of their keys
    select
        {%- for dim in dims %}
        cast({{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}) as {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        count(*) as original,
        {{ sdc.ckm_key_sum(rk, modulus) }} as key_sum,
        max({{ rk }}) as max_key
    from {{ relation }}
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
)

select
    {%- for dim in dims %}
    {{ sdc.sql_identifier(dim) }},
    {%- endfor %}
    original,
    key_sum
from finest_cells
where {{ sdc.ckm_fail_if('max_key >= ' ~ modulus,
    "'a record key in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ' is not below the modulus " ~ modulus ~ " the CKM uses'") }}
{% endmacro %}


{% macro ckm_table_builder(finest, dims, roles, ptable, modulus=none, function_name='sdc_ckm_table', log_table='sdc_ckm_table_requests') %}
  {{ return(adapter.dispatch('ckm_table_builder', 'sdc')(finest, dims, roles, ptable, modulus, function_name, log_table)) }}
{% endmacro %}

{% macro default__ckm_table_builder(finest, dims, roles, ptable, modulus, function_name, log_table) %}
  {{ exceptions.raise_compiler_error("ckm_table_builder: the table builder needs an engine with roles and security-definer functions (PostgreSQL); on DuckDB, analysts use sdc sql install") }}
{% endmacro %}

{% macro postgres__ckm_table_builder(finest, dims, roles, ptable, modulus, function_name, log_table) -%}
{%- if not execute -%}{{ return('select 1') }}{%- endif -%}
{%- if roles is string or roles | length == 0 or dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_table_builder: dims and roles must be non-empty lists") }}
{%- endif -%}
{%- set modulus = modulus if modulus is not none else sdc.setting('sdc_key_modulus') -%}
{%- set reuse_from = sdc.ckm_ptable_reuse_from(ptable, sdc.setting('sdc_ptable_reuse_from'), 'ckm_table_builder') -%}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}
{%- set wide = sdc.wide_integer_type() -%}
{%- set schema = sdc.sql_identifier(finest.schema) -%}
{%- set fn = schema ~ '.' ~ sdc.sql_identifier(function_name) -%}
{%- set log = schema ~ '.' ~ sdc.sql_identifier(log_table) -%}
{%- set grantees = [] -%}
{%- for role in roles -%}{%- do grantees.append(sdc.sql_identifier(role)) -%}{%- endfor -%}
{%- set allowed = [] -%}
{%- for dim in dims -%}{%- do allowed.append(sdc.sql_string(dim)) -%}{%- endfor -%}
create table if not exists {{ log }} (requested_by text, requested_at timestamptz, dims text[], filters jsonb);
revoke all on {{ log }} from public;
create or replace function {{ fn }}(dims text[], filters jsonb default '{}'::jsonb)
returns table(codes text[], count bigint)
language plpgsql security definer set search_path = pg_catalog, pg_temp as $sdc$
declare
    published text[] := array[{{ allowed | join(', ') }}];
    dim text;
    labels text;
    grouped text;
    conditions text := 'true';
begin
    if dims is null or cardinality(dims) = 0 then
        raise exception '{{ sdc.sql_text(function_name) }}: give the dimensions of the table, e.g. array[%]', published[1];
    end if;
    foreach dim in array dims loop
        if not dim = any(published) then
            raise exception '{{ sdc.sql_text(function_name) }}: % is not a published dimension (published: %)', dim, array_to_string(published, ', ');
        end if;
    end loop;
    if (select count(distinct d) from unnest(dims) as d) < cardinality(dims) then
        raise exception '{{ sdc.sql_text(function_name) }}: a dimension is asked for twice: %', array_to_string(dims, ', ');
    end if;
    if filters is null or jsonb_typeof(filters) <> 'object' then
        raise exception '{{ sdc.sql_text(function_name) }}: filters must be a JSON object of dimension -> list of codes';
    end if;
    for dim in select jsonb_object_keys(filters) loop
        if not dim = any(published) then
            raise exception '{{ sdc.sql_text(function_name) }}: filter on %, which is not a published dimension (published: %)', dim, array_to_string(published, ', ');
        end if;
        if jsonb_typeof(filters -> dim) <> 'array' then
            raise exception '{{ sdc.sql_text(function_name) }}: the filter on % must be a list of codes', dim;
        end if;
        conditions := conditions || format(' and %I = any(array(select jsonb_array_elements_text(%L::jsonb)))', dim, filters -> dim);
    end loop;
    -- the server log keeps the request even when the caller rolls its transaction back; the table, when it commits
    raise log '{{ sdc.sql_text(function_name) }} request by %: dims %, filters %', session_user, dims, filters;
    insert into {{ log }} values (session_user, now(), dims, filters);
    select string_agg(format('case when grouping(%I) = 1 then %L else %I end', d, {{ sdc.sql_string(sdc.setting('sdc_total_label')) }}, d), ', '),
           string_agg(format('%I', d), ', ')
      into labels, grouped from unnest(dims) as d;
    return query execute format($q$
        with paired_metrics as (
            select array[%s] as codes, coalesce(sum(original), 0) as original, coalesce(sum(key_sum), 0) as key_sum
            from {{ finest }} where %s group by cube (%s)
        ),
        cell_keys as (
            select codes, original, cast(key_sum %% {{ modulus }} as bigint) as cell_key_int,
                   {{ sdc.ckm_ptable_row('original', '(select max(i) from ' ~ ptable ~ ')', reuse_from) | replace('%', '%%') }} as ptable_row
            from paired_metrics
        ),
        ptable_intervals as (
            select i, v, cast(round(p_int_lb * {{ scale }}) as {{ wide }}) * {{ modulus }} as lb_scaled,
                   cast(round(p_int_ub * {{ scale }}) as {{ wide }}) * {{ modulus }} as ub_scaled
            from {{ ptable }}
        )
        select cast(c.codes as text[]), cast(case
            when c.original = 0 then 0
            when t.v is null then {{ sdc.engine_function('sdc_raise_error') }}('{{ sdc.sql_text(function_name) }}: the perturbation table has no interval for a cell of ' || c.original || ' records')::int
            else c.original + t.v end as bigint)
        from cell_keys as c
        left join ptable_intervals as t
            on t.i = c.ptable_row and {{ sdc.ckm_interval_match('c.cell_key_int', 't.lb_scaled', 't.ub_scaled') }}
        $q$, labels, conditions, grouped);
end
$sdc$;
revoke all on function {{ fn }}(text[], jsonb) from public;
grant usage on schema {{ schema }} to {{ grantees | join(', ') }};
grant execute on function {{ fn }}(text[], jsonb) to {{ grantees | join(', ') }}
{%- endmacro %}
