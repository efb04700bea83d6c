{# Models with a custom schema (raw, audit, protected) land in exactly that schema, not <target>_<schema>. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
