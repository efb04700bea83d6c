"""Names and formats shared by Python, SQL and the docs: defined here once.

The perturbation table ("ptable", "overlay matrix") has one row per original value ``i`` and target
value ``j``:

=========  ==========================================================================================
column     meaning
=========  ==========================================================================================
i          original cell value (row of the table); the largest ``i`` stands for every larger count
j          perturbed value, ``j = i + v``
p          transition probability P(j | i) = ``p_int_ub - p_int_lb``
v          noise added to the cell (seed 002, Table 12: ``changeValue``)
p_int_lb   lower bound of the cell-key interval (inclusive)
p_int_ub   upper bound of the cell-key interval (exclusive; seed 002, Table 12: ``cum_zuf``)
=========  ==========================================================================================

A cell with original value ``n > 0`` and cell key ``ck`` gets the noise ``v`` of the row with
``i = min(n, max i)`` and ``p_int_lb <= ck < p_int_ub``. A cell with ``n = 0`` stays 0.
Bounds are multiples of ``10**-INTERVAL_DECIMALS``, so the lookup can compare integers exactly.
"""

PTABLE_COLUMNS: tuple[str, ...] = ("i", "j", "p", "v", "p_int_lb", "p_int_ub")

# Interval bounds are cumulative probabilities rounded to this many decimals (as ptable/τ-Argus do).
INTERVAL_DECIMALS: int = 8
INTERVAL_SCALE: int = 10**INTERVAL_DECIMALS
# dbt column types of a ptable seed: exact decimals, so the lookup compares bounds as integers.
PTABLE_SEED_COLUMN_TYPES: dict[str, str] = {
    "i": "integer",
    "j": "integer",
    "p": f"decimal({INTERVAL_DECIMALS + 1},{INTERVAL_DECIMALS})",
    "v": "integer",
    "p_int_lb": f"decimal({INTERVAL_DECIMALS + 1},{INTERVAL_DECIMALS})",
    "p_int_ub": f"decimal({INTERVAL_DECIMALS + 1},{INTERVAL_DECIMALS})",
}

# A magnitude ptable (R ptable's create_num_ptable; τ-Argus <PFILE_CONT>) adds the column type: which cells a
# table serves (all; even/odd: parity of the number of contributors; small_cells: below the separation point).
# Its noise v (and j) are multiples of 1/step, written with at most NUMS_V_DECIMALS decimals (ptable rounds to 4).
NUMS_PTABLE_COLUMNS: tuple[str, ...] = PTABLE_COLUMNS + ("type",)
NUMS_PTABLE_TYPES: tuple[str, ...] = ("all", "even", "odd", "small_cells")
NUMS_V_DECIMALS: int = 4
# dbt column types of a magnitude ptable seed
NUMS_PTABLE_SEED_COLUMN_TYPES: dict[str, str] = {
    **PTABLE_SEED_COLUMN_TYPES,
    "j": f"decimal({NUMS_V_DECIMALS + 5},{NUMS_V_DECIMALS})",
    "v": f"decimal({NUMS_V_DECIMALS + 5},{NUMS_V_DECIMALS})",
    "type": "varchar",
}

# Names of the ptable parameters, as used by the CLI flags (--D, --V, ...) and the Python API.
PTABLE_PARAMETERS: dict[str, str] = {
    "D": "maximum absolute noise (integer >= 1)",
    "V": "noise variance (> 0)",
    "js": "no perturbed value in 1..js; 0 = no restriction",
    "pstay": "lower bound of the probability that a value stays unchanged (scalar or one per row 1..ncat)",
    "mono": "left tail non-decreasing towards v = 0 (scalar or one per row 1..ncat)",
    "optim": "1: variance <= V, 4: variance = V (scalar or one per row 1..ncat)",
}

# ------------------------------------------------------------------------------------------ record keys
# Every microdata record carries an integer record key rk in [0, KEY_MODULUS); a fact f (0/1 column) has
# its key fact rk_f = rk * f. A cell's key is (SUM(rk_f) mod M) / M, computed in integers, so it does not
# depend on row order, threads or engine. M = 10^8 gives 8-digit keys (the cellKey / tau-Argus default).
RECORD_KEY_COLUMN: str = "rk"
KEY_FACT_PREFIX: str = "rk_"
DEFAULT_KEY_MODULUS: int = 10**8
RAW_SCHEMA: str = "raw"
# Per loaded table: the stored keys of random mode, and the modulus the keys were drawn for.
KEY_STORE_SUFFIX: str = "__record_keys"
LOAD_LOG_TABLE: str = "sdc_loads"
# the comment of a loaded table's column that a replica of sdc publish --target holds as NULL
NOT_COPIED: str = "sdc: not copied into the replica (no audit reads it); NULL here"
# Keyed mode: the secret is at least this long; the demo's secret is published, so only the demo may use it.
MIN_SECRET_BYTES: int = 16
DEMO_KEY_SECRET: str = "sdc-demo-secret-not-for-production"

