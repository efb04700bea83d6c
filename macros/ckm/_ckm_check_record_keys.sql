{#
  ckm_check_record_keys(relation, key_column, fact, modulus, caller_name): stops the build when the record keys
  the CKM sums cannot be uniform random on [0, M). With keys all 0 every cell of 8 or more got the noise -5:
  original = published + 5. The same check as `sdc load --key-mode existing` (python/sdc/warehouse/record_keys.py); the
  thresholds and why genuine keys pass them are in python/sdc/conventions.py ("record key checks"):

    range           every key a whole number in [0, M), none NULL
    distinct share  below sdc_record_key_min_distinct_fraction (0.5) of the M (1 - (1 - 1/M)^n) distinct values
                    n uniform keys take on average, from sdc_record_key_min_records (50) keys on
    uniformity      Kolmogorov-Smirnov distance D at the edges of sdc_record_key_bins (1000) equal bins, refused
                    when the DKW bound p = 2 exp(-2 n D^2) is below sdc_record_key_alpha (1e-6)

  The keys are those of the records counted: key_column where fact = 1, or every record. One query per model
  build, run before the model (like ckm_check_modulus). Off with var sdc_check_record_keys: false, or
  ckm_count(check_keys=false), for hand-picked teaching keys only. Not made in a dbt unit test: its given rows
  are hand-picked by design, publish nothing, and are a CTE that a query of their own cannot read.
  Returns true when it checked the keys (every key of the relation then lies in [0, M)), false when it did not.
#}
{% macro ckm_check_record_keys(relation, key_column, fact, modulus, caller_name) %}
{%- if not execute or (model is defined and model.resource_type == 'unit_test') -%}{{ return(false) }}{%- endif -%}
{%- set bins = sdc.setting('sdc_record_key_bins') -%}
{%- set width = (modulus + bins - 1) // bins -%}
{%- set k = sdc.sql_identifier(key_column) -%}
{%- set record_keys_sql -%}
    select {{ k }} as k from {{ relation }}
    {%- if fact is not none %} where {{ sdc.sql_identifier(fact) }} = 1{% endif %}
{%- endset -%}
{%- set statistics_sql -%}
with key_bins as (
    -- one pass: bin j holds the keys in [j w, (j + 1) w), w = ceil(M / bins); bin -1 the keys that are not whole
    -- numbers in [0, M), bin NULL the NULLs
    select
        case when k < 0 or k >= {{ modulus }} or k <> floor(k) then -1
             else {{ sdc.ckm_integer_div('cast(k as bigint)', width) }} end as bin,
        count(*) as records
    from ({{ record_keys_sql }}) as record_keys
    group by 1
),

key_summary as (
    select
        cast(coalesce(sum(records), 0) as bigint) as n,
        cast(coalesce(sum(case when bin is null then records end), 0) as bigint) as nulls,
        cast(coalesce(sum(case when bin = -1 then records end), 0) as bigint) as outside,
        {% if width == 1 -%}
        -- a bin per key value: the distinct keys are the non-empty bins, counted
        count(case when bin >= 0 then 1 end) as distinct_keys
        {%- else -%}
        -- a second pass (the keys as a CTE read twice cost more than two passes)
        (select {{ sdc.ckm_distinct_count('k') }} from ({{ record_keys_sql }}) as record_keys) as distinct_keys
        {%- endif %}
    from key_bins
),

cumulated_bins as (
    select bin, records, sum(records) over (order by bin rows between unbounded preceding and current row) as upto
    from key_bins
    where bin >= 0
),

key_distance as (
    -- the empirical CDF against the uniform one at both edges of each non-empty bin
    select coalesce(max(greatest(
        cast(upto as {{ sdc.double_type() }}) / n - cast(least((bin + 1) * {{ width }}, {{ modulus }}) as {{ sdc.double_type() }}) / {{ modulus }},
        cast(bin * {{ width }} as {{ sdc.double_type() }}) / {{ modulus }} - cast(upto - records as {{ sdc.double_type() }}) / n)), 0) as ks
    from cumulated_bins, key_summary
)

select
    n, nulls, outside, distinct_keys, ks,
    -- M (1 - (1 - 1/M)^n); for n < 10^-5 M its series n - n (n - 1) / 2M, where the power rounds away
    case when n < 1e-5 * {{ modulus }} then n - n * (n - 1.0) / (2.0 * {{ modulus }})
         else {{ modulus }} * (1 - exp(n * ln(1 - 1.0 / {{ modulus }}))) end as expected_distinct,
    least(0, log10(2) - 2 * n * ks * ks / ln(10)) as log10_p,
    log10({{ sdc.setting('sdc_record_key_alpha') }}) as log10_alpha
from key_summary, key_distance
{%- endset -%}
{%- set row = run_query(statistics_sql).rows[0] -%}
{%- set n = row['n'] | int -%}
{%- set reason = none -%}
{#- keys that are uniform one by one but repeat: repeated records (keys of another modulus or bunched keys fail
    the uniformity test, and are named by it) -#}
{%- set repeated = sdc.ckm_repeated_records(record_keys_sql, n, row, width == 1 or sdc.ckm_distinct_count_is_exact()) if row['nulls'] | int == 0 and row['outside'] | int == 0
                   and row['log10_p'] | float >= row['log10_alpha'] | float else none -%}
{%- if row['nulls'] | int > 0 -%}
  {%- set reason = (row['nulls'] | int) ~ ' of ' ~ n ~ ' keys are NULL' -%}
{%- elif row['outside'] | int > 0 -%}
  {%- set reason = (row['outside'] | int) ~ ' of ' ~ n ~ ' keys are not whole numbers in [0, ' ~ modulus ~ ')' -%}
{%- elif repeated is not none -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the relation " ~ relation ~ " repeats records: " ~ repeated.repeats ~ " of " ~ n
      ~ " record keys in column " ~ key_column ~ (" (records with " ~ fact ~ " = 1)" if fact is not none else "")
      ~ " are another record's key, where distinct records' random keys coincide about " ~ ('%.3g' | format(repeated.expected))
      ~ " times. A join that matches a record more than once (1:n) repeats it, and the CKM would count it twice: count each record once, e.g. join the other table to the microdata, not the microdata to it") }}
{%- elif n >= sdc.setting('sdc_record_key_min_records')
         and row['distinct_keys'] | float < sdc.setting('sdc_record_key_min_distinct_fraction') * row['expected_distinct'] | float -%}
  {%- set reason = 'distinct share ' ~ ('%.4g' | format(row['distinct_keys'] | float / n)) ~ ': ' ~ (row['distinct_keys'] | int)
      ~ ' distinct values in ' ~ n ~ ' keys, where uniform keys give about ' ~ ('%.6g' | format(row['expected_distinct'] | float))
      ~ ' (refused below ' ~ sdc.setting('sdc_record_key_min_distinct_fraction') ~ ' of that)' -%}
{%- elif row['log10_p'] | float < row['log10_alpha'] | float -%}
  {%- set reason = 'Kolmogorov-Smirnov distance ' ~ ('%.4g' | format(row['ks'] | float)) ~ ' to the uniform over ' ~ n
      ~ ' keys has p <= 10^' ~ ('%.1f' | format(row['log10_p'] | float)) ~ ', below ' ~ sdc.setting('sdc_record_key_alpha') -%}
{%- endif -%}
{%- if reason is not none -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": record keys in column " ~ key_column ~ " of " ~ relation
      ~ (" (records with " ~ fact ~ " = 1)" if fact is not none else "") ~ " are not uniform random on [0, " ~ modulus
      ~ "): " ~ reason ~ ". Keys must be secret random integers (sdc load --key-mode random draws them); only for "
      ~ "hand-picked teaching keys: var sdc_check_record_keys: false, or " ~ caller_name ~ "(check_keys=false)") }}
{%- endif -%}
{{ return(true) }}
{% endmacro %}


