{#- Private helpers of ckm_published: its digits, rounding and input checks. -#}

{#- digits as given (a whole number from -15 to 15, or none: unrounded), or a compile error naming it -#}
{% macro ckm_published_digits(digits) %}
{%- if digits is none -%}{{ return(none) }}{%- endif -%}
{%- if digits is not number or digits is sameas true or digits is sameas false or digits | int != digits or digits < -15 or digits > 15 -%}
  {{ exceptions.raise_compiler_error("ckm_published: digits (of the published magnitudes) must be a whole number from -15 to 15, got " ~ (digits | tojson if digits is string else digits) ~ "; none publishes them unrounded") }}
{%- endif -%}
{{ return(digits | int) }}
{% endmacro %}

{#- `expression` (a double) rounded to `digits` decimals, half away from zero, in double arithmetic that every
    engine does alike (a multiplication or division by an exact power of ten, floor, the quotient): the same
    SQL in dbt, in `sdc ckm` / sdc.ckm (python/sdc/ckm/_inputs.py rounded) and in `sdc publish`'s recomputation -#}
{% macro ckm_published_rounded(expression, digits) %}
{%- set x = 'cast(' ~ expression ~ ' as ' ~ sdc.double_type() ~ ')' -%}
{%- set power = 'cast(1e' ~ (digits | abs) ~ ' as ' ~ sdc.double_type() ~ ')' -%}
{%- set scaled = 'abs(' ~ x ~ ') ' ~ ('*' if digits >= 0 else '/') ~ ' ' ~ power -%}
{%- set back = 'floor(' ~ scaled ~ ' + 0.5) ' ~ ('/' if digits >= 0 else '*') ~ ' ' ~ power -%}
{#- 0 - r, not -r: a negative number that rounds to zero is published as 0, not -0 -#}
case when {{ x }} < 0 then 0 - {{ back }} else {{ back }} end
{%- endmacro %}

{% macro ckm_published_check_input(audit_relation) %}
{%- if audit_relation.identifier is not defined or audit_relation.identifier is none -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " is no relation: give the ckm_count or ckm_sum model as ref('...')") }}
{%- endif -%}
{#- built out of order (dbt run --select of the published model alone): say that, not "no build record" (N7) -#}
{%- if adapter.get_relation(database=audit_relation.database, schema=audit_relation.schema, identifier=audit_relation.identifier) is none -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " does not exist in the database yet: build it first (dbt build, or dbt run --select +" ~ audit_relation.identifier ~ ")") }}
{%- endif -%}
{%- set record = sdc.build_record_of_relation(audit_relation.database, audit_relation.schema, audit_relation.identifier) -%}
{%- set step = record.get('step') if record is not none else none -%}
{%- if step not in ['ckm_count', 'ckm_sum'] -%}
  {{ exceptions.raise_compiler_error("ckm_published: " ~ audit_relation ~ " is not the output of ckm_count or ckm_sum ("
     ~ ("it has no build record" if record is none else "its build record names " ~ ("no sdc step: its SQL is not one ckm_count or ckm_sum call" if step is none else "the step " ~ step))
     ~ "), so its numbers are not protected; publish ckm_published(ref('<a model that is one call of ckm_count or ckm_sum>'))") }}
{%- endif -%}
{%- if step == 'ckm_count' -%}
  {%- set q = sdc.sql_identifier -%}
  {%- set found = run_query("select count(*) from " ~ audit_relation ~ " where " ~ q('count') ~ " is not null and "
                            ~ q('count') ~ " <> " ~ q('original') ~ " + " ~ q('noise')) -%}
  {%- if found.rows[0][0] | int > 0 -%}
    {{ exceptions.raise_compiler_error("ckm_published: in " ~ audit_relation ~ ", " ~ found.rows[0][0] ~ " cell(s) have a count other than original + noise: the table was changed after ckm_count built it; run dbt build") }}
  {%- endif -%}
{%- endif -%}
{{ return(record) }}
{% endmacro %}
