"""Building count ptables by maximum entropy: the published tables of the R package ptable 1.0.0
(reference ckm.md §4, T1-T7), the pstay heuristic, and properties over many parameters."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from sdc.errors import SdcError
from sdc.ptable import PTableParams, create_ptable
from sdc.ptable.solver import MIN_PROBABILITY, RowProblem, max_entropy

TOL = 1e-7  # per probability, against the published tables


def row_p(table, i):
    return table.p[table.i == i]


def row_j(table, i):
    return table.j[table.i == i].tolist()


# T2: create_cnt_ptable(D = 2, V = 0.9), ptable vignette (cran/ptable inst/doc/introduction.html)
T2 = [
    (0, 0, 1.00000000, 0, 0.00000000, 1.00000000),
    (1, 0, 0.36250000, -1, 0.00000000, 0.36250000),
    (1, 1, 0.36250000, 0, 0.36250000, 0.72500000),
    (1, 2, 0.18750000, 1, 0.72500000, 0.91250000),
    (1, 3, 0.08750000, 2, 0.91250000, 1.00000000),
    (2, 0, 0.05154609, -2, 0.00000000, 0.05154609),
    (2, 1, 0.24381564, -1, 0.05154609, 0.29536173),
    (2, 2, 0.40927654, 0, 0.29536173, 0.70463827),
    (2, 3, 0.24381564, 1, 0.70463827, 0.94845391),
    (2, 4, 0.05154609, 2, 0.94845391, 1.00000000),
]


def test_t2_d2_v09_matches_published_table_with_bounds():
    table = create_ptable(PTableParams(D=2, V=0.9)).table
    assert len(table) == len(T2)
    for k, (i, j, p, v, lb, ub) in enumerate(T2):
        assert (table.i[k], table.j[k], table.v[k]) == (i, j, v)
        assert table.p[k] == pytest.approx(p, abs=TOL)
        assert table.p_int_lb[k] == pytest.approx(lb, abs=TOL)
        assert table.p_int_ub[k] == pytest.approx(ub, abs=TOL)


def test_t1_d2_v1_row1_cannot_reach_variance_and_says_how_far_it_gets():
    # ptable silently reports p_var 0.93188 with iter 20 for row 1; we refuse unless asked.
    with pytest.raises(SdcError, match=r"row i=1 cannot reach V=1.*0\.93188.*1\.20000"):
        create_ptable(PTableParams(D=2, V=1))


def test_t1_d2_v1_with_allow_lower_variance_reproduces_published_matrix():
    # T1: tMatrix and empResults of create_cnt_ptable(D = 2, V = 1), ptable vignette.
    build = create_ptable(PTableParams(D=2, V=1), allow_lower_variance=True)
    table = build.table
    assert row_p(table, 1) == pytest.approx([0.36648551, 0.3664855, 0.1675725, 0.09945652], abs=TOL)
    assert row_p(table, 2) == pytest.approx([0.06382714, 0.2446915, 0.3829628, 0.24469145, 0.06382714], abs=TOL)
    stats = {s.i: s for s in table.row_stats()}
    assert stats[1].variance == pytest.approx(0.93188, abs=1e-5)
    assert stats[1].p_stay == pytest.approx(0.36649, abs=1e-5)
    assert stats[2].variance == pytest.approx(1.0, abs=1e-7)
    assert stats[2].p_stay == pytest.approx(0.38296, abs=1e-5)
    assert [(o.i, o.solves, o.reached) for o in build.rows] == [(1, 20, False), (2, 1, True)]
    assert build.warnings == ["row i=1 misses V=1: variance 0.93188 after 20 solves (stay bound lowered to 0.00)"]


def test_t3_pt_ex_cnts_per_row_mono_matches_published_probabilities():
    # T3: pt_ex_cnts() = create_cnt_ptable(D=2, V=1.05, js=1, mono=c(T,T,F,T)), tests/testthat/test-examples.R
    table = create_ptable(PTableParams(D=2, V=1.05, js=1, mono=(True, True, False, True))).table
    published = [
        1.00000000, 0.50833333, 0.47500000, 0.01666667,
        0.16155827, 0.55565037, 0.24246618, 0.04032518,
        0.41231301, 0.28806097, 0.18693903, 0.11268699,
        0.07012498, 0.24450007, 0.37074990, 0.24450007, 0.07012498,
    ]
    assert table.p == pytest.approx(published, abs=TOL)
    assert row_j(table, 1) == [0, 2, 3]
    assert row_j(table, 4) == [2, 3, 4, 5, 6]


# T4: tMatrix of create_cnt_ptable(D = 5, V = 3, js = 2), ptable vignette; targets 1 and 2 are blocked.
T4 = {
    1: [0.73446954, 0.136720190, 0.07279631, 0.03742956, 0.018584399],
    2: [0.40880704, 0.406643537, 0.14762401, 0.03231882, 0.004266868, 0.0003397188],
    3: [0.20398618, 0.393662525, 0.24749239, 0.11056847, 0.035102043, 0.0079189055, 0.001269491],
    4: [0.08485487, 0.277921233, 0.27792123, 0.18939369, 0.105125448, 0.0454553570, 0.015310774, 0.004017391],
    5: [0.02014749, 0.173347467, 0.22063302, 0.22131828, 0.174967643, 0.1090164652, 0.053532830, 0.020717693,
        0.006319113],
    6: [0.072029825, 0.13671708, 0.19735138, 0.216652933, 0.1808822561, 0.114850887, 0.055459983, 0.020367237,
        0.005688418],
    7: [0.018439196, 0.05548389, 0.12162104, 0.194208159, 0.2259140226, 0.191441399, 0.118180404, 0.053146176,
        0.017410672, 0.004155049],
    8: [0.003791861, 0.01659093, 0.05229263, 0.118730368, 0.1941934608, 0.228801496, 0.194193460, 0.118730371,
        0.052292634, 0.016590928, 0.00379186],
}


def test_t4_d5_v3_js2_matches_published_matrix():
    table = create_ptable(PTableParams(D=5, V=3, js=2)).table
    assert table.max_i == 8  # ncat = D + js + 1
    for i, published in T4.items():
        assert row_p(table, i) == pytest.approx(published, abs=TOL), f"row i={i}"
        assert not set(row_j(table, i)) & {1, 2}
    assert row_j(table, 6) == list(range(3, 12))


def test_t5_cellkey_test_table_summary():
    # T5: create_cnt_ptable(D=5, V=3, js=2, pstay=0.5, optim=1, mono=TRUE), cellKey tests/testthat/test_countvars.R
    table = create_ptable(PTableParams(D=5, V=3, js=2, pstay=0.5)).table
    assert len(table) == 66 and table.max_i == 8
    assert table.p.mean() == pytest.approx(0.136, abs=5e-4)
    assert table.p_int_lb.mean() == pytest.approx(0.562, abs=5e-4)
    assert table.p_int_ub.mean() == pytest.approx(0.698, abs=5e-4)
    assert table.v.mean() == pytest.approx(1.045, abs=5e-4)


def test_t6_pstay_lowered_in_steps_until_variance_is_reached():
    # T6: create_cnt_ptable(D=4, V=1.5, pstay=c(0.8, 0.9, 0.9, 0.9)), ptable vignette "Troubleshooting":
    # p_var 1.22497 / 1.5 / 1.5 / 1.5, p_stay 0.38585 / 0.6 / 0.7 / 0.8, iter 20 / 7 / 5 / 3
    build = create_ptable(PTableParams(D=4, V=1.5, pstay=(0.8, 0.9, 0.9, 0.9)), allow_lower_variance=True)
    stats = build.table.row_stats()[1:]
    assert [round(s.variance, 5) for s in stats] == [1.22497, 1.5, 1.5, 1.5]
    assert [round(s.p_stay, 5) for s in stats] == [0.38585, 0.6, 0.7, 0.8]
    assert [o.solves for o in build.rows] == [20, 7, 5, 3]
    assert len(build.warnings) == 1 and build.warnings[0].startswith("row i=1 misses V=1.5")


def test_t6_without_allow_lower_variance_pstay_is_a_hard_bound():
    with pytest.raises(SdcError, match=r"row i=1 cannot reach V=1.5.*stay probability >= 0.8"):
        create_ptable(PTableParams(D=4, V=1.5, pstay=(0.8, 0.9, 0.9, 0.9)))


def test_t6_pstay_half_keeps_stay_probability_and_variance_in_every_row():
    # T6: create_cnt_ptable(D = 4, V = 1, pstay = 0.5) -> p_stay 0.5 in every row, p_var 1
    build = create_ptable(PTableParams(D=4, V=1, pstay=0.5))
    for s in build.table.row_stats()[1:]:
        assert s.p_stay == pytest.approx(0.5, abs=1e-8)
        assert s.variance == pytest.approx(1.0, abs=1e-6)
    assert [o.solves for o in build.rows] == [1, 1, 1, 1]


def test_t7_js3_with_v3_is_infeasible_and_explained():
    # T7: create_cnt_ptable(D = 5, V = 3, js = 3) must fail (tests/testthat/test-params.R):
    # row 2 can only move to 0 or >= 4, so its variance is at least 2 * 2 = 4 (and above it: trial D14).
    with pytest.raises(SdcError, match=r"V=3 is too small for js=3: row i=2 .* exceeds 2\*\(3\+1-2\) = 4"):
        create_ptable(PTableParams(D=5, V=3, js=3))


@pytest.mark.parametrize(
    "params, message",
    [
        (PTableParams(D=2, V=3, js=3), r"D=2 is too small for js=3: row i=4 cannot move down"),
        (PTableParams(D=2, V=3, js=2), r"D=2 is too small for js=2: .* choose D >= js\+1 = 3"),
        (PTableParams(D=0, V=1), r"D must be a whole number >= 1, got 0"),
        (PTableParams(D=3, V=-1), r"V must be a positive number, got -1"),
        (PTableParams(D=3, V=1, js=-1), r"js must be a whole number >= 0"),
        (PTableParams(D=3, V=1, pstay=1.0), r"pstay for row i=1 must be in \[0, 1\), got 1.0"),
        (PTableParams(D=3, V=1, optim=2), r"optim for row i=1 must be 1 .* or 4"),
        (PTableParams(D=3, V=1, pstay=(0.5, 0.5)), r"pstay has 2 values but the table has rows 1..3"),
        (PTableParams(D=2, V=1, js=1, mono=(True,)), r"mono has 1 values but the table has rows 1..4"),
        (PTableParams(D=2, V=3, optim=4), r"row i=1 cannot reach V=3: the largest variance this row can have is 1\.20000"),
    ],
)
def test_infeasible_or_invalid_parameters_name_the_problem(params, message):
    with pytest.raises(SdcError, match=message):
        create_ptable(params)


def test_optim4_reaches_variance_where_optim1_stops_at_the_entropy_maximum():
    # D=2, V=1: optim 1 stops at 0.93188 in row 1, but a distribution with variance 1 exists (up to 1.2).
    table = create_ptable(PTableParams(D=2, V=1, optim=4)).table
    for s in table.row_stats()[1:]:
        assert s.variance == pytest.approx(1.0, abs=1e-7)
        assert s.mean == pytest.approx(0.0, abs=1e-7)


def test_symmetric_row_has_gibbs_form_when_no_bound_is_active():
    # Independent check of optimality: with only sum, mean and variance active, the maximum-entropy
    # solution is p_v ∝ exp(a v + b v²), so log p is exactly quadratic in v.
    table = create_ptable(PTableParams(D=5, V=3, js=2)).table
    v = table.v[table.i == 8].astype(float)
    log_p = np.log(row_p(table, 8))
    coef = np.polyfit(v, log_p, 2)
    assert np.abs(np.polyval(coef, v) - log_p).max() < 1e-6
    assert coef[1] == pytest.approx(0.0, abs=1e-6)  # symmetric row: no linear term


def test_solution_does_not_depend_on_start_values():
    # SLSQP (the reference's algorithm) from three different starts converges to our optimum.
    v = np.arange(-3, 6)  # row i=3 of D=5, js=0
    problem = RowProblem(v, np.full(len(v), MIN_PROBABILITY), 3.0, False, True)
    ours = max_entropy(problem)
    rng = np.random.default_rng(7)
    for _ in range(3):
        start = rng.dirichlet(np.ones(len(v)))
        fit = minimize(
            lambda p: float(np.sum(p * np.log(p))),
            start,
            jac=lambda p: np.log(p) + 1,
            method="SLSQP",
            bounds=[(MIN_PROBABILITY, 1)] * len(v),
            constraints=[
                {"type": "eq", "fun": lambda p: [p.sum() - 1, p @ v]},
                {"type": "ineq", "fun": lambda p: [3.0 - p @ v**2] + [p[k + 1] - p[k] for k in range(3)]},
            ],
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        assert fit.x == pytest.approx(ours, abs=1e-5)
    # and ours is at least as good as every SLSQP answer
    assert -np.sum(ours * np.log(ours)) >= -np.sum(fit.x * np.log(fit.x)) - 1e-9


@st.composite
def feasible_parameters(draw):
    js = draw(st.integers(0, 3))
    d = draw(st.integers(js + 1, 8))  # D >= js+1: row js+1 needs the downward target 0
    least = ((js + 1) ** 2) // 4
    v = draw(st.floats(least + 0.05, least + 4.0).map(lambda x: round(x, 2)))
    pstay = draw(st.sampled_from([0.0, 0.2, 0.5]))
    optim = draw(st.sampled_from([1, 4]))
    mono = draw(st.booleans())
    return PTableParams(D=d, V=v, js=js, pstay=pstay, optim=optim, mono=mono)


@settings(max_examples=60, deadline=None)
@given(feasible_parameters())
def test_properties_hold_for_random_feasible_parameters(params):
    try:
        build = create_ptable(params, allow_lower_variance=True)
    except SdcError as exc:
        # optim 4 beyond the largest reachable variance is refused with the row named; nothing else is
        assert params.optim == 4 and "optim=4 demands variance" in str(exc)
        return
    table = build.table
    assert table.max_i == params.ncat
    # row 0 is {0 -> 0} with the whole interval
    assert (table.j[table.i == 0].tolist(), table.lb_units[table.i == 0].tolist()) == ([0], [0])
    for i in range(params.ncat + 1):
        lb, ub = table.lb_units[table.i == i], table.ub_units[table.i == i]
        assert lb[0] == 0 and ub[-1] == 10**8 and np.all(lb[1:] == ub[:-1]) and np.all(ub >= lb)
        j = row_j(table, i)
        assert not [x for x in j if 1 <= x <= params.js]
        assert min(j) >= 0 and max(np.abs(np.array(j) - i)) <= params.D
    reached = {o.i: o.reached for o in build.rows}
    for s in table.row_stats()[1:]:
        assert s.p_sum == pytest.approx(1.0, abs=1e-12)
        # bounds are rounded to 8 decimals, so mean and variance move by at most ~ (2D+1) * D^2 * 5e-9
        assert abs(s.mean) < 1e-6
        assert s.variance <= params.V + 1e-5
        if params.optim == 4 or reached[s.i]:
            assert s.variance == pytest.approx(params.V, abs=5e-4 if not params.optim == 4 else 1e-5)


def test_lookup_interval_is_closed_below_and_open_above():
    # [p_int_lb, p_int_ub) as in cellKey and tau-Argus (reference ckm.md §3.3), on T2 row 1:
    # -1 on [0, 0.3625), 0 on [0.3625, 0.725), +1 on [0.725, 0.9125), +2 on [0.9125, 1)
    table = create_ptable(PTableParams(D=2, V=0.9)).table
    assert table.lookup(1, 0.0) == -1
    assert table.lookup(1, 0.36249999) == -1
    assert table.lookup(1, 0.3625) == 0
    assert table.lookup(1, 0.72499999) == 0 and table.lookup(1, 0.725) == 1
    assert table.lookup(1, 0.99999999) == 2
    assert table.lookup(0, 0.5) == 0  # zero stays zero
    assert table.lookup(10**9, 0.3625) == table.lookup(2, 0.3625)  # last row for every larger count
    with pytest.raises(SdcError, match=r"cell key must be in \[0, 1\), got 1.0"):
        table.lookup(1, 1.0)