# ------------------------------------------------------------------------------------------ record key checks
# Keys that are not uniform on [0, M) undo the protection (all 0: every cell of 8 or more got noise -5, so
# original = published + 5). Keys from a file (`sdc load --key-mode existing`, `sdc ckm`) and the keys
# ckm_count reads are refused when one of these fails (python/sdc/warehouse/record_keys.py, macros/ckm/_ckm_check_record_keys.sql):
# * range: every key a whole number in [0, M), none NULL;
# * distinct share: n uniform keys take E = M (1 - (1 - 1/M)^n) distinct values on average; fewer than
#   RECORD_KEY_MIN_DISTINCT_FRACTION * E is refused from RECORD_KEY_MIN_RECORDS records on. For n >= 50 and any M,
#   uniform keys fall that short with probability below 1e-12 (union bound C(M, d) (d/M)^n and McDiarmid's
#   inequality); below 50 the chance is not negligible (4 keys on M = 3 all equal: 0.04);
# * uniformity: the Kolmogorov-Smirnov distance D between the keys and the uniform distribution, read at the
#   edges of RECORD_KEY_BINS equal bins (every value if M is smaller; reading fewer points only lowers D). By the
#   Dvoretzky-Kiefer-Wolfowitz inequality (Massart's constant) uniform keys have P(D > e) <= 2 exp(-2 n e^2) at
#   every n, so p = 2 exp(-2 n D^2) below RECORD_KEY_ALPHA is refused: a false alarm in at most one in a million
#   loads of genuinely random keys. It needs no minimum count: 8 keys all 0 give p = 2e-7, and 30 equal keys
#   are refused wherever they lie (D >= 0.5).
RECORD_KEY_ALPHA: float = 1e-6
RECORD_KEY_MIN_DISTINCT_FRACTION: float = 0.5
RECORD_KEY_MIN_RECORDS: int = 50
RECORD_KEY_BINS: int = 1000

# ------------------------------------------------------------------------------------------ tables
# Code of a total along a flat dimension (dbt var sdc_total_label; a hierarchy's root code labels its own).
TOTAL_LABEL: str = "Total"

# ------------------------------------------------------------------------------------------ audit columns
# Columns of a ckm_count relation that undo the protection: they stay in the audit layer, never published.
# perturbed: original + noise where a threshold publishes the count empty (ckm_count threshold=);
# original_weighted_count: the exact sum of the weights (ckm_count weight=)
CKM_AUDIT_COLUMNS: tuple[str, ...] = (
    "original", "key_sum", "cell_key_int", "cell_key", "ptable_row", "noise", "perturbed", "original_weighted_count",
)

# ... and of a ckm_sum relation built with audit=true: its record count, sensitivity, and per measure m the
# original sum, contributors, and each component's scale δ and noise (whole names, any letter case)
CKM_SUM_AUDIT_COLUMNS: tuple[str, ...] = ("records", "sensitive", "sensitive_rule")
CKM_SUM_AUDIT_PATTERNS: tuple[str, ...] = (
    r"(original|contributors|noise)_(value|weighted_value|weighted_count)",
    r"(delta|noise)_(value|weighted_value|weighted_count)_[0-9]+",
)

