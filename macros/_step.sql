{#- Private helpers: the sdc step markers around a protection macro's SQL (read back by build_record) and the hook the protection macros set on their model. -#}

{# called by the protection macros: the model that calls one records its build (build_record), and gets the
   engine's settings for the model's transaction (engine_model_settings) #}
{% macro build_record_hook() %}
{{- config(post_hook="{{ sdc.build_record() }}") -}}
{%- set settings = sdc.engine_model_settings() -%}
{%- if settings -%}{{- config(pre_hook=settings) -}}{%- endif -%}
{% endmacro %}

{#
  step(name, reads, sql, details): the SQL of one sdc step between two markers that build_record reads back
  from the model's compiled SQL:

    /* sdc-step {"step": "<name>", "reads": [{"database": ..., "schema": ..., "name": ...}], ...details} */
    <sql>
    /* sdc-step-end <md5 of sql> */

  A model whose whole compiled SQL (outside SQL comments and white space) is one such block was built by that
  step and nothing else: build_record writes the step and what it reads into the relation's build record,
  where `sdc publish` and grant_published look for it. The md5 ties the end marker to its own block, so
  `<step A> union all <step B>` or a step inside a query of one's own is no step. (python/sdc/conventions.py
  STEP_MARKER / STEP_END_MARKER hold the same texts.) Names are JSON with every * escaped, so no name ends the
  comment early.
#}
{% macro step(name, reads, sql, details=none) %}
{%- set header = {'step': name, 'reads': sdc.step_relations(reads)} -%}
{%- do header.update(details or {}) -%}
{{- '/* sdc-step ' ~ (tojson(header) | replace('*', '\\u002a')) ~ ' */\n' ~ sql ~ '\n/* sdc-step-end ' ~ local_md5(sql) ~ ' */' -}}
{% endmacro %}

{# a step's arguments for its header: relations as {database, schema, name}, the rules of the names that the
   macros use (labels, key columns) beside them under 'settings' #}
{% macro step_call(arguments) %}
{%- set found = {} -%}
{%- for name, value in arguments.items() -%}
  {%- if value is not none and value is not string and value.identifier is defined and value.identifier is not none -%}
    {%- do found.update({name: sdc.step_relations([value])[0]}) -%}
  {%- else -%}
    {%- do found.update({name: value}) -%}
  {%- endif -%}
{%- endfor -%}
{%- set settings = {} -%}
{%- for name in ['sdc_total_label', 'sdc_record_key_column', 'sdc_key_fact_prefix', 'sdc_interval_decimals'] -%}
  {%- do settings.update({name: sdc.setting(name)}) -%}
{%- endfor -%}
{%- do found.update({'settings': settings}) -%}
{{ return(found) }}
{% endmacro %}

{# relations as {database, schema, name} #}
{% macro step_relations(relations) %}
{%- set found = [] -%}
{%- for relation in relations if relation is not none -%}
  {%- if relation.identifier is defined and relation.identifier is not none -%}
    {%- do found.append({'database': relation.database, 'schema': relation.schema, 'name': relation.identifier}) -%}
  {%- else -%}{# a name given as text ('schema.table'): its parts, without the quotes of quoted parts #}
    {%- set parts = [] -%}
    {%- for part in (relation | string).split('.') -%}{%- do parts.append(part.strip().strip('"')) -%}{%- endfor -%}
    {%- do found.append({'database': parts[-3] if parts | length > 2 else none,
                         'schema': parts[-2] if parts | length > 1 else none, 'name': parts[-1]}) -%}
  {%- endif -%}
{%- endfor -%}
{{ return(found) }}
{% endmacro %}

{# the header of the one step that is the whole SQL `code`, or none (SQL of one's own, two steps, none) #}
{% macro step_of_sql(code) %}
{%- set outside = '(?:\\s|--[^\\n]*|/\\*(?!\\s*sdc-step)(?:(?!\\*/).)*\\*/)*' -%}
{%- set found = modules.re.fullmatch(outside ~ '/\\* sdc-step (\\{.*?\\}) \\*/\\n(.*)\\n/\\* sdc-step-end ([0-9a-f]{32}) \\*/' ~ outside,
                                     code or '', modules.re.DOTALL) -%}
{%- if found is none or local_md5(found.group(2)) != found.group(3) -%}{{ return(none) }}{%- endif -%}
{{ return(fromjson(found.group(1))) }}
{% endmacro %}

{# the ptables of a CKM step by kind, for its build record (content md5 there) #}
{% macro step_ptables(count_ptable, nums_ptable) %}
{%- set found = {} -%}
{%- if count_ptable is not none -%}{%- do found.update({'count': sdc.step_relations([count_ptable])[0]}) -%}{%- endif -%}
{%- if nums_ptable is not none -%}{%- do found.update({'nums': sdc.step_relations([nums_ptable])[0]}) -%}{%- endif -%}
{{ return(found) }}
{% endmacro %}
