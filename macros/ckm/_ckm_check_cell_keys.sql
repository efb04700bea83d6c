{#
  ckm_check_cell_keys(cells, modulus, caller_name): the rows of the CTE `cells` (columns original, key_sum,
  cell_key_int) with the statistics' columns key_check_* beside them, or a stop with a message when the table's
  own cell keys cannot be uniform on [0, M) (red team 8). Record keys that cancel within cells (pairs k, M - k)
  are uniform and distinct one by one, and pass the record key checks, but make every cell key 0: every cell
  then gets the noise of one interval, and the original is the published count minus it. Only the different
  record sets count (distinct original, key sum: a margin over a single code is its cell again), and only those
  with records:

    distinct share  fewer than sdc_record_key_min_distinct_fraction (0.5) of the M (1 - (1 - 1/M)^c) distinct
                    values c uniform keys take on average, from 3 cells on
    uniformity      the Kolmogorov-Smirnov distance D of the c cell keys to the uniform, refused when the DKW
                    bound p = 2 exp(-2 c D^2) is below sdc_record_key_alpha (1e-6)

  The false-alarm rate on genuine random keys, by simulation: tests/test_record_key_checks.py. counted: the
  column whose cells have a cell key (records; ckm_sum: the contributors); identity: the columns that tell record
  sets apart.
#}
{% macro ckm_check_cell_keys(cells, modulus, caller_name, counted='original', identity=['original', 'key_sum']) %}
    {#- `cells` read once, the statistics as windows over its rows: an engine that inlines a CTE read twice
        (Spark) would plan and compute the whole table again for them. A record set's place among the others in
        the order of cell keys is its dense rank (ties among record sets of one key in any order: the distance
        takes the first and the last place of a key). -#}
    {%- set double = sdc.double_type() %}
    select * from (
        select
            *,
            coalesce(max(case when key_check_counted then greatest(
                cast(key_check_place as {{ double }}) / key_check_sets - key_check_x,
                key_check_x - cast(key_check_place - 1 as {{ double }}) / key_check_sets) end) over (), 0) as key_check_ks
        from (
            select
                *,
                max(case when key_check_counted then key_check_place else 0 end) over () as key_check_sets,
                max(case when key_check_counted then key_check_key_place else 0 end) over () as key_check_keys
            from (
                -- the different record sets with records, in the order of their cell keys x (a fraction of 1)
                select
                    *,
                    {{ counted }} > 0 as key_check_counted,
                    cast(cell_key_int as {{ double }}) / {{ modulus }} as key_check_x,
                    dense_rank() over (partition by {{ counted }} > 0
                                       order by cell_key_int, {{ identity | join(', ') }}) as key_check_place,
                    dense_rank() over (partition by {{ counted }} > 0 order by cell_key_int) as key_check_key_place
                from {{ cells }}
            ) as placed
        ) as counted_sets
    ) as spread
    where {{ sdc.ckm_fail_if(
        'key_check_sets >= 3 and (key_check_keys < ' ~ sdc.setting('sdc_record_key_min_distinct_fraction') ~ ' * '
            ~ sdc.ckm_expected_distinct('key_check_sets', modulus)
            ~ ' or ln(2) - 2 * key_check_sets * key_check_ks * key_check_ks < ln(' ~ sdc.setting('sdc_record_key_alpha') ~ '))',
        "'" ~ caller_name ~ ": the cell keys of the table are not uniform on [0, 1): ' || cast(key_check_keys as "
            ~ sdc.text_type() ~ ") || ' distinct cell keys among ' || cast(key_check_sets as " ~ sdc.text_type()
            ~ ") || ' cells with records, Kolmogorov-Smirnov distance ' || cast(cast(key_check_ks as decimal(10, 4)) as " ~ sdc.text_type()
            ~ ") || '. The record keys cancel within cells (such as pairs k and M - k): they are not independent random keys; draw them with sdc load --key-mode random or keyed'") }}
{% endmacro %}


{#- M (1 - (1 - 1/M)^c), the distinct values c uniform keys of [0, M) take on average; for c < 10^-5 M its series
    c - c (c - 1) / 2M, where the power rounds away -#}
{% macro ckm_expected_distinct(c, modulus) -%}
(case when {{ c }} < {{ 1e-5 * modulus }} then {{ c }} - {{ c }} * ({{ c }} - 1.0) / {{ 2.0 * modulus }}
      else {{ modulus }} * (1 - exp({{ c }} * ln(1 - 1.0 / {{ modulus }}))) end)
{%- endmacro %}