# ------------------------------------------------------------------------------------------ publication
# `sdc publish` copies exactly the dbt relations (models, views, seeds, snapshots) with this tag.
PUBLISH_TAG: str = "sdc_publish"
# The protection step: a node that calls one of these macros on exactly one parent relation. Every path from
# a tagged relation up to a dbt source or to an audit relation must pass one.
PROTECTION_MACROS: tuple[str, ...] = ("macro.sdc.ckm_published", "macro.sdc.suppression_published")
# The sdc steps a build record names (macros/_step.sql, macro step: the model's whole SQL is one call):
# a protection step's output may be published; an audit step's holds the originals; ckm_published reads the
# output of a CKM audit step, suppression_published a suppression pattern (a relation with these columns).
PROTECTION_STEPS: tuple[str, ...] = ("ckm_published", "suppression_published", "ckm_mean")
CKM_AUDIT_STEPS: tuple[str, ...] = ("ckm_count", "ckm_sum")
AUDIT_STEPS: tuple[str, ...] = CKM_AUDIT_STEPS
SUPPRESSION_PATTERN_COLUMNS: tuple[str, ...] = ("status", "published_text")
# The markers around a step's SQL (macro step writes them, build_record reads them back):
# /* sdc-step {json header} */ <sql> /* sdc-step-end <md5 of sql> */
STEP_MARKER: str = "/* sdc-step "
STEP_END_MARKER: str = "/* sdc-step-end "
# Audit relations hold original values (counts, sums, contributions) next to their protection.
AUDIT_MACROS: tuple[str, ...] = (
    "macro.sdc.ckm_count", "macro.sdc.ckm_sum", "macro.sdc.ckm_finest_cells", "macro.sdc.suppression_cells", "macro.sdc.suppression_cells_from_aggregate",
    "macro.sdc.suppression_primary",
)
# Columns of the suppression layers that undo the protection (the status and rule of a cell, its protection
# levels and audit bounds, its contributors and largest contributions): never published.
SUPPRESSION_AUDIT_COLUMNS: tuple[str, ...] = (
    "status", "rule", "protection_lower", "protection_upper", "lower", "upper", "contributors", "exactly_disclosed",
)
# ... and the column families: top_1..top_n (largest contributions), feasible_* and required_* (audit intervals).
TOP_CONTRIBUTION_PREFIX: str = "top_"
SUPPRESSION_AUDIT_PREFIXES: tuple[str, ...] = ("feasible_", "required_")
# Every column name `sdc publish` refuses; also the record key's key facts (KEY_FACT_PREFIX), top_<n> and the
# prefixes above. Compared without regard to case (DuckDB names are case-insensitive).
UNPUBLISHABLE_COLUMNS: tuple[str, ...] = (
    CKM_AUDIT_COLUMNS + CKM_SUM_AUDIT_COLUMNS + (RECORD_KEY_COLUMN,) + SUPPRESSION_AUDIT_COLUMNS
)
# Of these, names that are also ordinary dimensions (a census "status"): refused only in a relation of the
# suppression layers, i.e. one that also has published_text, freq or another suppression column.
SUPPRESSION_COLUMNS_ALSO_DIMENSIONS: tuple[str, ...] = ("status", "rule", "lower", "upper")
SUPPRESSION_LAYER_COLUMNS: tuple[str, ...] = ("published_text", "freq")
# A suppression publication shows each cell as text: its value, or a mark / interval where suppressed
# (then the value column must be NULL).
PUBLISHED_TEXT_COLUMN: str = "published_text"
# The published measure of a ckm_published relation; beside it, the columns are the dimensions of a cell.
CKM_COUNT_COLUMN: str = "count"
# Every measure the protection steps publish (ckm_count, ckm_sum, ckm_mean, suppression): never a dimension when
# `sdc publish` looks for a cell published twice (two noisy sums of one cell differ only in their measure)
PUBLISHED_MEASURES: tuple[str, ...] = (
    CKM_COUNT_COLUMN, "count_reason", "weighted_count", "value", "weighted_value", "mean_value", "mean_weighted_value",
    "freq", "published_text",
)
# The comment that macros/build_record.sql puts on each relation the sdc macros build: a JSON object under this
# key, with the loads (loaded_at of raw.sdc_loads) of the source tables it was built from.
BUILD_RECORD_KEY: str = "sdc_build"
# dbt-duckdb renames a model's old relation to <name>__dbt_backup and builds the new one as <name>__dbt_tmp until
# the commit: one left in the warehouse means a build was interrupted.
DBT_LEFTOVER_SUFFIXES: tuple[str, ...] = ("__dbt_backup", "__dbt_tmp")
# Inside a publication file: the schema and table that list what sdc publish copied (and mark the file as its own).
PUBLICATION_SCHEMA: str = "sdc_publication"
PUBLICATION_INDEX_TABLE: str = "relations"
# ... and the table with the release audit's figures (one row, JSON: python/sdc/release/audit.py)
RELEASE_AUDIT_TABLE: str = "release_audit"
# On PostgreSQL, the ledger of releases (python/sdc/release/ledger_postgres.py): a schema of sdc's own in the
# build database, which no reader role reads
LEDGER_PG_SCHEMA: str = "sdc_ledger"
# The release audit's floor under averaging CKM noise (python/sdc/release/averaging.py; sdc publish
# --min-standard-error): every count with records that the release's CKM count tables determine (a finest cell
# of a population, a published cell) keeps a standard error of at least this for the reader's best linear
# unbiased estimate from all of them. At a standard error s the estimate rounded is the true count with
# probability about erf(0.5 / (s √2)) (normal approximation): 38 % at 1.0, 68 % at 0.5; at 1.0 it misses by 2 or
# more in 13 % of cells. One table of the demo's ptable (V = 3) stays above it: a flat cube with every margin
# gives V · Π n_k / (n_k + 1), 1.15 for 2 × 2 codes (1.22 for the table builder's test cube), and several tables
# of one population or three binary dimensions go below it.
MIN_STANDARD_ERROR: float = 1.0
# Exact for a connected part whose finest cells or whose published record sets number at most this (a pivoted
# Cholesky factor of the information matrix, or of the record sets' Gram matrix: about 13 s and 1.2 GB at 6,000 of
# full rank on 2 cores); beyond it a proven lower bound (the variance if every other finest cell were known)
AVERAGING_EXACT_CELLS: int = 6000
# Beyond it, exact as well where one dimension splits a part's record sets into groups (one per code) and leaves at
# most this many over several of its codes (the separator, whose dense Schur complement this bounds: about 2 GB at
# 10,000); beyond that the lower bound
AVERAGING_SEPARATOR_CELLS: int = 10000
# In a Parquet publication folder: the file that lists the files sdc publish wrote there (only those are replaced).
PARQUET_MARKER_FILE: str = "_sdc_publication.json"
# Storage format of the publication file: DuckDB 1.0.0 and every later client read it (DuckDB 2.0's default
# format is unreadable for clients before 2.0).
PUBLICATION_STORAGE_VERSION: str = "v1.0.0"
# Storage format of a warehouse file sdc load creates: the same, so that DuckDB clients before 2.0 (the DuckDB
# 1.x CLI) open it too; DuckDB 2.0 and dbt-duckdb keep writing an existing file in its own format.
WAREHOUSE_STORAGE_VERSION: str = "v1.0.0"

