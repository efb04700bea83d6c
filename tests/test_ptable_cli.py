"""The `sdc ptable` command: builds, imports, exports, plots; bad input exits 2 and writes nothing."""

import subprocess
import sys
from pathlib import Path

import pytest

from sdc.cli import main

GOOD = "i,j,p,v,p_int_lb,p_int_ub\n0,0,1.00000000,0,0.00000000,1.00000000\n1,0,0.50000000,-1,0.00000000,0.50000000\n1,2,0.50000000,1,0.50000000,1.00000000\n"


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_build_prints_check_table_and_writes_seed(tmp_path, capsys):
    out_file = tmp_path / "pt.csv"
    code, out, err = run(capsys, "ptable", "--D", "2", "--V", "0.9", "--out", str(out_file))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "ptable D=2 V=0.9 js=0: 10 intervals, rows 0..2"
    assert lines[1].split() == ["i", "mean", "variance", "p_stay", "sum", "solves"]
    assert lines[3].split() == ["1", "0.00000000", "0.900000", "0.362500", "1.00000000", "1"]
    assert lines[4].split()[0] == ">=2"
    assert out_file.read_text().splitlines()[2] == "1,0,0.36250000,-1,0.00000000,0.36250000"


def test_per_row_parameters_and_allow_lower_variance_warn_on_stderr(capsys):
    code, out, err = run(
        capsys, "ptable", "--D", "4", "--V", "1.5", "--pstay", "0.8,0.9,0.9,0.9", "--allow-lower-variance"
    )
    assert code == 0
    assert err.strip() == "warning: row i=1 misses V=1.5: variance 1.22497 after 20 solves (stay bound lowered to 0.00)"
    rows = [line.split() for line in out.splitlines()[3:7]]
    assert [r[3] for r in rows] == ["0.385851", "0.600000", "0.700000", "0.800000"]
    assert [r[5] for r in rows] == ["20", "7", "5", "3"]


def test_mono_per_row_flag(capsys):
    code, out, _ = run(capsys, "ptable", "--D", "2", "--V", "1.05", "--js", "1", "--mono", "true,true,false,true")
    assert code == 0
    assert out.splitlines()[3].split()[3] == "0.000000"  # row 1 cannot stay (js = 1)


def test_import_converts_to_tauargus_and_reports(tmp_path, capsys, data_dir):
    out_file = tmp_path / "tau.txt"
    code, out, _ = run(
        capsys, "ptable", "--import", str(data_dir / "seed002_table11.csv"), "--format", "tauargus", "--out", str(out_file)
    )
    assert code == 0
    assert "(format overlay): 17 intervals, rows 0..4" in out
    assert "note: row i=1: mean noise +0.010000 (not unbiased)" in out
    text = out_file.read_text().splitlines()
    assert text[0] == "i;j;p;v;p_int_ub" and text[-1] == "4;6;0.07000000;2;1.00000000"


def test_plot_writes_a_png(tmp_path, capsys):
    png = tmp_path / "pt.png"
    code, out, _ = run(capsys, "ptable", "--D", "3", "--V", "1", "--plot", str(png))
    assert code == 0 and f"wrote {png}" in out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.parametrize(
    "args, message",
    [
        (["--D", "5", "--V", "3", "--js", "3"], "V=3.0 is too small for js=3"),
        (["--D", "2", "--V", "1"], "row i=1 cannot reach V=1.0"),
        (["--V", "1"], "--D required to build a ptable"),
        (["--D", "2", "--V", "0.9", "--format", "excel"], "unknown --format 'excel'"),
        (["--D", "2", "--V", "0.9", "--plot", "x.jpg"], "--plot writes a PNG file"),
        (["--D", "2", "--pstay", "0.5,0.5,0.5", "--V", "0.9"], "pstay has 3 values but the table has rows 1..2"),
    ],
)
def test_bad_parameters_exit_2_and_leave_the_output_alone(tmp_path, capsys, args, message):
    out_file = tmp_path / "pt.csv"
    source = tmp_path / "good.csv"
    source.write_text(GOOD)
    assert run(capsys, "ptable", "--import", str(source), "--out", str(out_file))[0] == 0  # an earlier ptable
    before = out_file.read_text()
    code, out, err = run(capsys, "ptable", *args, "--out", str(out_file))
    assert code == 2
    assert err.startswith("sdc ptable: error: ") and message in err
    assert out_file.read_text() == before


