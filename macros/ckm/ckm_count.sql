{#
  ckm_count: a frequency table protected by the Cell Key Method, with every subtotal computed from the
  microdata (seed 002, Table 6, steps 2-7). The microdata are read once, into the cells of the finest
  level; every subtotal is then a GROUPING SETS sum of their unperturbed counts and key sums (exact:
  both are sums over records). Returns one row per cell:

    <dims...>      dimension codes; a total carries the root code (hierarchy root, or var sdc_total_label)
    original       unperturbed count                      (step 2)
    key_sum        sum of the record keys of the cell      (step 3, integers)
    cell_key_int   key_sum mod M, the cell key in units of 1/M   (step 4)
    cell_key       cell_key_int / M, for reading only
    ptable_row     least(original, max i) of the perturbation table
    noise          v of the interval p_int_lb <= cell key < p_int_ub   (steps 5-6)
    count          original + noise; zero cells stay zero  (step 7); with a threshold, NULL below it
    perturbed      original + noise, kept for the audit      (only with a threshold)
    count_reason   why count is NULL ('perturbed count below <T>'), else NULL   (only with a threshold)

  Only the dimensions, `count` and `count_reason` may be published (ckm_published); the other columns undo
  the protection.

  Arguments
    relation   microdata with the record key column (var sdc_record_key_column, default rk) and, for a
               fact f, the columns f (0/1) and rk_f (loaded by `sdc load`)
    dims       list of dimension columns
    fact       0/1 fact column to count; none counts every record
    totals     'cube' (default: every margin and subtotal), 'rollup' (SQL ROLLUP order), 'none'
    hierarchy  relation (dimension, code, parent) for hierarchical dims, e.g. ref('sdc_hierarchies');
               dims not listed in it are flat
    ptable     the perturbation table, default ref('sdc_ptable')
    modulus    M of the record keys, default var sdc_key_modulus
    reuse_from counts above max i cycle through rows reuse_from..max i (ONS: 501), default the ptable's own
               rule (its column reuse_from, which a converted ONS table has), else var
               sdc_ptable_reuse_from (none: every larger count uses row max i)
    check_keys refuse keys that cannot be uniform random (ckm_check_record_keys), default var
               sdc_check_record_keys (true); false only for hand-picked teaching keys
    check_cell_keys  refuse a table whose own cell keys are not uniform on [0, 1) (ckm_check_cell_keys: keys
               that cancel within cells), default check_keys
    complete   publish every cell of the table's frame, empty ones (count 0) included, as ONS and cellKey
               do: the cross product of each dimension's codes (the leaves of its hierarchy, or the values
               observed in the data) with every total asked for; default var sdc_complete_tables (true).
               false: only cells with records
    threshold  as ONS: a perturbed count below it is published NULL (column count_reason says why; the
               audit column perturbed keeps it); default none (every count published)
    weight     positive, finite weight column: adds `weighted_count`, unrounded (ckm_published rounds it as it
               is published: digits=, default var sdc_published_digits, whole units) (and the audit column
               original_weighted_count, the exact sum of the weights); zero stays zero, a count perturbed to
               0 has weighted count 0, a count the threshold hides has none. With a fact, the weights of the
               fact's records (as cellKey weights a count variable)
    weighted_count  how the weighted count is perturbed, default var sdc_weighted_count ('magnitude'):
               'magnitude'    the sum of the weights, perturbed by the magnitude method (ckm_sum with
                              weight=; params= and nums_ptable= as ckm_sum's params= and ptable=), plus the
                              count's noise v times the cell's smallest weight w_min, plus a second noise u times
                              the spread w_max - w_min of its weights; at least w_min. u is the count ptable's v
                              for a second cell key (the sum of k (k + A) over the records' keys k, mod M, A about
                              0.618 M: close to independent of the cell key in a cell of two records or more, and
                              the same for the same records in every table) in the row of ceil(Σ(w - w_min) /
                              (w_max - w_min))
                              records, plus that key's place within its interval less 1/2 (uniform on
                              [-1/2, 1/2)). So a constant weight does not give the count away (u = 0: weighted_count
                              / w is count + magnitude noise / w, red team 6), and weighted_count - w_min count =
                              Σ(w - w_min) + u (w_max - w_min) + magnitude noise, which the count's noise no longer
                              leaves exact (red team 3): with two weight values the records of the larger one,
                              perturbed as the CKM perturbs a count of them; with more, not even its remainder
                              modulo the spread (the uniform part). Unbiased where the count ptable is.
               'mean_weight'  count' * (sum of weights / count), as cellKey and τ-Argus publish it. The
                              published pair reveals the cell's exact mean weight, a fraction whose
                              denominator is the original count: with integer or few distinct weights the
                              original count can be read back. Choose it only to match those tools.
    leaf_cells sdc publish's own (python/sdc/release/verify.py), never a model's: a relation of cells over
               dims and maybe more dimensions, with the count (original) and key sum (key_sum) of the records
               of each that the call counts (ckm_count_counted), summed here to the cells of dims in place of
               reading relation's records; the checks still read relation. The verification of a release sums
               the tables of one source from one pass over it per largest set of dimensions. Not with weight.
