{#
  ckm_sum: a magnitude table (sums of a numeric column) or a weighted count, protected by the Cell Key Method
  as τ-Argus and cellKey do it (reference ckm.md §3.5; python/sdc/ckm/reference.py is the same method
  written out for one cell). Every subtotal, its top contributions included, is computed from the microdata:
  the leaf cells keep their largest contributions, and a subtotal takes the largest of its leaves' lists,
  which are the largest of its records. Sums are exact (contributions as decimal(18, 6), so |contribution| <
  10^12; their sums decimal(38, 6)), so a cell has the
  same value, key and noise in every table. Its measures come out unrounded; ckm_published rounds them as they
  are published (digits=, default var sdc_published_digits: whole units).

  Measures (one noise chain each, one cell key for all):
    value            sum of `value`                        (value given)
    weighted_value   sum of value * weight                 (value and weight given)
    weighted_count   sum of weight, the weighted count     (weight only)
  A contribution is a record's part of the measure; a contributor a record whose contribution is not 0.

  For each measure and component j = 1..K (K = top_k for type top_contr, else 1; no more than the cell's
  contributors), with x the cell value so far:
    x_j   magnifier: the j-th largest |contribution| (top_contr), |x| / sum of weights (mean), largest minus
          smallest value over the cell's records, zeros included (range: of the unweighted values, also for
          weighted_value, as both tools; tauargus of their absolute values, cellkey signed), |x| (sum). For
          weighted_value the contributions are ranked as τ-Argus and cellKey rank them: by the record's
          |value| (unweighted), a tie by the larger weight, and x_j is the j-th record's |value x weight|
    δ_j   x_j ε_j m(x_j) (flex or simple multiplier); 1 below the separation point (small_cells table, j = 1
          only); |x| when |x| < δ_j
    a     |x / δ_j|, V = the ptable's noise at ratio a (interpolated between rows) for the j-th scrambled key;
          with even/odd tables, the one of the parity of the cell's records, zeros included (as both tools)
    x     x + sign(x) δ_j sign(V) (μ + |V|), μ = mu_c for sensitive cells (τ-Argus: component 1 only, here
          also below the separation point); where V = 0 in a sensitive cell, sign(V) is +1 for an even
          component key and -1 for an odd one; no sign change
  Zero stays zero. The presets tauargus and cellkey differ where the tools do (params: see
  python/sdc/ckm/params.py, which checks the same names).

  Arguments
    relation   microdata loaded by `sdc load` (record key column rk)
    dims       dimension columns
    value      numeric column to sum; none with a weight: the weighted count
    weight     positive weight column; none: unweighted
    fact       0/1 column: only the records where it is 1 enter the table (ckm_count's weighted count of a
               fact); none: every record
    params     dict of magnitude parameters (preset, type, top_k, multiplier, mu_c, sensitive, same_key,
               use_zero_rkeys, version_keys, separation), default var sdc_magnitude_params; version_keys
               (default true): the cell key sums each record's key for the version of its contributions (the
               md5 of its record key, weight and values, mod M), so a revised value or weight gets new noise
               in every cell it is in, where the record keys themselves (false, as τ-Argus and cellKey) kept
               the noise and published the exact revision (new user D11)
    ptable     the magnitude ptable relation (columns i, v, p_int_lb, p_int_ub, type), default ref('sdc_nums_ptable')
    totals, hierarchy, modulus, check_keys, check_cell_keys, complete: as ckm_count (complete: empty cells of
               the frame have the value 0; the cell keys checked are those of the cells with contributors)
    rules_preset  boundary semantics of the `sensitive` rules (as suppression_primary), default handbook
    audit      false (default): dimensions and measures only; true: also originals, cell key, sensitivity and
               each component's δ and noise (never publish these)
    caller_name   the macro named in error messages (ckm_count calls ckm_sum for a weighted count)
    zero_with_counts  a count ptable (e.g. ref('sdc_ptable')), default none: a cell
               whose count ckm_count publishes as 0 with it (same records, same key, same noise) has every
               magnitude published as 0. Beside a count table of the same cells a magnitude that is not 0 would
               tell a false zero from an empty cell, and so that the cell has records (red team R3-3); `sdc
               publish` refuses that pair otherwise. A relation (not text), with the columns of a count ptable
               (not the magnitude ptable); it is the step's count ptable in its build record, so a release whose
               count tables use another ptable is refused (its zeros would not be theirs)