{#
  ckm_repeated_records(record_keys_sql, n, statistics): none, or {repeats, expected} when more of the n keys
  repeat another key than distinct records' random keys can (new-user trial D13: a 1:n join that repeats
  records). Uniform keys of n distinct records coincide n - E(distinct) = n - M (1 - (1 - 1/M)^n) times on
  average (about n^2 / 2M: 2.5 for 22,272 records and M = 10^8), a count with variance at most its mean;
  refused beyond that mean + 6 standard deviations + 5. The exact count of distinct keys is costly at 10^7
  keys (5 s against 0.1 s for DuckDB's estimate): it is made for n <= 10^6, or where the estimate is below
  0.95 of the expected distinct keys (genuine keys stay above 0.88 of it, tests/test_record_key_checks.py).
  Repeats too few to move the estimate by 5 % in a relation of more than 10^6 records are not seen. Where the
  statistics' count is exact (exact_distinct: a bin per key value, or an engine that counts exactly), it is
  taken instead of a second count: on Spark each query of a build's checks is a job of seconds.
#}
{% macro ckm_repeated_records(record_keys_sql, n, statistics, exact_distinct=false) %}
{%- set expected_distinct = statistics['expected_distinct'] | float -%}
{%- if n < 2 or (n > 1000000 and statistics['distinct_keys'] | float >= 0.95 * expected_distinct) -%}
  {{ return(none) }}
{%- endif -%}
{%- if exact_distinct -%}
  {%- set exact = statistics['distinct_keys'] | int -%}
{%- else -%}
  {%- set exact = run_query('select count(distinct k) as distinct_keys from (' ~ record_keys_sql ~ ') as record_keys').rows[0]['distinct_keys'] | int -%}
{%- endif -%}
{%- set expected = [n - expected_distinct, 0] | max -%}
{#- many distinct keys, each repeated: records repeated; few distinct values: degenerate keys (the other checks) -#}
{%- if n - exact > expected + 6 * expected ** 0.5 + 5 and exact >= 20 -%}
  {{ return({'repeats': n - exact, 'expected': expected}) }}
{%- endif -%}
{{ return(none) }}
{% endmacro %}
