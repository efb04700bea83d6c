{#
  ckm_check_modulus: stops the build when the record keys were loaded with another modulus than the one
  the CKM uses. `sdc load` records each table's modulus in <sdc_raw_schema>.<sdc_load_log>; the modulus
  that applies to `relation` is that of the loaded table of the same name (a source of the raw schema),
  or, for a relation derived from the loaded tables, the one modulus they all share. With keys drawn for
  M = 256 and a CKM for M = 10^8, every cell key would lie below 256 / 10^8 and nearly every cell would
  get the same noise: the original would be the published value minus that noise.
  (No key reaches M either, which catches keys drawn for a larger modulus: the record key checks see every key,
  or, where they do not run, ckm_count's query itself finds the largest key of each cell.)
  power_of_ten: the loaded modulus must be a power of 10 (the magnitude CKM scrambles decimal digits).
#}
{% macro ckm_check_modulus(relation, modulus, caller_name, power_of_ten=false) %}
{%- if not execute -%}{{ return(none) }}{%- endif -%}
{%- set database = (relation.database if relation is not string else none) or target.database -%}
{%- set log = adapter.get_relation(database=database, schema=sdc.setting('sdc_raw_schema'),
                                   identifier=sdc.setting('sdc_load_log')) -%}
{%- if log is none -%}{{ return(none) }}{%- endif -%}
{%- set loads = run_query('select table_name, modulus from ' ~ log ~ ' order by table_name') -%}
{%- set own = [] -%}
{%- set moduli = [] -%}
{%- for row in loads.rows -%}
  {%- if relation is not string and row['table_name'] == relation.identifier
        and (relation.schema or '') | lower == sdc.setting('sdc_raw_schema') | lower -%}
    {%- do own.append(row) -%}
  {%- endif -%}
  {%- if row['modulus'] | int not in moduli -%}{%- do moduli.append(row['modulus'] | int) -%}{%- endif -%}
{%- endfor -%}
{%- if own -%}
  {%- set loaded, source = own[0]['modulus'] | int, 'the keys of ' ~ relation ~ ' were loaded with modulus' -%}
{%- elif moduli | length == 1 -%}
  {%- set loaded, source = moduli[0], 'every table in ' ~ log ~ ' was loaded with modulus' -%}
{%- else -%}
  {{ return(none) }}
{%- endif -%}
{%- if power_of_ten and loaded != 10 ** ((loaded | string | length) - 1) -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ source ~ " " ~ loaded ~ ", but the magnitude Cell Key Method scrambles the decimal digits of the cell key and needs a power of 10 (10^8: 8-digit keys). Such " ~ "keys of another modulus cannot be converted: load the microdata again with sdc load --modulus 100000000 into a new table (stored keys are never regenerated)") }}
{%- endif -%}
{%- if loaded != modulus | int -%}
  {{ exceptions.raise_compiler_error(caller_name ~ ": " ~ source ~ " " ~ loaded ~ ", but the CKM uses modulus "
      ~ modulus ~ " (argument modulus= or var sdc_key_modulus); set one to the other, or the cell keys are wrong") }}
{%- endif -%}
{% endmacro %}