#}
{% macro ckm_sum(relation, dims, value=none, weight=none, fact=none, params=none, ptable=none, totals='cube', hierarchy=none, modulus=none, check_keys=none, rules_preset='handbook', audit=false, complete=none, caller_name='ckm_sum', check_cell_keys=none, zero_with_counts=none) %}
{{- sdc.build_record_hook() -}}
{%- set step_sql -%}
{%- set p = sdc.ckm_magnitude_params(params if params is not none else var('sdc_magnitude_params', none), caller_name, 'params=' if params is not none else 'var sdc_magnitude_params') -%}
{%- if totals not in ['cube', 'rollup', 'none'] -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": totals must be 'cube', 'rollup' or 'none', got '" ~ totals ~ "'") }}
{%- endif -%}
{%- if dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": dims must be a non-empty list of column names") }}
{%- endif -%}
{%- if value is none and weight is none -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": give value= (a numeric column to sum) or weight= (a weighted count)") }}
{%- endif -%}
{%- set ptable = ptable if ptable is not none else ref('sdc_nums_ptable') -%}
{%- set modulus = modulus if modulus is not none else sdc.setting('sdc_key_modulus') -%}
{%- set digits = (modulus | string | length) - 1 -%}
{%- if modulus is not number or modulus < 10 or 10 ** digits != modulus -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the magnitude Cell Key Method scrambles the decimal digits of the cell key, so the record keys' modulus must be a power of 10 (10^8: 8-digit keys); got " ~ modulus ~ ". Such keys of another modulus cannot be converted: load the microdata again with sdc load --modulus 100000000 into a new table (stored keys are never regenerated)") }}
{%- endif -%}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}
{%- set rk = sdc.setting('sdc_record_key_column') -%}
{%- set wide = sdc.wide_integer_type() -%}
{%- set complete = complete if complete is not none else sdc.setting('sdc_complete_tables') -%}
{%- set count_ptable = zero_with_counts -%}
{%- if count_ptable is not none -%}
  {%- do sdc.ckm_check_count_ptable(count_ptable, 'zero_with_counts', caller_name) -%}
  {%- set count_max_i = sdc.ckm_ptable_max_i(count_ptable, caller_name) -%}
  {%- set count_reuse_from = sdc.ckm_ptable_reuse_from(count_ptable, sdc.setting('sdc_ptable_reuse_from'), caller_name) -%}
{%- endif -%}
{%- set measures = [] -%}
{%- if value is not none -%}{%- do measures.append({'name': 'value', 'expr': sdc.sql_identifier(value), 'label': 'column ' ~ value}) -%}{%- endif -%}
{%- if value is not none and weight is not none -%}
  {%- do measures.append({'name': 'weighted_value', 'expr': sdc.sql_identifier(value) ~ ' * ' ~ sdc.sql_identifier(weight), 'label': value ~ ' x ' ~ weight, 'ranked_by': 'value'}) -%}
{%- elif weight is not none -%}
  {%- do measures.append({'name': 'weighted_count', 'expr': sdc.sql_identifier(weight), 'label': 'column ' ~ weight}) -%}
{%- endif -%}
{%- set roles = {rk: 'record key column'} -%}
{%- if value is not none -%}{%- do roles.update({value: 'value column'}) -%}{%- endif -%}
{%- if weight is not none -%}{%- do roles.update({weight: 'weight column'}) -%}{%- endif -%}
{%- if fact is not none -%}{%- do roles.update({fact: 'fact column'}) -%}{%- endif -%}
{%- do sdc.check_dimension_names(dims, sdc.setting('sdc_ckm_sum_own_columns'), caller_name, roles=roles, top_contributions=true, patterns=sdc.setting('sdc_ckm_sum_own_patterns')) -%}
{%- do sdc.ckm_check_columns(relation, dims, fact, caller_name, {rk: 'record key column', value: 'value column', weight: 'weight column'}) -%}
{%- do sdc.ckm_check_modulus(relation, modulus, caller_name, power_of_ten=true) -%}
{%- do sdc.ckm_sum_check_numeric(relation, [value, weight], caller_name) -%}
{%- set check_keys = check_keys if check_keys is not none else sdc.setting('sdc_check_record_keys') -%}
{#- keys the record key check has seen are all in [0, M); else the query itself looks for a key at or above M -#}
{%- set check_key_range = not (check_keys and sdc.ckm_check_record_keys(relation, rk, none, modulus, caller_name)) -%}
{%- set check_cell_keys = check_cell_keys if check_cell_keys is not none else check_keys -%}
{%- set grid = sdc.ckm_sum_ptable_grid(ptable, p, caller_name) -%}
{%- do sdc.ckm_sum_check_sensitivity_floor(p, caller_name) -%}
{%- set z_s = grid.separation_point -%}
{%- set top_n = [p.top_k, 2] | max -%}
{%- for rule in p.sensitive if rule.startswith('nk:') -%}
  {%- set top_n = [top_n, rule[3:].split(',')[0] | int] | max -%}
{%- endfor -%}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, totals) -%}
{%- set sets = sdc.ckm_grouping_sets(dims, levels, totals) -%}
{%- set K = p.top_k if p.type == 'top_contr' else 1 -%}
{%- set first = measures[0].name -%}

