{#
  check_dimension_names(dims, own_columns, macro_name, roles={}, top_contributions=false): stop when a name
  cannot be a dimension of the method (python/sdc/warehouse/dimension_names.py holds the same rule for the CLI):
  a name that is empty or listed twice; a column with another role (roles: column -> what it is, e.g. the
  record key); a column the method adds (own_columns, python/sdc/conventions.py; top_<n> where the method
  adds the largest contributions; patterns: regular expressions of the method's column families, matched
  against the whole name), which would overwrite it or make the output ambiguous; a name with a
  hierarchy level suffix (__level_<n>, __leaf) or one that ends like the columns published tables add per
  dimension (var sdc_dimension_column_suffixes: __level, __is_total, __parent, __sort). Names compare without regard to letter case, as the engines
  compare identifiers.
#}
{% macro check_dimension_names(dims, own_columns, macro_name, roles={}, top_contributions=false, patterns=[]) %}
{%- set own = own_columns | map('lower') | list | sort -%}
{%- set role_of = {} -%}
{%- for column, role in roles.items() if column is not none -%}
  {%- do role_of.update({column | lower: role}) -%}
{%- endfor -%}
{%- set seen = [] -%}
{%- for dim in dims -%}
  {%- set name = dim | string -%}
  {%- set lowered = name | lower -%}
  {%- if name | trim == '' -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": a dimension name is empty") }}
  {%- elif lowered in seen -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' is listed twice (names compare without regard to letter case)") }}
  {%- elif lowered in role_of -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' is also the " ~ role_of[lowered]) }}
  {%- elif lowered in own or (top_contributions and modules.re.fullmatch('top_[0-9]+', lowered)) -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' has the name of a column the method adds (" ~ (own | join(', ')) ~ (', top_<n>' if top_contributions else '') ~ "); rename the column") }}
  {%- elif sdc.name_matches_any(lowered, patterns) -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' has the name of a column family the method adds (" ~ (patterns | join(', ')) ~ "); rename the column") }}
  {%- elif '__level_' in lowered or lowered.endswith('__leaf') -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' ends like the level columns of a hierarchical dimension (__level_<n>, __leaf); rename the column") }}
  {%- elif sdc.dimension_column(lowered) -%}
    {{ exceptions.raise_compiler_error(macro_name ~ ": dimension '" ~ name ~ "' ends like the columns published tables add per dimension (" ~ (sdc.setting('sdc_dimension_column_suffixes').values() | join(', ')) ~ "); rename the column") }}
  {%- endif -%}
  {%- do seen.append(lowered) -%}
{%- endfor -%}
{% endmacro %}


{% macro name_matches_any(name, patterns) %}
{%- for pattern in patterns if modules.re.fullmatch(pattern, name) -%}
  {{ return(true) }}
{%- endfor -%}
{{ return(false) }}
{% endmacro %}


{#- dimension_column(name): a column the publishing steps add per dimension (<dim>__level, ...: var
    sdc_dimension_column_suffixes), which neither tells cells apart nor measures anything -#}
{% macro dimension_column(name) %}
{%- for suffix in sdc.setting('sdc_dimension_column_suffixes').values()
    if (name | lower).endswith(suffix | lower) and (name | length) > (suffix | length) -%}
  {{ return(true) }}
{%- endfor -%}
{{ return(false) }}
{% endmacro %}