#}
{% macro ckm_count(relation, dims, fact=none, totals='cube', hierarchy=none, ptable=none, modulus=none, reuse_from=none, check_keys=none, complete=none, threshold=none, weight=none, weighted_count=none, params=none, nums_ptable=none, check_cell_keys=none, leaf_cells=none) %}
{{- sdc.build_record_hook() -}}
{%- set step_sql -%}
{%- if totals not in ['cube', 'rollup', 'none'] -%}
  {{ exceptions.raise_compiler_error("ckm_count: totals must be 'cube', 'rollup' or 'none', got '" ~ totals ~ "'") }}
{%- endif -%}
{%- if dims is string or dims | length == 0 -%}
  {{ exceptions.raise_compiler_error("ckm_count: dims must be a non-empty list of column names") }}
{%- endif -%}
{%- set ptable = ptable if ptable is not none else ref('sdc_ptable') -%}
{%- set modulus = modulus if modulus is not none else sdc.setting('sdc_key_modulus') -%}
{%- set reuse_from = sdc.ckm_ptable_reuse_from(ptable, reuse_from if reuse_from is not none else sdc.setting('sdc_ptable_reuse_from'), 'ckm_count') -%}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}
{%- set rk = sdc.setting('sdc_record_key_column') -%}
{%- set counting = sdc.ckm_count_counted(fact) -%}
{%- set count_expr = counting.original -%}
{#- the weight a record adds to its cell's weighted count: none for a record outside the fact -#}
{%- set counted_weight = 'cast(m.' ~ sdc.sql_identifier(weight) ~ ' as decimal(38, 6))' if weight is not none else none -%}
{%- if weight is not none and fact is not none -%}
  {%- set counted_weight = 'case when m.' ~ sdc.sql_identifier(fact) ~ ' = 1 then ' ~ counted_weight ~ ' end' -%}
{%- endif -%}
{%- set key_column = counting.key_column -%}
{%- set wide = sdc.wide_integer_type() -%}
{%- set double = sdc.double_type() -%}
{%- set complete = complete if complete is not none else sdc.setting('sdc_complete_tables') -%}
{%- if threshold is not none and (threshold is not number or threshold != threshold | int or threshold < 0) -%}
  {{ exceptions.raise_compiler_error("ckm_count: threshold must be a whole number of at least 0, got " ~ threshold) }}
{%- endif -%}
{%- if modulus is not number or modulus != modulus | int or modulus < 2 -%}
  {{ exceptions.raise_compiler_error("ckm_count: modulus must be a whole number of at least 2, got " ~ modulus) }}
{%- endif -%}
{%- if reuse_from is not none and (reuse_from is not number or reuse_from != reuse_from | int or reuse_from < 1) -%}
  {{ exceptions.raise_compiler_error("ckm_count: reuse_from must be a ptable row (a whole number of at least 1), got " ~ reuse_from) }}
{%- endif -%}
{%- set weighting = weighted_count if weighted_count is not none else sdc.setting('sdc_weighted_count') -%}
{%- if weight is not none and weighting not in ['magnitude', 'mean_weight'] -%}
  {{ exceptions.raise_compiler_error("ckm_count: weighted_count must be 'magnitude' or 'mean_weight', got '" ~ weighting ~ "'") }}
{%- endif -%}
{#- the magnitude method's weighted count carries a second noise on the weights' spread (header) -#}
{%- set spread = weight is not none and weighting == 'magnitude' -%}
{#- a record's second key, k (k + A) mod M: the square makes the cell's sum of them apart from its key sum; the
    A k part (A about 0.618 M, odd and prime to 5) keeps it from being constant where the keys lie on a coarse
    grid that the key checks pass (multiples of 10^4: every square 0 mod 10^8). In bigint while it cannot overflow -#}
{%- set spread_a = (modulus * 0.6180339887498949) | int // 10 * 10 + 1 -%}
{%- set product_type = 'bigint' if (modulus - 1) * (modulus - 1 + spread_a) <= 9223372036854775807 else wide -%}
{%- set record_key = 'cast(m.' ~ sdc.sql_identifier(key_column) ~ ' as ' ~ product_type ~ ')' -%}
{%- set second_key = 'cast((' ~ record_key ~ ' * (' ~ record_key ~ ' + ' ~ spread_a ~ ')) % ' ~ modulus ~ ' as bigint)' -%}
{%- set roles = {rk: 'record key column'} if fact is none else {rk: 'record key column', key_column: 'key fact column', fact: 'fact column'} -%}
{%- if weight is not none -%}{%- do roles.update({weight: 'weight column'}) -%}{%- endif -%}
{%- do sdc.check_dimension_names(dims, sdc.setting('sdc_ckm_own_columns'), 'ckm_count', roles=roles) -%}
{%- do sdc.ckm_check_columns(relation, dims, fact, 'ckm_count', {rk: 'record key column', weight: 'weight column'}) -%}
{%- do sdc.ckm_check_modulus(relation, modulus, 'ckm_count') -%}
{%- if weight is not none -%}{%- do sdc.ckm_sum_check_numeric(relation, [weight], 'ckm_count') -%}{%- endif -%}
{%- set check_keys = check_keys if check_keys is not none else sdc.setting('sdc_check_record_keys') -%}
{#- keys the record key check has seen are all in [0, M); else the query itself looks for a key at or above M -#}
{%- set check_key_range = not (check_keys and sdc.ckm_check_record_keys(relation, key_column, fact, modulus, 'ckm_count')) -%}
{%- set check_cell_keys = check_cell_keys if check_cell_keys is not none else check_keys -%}
{%- set levels = sdc.ckm_dimension_levels(dims, hierarchy, totals) -%}
{%- set sets = sdc.ckm_grouping_sets(dims, levels, totals) -%}
{%- set max_i = sdc.ckm_ptable_max_i(ptable, 'ckm_count') -%}
{%- set max_row = max_i if max_i is not none else '(select max(i) from ' ~ ptable ~ ')' -%}
{#- a model's build reads the microdata; a hook's or an operation's (grant_published verifies in one) may not -#}
{%- if leaf_cells is not none and ((model is defined and model.resource_type not in ['operation', 'macro']) or weight is not none or check_key_range) -%}
  {{ exceptions.raise_compiler_error("ckm_count: leaf_cells is for sdc publish's recomputation of a call (with its record key checks, without weight); a model passes the microdata as relation") }}
{%- endif -%}

with leaf_cells as (
{%- if leaf_cells is not none %}
    -- the cells of the finest level, summed from cells of these and maybe more dimensions: counts and key sums
    -- are sums over the records, the same summed in any grouping
    select
        {%- for dim in dims %}
        c.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        sum(c.original) as original,
        sum(c.key_sum) as key_sum,
        null as max_key
    from {{ leaf_cells }} as c
    group by {% for dim in dims %}c.{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
{%- else %}
    -- one pass over the microdata: original count and key sum of every cell of the finest level
    select
        {%- for dim in dims %}
        m.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        {{ count_expr }} as original,
        {{ sdc.ckm_key_sum(sdc.sql_identifier(key_column), modulus) }} as key_sum,
        {%- if weight is not none %}
        sum({{ counted_weight }}) as weight_sum,
        min({{ counted_weight }}) as weight_min,
        {%- endif %}
        {%- if spread %}
        max({{ counted_weight }}) as weight_max,
        {{ sdc.ckm_key_sum(second_key, modulus) }} as spread_key_sum,
        {%- endif %}
        {{ 'max(' ~ sdc.sql_identifier(key_column) ~ ')' if check_key_range else 'null' }} as max_key
    {%- if weight is not none %}
    from (
        -- weights are positive and finite: a weighted count of 0 would be an empty cell that has records
        select * from {{ relation }}
        where {{ sdc.ckm_fail_if(sdc.ckm_weight_invalid(sdc.sql_identifier(weight)),
            "'weight column " ~ sdc.sql_text(weight) ~ " must be positive and finite; a record has ' || coalesce(cast(" ~ sdc.sql_identifier(weight) ~ " as " ~ sdc.text_type() ~ "), 'NULL') || ' (in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ')'") }}
    ) as m
    {%- else %}
    from {{ relation }} as m
    {%- endif %}
    group by {% for dim in dims %}m.{{ sdc.sql_identifier(dim) }}{{ ', ' if not loop.last }}{% endfor %}
{%- endif %}
),
{%- if complete %}

complete_leaf_cells as (
    -- the cells of the frame; a combination without records is an empty cell (original 0, key sum 0)
{%- set zero_columns = ['original', 'key_sum'] + (['weight_sum'] if weight is not none else []) + (['spread_key_sum'] if spread else []) %}
{%- set null_columns = (['weight_min'] if weight is not none else []) + (['weight_max'] if spread else []) + ['max_key'] %}
{{ sdc.ckm_complete_leaf_cells('leaf_cells', dims, levels, zero_columns, null_columns) }}
),
{%- endif %}

leaf_levels as (
    -- each leaf cell with the codes of its hierarchy levels
{{ sdc.ckm_leaf_levels('complete_leaf_cells' if complete else 'leaf_cells', dims, levels) }}
),

checked_leaf_levels as (
    {#- a key at or above M was drawn for a larger modulus than this CKM uses #}
{{ sdc.ckm_check_leaves('leaf_levels', dims, levels, [('max_key >= ' ~ modulus,
    "'a record key of column " ~ sdc.sql_text(key_column) ~ " in the cell ' || " ~ sdc.ckm_cell_text(dims) ~ " || ' is not below the modulus " ~ modulus ~ " the CKM uses: the keys were loaded with a larger modulus; set modulus= or var sdc_key_modulus to it'")] if check_key_range else []) }}
),

paired_metrics as (
    -- every subtotal: sums of the unperturbed leaf counts and key sums, which equal the sums over
    -- the microdata (seed 002, footnote 7); perturbed values are never added
    select
        {{- sdc.ckm_dimension_labels(dims, levels) }}
        -- coalesce: the grand total of a relation without records is an empty cell, 0 (a sum over no rows is NULL)
        cast(coalesce(sum(original), 0) as bigint) as original,
        coalesce(sum(key_sum), 0) as key_sum
        {%- if weight is not none %},
        coalesce(sum(weight_sum), 0) as weight_sum,
        min(weight_min) as weight_min
        {%- endif %}
        {%- if spread %},
        max(weight_max) as weight_max,
        coalesce(sum(spread_key_sum), 0) as spread_key_sum
        {%- endif %}
    from checked_leaf_levels
    {{ sdc.group_by_grouping_sets(sets, levels=levels) }}
),

cell_keys as (
    -- the keys of n records, uniform on [0, M), sum to about n (M - 1) / 2 (ckm_key_sum_implausible): a cell
    -- far from that was keyed for another modulus, whatever the load log says about the relation
    select
        *,
        cast(key_sum % {{ modulus }} as bigint) as cell_key_int
        {%- if spread %},
        -- the second cell key: apart from the first in every cell of two records or more (uniform keys)
        cast(spread_key_sum % {{ modulus }} as bigint) as spread_cell_key_int,
        -- Σ(w - w_min) and the spread w_max - w_min in millionths, exact integers as the weights are summed
        -- (decimal(38, 6)); the spread NULL where all weights are equal
        cast((weight_sum - original * weight_min) * 1000000 as {{ wide }}) as spread_excess,
        nullif(cast((weight_max - weight_min) * 1000000 as {{ wide }}), 0) as spread_width
        {%- endif %}
    from paired_metrics
    where {{ sdc.ckm_fail_if(sdc.ckm_key_sum_implausible('original', 'key_sum', modulus),
        "'the key sum ' || cast(key_sum as " ~ sdc.text_type() ~ ") || ' of a cell of ' || cast(original as " ~ sdc.text_type() ~ ") || ' records cannot come from record keys uniform on [0, " ~ modulus ~ "): the keys were loaded with another modulus than the CKM uses (argument modulus= or var sdc_key_modulus)'") }}
),
{%- if check_cell_keys %}

checked_cell_keys as (
{{ sdc.ckm_check_cell_keys('cell_keys', modulus, caller_name='ckm_count') }}
),
{%- endif %}

ptable_rows as (
    select
        cell_keys.*,
        cell_key_int / {{ modulus }}.0 as cell_key,
        {{ sdc.ckm_ptable_row('original', max_row, reuse_from) }} as ptable_row
        {%- if spread %},
        -- the second noise's row: that of a count of ceil(Σ(w - w_min) / (w_max - w_min)) records, with two weight
        -- values the records of the larger one (as the CKM would perturb their count)
        case when spread_width is not null
             then {{ sdc.ckm_ptable_row(sdc.ckm_ceil_div('spread_excess', 'spread_width'), max_row, reuse_from) }} end as spread_ptable_row
        {%- endif %}
    from {{ 'checked_cell_keys' if check_cell_keys else 'cell_keys' }} as cell_keys
),

ptable_intervals as (
    -- the range of rows the cells look up, not the whole table (an ONS table drawn key by key has 160 000
    -- intervals): a filter of the scan, where a semi join with the cells' rows built its hash table over the
    -- ptable; one reference to the cells (Spark inlines each); no two intervals of a row overlap
    -- (ckm_ptable_max_i checked them when the model was compiled)
    select
        i,
        v,
        cast(round(p_int_lb * {{ scale }}) as {{ wide }}) * {{ modulus }} as lb_scaled,
        cast(round(p_int_ub * {{ scale }}) as {{ wide }}) * {{ modulus }} as ub_scaled
    from {{ ptable }}
    {%- if spread %}
    cross join (select least(min(ptable_row), coalesce(min(spread_ptable_row), min(ptable_row))) as first_row,
                       greatest(max(ptable_row), coalesce(max(spread_ptable_row), max(ptable_row))) as last_row
                from ptable_rows) as rows_used
    {%- else %}
    cross join (select min(ptable_row) as first_row, max(ptable_row) as last_row from ptable_rows) as rows_used
    {%- endif %}
    where i >= rows_used.first_row and i <= rows_used.last_row
),

overlay as (
    select
        ptable_rows.*,
        ptable_intervals.v as noise
    from ptable_rows
    left join ptable_intervals
        on ptable_intervals.i = ptable_rows.ptable_row
        and {{ sdc.ckm_interval_match('ptable_rows.cell_key_int', 'ptable_intervals.lb_scaled', 'ptable_intervals.ub_scaled') }}
),
{%- if spread %}

spread_overlay as (
    -- the second noise, in multiples of the weights' spread: v of the second cell key's interval in the spread
    -- row, plus the key's place within that interval less 1/2 (uniform on [-1/2, 1/2), apart from v), so that no
    -- remainder of Σ(w - w_min) modulo the spread stays exact; 0 where all weights are equal
    select
        overlay.*,
        case when overlay.spread_width is null then 0.0
             when {{ sdc.ckm_fail_if('spread_intervals.v is null',
                "'the perturbation table has no interval for i = ' || cast(overlay.spread_ptable_row as " ~ sdc.text_type() ~ ") || ' and the second cell key ' || cast(overlay.spread_cell_key_int / " ~ modulus ~ ".0 as " ~ sdc.text_type() ~ ")") }}
             then cast(spread_intervals.v as {{ double }})
                 + cast(2 * cast(overlay.spread_cell_key_int as {{ wide }}) * {{ scale }} + {{ scale }}
                        - 2 * spread_intervals.lb_scaled as {{ double }})
                     / cast(2 * (spread_intervals.ub_scaled - spread_intervals.lb_scaled) as {{ double }})
                 - 0.5 end as spread_noise
    from overlay
    left join ptable_intervals as spread_intervals
        on spread_intervals.i = overlay.spread_ptable_row
        and {{ sdc.ckm_interval_match('overlay.spread_cell_key_int', 'spread_intervals.lb_scaled', 'spread_intervals.ub_scaled') }}
),
{%- endif %}

published as (
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        original,
        cast(key_sum as {{ wide }}) as key_sum,
        cell_key_int,
        cell_key,
        ptable_row,
        noise,
        case
            when original = 0 then 0
            when {{ sdc.ckm_fail_if('noise is null',
                "'the perturbation table has no interval for i = ' || cast(ptable_row as " ~ sdc.text_type() ~ ") || ' and cell key ' || cast(cell_key as " ~ sdc.text_type() ~ ")") }}
            then original + noise
        end as {{ sdc.sql_identifier('count') }}
        {%- if weight is not none %},
        weight_sum as original_weighted_count,
        weight_min
        {%- endif %}
        {%- if spread %},
        weight_max,
        spread_noise
        {%- endif %}
    from {{ 'spread_overlay' if spread else 'overlay' }}
)
{%- if weight is not none and weighting == 'magnitude' %},

magnitude_weighted_counts as (
    -- the sum of the weights of every cell, perturbed by the magnitude method
{{ sdc.ckm_sum(relation, dims, weight=weight, fact=fact, params=params, ptable=nums_ptable, totals=totals, hierarchy=hierarchy, modulus=modulus, check_keys=false, complete=false, caller_name='ckm_count') | indent(4) }}
)
{%- endif %}
{%- if weight is not none %},

weighted as (
    -- the weighted count: 0 where the count is 0 (a false zero stays a zero)
    select
        {%- for dim in dims %}
        published.{{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        published.original, published.key_sum, published.cell_key_int, published.cell_key, published.ptable_row,
        published.noise, published.{{ sdc.sql_identifier('count') }}, published.original_weighted_count,
        {%- if weighting == 'magnitude' %}
        -- the perturbed sum of the weights, plus the count's noise times the cell's smallest weight (with one
        -- weight w for all, weighted_count / w is count + (magnitude noise) / w: no more than count, red team 6),
        -- plus the second noise times the weights' spread (weighted_count - w_min count is Σ(w - w_min) perturbed
        -- apart from the count: red team 3); unbiased as the noises are; at least one record's weight
        case when published.{{ sdc.sql_identifier('count') }} = 0 then 0.0
             else greatest(
                 coalesce(magnitude_weighted_counts.weighted_count, 0.0)
                     + cast(published.noise as {{ sdc.double_type() }}) * cast(published.weight_min as {{ sdc.double_type() }})
                     + published.spread_noise * cast(published.weight_max - published.weight_min as {{ sdc.double_type() }}),
                 cast(published.weight_min as {{ sdc.double_type() }})) end as weighted_count
        {%- else %}
        case when published.{{ sdc.sql_identifier('count') }} = 0 then 0.0
             else cast(published.{{ sdc.sql_identifier('count') }} as {{ sdc.double_type() }}) * cast(published.original_weighted_count as {{ sdc.double_type() }}) / published.original end as weighted_count
        {%- endif %}
    from published
    {%- if weighting == 'magnitude' %}
    left join magnitude_weighted_counts
        on {% for dim in dims %}cast(published.{{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}) is not distinct from cast(magnitude_weighted_counts.{{ sdc.sql_identifier(dim) }} as {{ sdc.text_type() }}){{ '\n        and ' if not loop.last }}{% endfor %}
    {%- endif %}
)
{%- endif %}
{%- set counted = 'weighted' if weight is not none else 'published' %}
{%- if threshold is not none %},

thresholded as (
    -- as ONS: a perturbed count below the threshold is published empty, with the reason beside it
    select
        {%- for dim in dims %}
        {{ sdc.sql_identifier(dim) }},
        {%- endfor %}
        original, key_sum, cell_key_int, cell_key, ptable_row, noise,
        {{ sdc.sql_identifier('count') }} as perturbed,
        case when {{ sdc.sql_identifier('count') }} >= {{ threshold }} then {{ sdc.sql_identifier('count') }} end
            as {{ sdc.sql_identifier('count') }},
        case when {{ sdc.sql_identifier('count') }} < {{ threshold }} then 'perturbed count below {{ threshold }}' end
            as count_reason
        {%- if weight is not none %},
        original_weighted_count,
        case when {{ sdc.sql_identifier('count') }} >= {{ threshold }} then weighted_count end as weighted_count
        {%- endif %}
    from {{ counted }}
)

select * from thresholded
{%- elif weight is not none %}

select * from weighted
{%- else %}

select * from published
{%- endif %}
{%- endset -%}
{%- set magnitude_weights = weight is not none and (weighted_count or sdc.setting('sdc_weighted_count')) == 'magnitude' -%}
{%- set used_nums_ptable = nums_ptable if nums_ptable is not none else ref('sdc_nums_ptable') if magnitude_weights else none -%}
{#- the call with every default resolved: sdc publish renders it again from the microdata (python/sdc/release/verify.py) -#}
{%- set call = {'dims': dims, 'fact': fact, 'totals': totals, 'hierarchy': hierarchy,
    'ptable': ptable if ptable is not none else ref('sdc_ptable'),
    'modulus': modulus if modulus is not none else sdc.setting('sdc_key_modulus'),
    'reuse_from': reuse_from if reuse_from is not none else sdc.setting('sdc_ptable_reuse_from'),
    'complete': complete if complete is not none else sdc.setting('sdc_complete_tables'), 'threshold': threshold,
    'weight': weight, 'weighted_count': weighted_count or sdc.setting('sdc_weighted_count') if weight is not none else none,
    'params': (params if params is not none else var('sdc_magnitude_params', none)) if magnitude_weights else none,
    'nums_ptable': used_nums_ptable} -%}
{{ sdc.step('ckm_count', [relation], step_sql, {'ptables': sdc.step_ptables(ptable if ptable is not none else ref('sdc_ptable'), used_nums_ptable), 'call': sdc.step_call(call)}) }}
{% endmacro %}