with records as (
    -- the microdata's contributions (with a fact, of its records only), as exact decimals once checked
    select
        {%- for dim in dims %}
        m.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        m.{{ sdc.sql_identifier(rk) }} as record_key,
        {%- if weight is not none %}
        cast(m.{{ sdc.sql_identifier(weight) }} as {{ sdc.double_type() }}) as raw_weight,
        {%- endif %}
        {%- for measure in measures %}
        cast({{ measure.expr }} as {{ sdc.double_type() }}) as raw_{{ measure.name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ relation }} as m
    {%- if fact is not none %}
    where m.{{ sdc.sql_identifier(fact) }} = 1
    {%- endif %}
),

checked_records as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        record_key,
        {%- if weight is not none %}
        cast(raw_weight as decimal(18, 6)) as weight,
        {%- endif %}
        {%- for measure in measures %}
        cast(raw_{{ measure.name }} as decimal(18, 6)) as c_{{ measure.name }},
        -- the contribution as a double, for ranking and the magnifiers: the largest of a set do not depend on
        -- the order (the decimal is this number rounded to 6 decimals)
        raw_{{ measure.name }} as d_{{ measure.name }}{{ ',' if p.version_keys or not loop.last }}
        {%- endfor %}
        {%- if p.version_keys %}
        -- the record's key for this version of its contributions: a revised value or weight, a new key
        {%- set contributions = [] %}
        {%- if weight is not none %}{%- do contributions.append('cast(raw_weight as decimal(18, 6))') %}{%- endif %}
        {%- for measure in measures %}{%- do contributions.append('cast(raw_' ~ measure.name ~ ' as decimal(18, 6))') %}{%- endfor %}
        {{ sdc.ckm_version_key('record_key', contributions, modulus) }} as version_key
        {%- endif %}
    from records
    -- one test per record: a weight that is not positive and finite, a value that is not a finite number,
    -- a contribution beyond the exact decimals
    {%- set failures = [] %}
    {%- if weight is not none %}
    {%- do failures.append((sdc.ckm_weight_invalid('raw_weight'),
        "'weight column " ~ sdc.sql_text(weight) ~ " must be positive and finite; a record has ' || coalesce(cast(raw_weight as " ~ sdc.text_type() ~ "), 'NULL') || ' (in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ')'")) %}
    {%- endif %}
    {%- if value is not none %}
    {%- do failures.append((sdc.ckm_not_finite('raw_value'),
        "'value column " ~ sdc.sql_text(value) ~ " must be a finite number; a record has ' || coalesce(cast(raw_value as " ~ sdc.text_type() ~ "), 'NULL') || ' (in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ')'")) %}
    {%- endif %}
    {%- for measure in measures %}
    {%- do failures.append(('abs(raw_' ~ measure.name ~ ') >= 1e12',
        "'the contributions to " ~ measure.name ~ " (" ~ sdc.sql_text(measure.label) ~ ") must be below 10^12 in absolute value (exact sums of 6-decimal numbers); a record has ' || cast(raw_" ~ measure.name ~ " as " ~ sdc.text_type() ~ ") || ' (in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || '): give the column in larger units, e.g. thousands'")) %}
    {%- endfor %}
    where {{ sdc.ckm_fail_if_any(failures) }}
),

