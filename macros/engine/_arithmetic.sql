{#- Private helpers: exact integer division and the tests for invalid weights and numbers that are not finite, per engine (adapter.dispatch). -#}

{% macro ckm_integer_div(numerator, denominator) %}
  {{ return(adapter.dispatch('ckm_integer_div', 'sdc')(numerator, denominator)) }}
{% endmacro %}

{# floor(a / b) of non-negative integers, exactly. #}
{% macro default__ckm_integer_div(numerator, denominator) %}{{ return('cast(floor((' ~ numerator ~ ') / (' ~ denominator ~ ')) as bigint)') }}{% endmacro %}

{% macro duckdb__ckm_integer_div(numerator, denominator) %}{{ return('((' ~ numerator ~ ') // (' ~ denominator ~ '))') }}{% endmacro %}

{#- ceil(a / b) of integers a >= 0, b > 0 (NULL where b is), exactly on every engine: the quotient of a multiple
    of b, which no engine rounds (floor(a / b) of wide integers need not be exact: Spark cuts a decimal quotient
    to 6 decimals) -#}
{% macro ckm_ceil_div(numerator, denominator) -%}
cast((({{ numerator }}) + ({{ denominator }}) - 1 - ((({{ numerator }}) + ({{ denominator }}) - 1) % ({{ denominator }}))) / ({{ denominator }}) as bigint)
{%- endmacro %}

{% macro ckm_weight_invalid(column) %}
  {{ return(adapter.dispatch('ckm_weight_invalid', 'sdc')(column)) }}
{% endmacro %}

{# A weight that is not a positive, finite number: NULL, NaN, ±infinity, 0 or less. #}
{% macro default__ckm_weight_invalid(column) -%}
{%- set double = sdc.double_type() -%}
{{ return('(' ~ column ~ ' is null or not (cast(' ~ column ~ ' as ' ~ double ~ ') > 0 and cast(' ~ column ~ ' as ' ~ double ~ ") < cast('Infinity' as " ~ double ~ ')))') }}
{%- endmacro %}

{% macro duckdb__ckm_weight_invalid(column) -%}
{{ return('(' ~ column ~ ' is null or isnan(cast(' ~ column ~ ' as double)) or isinf(cast(' ~ column ~ ' as double)) or cast(' ~ column ~ ' as double) <= 0)') }}
{%- endmacro %}

{#- An expression that is true for a number that is not finite (NULL, NaN, ±infinity). -#}
{% macro ckm_not_finite(column) %}
  {{ return(adapter.dispatch('ckm_not_finite', 'sdc')(column)) }}
{% endmacro %}

{% macro default__ckm_not_finite(column) -%}
{%- set double = sdc.double_type() -%}
{{ return('(' ~ column ~ ' is null or not (' ~ column ~ " > cast('-Infinity' as " ~ double ~ ') and ' ~ column ~ " < cast('Infinity' as " ~ double ~ ')))') }}
{%- endmacro %}

{% macro duckdb__ckm_not_finite(column) -%}
{{ return('(' ~ column ~ ' is null or isnan(' ~ column ~ ') or isinf(' ~ column ~ '))') }}
{%- endmacro %}

{#- A record's key for its version (magnitude CKM, version_keys): the first 15 hex digits of the md5 of the record
    key and the record's contributions as text ('<key>|<c1>|<c2>...', decimals with their scale), mod M. The same
    text and the same digits on every engine, so the same cell keys; a revised contribution gives the record a new
    key, so the cells it is in get new noise (new user D11). -#}
{% macro ckm_version_key(key, contributions, modulus) %}
  {%- set parts = ['cast(' ~ key ~ ' as ' ~ sdc.text_type() ~ ')'] -%}
  {%- for c in contributions -%}{%- do parts.append("'|'") -%}{%- do parts.append('cast(' ~ c ~ ' as ' ~ sdc.text_type() ~ ')') -%}{%- endfor -%}
  {{ return(adapter.dispatch('ckm_version_key', 'sdc')('md5(' ~ parts | join(' || ') ~ ')', modulus)) }}
{% endmacro %}

{% macro default__ckm_version_key(digest, modulus) -%}
{{ return("cast(cast('0x' || substr(" ~ digest ~ ", 1, 15) as ubigint) % " ~ modulus ~ " as bigint)") }}
{%- endmacro %}

{% macro postgres__ckm_version_key(digest, modulus) -%}
{{ return("(cast(cast('x' || substr(" ~ digest ~ ", 1, 15) as bit(60)) as bigint) % " ~ modulus ~ ")") }}
{%- endmacro %}

{% macro spark__ckm_version_key(digest, modulus) -%}
{{ return("pmod(cast(conv(substr(" ~ digest ~ ", 1, 15), 16, 10) as bigint), " ~ modulus ~ ")") }}
{%- endmacro %}
