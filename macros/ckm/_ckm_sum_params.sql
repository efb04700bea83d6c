{#
  ckm_magnitude_params(params, caller_name, source): the magnitude parameters of ckm_sum with their defaults,
  checked as python/sdc/ckm/params.py checks them (same names, same messages' content): an unknown name
  or a value out of range stops the build, naming the macro and where the parameters came from (params= or
  var sdc_magnitude_params). The ptable is not a parameter here: in dbt it is a relation (ptable=, default
  ref('sdc_nums_ptable')).
#}
{% macro ckm_magnitude_params(params, caller_name='ckm_sum', source='params=') %}
{%- set where = caller_name ~ ' (' ~ source ~ ')' -%}
{%- if params is none or params is not mapping -%}
  {{ exceptions.raise_compiler_error(where ~ ": params (or var sdc_magnitude_params) must be a mapping of magnitude parameters, e.g. {'preset': 'tauargus', 'type': 'top_contr', 'top_k': 3, 'multiplier': {...}}") }}
{%- endif -%}
{%- if 'ptable' in params -%}
  {{ exceptions.raise_compiler_error(where ~ ": ptable names a file for sdc ckm and the Python API; in dbt the magnitude ptable is a relation: load it as the seed sdc_nums_ptable (the default) or give ptable=ref('...'), and leave ptable out of the parameters") }}
{%- endif -%}
{%- set known = ['preset', 'type', 'top_k', 'multiplier', 'mu_c', 'sensitive', 'same_key', 'use_zero_rkeys', 'version_keys', 'separation'] -%}
{%- for name in params if name not in known -%}
  {{ exceptions.raise_compiler_error(where ~ ": unknown parameter '" ~ name ~ "'; known: " ~ known | join(', ')) }}
{%- endfor -%}
{%- set preset = params.get('preset', 'tauargus') -%}
{%- if preset not in ['tauargus', 'cellkey'] -%}
  {{ exceptions.raise_compiler_error(where ~ ": preset must be tauargus or cellkey, got " ~ preset) }}
{%- endif -%}
{#- where the presets differ, as fields of python/sdc/ckm/params.py Preset (same names) -#}
{%- set rules = {'tauargus': {'range_of_absolute_values': true}, 'cellkey': {'range_of_absolute_values': false}}[preset] -%}
{%- set type = params.get('type', 'top_contr') -%}
{%- if type not in ['top_contr', 'mean', 'range', 'sum'] -%}
  {{ exceptions.raise_compiler_error(where ~ ": type must be one of top_contr, mean, range, sum, got " ~ type) }}
{%- endif -%}
{%- set top_k = params.get('top_k', 1) -%}
{%- if top_k is not number or top_k is sameas true or top_k is sameas false or top_k != top_k | int or top_k < 1 or top_k > 6 -%}
  {{ exceptions.raise_compiler_error(where ~ ": top_k must be a whole number from 1 to 6, got " ~ top_k) }}
{%- endif -%}
{%- if type != 'top_contr' and top_k != 1 -%}
  {{ exceptions.raise_compiler_error(where ~ ": top_k=" ~ top_k ~ " applies to type top_contr only; type " ~ type ~ " has one noise component") }}
{%- endif -%}
{%- set components = top_k if type == 'top_contr' else 1 -%}
{%- set mult = params.get('multiplier') -%}
{%- if mult is not mapping or mult.get('type') not in ['flex', 'simple'] -%}
  {{ exceptions.raise_compiler_error(where ~ ": multiplier must be a mapping with type flex or simple, got " ~ mult) }}
{%- endif -%}
{%- set mult_known = ['type', 'fp', 'p', 'epsilon', 'q'] if mult.type == 'flex' else ['type', 'p', 'epsilon'] -%}
{%- for name in mult if name not in mult_known -%}
  {{ exceptions.raise_compiler_error(where ~ ": unknown multiplier parameter '" ~ name ~ "' for type " ~ mult.type ~ "; known: " ~ mult_known | join(', ')) }}
{%- endfor -%}
{%- set epsilon = mult.get('epsilon', [1] if components == 1 else none) -%}
{%- if epsilon is none or epsilon is string or epsilon | length != components or epsilon[0] != 1 -%}
  {{ exceptions.raise_compiler_error(where ~ ": multiplier epsilon must list " ~ components ~ " numbers (one per noise component), starting with 1, got " ~ epsilon) }}
{%- endif -%}
{%- set previous = namespace(e=1) -%}
{%- for e in epsilon -%}
  {%- if e is not number or e <= 0 or e > previous.e -%}
    {{ exceptions.raise_compiler_error(where ~ ": multiplier epsilon must hold numbers in (0, 1] that do not increase, got " ~ epsilon) }}
  {%- endif -%}
  {%- set previous.e = e -%}
{%- endfor -%}
{%- if mult.type == 'simple' and (mult.get('p') is not number or not (0 < mult.p < 1)) -%}
  {{ exceptions.raise_compiler_error(where ~ ": multiplier p must be a share in (0, 1), got " ~ mult.get('p')) }}
{%- endif -%}
{%- if mult.type == 'flex' -%}
  {%- set pp = mult.get('p') -%}
  {%- if pp is string or pp is not iterable or pp | length != 2 or pp[0] is not number or pp[1] is not number or not (0 < pp[1] <= pp[0] < 1) -%}
    {{ exceptions.raise_compiler_error(where ~ ": multiplier p must be [p_small, p_large], shares in (0, 1) with p_large <= p_small, got " ~ pp) }}
  {%- endif -%}
  {%- if mult.get('fp') is not number or mult.fp <= 0 -%}
    {{ exceptions.raise_compiler_error(where ~ ": multiplier fp must be a number > 0, got " ~ mult.get('fp')) }}
  {%- endif -%}
  {%- if mult.get('q') is not number or mult.q <= 1 -%}
    {{ exceptions.raise_compiler_error(where ~ ": multiplier q must be a number > 1, got " ~ mult.get('q')) }}
  {%- endif -%}
{%- endif -%}
{%- set mu_c = params.get('mu_c', 0) -%}
{%- if mu_c is not number or mu_c < 0 -%}
  {{ exceptions.raise_compiler_error(where ~ ": mu_c must be a number >= 0, got " ~ mu_c) }}
{%- endif -%}
{%- set sensitive = params.get('sensitive', []) -%}
{%- if sensitive is string or sensitive is not iterable -%}
  {{ exceptions.raise_compiler_error(where ~ ": sensitive must be a list of rules such as ['freq:15', 'p:10'], got " ~ sensitive) }}
{%- endif -%}
{%- for rule in sensitive -%}
  {#- the same rules as python/sdc/ckm/params.py SENSITIVITY_RULE -#}
  {%- if rule is not string or not modules.re.fullmatch('freq:\\d+|p:\\d+(\\.\\d+)?|nk:\\d+,\\d+(\\.\\d+)?|pq:\\d+(\\.\\d+)?,\\d+(\\.\\d+)?|zero', rule) -%}
    {{ exceptions.raise_compiler_error(where ~ ": cannot read the sensitivity rule '" ~ rule ~ "'; use freq:n, p:p, nk:n,k, pq:p,q or zero (as sdc suppress; the rules read each cell's records and largest contributions)") }}
  {%- endif -%}
{%- endfor -%}
{%- if mu_c > 0 and sensitive | length == 0 -%}
  {{ exceptions.raise_compiler_error(where ~ ": mu_c=" ~ mu_c ~ " adds noise to sensitive cells, but no rule makes a cell sensitive: give sensitive") }}
{%- endif -%}
{%- set flags = {} -%}
{%- for name, default in [('same_key', preset == 'cellkey'), ('use_zero_rkeys', false), ('version_keys', true), ('separation', false)] -%}
  {%- set value = params.get(name, default) -%}
  {%- if value is not sameas true and value is not sameas false -%}
    {{ exceptions.raise_compiler_error(where ~ ": " ~ name ~ " must be true or false, got " ~ value) }}
  {%- endif -%}
  {%- do flags.update({name: value}) -%}
{%- endfor -%}
{{ return({'preset': preset, 'type': type, 'top_k': top_k, 'multiplier': {'type': mult.type, 'p': mult.get('p'), 'fp': mult.get('fp'), 'q': mult.get('q'), 'epsilon': epsilon},
           'mu_c': mu_c, 'sensitive': sensitive | list, 'same_key': flags.same_key, 'use_zero_rkeys': flags.use_zero_rkeys, 'version_keys': flags.version_keys, 'separation': flags.separation,
           'range_of_absolute_values': rules.range_of_absolute_values}) }}
{% endmacro %}


{#
  ckm_sum_ptable_grid(ptable, p): the rows of each type of the magnitude ptable (row 0 left out: its noise is 0),
  whether it has parity (even/odd), and the separation point z_s = sqrt(m1²) / (σ1 sqrt(E)) (m1² the variance
  of the small_cells table's last row, E = Σ ε_j²); 0 without separation.
#}
{% macro ckm_sum_ptable_grid(ptable, p, caller_name='ckm_sum') %}
{%- if not execute -%}{{ return({'rows': {'all': [1]}, 'parity': false, 'separation_point': 0}) }}{%- endif -%}
{%- set columns = adapter.get_columns_in_relation(ptable) | map(attribute='name') | map('lower') | list -%}
{%- if 'type' not in columns -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the ptable " ~ ptable ~ " has no column type, so it is not a magnitude ptable (a count ptable?): give the magnitude ptable, made by sdc ptable --table nums (default: the seed sdc_nums_ptable)") }}
{%- endif -%}
{%- set found = sdc.run_check_query('select type, i from ' ~ ptable ~ ' where i > 0 group by type, i order by type, i') -%}
{%- set rows = {} -%}
{%- for row in found.rows -%}
  {%- if row[0] not in ['all', 'even', 'odd', 'small_cells'] -%}
    {{ exceptions.raise_compiler_error(caller_name ~ ": the magnitude ptable " ~ ptable ~ " has rows of type '" ~ row[0] ~ "'; known: all, even, odd, small_cells") }}
  {%- endif -%}
  {%- do rows.setdefault(row[0], []).append(row[1] | int) -%}
{%- endfor -%}
{%- set main = rows.keys() | reject('equalto', 'small_cells') | list | sort -%}
{%- if main != ['all'] and main != ['even', 'odd'] -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the magnitude ptable " ~ ptable ~ " needs rows of type all, or of both even and odd; found: " ~ (rows.keys() | list | sort | join(', ') or 'no rows')) }}
{%- endif -%}
{%- if main == ['even', 'odd'] and not (p.type == 'top_contr' and p.top_k == 1) -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": the magnitude ptable " ~ ptable ~ " has parity tables (even/odd), which serve type top_contr with top_k 1 only (as cellKey)") }}
{%- endif -%}
{%- set z_s = 0 -%}
{%- if p.separation -%}
  {%- if 'small_cells' not in rows -%}
    {{ exceptions.raise_compiler_error(caller_name ~ ": separation is on, but the magnitude ptable " ~ ptable ~ " has no small_cells rows (build them with sdc ptable --table nums --type small_cells --add-to FILE)") }}
  {%- endif -%}
  {%- set m1sq = sdc.run_check_query("select sum(cast(v as " ~ sdc.double_type() ~ ") * cast(v as " ~ sdc.double_type() ~ ") * cast(p_int_ub - p_int_lb as " ~ sdc.double_type() ~ ")) from " ~ ptable ~ " where type = 'small_cells' and i = " ~ rows['small_cells'][-1]).rows[0][0] -%}
  {%- set sigma1 = p.multiplier.p[0] if p.multiplier.type == 'flex' else p.multiplier.p -%}
  {%- set e = namespace(sum=0) -%}
  {%- for x in p.multiplier.epsilon -%}{%- set e.sum = e.sum + x * x -%}{%- endfor -%}
  {#- agate gives numbers as Decimal: float for the arithmetic with the parameters -#}
  {%- set z_s = ((m1sq | float) ** 0.5) / (sigma1 * e.sum ** 0.5) -%}
{%- endif -%}
{{ return({'rows': rows, 'parity': main == ['even', 'odd'], 'separation_point': z_s}) }}
{% endmacro %}


{#- the value and weight columns must be numeric: a text column would sum to an engine error or worse -#}
{% macro ckm_sum_check_numeric(relation, column_names, caller_name) %}
{%- if not execute -%}{{ return(none) }}{%- endif -%}
{%- set types = {} -%}
{%- for column in adapter.get_columns_in_relation(relation) -%}{%- do types.update({column.name | lower: column.dtype | lower}) -%}{%- endfor -%}
{%- for name in column_names if name is not none -%}
  {%- if name | lower not in types -%}
    {{ exceptions.raise_compiler_error(caller_name ~ ": column '" ~ name ~ "' is not in " ~ relation) }}
  {%- endif -%}
  {%- set t = types[name | lower] -%}
  {%- if not (t.startswith('int') or t.startswith('bigint') or t.startswith('smallint') or t.startswith('tinyint') or t.startswith('hugeint') or t.startswith('ubigint') or t.startswith('uinteger') or t.startswith('usmallint') or t.startswith('utinyint') or t.startswith('decimal') or t.startswith('numeric') or t in ['double', 'float', 'real', 'double precision']) -%}
    {{ exceptions.raise_compiler_error(caller_name ~ ": column '" ~ name ~ "' must be numeric, but it is " ~ t) }}
  {%- endif -%}
{%- endfor -%}
{% endmacro %}


{#
  ckm_sum_check_sensitivity_floor(p, caller_name): a sensitive cell moves by at least mu_c · δ_1 = mu_c · ε_1 ·
  m(x_1) · x_1, and the multiplier m falls to its smallest factor (p_large of flex, p of simple) for the largest
  cells. A p% rule (p:P, pq:P,Q) asks that the largest contribution not be estimated to within P % of it: where
  mu_c · ε_1 · that factor is below P/100, a cell the rule flags can be published inside its interval (new user
  D7: 7.6 % moved for p:10). A warning at build names the guaranteed share and the mu_c that meets the rule.
#}
{% macro ckm_sum_check_sensitivity_floor(p, caller_name='ckm_sum') %}
{%- if not execute or p.mu_c is none -%}{{ return(none) }}{%- endif -%}
{%- set smallest = p.multiplier.p[1] if p.multiplier.type == 'flex' else p.multiplier.p -%}
{%- set share = p.mu_c * p.multiplier.epsilon[0] * smallest -%}
{%- for rule in p.sensitive if rule.startswith('p:') or rule.startswith('pq:') -%}
  {%- set asked = rule.split(':')[1].split(',')[0] | float -%}
  {%- if share * 100 < asked - 1e-9 -%}
    {%- do exceptions.warn(caller_name ~ ": the magnitude parameters guarantee a sensitive cell a move of at least "
        ~ (share * 100) | round(2) ~ " % of its largest contribution (mu_c " ~ p.mu_c ~ " x epsilon_1 " ~ p.multiplier.epsilon[0]
        ~ " x the multiplier's smallest factor " ~ smallest ~ "), less than the " ~ asked ~ " % of its rule " ~ rule
        ~ ": a cell the rule flags can be published within " ~ asked ~ " % of its largest contribution. Raise mu_c to "
        ~ ((asked / 100 / (p.multiplier.epsilon[0] * smallest)) * 100) | round(0, 'ceil') / 100 ~ " or more for the rule to hold") -%}
  {%- endif -%}
{%- endfor -%}
{% endmacro %}