leaf_cells as (
    -- one pass over the microdata: per leaf cell the sums, the contributors and their largest contributions
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        count(*) as records,
        {{ 'sum(weight)' if weight is not none else 'count(*)' }} as weight_sum,
        {{ sdc.ckm_key_sum('record_key', modulus) }} as key_sum_all,
        -- the keys of the records that contribute nothing (left out of the cell key unless use_zero_rkeys)
        coalesce({{ sdc.ckm_key_sum('record_key', modulus, 'c_' ~ first ~ ' = 0') }}, 0) as key_sum_zero,
        {%- if p.version_keys %}
        {{ sdc.ckm_key_sum('version_key', modulus) }} as version_sum_all,
        coalesce({{ sdc.ckm_key_sum('version_key', modulus, 'c_' ~ first ~ ' = 0') }}, 0) as version_sum_zero,
        {%- endif %}
        {{ 'max(record_key)' if check_key_range else 'null' }} as max_key,
        {%- for measure in measures %}
        {%- set c = 'c_' ~ measure.name %}
        sum({{ c }}) as original_{{ measure.name }},
        count(*) filter (where {{ c }} <> 0) as contributors_{{ measure.name }},
        {%- if measure.ranked_by is defined %}
        {{ sdc.ckm_top_values(sdc.ckm_sum_rank_key('c_' ~ measure.ranked_by, c), top_n, c ~ ' <> 0', wide) }} as top_{{ measure.name }}
        {%- else %}
        {{ sdc.ckm_top_values('abs(d_' ~ measure.name ~ ')', top_n, c ~ ' <> 0') }} as top_{{ measure.name }}
        {%- endif %}
        {%- if p.type == 'range' %},
        {#- over every record, zeros included, of the unweighted values (τ-Argus GetXj "D", cellKey's spread) #}
        {%- set spread = 'c_' ~ (measure.ranked_by if measure.ranked_by is defined else measure.name) %}
        {%- set spread = 'abs(' ~ spread ~ ')' if p.range_of_absolute_values else spread %}
        max({{ spread }}) as high_{{ measure.name }},
        min({{ spread }}) as low_{{ measure.name }}
        {%- endif %}{{ ',' if not loop.last }}
        {%- endfor %}
    from checked_records
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
),
{%- if complete %}

complete_leaf_cells as (
    -- the cells of the frame; a combination without records is an empty cell: sums 0, no contributions
{%- set zero_columns = ['records', 'weight_sum', 'key_sum_all', 'key_sum_zero'] + (['version_sum_all', 'version_sum_zero'] if p.version_keys else []) -%}
{%- set null_columns = ['max_key'] -%}
{%- for measure in measures -%}
  {%- do zero_columns.extend(['original_' ~ measure.name, 'contributors_' ~ measure.name]) -%}
  {%- do null_columns.extend(['top_' ~ measure.name] + (['high_' ~ measure.name, 'low_' ~ measure.name] if p.type == 'range' else [])) -%}
{%- endfor %}
{{ sdc.ckm_complete_leaf_cells('leaf_cells', dims, levels, zero_columns, null_columns) }}
),
{%- endif %}

leaf_levels as (
{{ sdc.ckm_leaf_levels('complete_leaf_cells' if complete else 'leaf_cells', dims, levels) }}
),

checked_leaf_levels as (
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels, [('max_key >= ' ~ modulus,
    "'a record key in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ' is not below the modulus " ~ modulus ~ " the CKM uses: the keys were loaded with a larger modulus; set modulus= or var sdc_key_modulus to it'")] if check_key_range else []) }}
),

