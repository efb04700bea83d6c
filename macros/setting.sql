{#
  setting(name): a setting of the sdc macros, with its default inside the package, so a project that uses
  sdc needs no vars of its own. A project overrides any of them under `vars:` in its dbt_project.yml
  (or with --vars). The defaults equal python/sdc/conventions.py DBT_SETTINGS (a test keeps them equal).

    sdc_interval_decimals   ptable interval bounds are multiples of 10^-d                   8
    sdc_key_modulus         record keys are integers in [0, M)                              10^8
    sdc_record_key_column   the record key column of loaded microdata                       rk
    sdc_key_fact_prefix     key fact of fact f: <prefix>f = rk * f                          rk_
    sdc_ptable_reuse_from   counts above max i cycle through rows reuse_from..max i (ONS)   none
    sdc_complete_tables     ckm_count publishes empty cells of the frame (count 0) too      true
    sdc_weighted_count      ckm_count weight=: magnitude (sum of weights, magnitude CKM)    magnitude
                            or mean_weight (count' * mean weight, as cellKey / τ-Argus)
    sdc_published_digits    ckm_published rounds weighted_count, value, weighted_value to   0
                            this many decimals (negative: tens, ...; none: unrounded)
    sdc_total_label         code of a total along a flat dimension                          Total
    sdc_audit_columns       columns of a ckm_count relation that never leave the audit      original, ...
    sdc_ckm_sum_audit_columns   ... and of a ckm_sum relation (audit=true)                  records, ...
    sdc_ckm_sum_audit_patterns  ... its column families (regular expressions, whole name)   noise_value_[0-9]+, ...
    sdc_unpublishable_columns   columns grant_published refuses (as sdc publish)            original, ...
    sdc_unpublishable_prefixes  ... and column families: top_<n>, feasible_*, required_*    top_, ...
    sdc_suppression_columns_also_dimensions  ... of those, refused only beside a
                            suppression column (a census dimension "status")                status, rule, ...
    sdc_suppression_layer_columns  the columns that mark the suppression layers             published_text, freq
    sdc_raw_schema          schema that `sdc load` writes microdata and its load log to     raw
    sdc_load_log            the load log (one row per loaded table: key mode, modulus)       sdc_loads
    sdc_publication_schema  PostgreSQL: the schema grant_published copies the release into   sdc_publication
    sdc_release_audit_table the release audit's table in a publication (sdc publish)        release_audit
    sdc_ckm_own_columns     columns ckm_count adds: no dimension may be named so             count, ...
    sdc_ckm_sum_own_columns columns ckm_sum adds (likewise)                                  value, ...
    sdc_ckm_sum_own_patterns  ... and its column families (regular expressions, whole name)  x_value_[0-9]+, ...
    sdc_suppression_own_columns  columns the suppression macros add (likewise)               freq, ...
    sdc_dimension_column_suffixes  the columns published tables add per dimension d:       __level, ...
                            d__level, d__is_total, d__parent, d__sort (no dimension may end so)
    sdc_check_record_keys   ckm_count refuses keys that cannot be uniform random            true
                            (false only for hand-picked teaching keys)
    sdc_record_key_alpha    ... when the Kolmogorov-Smirnov (DKW) bound p is below          1e-6
    sdc_record_key_min_distinct_fraction  ... or distinct keys < this x expected            0.5
    sdc_record_key_min_records            ... from this many keys on                        50
    sdc_record_key_bins     ... the distance read at the edges of this many equal bins      1000
#}
{% macro setting(name) %}
{%- set defaults = {
    'sdc_interval_decimals': 8,
    'sdc_key_modulus': 100000000,
    'sdc_record_key_column': 'rk',
    'sdc_key_fact_prefix': 'rk_',
    'sdc_ptable_reuse_from': none,
    'sdc_complete_tables': true,
    'sdc_weighted_count': 'magnitude',
    'sdc_published_digits': 0,
    'sdc_total_label': 'Total',
    'sdc_audit_columns': ['original', 'key_sum', 'cell_key_int', 'cell_key', 'ptable_row', 'noise', 'perturbed',
                          'original_weighted_count'],
    'sdc_ckm_sum_audit_columns': ['records', 'sensitive', 'sensitive_rule'],
    'sdc_unpublishable_columns': ['original', 'key_sum', 'cell_key_int', 'cell_key', 'ptable_row', 'noise', 'perturbed', 'original_weighted_count', 'records', 'sensitive', 'sensitive_rule', 'rk', 'status', 'rule', 'protection_lower', 'protection_upper', 'lower', 'upper', 'contributors', 'exactly_disclosed'],
    'sdc_unpublishable_prefixes': ['top_', 'feasible_', 'required_'],
    'sdc_suppression_columns_also_dimensions': ['status', 'rule', 'lower', 'upper'],
    'sdc_suppression_layer_columns': ['published_text', 'freq'],
    'sdc_ckm_sum_audit_patterns': ['(original|contributors|noise)_(value|weighted_value|weighted_count)',
                                   '(delta|noise)_(value|weighted_value|weighted_count)_[0-9]+'],
    'sdc_raw_schema': 'raw',
    'sdc_load_log': 'sdc_loads',
    'sdc_publication_schema': 'sdc_publication',
    'sdc_release_audit_table': 'release_audit',
    'sdc_ckm_own_columns': ['count', 'count_reason', 'max_key', 'weight_sum', 'weight_min', 'weight_max', 'weighted_count',
                            'spread_key_sum', 'spread_cell_key_int', 'spread_excess', 'spread_width', 'spread_ptable_row',
                            'spread_noise', 'original', 'key_sum', 'cell_key_int', 'cell_key', 'ptable_row', 'noise',
                            'perturbed', 'original_weighted_count'],
    'sdc_ckm_sum_own_columns': ['value', 'weighted_value', 'weighted_count', 'count', 'records', 'weight', 'weight_sum',
                                'record_key', 'key_sum_all', 'key_sum_zero', 'max_key', 'cell_key_int', 'cell_key',
                                'sensitive', 'sensitive_rule', 'freq', 'contributors', 'status', 'rule',
                                'protection_lower', 'protection_upper', 'type', 'i', 'v', 'component'],
    'sdc_ckm_sum_own_patterns': ['(raw|c|d|original|contributors|top|high|low|table|noise)_(value|weighted_value|weighted_count|weight)',
                                 '(mag|x|skip|skip_raw|delta|delta_raw|small|noise|v)_(value|weighted_value|weighted_count)_[0-9]+',
                                 'key_[0-9]+', 'v_[0-9]+_(all|even|odd|small_cells)_[0-9_.]+'],
    'sdc_suppression_own_columns': ['freq', 'value', 'contribution', 'records', 'contribution_rank', 'sdc_value',
                                    'sdc_contributor', 'sdc_contribution_id', 'published_text', 'constraint_id',
                                    'dimension', 'coefficient', 'status', 'rule',
                                    'protection_lower', 'protection_upper', 'lower', 'upper', 'contributors',
                                    'exactly_disclosed'],
    'sdc_dimension_column_suffixes': {'level': '__level', 'is_total': '__is_total', 'parent': '__parent', 'sort': '__sort'},
    'sdc_check_record_keys': true,
    'sdc_record_key_alpha': 1e-6,
    'sdc_record_key_min_distinct_fraction': 0.5,
    'sdc_record_key_min_records': 50,
    'sdc_record_key_bins': 1000,
} -%}
{%- if name not in defaults -%}
  {{ exceptions.raise_compiler_error("sdc: unknown setting '" ~ name ~ "'; known: " ~ (defaults.keys() | list | sort | join(', '))) }}
{%- endif -%}
{{ return(var(name, defaults[name])) }}
{% endmacro %}
