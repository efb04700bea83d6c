{#- Private helper of install_sql_macros (rendered in process by python/sdc/warehouse/sql_install.py). -#}

{% macro sdc_sql_macro_statements(ptable, modulus, reuse_from=none) %}
{%- if not modules.re.fullmatch('"([^"]|"")+"\\."([^"]|"")+"', ptable | string) -%}
  {{ exceptions.raise_compiler_error("install_sql_macros: ptable must be a quoted relation \"schema\".\"name\", got " ~ ptable) }}
{%- endif -%}
{%- if modulus is not number or modulus != modulus | int or modulus < 2 or modulus > 2 ** 62 -%}
  {{ exceptions.raise_compiler_error("install_sql_macros: modulus must be a whole number in [2, 2^62], got " ~ modulus) }}
{%- endif -%}
{%- if reuse_from is not none and (reuse_from is not number or reuse_from != reuse_from | int or reuse_from < 1) -%}
  {{ exceptions.raise_compiler_error("install_sql_macros: reuse_from must be a whole number >= 1 or none, got " ~ reuse_from) }}
{%- endif -%}
{%- set m = modulus | int -%}
{%- set scale = 10 ** sdc.setting('sdc_interval_decimals') -%}
{%- set wide = sdc.wide_integer_type() -%}
{%- set max_i = '(select max_i from sdc_ckm.ptable_lookup)' -%}
{%- set intervals_of_row = '(select intervals_by_row from sdc_ckm.ptable_lookup)[sdc_ptable_row(n)]' -%}
{%- set count_int = 'cast(n as ' ~ wide ~ ')' -%}
{%- set key_sum_int = 'cast(key_sum as ' ~ wide ~ ')' -%}
{%- set checks = [
    sdc.ckm_fail_if("n < 0 or n % 1 <> 0",
        "'sdc_ckm: the count ' || cast(n as varchar) || ' is not a whole number >= 0; the first argument "
        ~ "must count records: count(*) or sum(f) of a 0/1 fact f'"),
    sdc.ckm_fail_if("key_sum < 0 or key_sum % 1 <> 0",
        "'sdc_ckm: the key sum ' || cast(key_sum as varchar) || ' is not a whole number >= 0; the second "
        ~ "argument must be the sum of the record keys: sum(rk) or sum(rk_f)'"),
    sdc.ckm_fail_if(key_sum_int ~ " > " ~ count_int ~ " * " ~ (m - 1),
        "'sdc_ckm: the key sum ' || cast(key_sum as varchar) || ' exceeds n * (M - 1) = ' || cast("
        ~ count_int ~ " * " ~ (m - 1) ~ " as varchar) || ' for the count n = ' || cast(n as varchar) || "
        ~ "': each of n record keys is below M = " ~ m ~ ", so the key sum does not belong to this count "
        ~ "(or the keys were loaded with another modulus)'"),
    sdc.ckm_fail_if(sdc.ckm_key_sum_implausible('n', 'key_sum', m),
        "'sdc_ckm: the count ' || cast(n as varchar) || ' is implausible for the key sum ' || "
        ~ "cast(key_sum as varchar) || ': the keys of n records, uniform on [0, " ~ m ~ "), sum to "
        ~ "n (M - 1) / 2 = ' || cast(" ~ count_int ~ " * " ~ (m - 1) ~ " // 2 as varchar) || ' +- ' || "
        ~ "cast(cast(ceil(" ~ (m - 1) ~ " * sqrt(cast(n as double) * ln(2 / 1e-15) / 2)) as " ~ wide ~ ") as varchar) || "
        ~ "' except with probability 1e-15; the first argument must count records (count(*) or sum(f) of "
        ~ "a 0/1 fact f), not add up values'"),
] -%}
{%- set statements = [
    "create schema if not exists sdc_ckm",
    "create or replace view sdc_ckm.ptable_intervals as select i, v, "
        ~ "cast(round(p_int_lb * " ~ scale ~ ") as " ~ wide ~ ") * " ~ m ~ " as lb_scaled, "
        ~ "cast(round(p_int_ub * " ~ scale ~ ") as " ~ wide ~ ") * " ~ m ~ " as ub_scaled from " ~ ptable,
    "create or replace view sdc_ckm.ptable_lookup as select max(i) as max_i, "
        ~ "map(list(i order by i), list(intervals order by i)) as intervals_by_row from ("
        ~ "select cast(i as bigint) as i, list(struct_pack(v := v, lb_scaled := lb_scaled, ub_scaled := ub_scaled) "
        ~ "order by lb_scaled) as intervals from sdc_ckm.ptable_intervals group by i)",
    "create or replace macro sdc_cell_key(key_sum) as cast(key_sum % " ~ m ~ " as bigint)",
    "create or replace macro sdc_ptable_row(n) as cast(" ~ sdc.ckm_ptable_row(count_int, max_i, reuse_from) ~ " as bigint)",
    "create or replace macro sdc_ckm_check(n, key_sum) as " ~ checks | join(" and "),
    "create or replace macro sdc_noise(n, key_sum) as case "
        ~ "when n is null then null "
        ~ "when key_sum is null then case when n = 0 then 0 end "
        ~ "when not sdc_ckm_check(n, key_sum) then null "
        ~ "when n = 0 then 0 "
        ~ "else coalesce(list_filter(" ~ intervals_of_row ~ ", lambda p: "
        ~ sdc.ckm_interval_match('sdc_cell_key(key_sum)', 'p.lb_scaled', 'p.ub_scaled') ~ ")[1].v, "
        ~ "error('sdc_ckm: the perturbation table has no interval for i = ' || cast(sdc_ptable_row(n) as varchar) "
        ~ "|| ' and cell key ' || cast(sdc_cell_key(key_sum) as varchar) || '/" ~ m ~ "')) end",
    "create or replace macro sdc_ckm(n, key_sum) as cast(n as bigint) + sdc_noise(n, key_sum)",
] -%}
{{ return(statements) }}
{% endmacro %}