paired_metrics as (
    -- every subtotal from the leaves' unperturbed sums; its largest contributions are the largest of its
    -- leaves' largest contributions, which are the largest of its records
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        cast(sum(records) as bigint) as records,
        sum(weight_sum) as weight_sum,
        sum(key_sum_all) as key_sum_all,
        sum(key_sum_zero) as key_sum_zero,
        {%- if p.version_keys %}
        sum(version_sum_all) as version_sum_all,
        sum(version_sum_zero) as version_sum_zero,
        {%- endif %}
        {%- for measure in measures %}
        {%- set m = measure.name %}
        sum(original_{{ m }}) as original_{{ m }},
        cast(sum(contributors_{{ m }}) as bigint) as contributors_{{ m }},
        {{ sdc.ckm_merge_top_values('top_' ~ m, top_n) }} as top_{{ m }}
        {%- if p.type == 'range' %},
        max(high_{{ m }}) as high_{{ m }},
        min(low_{{ m }}) as low_{{ m }}
        {%- endif %}{{ ',' if not loop.last }}
        {%- endfor %}
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, levels=levels) }}
),

rule_cells as (
    -- the columns the primary rules read (as suppression_cells): records, the first measure and its top contributions
    select
        *,
        records as freq,
        original_{{ first }} as value,
        contributors_{{ first }} as contributors
        {%- for n in range(1, top_n + 1) %},
        coalesce({{ sdc.array_element('top_' ~ first, n) }}, 0) as top_{{ n }}
        {%- endfor %}
    from paired_metrics
),

sensitivity as (
    {{ sdc.suppression_primary('rule_cells', p.sensitive, rules_preset) | indent(4) }}
),

{%- set sums = 'version_sum' if p.version_keys else 'key_sum' %}
cell_keys as (
    -- the cell key over {{ 'all records' if p.use_zero_rkeys else 'the contributors' }} of the cell ({{ 'their keys for their versions' if p.version_keys else 'their record keys' }}), and its
    -- scrambled forms for the components (first digit moved to the end, once per step)
    select
        *,
        status = 'primary' as sensitive,
        cast({{ sums ~ '_all' if p.use_zero_rkeys else '(' ~ sums ~ '_all - ' ~ sums ~ '_zero)' }} % {{ modulus }} as bigint) as cell_key_int
    from sensitivity
    where {{ sdc.ckm_fail_if(sdc.ckm_key_sum_implausible('records', 'key_sum_all', modulus),
        "'the key sum ' || cast(key_sum_all as " ~ sdc.text_type() ~ ") || ' of a cell of ' || cast(records as " ~ sdc.text_type() ~ ") || ' records cannot come from record keys uniform on [0, " ~ modulus ~ "): the keys were loaded with another modulus than the CKM uses (argument modulus= or var sdc_key_modulus)'") }}
),

{%- if check_cell_keys %}

checked_cell_keys as (
    -- the table's own cell keys must look uniform (red team 8: record keys that cancel within cells)
{{ sdc.ckm_check_cell_keys('cell_keys', modulus, caller_name,
       counted='records' if p.use_zero_rkeys else 'contributors_' ~ first, identity=['records', 'key_sum_all', 'key_sum_zero']) }}
),
{%- endif %}

