"""New-user trial D18: HiGHS's copyright banner was printed into dbt output and every `sdc suppress`. highspy 1.16
(what an install outside the pinned set gets) prints it from its constructor, to the process's standard output,
before output can be switched off. sdc builds every HiGHS instance through suppression.audit.quiet_highs."""

from __future__ import annotations

import os

import highspy
import numpy as np

from sdc.suppression import audit


class _BannerHighs(highspy.Highs):
    """A HiGHS that prints a banner from its constructor to file descriptor 1, as highspy 1.16 does."""

    def __init__(self):
        os.write(1, b"Running HiGHS 1.16.0: Copyright (c) 2026 under MIT licence terms\n")
        super().__init__()


def test_a_banner_printed_by_the_solver_s_constructor_reaches_no_output(monkeypatch, capfd):
    monkeypatch.setattr(audit.highspy, "Highs", _BannerHighs)
    highs = audit.highs_model(np.array([[1.0, 1.0]]), np.array([1.0, 1.0]), np.zeros(2), np.full(2, 10.0),
                              np.array([3.0]), np.array([3.0]))
    highs.run()
    assert highs.getInfo().objective_function_value == 3.0
    print("after")  # standard output works again
    out, err = capfd.readouterr()
    assert out == "after\n" and err == ""


def test_only_quiet_highs_makes_a_solver():
    """Every HiGHS instance of the package comes from quiet_highs (a second constructor call would print again)."""
    from pathlib import Path

    package = Path(audit.__file__).resolve().parent.parent
    calls = [(p.name, line) for p in package.rglob("*.py") for line in p.read_text().splitlines()
             if "highspy.Highs()" in line]
    assert calls == [("audit.py", "            highs = highspy.Highs()")]
