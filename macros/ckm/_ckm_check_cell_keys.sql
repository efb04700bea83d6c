{#
  ckm_check_cell_keys(cells, modulus, caller_name): the rows of the CTE `cells` (columns original, key_sum,
  cell_key_int), or a stop with a message when the table's own cell keys cannot be uniform on [0, M) (red team
  8). Record keys that cancel within cells (pairs k, M - k) are uniform and distinct one by one, and pass the
  record key checks, but make every cell key 0: every cell then gets the noise of one interval, and the
  original is the published count minus it. Only the different record sets count (distinct original, key sum:
  a margin over a single code is its cell again), and only those with records:

    distinct share  fewer than sdc_record_key_min_distinct_fraction (0.5) of the M (1 - (1 - 1/M)^c) distinct
                    values c uniform keys take on average, from 3 cells on
    uniformity      the Kolmogorov-Smirnov distance D of the c cell keys to the uniform, refused when the DKW
                    bound p = 2 exp(-2 c D^2) is below sdc_record_key_alpha (1e-6)

  The false-alarm rate on genuine random keys, by simulation: tests/test_record_key_checks.py. counted: the
  column whose cells have a cell key (records; ckm_sum: the contributors); identity: the columns that tell record
  sets apart.
#}
{% macro ckm_check_cell_keys(cells, modulus, caller_name, counted='original', identity=['original', 'key_sum']) %}
    select {{ cells }}.* from {{ cells }}
    cross join (
        select
            count(*) as different_cells,
            count(distinct cell_key_int) as distinct_cell_keys,
            coalesce(max(greatest(position / total - x, x - (position - 1) / total)), 0) as ks
        from (
            -- the different record sets, in the order of their cell keys x (a fraction of 1)
            select
                cell_key_int,
                cast(cell_key_int as {{ sdc.double_type() }}) / {{ modulus }} as x,
                row_number() over (order by cell_key_int) as position,
                cast(count(*) over () as {{ sdc.double_type() }}) as total
            from {{ cells }}
            where {{ counted }} > 0
            group by {{ identity | join(', ') }}, cell_key_int
        ) as ranked
    ) as spread
    where {{ sdc.ckm_fail_if(
        'different_cells >= 3 and (distinct_cell_keys < ' ~ sdc.setting('sdc_record_key_min_distinct_fraction') ~ ' * '
            ~ sdc.ckm_expected_distinct('different_cells', modulus)
            ~ ' or ln(2) - 2 * different_cells * ks * ks < ln(' ~ sdc.setting('sdc_record_key_alpha') ~ '))',
        "'" ~ caller_name ~ ": the cell keys of the table are not uniform on [0, 1): ' || cast(distinct_cell_keys as "
            ~ sdc.text_type() ~ ") || ' distinct cell keys among ' || cast(different_cells as " ~ sdc.text_type()
            ~ ") || ' cells with records, Kolmogorov-Smirnov distance ' || cast(cast(ks as decimal(10, 4)) as " ~ sdc.text_type()
            ~ ") || '. The record keys cancel within cells (such as pairs k and M - k): they are not independent random keys; draw them with sdc load --key-mode random or keyed'") }}
{% endmacro %}


{#- M (1 - (1 - 1/M)^c), the distinct values c uniform keys of [0, M) take on average; for c < 10^-5 M its series
    c - c (c - 1) / 2M, where the power rounds away -#}
{% macro ckm_expected_distinct(c, modulus) -%}
(case when {{ c }} < {{ 1e-5 * modulus }} then {{ c }} - {{ c }} * ({{ c }} - 1.0) / {{ 2.0 * modulus }}
      else {{ modulus }} * (1 - exp({{ c }} * ln(1 - 1.0 / {{ modulus }}))) end)
{%- endmacro %}