component_keys as (
    select
        *
        {%- for j in range(1, K + 1) %},
        {{ sdc.ckm_sum_scrambled('cell_key_int', digits, j - 1 if p.same_key else j) }} as key_{{ j }}
        {%- endfor %}
    from {{ 'checked_cell_keys' if check_cell_keys else 'cell_keys' }}
),

ptable_intervals as (
    select
        type,
        i,
        cast(v as {{ sdc.double_type() }}) as v,
        cast(round(p_int_lb * {{ scale }}) as {{ wide }}) * {{ modulus }} as lb_scaled,
        cast(round(p_int_ub * {{ scale }}) as {{ wide }}) * {{ modulus }} as ub_scaled
    from {{ ptable }}
),

component_key_rows as (
    -- one row per cell and component, so that the ptable is joined once: an engine that inlines a CTE read
    -- several times (Spark) plans and computes everything below component_keys once per read
    select
        {% for dim in dims %}k.{{ sdc.sql_identifier(dim) }}, {% endfor %}c.component,
        case c.component{% for j in range(1, K + 1) %} when {{ j }} then k.key_{{ j }}{% endfor %} end as component_key
    from component_keys as k
    cross join ({% for j in range(1, K + 1) %}select {{ j }} as component{{ ' union all ' if not loop.last }}{% endfor %}) as c
),

key_noise as (
    -- the ptable's noise for every component key, every table type and every row
    select
        {% for dim in dims %}k.{{ sdc.sql_identifier(dim) }}, {% endfor %}k.component, t.type, t.i, t.v
    from component_key_rows as k
    join ptable_intervals as t
        on {{ sdc.ckm_interval_match('k.component_key', 't.lb_scaled', 't.ub_scaled') }}
),

noise_by_row as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {%- for j in range(1, K + 1) %}
        {%- set outer = loop %}
        {%- for kind, rows in grid.rows.items() %}
        {%- set kind_loop = loop %}
        {%- for i in rows %}
        max(v) filter (where component = {{ j }} and type = '{{ kind }}' and i = {{ i }}) as v_{{ j }}_{{ kind }}_{{ i }}{{ ',' if not (outer.last and kind_loop.last and loop.last) }}
        {%- endfor %}
        {%- endfor %}
        {%- endfor %}
    from key_noise
    group by {% for dim in dims %}{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
),

magnifiers as {{ sdc.cte_materialized() }}(
    -- x_j of every component and measure (NULL beyond the cell's contributors), and the table for the cell (the
    -- parity of its records, zeros included)
    select
        component_keys.*
        {%- for measure in measures %}
        {%- set m = measure.name %}
        {%- for j in range(1, K + 1) %},
        {%- if p.type == 'top_contr' and measure.ranked_by is defined %}
        {{ sdc.ckm_sum_ranked_contribution(sdc.array_element('top_' ~ m, j)) }} as mag_{{ m }}_{{ j }}
        {%- elif p.type == 'top_contr' %}
        cast({{ sdc.array_element('top_' ~ m, j) }} as {{ sdc.double_type() }}) as mag_{{ m }}_{{ j }}
        {%- elif p.type == 'mean' %}
        case when contributors_{{ m }} > 0 then abs(cast(original_{{ m }} as {{ sdc.double_type() }}) / cast(weight_sum as {{ sdc.double_type() }})) end as mag_{{ m }}_{{ j }}
        {%- elif p.type == 'range' %}
        case when contributors_{{ m }} > 0 then cast(high_{{ m }} - low_{{ m }} as {{ sdc.double_type() }}) end as mag_{{ m }}_{{ j }}
        {%- else %}
        case when contributors_{{ m }} > 0 then abs(cast(original_{{ m }} as {{ sdc.double_type() }})) end as mag_{{ m }}_{{ j }}
        {%- endif %}
        {%- endfor %},
        {%- if grid.parity %}
        case when records % 2 = 0 then 'even' else 'odd' end as table_{{ m }},
        {%- else %}
        'all' as table_{{ m }},
        {%- endif %}
        cast(original_{{ m }} as {{ sdc.double_type() }}) as x_{{ m }}_0
        {%- endfor %}
    from component_keys
),