# ------------------------------------------------------------------------------------------ dimensions
# Columns each method adds next to the dimensions (output and intermediate steps): a dimension of the same name,
# in any letter case, would be overwritten or make the output ambiguous, so it is refused. Also refused: the
# record key and key fact columns (KEY_FACT_PREFIX), the top_<n> contributions, and names with the suffixes
# that the levels of a hierarchical dimension get (<dim>__level_<n>, <dim>__leaf).
CKM_OWN_COLUMNS: tuple[str, ...] = (
    "count", "count_reason", "max_key", "weight_sum", "weight_min", "weight_max", "weighted_count",
    # the weighted count's second noise (ckm_count weight=, method magnitude)
    "spread_key_sum", "spread_cell_key_int", "spread_excess", "spread_width", "spread_ptable_row", "spread_noise",
) + CKM_AUDIT_COLUMNS
# How ckm_count perturbs a weighted count (weight=): "magnitude", the sum of the weights by the magnitude
# method (the default), or "mean_weight", count' * sum of weights / count as cellKey and τ-Argus (that pair
# reveals the exact mean weight, whose denominator is the original count)
WEIGHTED_COUNT_METHODS: tuple[str, ...] = ("magnitude", "mean_weight")
# ckm_sum (magnitude CKM): its measures, the columns of its steps, and the suppression rules' columns it reads
CKM_SUM_MEASURES: tuple[str, ...] = ("value", "weighted_value", "weighted_count")
# The decimals the published magnitudes (CKM_SUM_MEASURES) are rounded to, after the noise, unless a table says
# otherwise (ckm_published digits=, sdc.ckm digits=, sdc ckm --digits): whole units, as τ-Argus writes a CKM
# table's cells with the decimals of its response variable and a frequency table's (weighted counts included)
# with none (libtauargus TauArgus.cpp WriteCSVCell: "%.*f" with nDec, 0 for a frequency table). Counts are
# whole numbers already.
PUBLISHED_DIGITS: int = 0
CKM_SUM_OWN_COLUMNS: tuple[str, ...] = CKM_SUM_MEASURES + (
    "count", "records", "weight", "weight_sum", "record_key", "key_sum_all", "key_sum_zero", "max_key", "cell_key_int",
    "cell_key", "sensitive", "sensitive_rule", "freq", "contributors", "status", "rule", "protection_lower",
    "protection_upper", "type", "i", "v", "component",
)
# ... and its column families per measure m (value, weighted_value, weighted_count), component j and ptable row:
# a dimension matching one of these patterns (whole name, any letter case) is refused as well
CKM_SUM_OWN_PATTERNS: tuple[str, ...] = (
    r"(raw|c|d|original|contributors|top|high|low|table|noise)_(value|weighted_value|weighted_count|weight)",
    r"(mag|x|skip|skip_raw|delta|delta_raw|small|noise|v)_(value|weighted_value|weighted_count)_[0-9]+",
    r"key_[0-9]+",
    r"v_[0-9]+_(all|even|odd|small_cells)_[0-9_.]+",
)
SUPPRESSION_OWN_COLUMNS: tuple[str, ...] = (
    "freq", "value", "contribution", "records", "contribution_rank", "sdc_value", "sdc_contributor",
    "sdc_contribution_id", "published_text", "constraint_id", "dimension", "coefficient",  # the last three: relations
) + SUPPRESSION_AUDIT_COLUMNS
HIERARCHY_LEVEL_MARKERS: tuple[str, ...] = ("__level_", "__leaf")
# A-priori cells of a suppression (suppression/a_priori.py; `sdc release a-priori` writes them from the ledger):
# the table's dimensions, the status a cell had in the last release and the value it published
A_PRIORI_STATUS_COLUMN: str = "status"
A_PRIORI_VALUE_COLUMN: str = "value"
A_PRIORI_STATUSES: tuple[str, ...] = ("suppressed", "published")
# The columns the publishing steps (ckm_published, suppression_published, ckm_mean) add per dimension d, named d + the
# suffix, so that a BI tool filters on them instead of summing leaves, subtotals and totals together:
#   level     0 for the dimension's total (a hierarchy's root), 1 for the codes directly under it, ...
#   is_total  true for a code with codes under it (the total or a subtotal)
#   parent    the code directly above (NULL for the total)
#   sort      a hierarchy's pre-order (the total 0, then each code followed by the codes under it, each level's
#             codes ordered by code); flat: the total 0, the other codes 1, 2, ... by code
# They describe a cell, they neither split cells nor measure anything: no dimension may end like them.
DIMENSION_COLUMN_SUFFIXES: dict[str, str] = {
    "level": "__level", "is_total": "__is_total", "parent": "__parent", "sort": "__sort",
}

