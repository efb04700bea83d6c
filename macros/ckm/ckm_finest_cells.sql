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