perturbation_start as {{ sdc.cte_materialized() }}(
    select magnifiers.*
    {%- for j in range(1, K + 1) %}{% for kind, rows in grid.rows.items() %}{% for i in rows %}, noise_by_row.v_{{ j }}_{{ kind }}_{{ i }}{% endfor %}{% endfor %}{% endfor %}
    from magnifiers
    left join noise_by_row
        on {% for dim in dims %}magnifiers.{{ sdc.sql_identifier(dim) }} = noise_by_row.{{ sdc.sql_identifier(dim) }}{{ ' and ' if not loop.last }}{% endfor %}
)
{%- set state = namespace(previous='perturbation_start') %}
{%- for measure in measures %}
{%- set m = measure.name %}
{%- for j in range(1, K + 1) %}
{%- set x = 'x_' ~ m ~ '_' ~ (j - 1) %}
{%- set mag = 'mag_' ~ m ~ '_' ~ j %}
{%- set eps = p.multiplier.epsilon[j - 1] %}
{%- set sigma1 = p.multiplier.p[0] if p.multiplier.type == 'flex' else p.multiplier.p %}
,

{{ m }}_scale_{{ j }} as {{ sdc.cte_materialized() }}(
    -- component {{ j }} of {{ m }}: the noise scale δ, and whether the small-cells table serves
    select
        *,
        {{ mag }} is null or {{ x }} = 0 as skip_raw_{{ m }}_{{ j }},
        {{ sdc.ckm_sum_delta(mag, eps, p) }} as delta_raw_{{ m }}_{{ j }}
    from {{ state.previous }}
),

{{ m }}_small_{{ j }} as {{ sdc.cte_materialized() }}(
    select
        *,
        {%- if z_s > 0 %}
        ({{ mag }} < {{ z_s }}
         or (abs({{ x }}) < delta_raw_{{ m }}_{{ j }} and abs({{ x }}) / {{ sigma1 * eps }} < {{ z_s }})) as small_{{ m }}_{{ j }}
        {%- else %}
        false as small_{{ m }}_{{ j }}
        {%- endif %}
    from {{ m }}_scale_{{ j }}
),

{{ m }}_noise_{{ j }} as {{ sdc.cte_materialized() }}(
    -- the ratio a = |x / δ| and the ptable's noise V at a, interpolated between its rows
    select
        *,
        {{ sdc.ckm_sum_interpolated('abs(' ~ x ~ ' / delta_' ~ m ~ '_' ~ j ~ ')', j, 'table_' ~ m, 'small_' ~ m ~ '_' ~ j, grid) }} as v_{{ m }}_{{ j }}
    from (
        select
            *,
            skip_raw_{{ m }}_{{ j }}{{ ' or small_' ~ m ~ '_' ~ j if j > 1 }} as skip_{{ m }}_{{ j }},
            case
                when small_{{ m }}_{{ j }} then 1.0
                when abs({{ x }}) < delta_raw_{{ m }}_{{ j }} then abs({{ x }})
                else delta_raw_{{ m }}_{{ j }}
            end as delta_{{ m }}_{{ j }}
        from {{ m }}_small_{{ j }}
    ) as scaled
),

{{ m }}_value_{{ j }} as {{ sdc.cte_materialized() }}(
    -- x + sign(x) δ sign(V) (μ + |V|), clamped so that x keeps its sign
    select
        *,
        {{ x }} + case when skip_{{ m }}_{{ j }} then 0 else {{ sdc.ckm_sum_added(x, m, j, p) }} end as x_{{ m }}_{{ j }}
    from {{ m }}_noise_{{ j }}
)
{%- set state.previous = m ~ '_value_' ~ j %}
{%- endfor %}
{%- endfor %},

{%- if count_ptable is not none %}