# ------------------------------------------------------------------------------------------ dbt settings
# The settings of the sdc dbt macros and their defaults (macros/setting.sql holds the same values; a test
# keeps the two equal). A project that uses the package overrides them under `vars:`.
DBT_SETTINGS: dict[str, object] = {
    "sdc_interval_decimals": INTERVAL_DECIMALS,
    "sdc_key_modulus": DEFAULT_KEY_MODULUS,
    "sdc_record_key_column": RECORD_KEY_COLUMN,
    "sdc_key_fact_prefix": KEY_FACT_PREFIX,
    "sdc_ptable_reuse_from": None,
    # ckm_count publishes every cell of the frame, empty ones (count 0) included, as ONS and cellKey
    "sdc_complete_tables": True,
    "sdc_weighted_count": WEIGHTED_COUNT_METHODS[0],
    "sdc_published_digits": PUBLISHED_DIGITS,
    "sdc_total_label": TOTAL_LABEL,
    "sdc_audit_columns": list(CKM_AUDIT_COLUMNS),
    "sdc_ckm_sum_audit_columns": list(CKM_SUM_AUDIT_COLUMNS),
    "sdc_ckm_sum_audit_patterns": list(CKM_SUM_AUDIT_PATTERNS),
    # what grant_published refuses in a published relation, as sdc publish (python/sdc/release/publish.py unpublishable)
    "sdc_unpublishable_columns": list(UNPUBLISHABLE_COLUMNS),
    "sdc_unpublishable_prefixes": [TOP_CONTRIBUTION_PREFIX, *SUPPRESSION_AUDIT_PREFIXES],
    "sdc_suppression_columns_also_dimensions": list(SUPPRESSION_COLUMNS_ALSO_DIMENSIONS),
    "sdc_suppression_layer_columns": list(SUPPRESSION_LAYER_COLUMNS),
    "sdc_raw_schema": RAW_SCHEMA,
    "sdc_load_log": LOAD_LOG_TABLE,
    # on PostgreSQL, grant_published copies the verified relations into this schema, the only one reader roles read
    "sdc_publication_schema": PUBLICATION_SCHEMA,
    # the release audit in a publication: on Spark, verify_published never replaces a release sdc publish audited
    "sdc_release_audit_table": RELEASE_AUDIT_TABLE,
    "sdc_ckm_own_columns": list(CKM_OWN_COLUMNS),
    "sdc_ckm_sum_own_columns": list(CKM_SUM_OWN_COLUMNS),
    "sdc_ckm_sum_own_patterns": list(CKM_SUM_OWN_PATTERNS),
    "sdc_suppression_own_columns": list(SUPPRESSION_OWN_COLUMNS),
    "sdc_dimension_column_suffixes": dict(DIMENSION_COLUMN_SUFFIXES),
    # false only for hand-picked teaching keys: every published number could then be undone
    "sdc_check_record_keys": True,
    "sdc_record_key_alpha": RECORD_KEY_ALPHA,
    "sdc_record_key_min_distinct_fraction": RECORD_KEY_MIN_DISTINCT_FRACTION,
    "sdc_record_key_min_records": RECORD_KEY_MIN_RECORDS,
    "sdc_record_key_bins": RECORD_KEY_BINS,
}