@pytest.mark.parametrize(
    "content, message",
    [
        (GOOD.replace("1,2,0.50000000,1,0.50000000,1.00000000", "1,2,0.40000000,1,0.50000000,0.90000000"), "row i=1: the intervals end at 0.90000000"),
        ("x;y\n1;2\n", "unknown ptable format"),
        (GOOD.replace("1,2,0.50000000,1", "1,2,0.50000000,7"), "j=2 but i + v = 8"),
    ],
)
def test_bad_import_exits_2_and_creates_no_output(tmp_path, capsys, content, message):
    source = tmp_path / "in.csv"
    source.write_text(content)
    out_file = tmp_path / "out.csv"
    code, _, err = run(capsys, "ptable", "--import", str(source), "--out", str(out_file))
    assert code == 2 and message in err
    assert not out_file.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.csv"]  # no temporary file left behind


def test_unknown_import_format_is_refused_by_the_parser(tmp_path, capsys):
    source = tmp_path / "in.csv"
    source.write_text(GOOD)
    with pytest.raises(SystemExit) as exit_info:
        main(["ptable", "--import", str(source), "--import-format", "xls"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'xls'" in capsys.readouterr().err


def test_console_script_is_installed():
    sdc = Path(sys.executable).parent / "sdc"
    result = subprocess.run([str(sdc), "ptable", "--D", "1", "--V", "0.5"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "ptable D=1 V=0.5 js=0: 4 intervals, rows 0..1"


def test_csv_fields_and_atomic_writes(tmp_path):
    from sdc.errors import SdcError
    from sdc.files import csv_field, write_text_atomically

    assert [csv_field(v) for v in (None, 3, "a,b", 'say "x"')] == ["", "3", '"a,b"', '"say ""x"""']
    target = tmp_path / "out.txt"
    write_text_atomically(target, "one\n")
    assert target.read_text() == "one\n" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    with pytest.raises(SdcError, match=r"folder .*missing does not exist"):
        write_text_atomically(tmp_path / "missing" / "out.txt", "x")


def test_the_variance_bound_for_js_is_strict_and_its_message_says_why(capsys):
    """New-user trial D14: --D 4 --V 2 --js 2 said "the variance is at least 2.000000 > V=2.0". Row 1 may go
    to 0 or to 3 and beyond: the two-point law has variance 1*(2+1-1) = 2, but every other allowed target keeps
    a probability >= 1e-8, so the least variance is above 2 and V must exceed floor((js+1)^2/4)."""
    code, _, err = run(capsys, "ptable", "--D", "4", "--V", "2", "--js", "2")
    assert code == 2
    assert err == ("sdc ptable: error: V=2.0 is too small for js=2: row i=1 may only move to 0 or to 3 and beyond, "
                   "so its variance exceeds 1*(2+1-1) = 2 (reached only with no probability on its other targets, "
                   "and each keeps at least 1e-08); choose V > floor((js+1)^2/4) = 2 or a smaller js\n")
    # just above the bound, but below what the row can reach: the least variance, printed so that it differs
    code, _, err = run(capsys, "ptable", "--D", "4", "--V", "2.0000001", "--js", "2")
    assert code == 2
    least = float(err.split("the least variance this row can have is ")[1].split(",")[0])
    assert 2.0000001 < least < 2.000001
    assert err.rstrip().endswith("choose V >= 2.000001")
    # the value the message proposes builds, with row 1 at that variance
    code, out, err = run(capsys, "ptable", "--D", "4", "--V", "2.000001", "--js", "2")
    assert code == 0 and err == ""
    i, mean, variance = out.splitlines()[3].split()[:3]
    # the mean of the probabilities as stored (8 decimals): 0.00000000 or -0.00000001 by the CPU's arithmetic
    assert (i, variance) == ("1", "2.000001") and abs(float(mean)) <= 2e-8