count_intervals as (
    -- the count ptable's intervals, as ckm_count looks them up
    select
        i,
        v,
        cast(round(p_int_lb * {{ scale }}) as {{ wide }}) * {{ modulus }} as lb_scaled,
        cast(round(p_int_ub * {{ scale }}) as {{ wide }}) * {{ modulus }} as ub_scaled
    from {{ count_ptable }}
),

counted as (
    -- the count ckm_count publishes for the cell: its records, the key sum of all of them, the count ptable
    select
        cells.*,
        cells.records + coalesce(count_intervals.v, 0) as published_count
    from {{ state.previous }} as cells
    left join count_intervals
        on count_intervals.i = {{ sdc.ckm_ptable_row('cells.records', count_max_i if count_max_i is not none else '(select max(i) from ' ~ count_ptable ~ ')', count_reuse_from) }}
        and {{ sdc.ckm_interval_match('cast(cells.key_sum_all % ' ~ modulus ~ ' as bigint)', 'count_intervals.lb_scaled', 'count_intervals.ub_scaled') }}
),
{%- set state.previous = 'counted' %}
{%- endif %}

published as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {%- for measure in measures %}
        {%- set m = measure.name %}
        {%- if count_ptable is not none %}
        -- 0 where the count is published as 0: an empty cell and a false zero look alike in both tables
        case when published_count = 0 then 0.0 else x_{{ m }}_{{ K }} end as {{ sdc.sql_identifier(m) }}{{ ',' if audit or not loop.last }}
        {%- else %}
        x_{{ m }}_{{ K }} as {{ sdc.sql_identifier(m) }}{{ ',' if audit or not loop.last }}
        {%- endif %}
        {%- endfor %}
        {%- if audit %}
        records,
        cell_key_int,
        cell_key_int / {{ modulus }}.0 as cell_key,
        sensitive,
        rule as sensitive_rule,
        {%- for measure in measures %}
        {%- set m = measure.name %}
        original_{{ m }},
        contributors_{{ m }},
        {%- for j in range(1, K + 1) %}
        case when not skip_{{ m }}_{{ j }} then delta_{{ m }}_{{ j }} end as delta_{{ m }}_{{ j }},
        case when not skip_{{ m }}_{{ j }} then x_{{ m }}_{{ j }} - x_{{ m }}_{{ j - 1 }} end as noise_{{ m }}_{{ j }},
        {%- endfor %}
        {{ 'case when published_count = 0 then 0.0 else x_' ~ m ~ '_' ~ K ~ ' end' if count_ptable is not none else 'x_' ~ m ~ '_' ~ K }} - cast(original_{{ m }} as {{ sdc.double_type() }}) as noise_{{ m }}{{ ',' if not loop.last }}
        {%- endfor %}
        {%- endif %}
    from {{ state.previous }}
)

select * from published
{%- endset -%}
{#- the call with every default resolved: sdc publish renders it again from the microdata (python/sdc/release/verify.py) -#}
{%- set call = {'dims': dims, 'value': value, 'weight': weight, 'fact': fact,
    'params': params if params is not none else var('sdc_magnitude_params', none),
    'ptable': ptable if ptable is not none else ref('sdc_nums_ptable'), 'totals': totals, 'hierarchy': hierarchy,
    'modulus': modulus if modulus is not none else sdc.setting('sdc_key_modulus'), 'rules_preset': rules_preset,
    'complete': complete if complete is not none else sdc.setting('sdc_complete_tables'),
    'zero_with_counts': zero_with_counts} -%}
{{ sdc.step('ckm_sum', [relation], step_sql, {'ptables': sdc.step_ptables(zero_with_counts, ptable if ptable is not none else ref('sdc_nums_ptable')), 'params': sdc.ckm_magnitude_params(params if params is not none else var('sdc_magnitude_params', none), caller_name, 'params=' if params is not none else 'var sdc_magnitude_params'), 'call': sdc.step_call(call)}) }}
{% endmacro %}
