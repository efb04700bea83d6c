"""How the files of this folder were made: ONS's example data and ONS's perturbed tables. Run once, in a venv
with cell-key-perturbation 3.1.0, pandas 2.3.3 and numpy 2.4.6 (ONS's package declares no dependencies):
    python make_ons_tables.py tests/data/ons
"""
import sys
import pandas as pd
from cell_key_perturbation.utils.generate_test_data import generate_test_data
from cell_key_perturbation.create_perturbed_table import create_perturbed_table
out = sys.argv[1]
ptable = pd.read_csv(f"{out}/ptable_10_5_rule.csv")
small = generate_test_data()            # ONS's default: 1000 records, keys 0..255, seed 111
large = generate_test_data(size=5000)   # for counts above 750
small.to_csv(f"{out}/ons_testdata_1000.csv", index=False)
large.to_csv(f"{out}/ons_testdata_5000.csv", index=False)
cases = {
    "ons_table_var1_var5_var8_t10.csv": (small, ["var1"], ["var5", "var8"], 10),
    "ons_table_var1_var5_var8_t0.csv": (small, [], ["var1", "var5", "var8"], 0),
    "ons_table_var9_var10_t10.csv": (small, [], ["var9", "var10"], 10),
    "ons_table_large_var1_var2_t10.csv": (large, ["var1"], ["var2"], 10),
    "ons_table_large_var3_t0.csv": (large, [], ["var3"], 0),
}
for name, (data, geog, tab_vars, threshold) in cases.items():
    table = create_perturbed_table(data=data, ptable=ptable, geog=geog, tab_vars=tab_vars,
                                   record_key="record_key", threshold=threshold)
    table.to_csv(f"{out}/{name}", index=False)
    print(name, len(table), int(table["pre_sdc_count"].max()), int((table["pre_sdc_count"] == 0).sum()), int(table["count"].isna().sum()))
