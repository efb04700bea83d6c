{#- Private helpers of ckm_sum: ranking of weighted contributions, the components' delta and noise, interpolation in the magnitude ptable, scrambled cell keys. -#}

{#- The rank of a weighted contribution among its cell's, as τ-Argus (its largest unweighted values, each with
    its record's weight) and cellKey 1.0.2 (ordered by |value|, then by weight) rank them: by the record's
    |value|, then by |value x weight| (for one |value|, the larger weight), both exact 6-decimal numbers, packed
    into one integer (each part in millionths, below 10^18) so that the engines' lists of the n largest numbers
    rank the pairs. A tie in both parts is a tie in |value x weight| too: the magnifier does not depend on it. -#}
{% macro ckm_sum_rank_key(value, contribution) -%}
{%- set wide = sdc.wide_integer_type() -%}
cast(cast(abs({{ value }}) as decimal(38, 6)) * 1000000 as {{ wide }}) * 1000000000000000000
    + cast(cast(abs({{ contribution }}) as decimal(38, 6)) * 1000000 as {{ wide }})
{%- endmacro %}

{#- |value x weight| of a packed rank (NULL past the cell's contributors) -#}
{% macro ckm_sum_ranked_contribution(rank) -%}
cast(({{ rank }}) % 1000000000000000000 as {{ sdc.double_type() }}) / 1000000
{%- endmacro %}

{#- δ_j before the cap: x_j ε_j m(x_j); τ-Argus keeps ε_j below fp, cellKey leaves it out there (ckm.md §3.5, 1) -#}
{% macro ckm_sum_delta(mag, eps, p) -%}
{%- set mult = p.multiplier -%}
{%- if mult.type == 'simple' -%}
{{ mag }} * {{ mult.p * eps }}
{%- else -%}
{%- set s1, s0, fp, q = mult.p[0], mult.p[1], mult.fp, mult.q -%}
case
    when {{ mag }} < {{ fp }} then {{ mag }} * {{ s1 * (eps if p.preset == 'tauargus' else 1) }}
    else {{ mag }} * {{ eps }} * {{ s0 }} * (1 + (({{ s1 }} * {{ mag }} - {{ s0 * fp }}) / {{ s0 * fp }}) * power({{ 2 * fp }} / ({{ mag }} + {{ fp }}), {{ q }}))
end
{%- endif -%}
{%- endmacro %}

{#- the added noise: sign(x) |δ| sign(V) (μ + |V|); μ and the clamp as the preset says (ckm.md §3.5, 2 and 3) -#}
{% macro ckm_sum_added(x, m, j, p) -%}
{%- set delta, v, small = 'delta_' ~ m ~ '_' ~ j, 'v_' ~ m ~ '_' ~ j, 'small_' ~ m ~ '_' ~ j -%}
{%- set with_mu = p.mu_c > 0 and (j == 1 or p.preset != 'tauargus') -%}
{%- set mu = ('case when sensitive then ' ~ p.mu_c ~ ' else 0 end') if with_mu else '0' -%}
{#- sign(V); where V = 0 in a sensitive cell, +1 for an even component key, -1 for an odd one (its last binary
    digit, unused by the lookup): a sensitive cell moves by at least mu_c δ (red team 7; τ-Argus adds nothing) -#}
{%- set direction = ('case when ' ~ v ~ ' = 0 and sensitive then 1 - 2 * (key_' ~ j ~ ' % 2) else sign(' ~ v ~ ') end') if with_mu else 'sign(' ~ v ~ ')' -%}
{%- set added = 'sign(' ~ x ~ ') * abs(' ~ delta ~ ') * ' ~ direction ~ ' * (' ~ mu ~ ' + abs(' ~ v ~ '))' -%}
{%- if j == 1 or p.preset == 'cellkey' -%}
case
    when {{ direction }} < 0 and {{ x }} > 0 then greatest({{ added }}, -{{ x }})
    when {{ direction }} < 0 and {{ x }} < 0 then least({{ added }}, -{{ x }})
    else {{ added }}
end
{%- else -%}
{{ added }}
{%- endif -%}
{%- endmacro %}

{#- the noise at ratio a: the last row at or beyond it, else (1 - λ) v(a0) + λ v(a1) between rows a0 < a1 (row 0: 0) -#}
{% macro ckm_sum_interpolated(a, j, table_column, small_column, grid) -%}
case
    {%- for kind, rows in grid.rows.items() %}
    when {{ small_column if kind == 'small_cells' else ('not ' ~ small_column ~ ' and ' ~ table_column ~ " = '" ~ kind ~ "'") }} then
        case
            when {{ a }} >= {{ rows[-1] }} then v_{{ j }}_{{ kind }}_{{ rows[-1] }}
            {%- for k in range(rows | length - 1, -1, -1) %}
            {%- set a1 = rows[k] %}
            {%- set a0 = rows[k - 1] if k > 0 else 0 %}
            {%- set v0 = ('v_' ~ j ~ '_' ~ kind ~ '_' ~ a0) if k > 0 else '0' %}
            {{ 'when ' ~ a ~ ' >= ' ~ a0 ~ ' then' if k > 0 else 'else' }}
                (1 - ({{ a }} - {{ a0 }}) / {{ a1 - a0 }}.0) * {{ v0 }} + ({{ a }} - {{ a0 }}) / {{ a1 - a0 }}.0 * v_{{ j }}_{{ kind }}_{{ a1 }}
            {%- endfor %}
        end
    {%- endfor %}
end
{%- endmacro %}

{#- the key scrambled n times: 0.d1d2..dn -> 0.d2..dn d1 on an integer key of `digits` digits -#}
{% macro ckm_sum_scrambled(key, digits, times) -%}
{%- set top = 10 ** (digits - 1) -%}
{%- set expr = namespace(text=key) -%}
{%- for _ in range(times) -%}
  {%- set expr.text = '((' ~ expr.text ~ ') % ' ~ top ~ ' * 10 + ' ~ sdc.ckm_integer_div(expr.text, top) ~ ')' -%}
{%- endfor -%}
cast({{ expr.text }} as bigint)
{%- endmacro %}