# ------------------------------------------------------------------------------------------ published columns
# What each column sdc publishes means, for BI authors: the dbt docs blocks of the package (doc('sdc_column_<name>'),
# macros/sdc_published_columns.md, written from this by python/sdc/warehouse/dbt_docs.py; a test keeps them equal) and the docs.
PUBLISHED_COLUMN_DOCS: dict[str, str] = {
    "count": "Number of persons (records) in the cell, perturbed by the Cell Key Method: the true count plus noise "
             "from the perturbation table, the same noise for the same cell in every table. Totals and subtotals are "
             "perturbed on their own, so the cells of a row do not add up to its total exactly; never sum cells "
             "that lie under one another (filter on one level of each dimension instead).",
    "count_reason": "Why count is empty: the perturbed count lies below the table's threshold. Empty otherwise.",
    "weighted_count": "Weighted number of persons in the cell (sum of the weights), perturbed by the Cell Key Method "
                      "for magnitudes. Not additive over cells, as count.",
    "value": "Sum of the table's value column in the cell, perturbed by the Cell Key Method for magnitudes (a "
             "suppression table: the exact sum, empty where the cell is suppressed). Not additive over cells.",
    "weighted_value": "Weighted sum of the value column in the cell, perturbed by the Cell Key Method for "
                      "magnitudes. Not additive over cells.",
    "mean_value": "Mean of the value column in the cell: the perturbed sum divided by the perturbed count.",
    "mean_weighted_value": "Weighted mean of the value column in the cell: the perturbed weighted sum divided by the "
                           "perturbed weighted count.",
    "freq": "Number of persons (records) in the cell of a suppression table, exact where published; empty where the "
            "cell is suppressed (see published_text).",
    "published_text": "The cell as it is to be printed: its value, or the mark of a suppressed cell (x), or the "
                      "interval a suppressed cell lies in. A suppressed cell has no number in the value column.",
}
# ... and of the columns added per dimension d (DIMENSION_COLUMN_SUFFIXES), doc('sdc_column_dimension_<key>')
DIMENSION_COLUMN_DOCS: dict[str, str] = {
    "level": "Level of the cell's code along this dimension: 0 for the dimension's total, 1 for the codes directly "
             "under it, 2 for the codes under those, ... Filter every dimension on one level before you sum or "
             "chart, so that no person is counted twice.",
    "is_total": "True where the cell's code along this dimension is a total or subtotal (it has codes under it).",
    "parent": "The code directly above the cell's code along this dimension (empty for the total).",
    "sort": "Sort key of the cell's code along this dimension: the total first, then each code followed by the "
            "codes under it. Sort a chart's axis or a table's rows by it.",
}

# The environment variable that bounds the memory of every DuckDB database sdc opens itself (its commands and the
# Python API; a dbt build's DuckDB takes the profile's settings): DuckDB's sizes, e.g. 4GB, 500MB or 50% (of the
# machine's memory). Beyond it DuckDB spills to the command's private temp folder. Unset: DuckDB's default, 80 %.
MEMORY_LIMIT_ENV: str = "SDC_DUCKDB_MEMORY_LIMIT"
