"""The in-process rendering of the dbt macros (sdc.warehouse.macro_renderer) gives the SQL that dbt compiles, so the
CLI and the Python API run the warehouse's one implementation; and `import sdc` does not import dbt."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import numpy as np
import pytest

from dbt_project_helper import ScratchProject
from sdc.errors import SdcError
from sdc.warehouse.macro_renderer import Relation, render_macro

HIERARCHY = "dimension,code,parent\nregion,DE,\nregion,N,DE\nregion,S,DE\nregion,N1,N\nregion,N2,N\nregion,S1,S\nregion,S2,S\n"

# (model name, the macro call as a model writes it, the same call as Python arguments)
SOURCE = Relation("warehouse", "raw", "micro")
PTABLE = Relation("warehouse", "main", "sdc_ptable")
HIER = Relation("warehouse", "main", "sdc_hierarchies")
CALLS = [
    ("flat_cube", "sdc.ckm_count(source('raw', 'micro'), dims=['region', 'sex'])",
     ("ckm_count", (SOURCE, ["region", "sex"]), {})),
    ("hierarchy_rollup",
     "sdc.ckm_count(source('raw', 'micro'), dims=['region', 'sex'], hierarchy=ref('sdc_hierarchies'), totals='rollup')",
     ("ckm_count", (SOURCE, ["region", "sex"]), {"hierarchy": HIER, "totals": "rollup"})),
    ("fact_threshold_observed",
     "sdc.ckm_count(source('raw', 'micro'), dims=['sex'], fact='f', threshold=10, complete=false, reuse_from=3)",
     ("ckm_count", (SOURCE, ["sex"]), {"fact": "f", "threshold": 10, "complete": False, "reuse_from": 3})),
    ("inner_cells_hierarchy",
     "sdc.ckm_count(source('raw', 'micro'), dims=['region'], hierarchy=ref('sdc_hierarchies'), totals='none', ptable=ref('sdc_ptable'))",
     ("ckm_count", (SOURCE, ["region"]), {"hierarchy": HIER, "totals": "none", "ptable": PTABLE})),
    ("suppression_cells",
     "sdc.suppression_cells(source('raw', 'micro'), dims=['region', 'sex'], value='income', hierarchy=ref('sdc_hierarchies'))",
     ("suppression_cells", (SOURCE, ["region", "sex"]), {"value": "income", "hierarchy": HIER})),
]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    project = ScratchProject(tmp_path_factory.mktemp("render") / "project")
    project.seed("sdc_hierarchies", HIERARCHY)
    project.sources(["micro"])
    rng = np.random.default_rng(13)
    n = 3000
    con = duckdb.connect(str(project.db))
    con.execute("create schema raw")
    con.execute("create table raw.micro (region varchar, sex varchar, f tinyint, income double, rk bigint, rk_f bigint)")
    regions, sexes = rng.choice(["N1", "N2", "S1"], n), rng.choice(["m", "w"], n)  # S2 has no records
    facts, keys = rng.integers(0, 2, n), rng.integers(0, 10**8, n)
    con.executemany("insert into raw.micro values (?, ?, ?, ?, ?, ?)",
                    [(r, s, int(f), float(k % 1000), int(k), int(k) * int(f))
                     for r, s, f, k in zip(regions, sexes, facts, keys)])
    con.close()
    for name, call, _ in CALLS:
        project.model(name, "{{ " + call + " }}\n")
    for step in (["seed"], ["compile"]):
        result = project.dbt(*step)
        assert result.returncode == 0, result.stdout + result.stderr
    return project


@pytest.mark.parametrize("name, call, python_call", CALLS, ids=[c[0] for c in CALLS])
def test_the_in_process_rendering_is_the_sql_dbt_compiles(compiled, name, call, python_call):
    macro, args, kwargs = python_call
    con = duckdb.connect(str(compiled.db), read_only=True)
    try:
        rendered = render_macro(con, macro, *args, database="warehouse",
                                refs={"sdc_ptable": PTABLE, "sdc_hierarchies": HIER}, **kwargs)
        dbt_sql = compiled.compiled_sql(name)
        assert rendered.strip() == dbt_sql.strip()
        # and the SQL runs: the rendered query gives the same rows as dbt's
        assert sorted(con.execute(rendered).fetchall(), key=repr) == sorted(con.execute(dbt_sql).fetchall(), key=repr)
    finally:
        con.close()


def test_a_macro_error_is_an_sdc_error_with_the_macro_message():
    con = duckdb.connect()
    con.execute("create table micro as select 'a' as x, 1 as rk")
    with pytest.raises(SdcError, match="totals must be 'cube', 'rollup' or 'none', got 'all'"):
        render_macro(con, "ckm_count", "micro", ["x"], totals="all", ptable="micro", check_keys=False)
    with pytest.raises(SdcError, match="no macro no_such_macro"):
        render_macro(con, "no_such_macro")


def test_import_sdc_and_a_protected_table_do_not_import_dbt():
    code = (
        "import sys, pandas as pd\n"
        "import sdc, sdc.ckm, sdc.cli\n"
        "df = pd.DataFrame({'a': ['x', 'y'] * 50, 'k': [(37 * i) % 256 for i in range(100)]})\n"
        "sdc.ckm.count_table(df, ['a'], record_key='k', modulus=256, ptable=sys.argv[1], check_keys=False)\n"
        "loaded = sorted(m for m in sys.modules if m == 'dbt' or m.startswith('dbt.'))\n"
        "assert not loaded, loaded\n"
    )
    from dbt_project_helper import DEMO_PTABLE

    result = subprocess.run([sys.executable, "-c", code, str(DEMO_PTABLE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_compiled_macros_are_cached_in_the_users_cache_folder_and_optional(tmp_path):
    """The bytecode cache (XDG_CACHE_HOME/sdc/jinja, 0700) holds compiled macros between processes; where it
    cannot be made (here: the cache home is a file) every process compiles, with the same result."""
    import os

    from dbt_project_helper import DEMO_PTABLE

    code = (
        "import sys, duckdb\n"
        "from sdc.warehouse.macro_renderer import render_macro\n"
        "con = duckdb.connect()\n"
        "con.execute(\"create table pt as select * from read_csv('\" + sys.argv[1] + \"')\")\n"
        "print(render_macro(con, 'ckm_count', 'micro', ['a'], ptable='pt', check_keys=False, complete=False))\n"
    )
    outputs = []
    blocked = tmp_path / "not_a_folder"
    blocked.write_text("")
    for home in (tmp_path / "cache", tmp_path / "cache", blocked):
        result = subprocess.run([sys.executable, "-c", code, str(DEMO_PTABLE)], capture_output=True, text=True,
                                timeout=120, env=dict(os.environ, XDG_CACHE_HOME=str(home)))
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == outputs[2] and "with leaf_cells as" in outputs[0]
    folder = tmp_path / "cache" / "sdc" / "jinja"
    assert (folder.stat().st_mode & 0o777) == 0o700 and any(folder.iterdir())
