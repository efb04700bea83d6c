{#
  suppression_primary: apply primary rules to a suppression_cells relation. Adds

    status             'empty' (no contributor), 'primary' (a rule fired) or 'published'
    rule               the rules that fired, e.g. 'freq:3' or 'p:10,nk:2,85' (null if none)
    protection_lower   required distance below the true value (the largest over the rules that fired)
    protection_upper   required distance above it

  rules: list of 'freq:n', 'holdings:n', 'p:p', 'nk:n,k' (n = 1 .. top_n), 'pq:p,q', 'zero', 'manual:column'.
  Definitions (Handbook, reference §2.2) with X = value, x1 >= x2 >= ... the contributions:
    freq:n   0 < f < n  (preset freq_inclusive: 0 < f <= n)          protection: freq_protection
    holdings:n  as freq, on the number of contributors (holdings when the cells were built with one)
    nk:n,k   x1 + .. + xn > k/100 X  (preset nk_inclusive: >=)       protection: 100/k (x1+..+xn) - X
    p:p      X - x1 - x2 < p/100 x1                                  protection: p/100 x1 - (X - x1 - x2)
    pq:p,q   X - x1 - x2 < p/q x1                                    protection: p/q x1 - (X - x1 - x2)
    zero     f > 0 and X = 0 (always on with preset acro)            protection: freq_protection
    manual:c cells where column c is true                            protection: freq_protection
  A rule-unsafe cell whose formula gives a protection <= 0 (only possible with the >= boundary) gets
  freq_protection. Protection is symmetric (lower = upper), as in tau-Argus.
  One option flags no cell; it widens the protection of the cells the rules flag:
    range:w  every primary's interval at least w wide (GaussSuppression's rangeMin): protection_upper at
             least w, so the interval reaches from at most the value to at least value + w (the lower end of a
             small count cannot go below the count's a-priori bound anyway)
#}
{% macro suppression_primary(cells, rules, preset='handbook') %}
{{- sdc.build_record_hook() -}}
{%- set presets = sdc.suppression_presets() -%}
{%- if preset not in presets -%}
  {{ exceptions.raise_compiler_error("suppression_primary: unknown preset '" ~ preset ~ "'; known: " ~ presets.keys() | join(', ')) }}
{%- endif -%}
{%- set cfg = presets[preset] -%}
{%- set checks = [] -%}
{%- set width = namespace(value=none) -%}
{%- for rule in rules -%}
  {%- set shown = sdc.one_line(rule) -%}
  {%- set name, _, args = rule.partition(':') -%}
  {%- set numbers = args.split(',') if args else [] -%}
  {%- set numeric = namespace(ok=true) -%}
  {%- for number in numbers if name != 'manual' and not modules.re.match('^[0-9]+([.][0-9]+)?$', number) -%}
    {%- set numeric.ok = false -%}
  {%- endfor -%}
  {%- if not numeric.ok -%}
    {{ exceptions.raise_compiler_error("suppression_primary: cannot read rule '" ~ shown ~ "'; its parameters must be numbers") }}
  {%- endif -%}
  {%- set problem = sdc.suppression_rule_range(name, numbers) -%}
  {%- if problem -%}
    {{ exceptions.raise_compiler_error("suppression_primary: rule '" ~ shown ~ "': " ~ problem) }}
  {%- endif -%}
  {%- if name == 'freq' and numbers | length == 1 -%}
    {%- set cond = '0 < freq and freq ' ~ ('<=' if cfg.freq_inclusive else '<') ~ ' ' ~ numbers[0] -%}
    {%- do checks.append({'rule': rule, 'cond': cond, 'level': cfg.freq_protection}) -%}
  {%- elif name == 'holdings' and numbers | length == 1 -%}
    {%- set cond = '0 < contributors and contributors ' ~ ('<=' if cfg.freq_inclusive else '<') ~ ' ' ~ numbers[0] -%}
    {%- do checks.append({'rule': rule, 'cond': cond, 'level': cfg.freq_protection}) -%}
  {%- elif name == 'nk' and numbers | length == 2 -%}
    {%- set tops = [] -%}{%- for k in range(1, numbers[0] | int + 1) -%}{%- do tops.append('top_' ~ k) -%}{%- endfor -%}
    {%- set share = '(' ~ tops | join(' + ') ~ ')' -%}
    {%- set cond = 'freq > 0 and value > 0 and ' ~ share ~ (' >= ' if cfg.nk_inclusive else ' > ') ~ sdc.double_value(numbers[1]) ~ ' / 100 * value' -%}
    {%- do checks.append({'rule': rule, 'cond': cond, 'level': '100 / ' ~ sdc.double_value(numbers[1]) ~ ' * ' ~ share ~ ' - value'}) -%}
  {%- elif name == 'p' and numbers | length == 1 -%}
    {%- set cond = 'freq > 0 and value - top_1 - top_2 < ' ~ sdc.double_value(numbers[0]) ~ ' / 100 * top_1' -%}
    {%- do checks.append({'rule': rule, 'cond': cond, 'level': sdc.double_value(numbers[0]) ~ ' / 100 * top_1 - (value - top_1 - top_2)'}) -%}
  {%- elif name == 'pq' and numbers | length == 2 -%}
    {%- set cond = 'freq > 0 and value - top_1 - top_2 < ' ~ sdc.double_value(numbers[0]) ~ ' / ' ~ numbers[1] ~ ' * top_1' -%}
    {%- do checks.append({'rule': rule, 'cond': cond, 'level': sdc.double_value(numbers[0]) ~ ' / ' ~ numbers[1] ~ ' * top_1 - (value - top_1 - top_2)'}) -%}
  {%- elif name == 'zero' and not numbers -%}
    {%- do checks.append({'rule': rule, 'cond': 'freq > 0 and value = 0', 'level': cfg.freq_protection}) -%}
  {%- elif name == 'range' and numbers | length == 1 -%}
    {%- if width.value is not none -%}
      {{ exceptions.raise_compiler_error("suppression_primary: rule '" ~ shown ~ "': give range:w once") }}
    {%- endif -%}
    {%- set width.value = sdc.double_value(numbers[0]) -%}
  {%- elif name == 'manual' and numbers | length == 1 -%}
    {%- do checks.append({'rule': rule, 'cond': 'coalesce(' ~ sdc.sql_identifier(numbers[0]) ~ ', false)', 'level': cfg.freq_protection}) -%}
  {%- else -%}
    {{ exceptions.raise_compiler_error("suppression_primary: cannot read rule '" ~ shown ~ "'; use freq:n, holdings:n, p:p, nk:n,k, pq:p,q, zero, manual:column or range:w") }}
  {%- endif -%}
{%- endfor -%}
{%- if cfg.zeros_unsafe and 'zero' not in rules -%}
  {%- do checks.append({'rule': 'zero', 'cond': 'freq > 0 and value = 0', 'level': cfg.freq_protection}) -%}
{%- endif -%}
{%- if width.value is not none and not checks -%}
  {{ exceptions.raise_compiler_error("suppression_primary: range:w flags no cell, it widens the protection of the cells a rule flags: give a primary rule beside it (e.g. freq:3)") }}
{%- endif -%}
{#- the condition of a primary cell (any rule fires): its status, and the width range:w asks of it -#}
{%- set any_rule -%}{% for check in checks %}({{ check.cond }}){{ ' or ' if not loop.last }}{% endfor %}{%- endset -%}
{%- set step_sql %}
with primary_status as (
    select
        cells.*,
        case
            when cells.freq = 0 then 'empty'
            {%- if checks %}
            when {{ any_rule }} then 'primary'
            {%- endif %}
            else 'published'
        end as status,
        {%- if checks %}
        nullif(concat_ws(','
            {%- for check in checks %},
            case when {{ check.cond }} then {{ sdc.sql_string(check.rule) }} end
            {%- endfor %}), '') as rule,
        {%- else %}
        cast(null as {{ sdc.text_type() }}) as rule,
        {%- endif %}
        {%- if checks %}
        {%- set levels %}
            {%- for check in checks %},
            case when {{ check.cond }} then
                case when {{ check.level }} > 0 then {{ check.level }} else {{ cfg.freq_protection }} end
            else 0 end
            {%- endfor %}
        {%- endset %}
        greatest(0{{ levels }}
            {%- if width.value is not none %},
            case when cells.freq > 0 and ({{ any_rule }}) then {{ width.value }} else 0 end
            {%- endif %}) as protection_upper,
        greatest(0{{ levels }}) as protection_lower
        {%- else %}
        -- no rule: Spark's greatest needs two arguments
        0 as protection_upper,
        0 as protection_lower
        {%- endif %}
    from {{ cells }} as cells
)

select * from primary_status
{%- endset -%}
{{ sdc.step('suppression_primary', [cells], step_sql, {'call': sdc.step_call({'rules': rules, 'preset': preset})}) }}
{% endmacro %}
