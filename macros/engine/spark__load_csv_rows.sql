{#
  Seeds on Spark: dbt-spark's session seeds load an empty CSV field as the text 'None' (a hierarchy's root then
  has a parent 'None', which ckm_count refuses: no root) and pass numbers through Python floats. This loader
  writes each field as a typed literal: an empty field as NULL, a number from its text, exactly. dbt uses it
  for the root project's seeds when the project dispatches dbt's macros through sdc:

      dispatch:
        - macro_namespace: dbt
          search_order: ['<your project>', 'sdc', 'dbt']
#}
{% macro spark__load_csv_rows(model, agate_table) %}
{%- set column_override = model['config'].get('column_types', {}) -%}
{%- set statements = [] -%}
{%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
  {%- set sql -%}
    insert into {{ this.render() }} values
    {%- for row in chunk %}
    ({%- for col_name in agate_table.column_names -%}
      {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
      {%- set value = row[loop.index0] -%}
      {%- if value is none or (value is string and value == '') -%}
        cast(null as {{ type }})
      {%- else -%}
        cast({{ sdc.sql_string(value) }} as {{ type }})
      {%- endif -%}
      {{- ', ' if not loop.last -}}
    {%- endfor -%}){{ ',' if not loop.last }}
    {%- endfor %}
  {%- endset -%}
  {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
  {%- if loop.first -%}{%- do statements.append(sql) -%}{%- endif -%}
{%- endfor -%}
{{ return(statements[0] if statements else '') }}
{% endmacro %}
