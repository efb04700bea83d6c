"""Synthetic university-statistics microdata in the shape of seed 002 (Bavarian students).

Fixed seed, so every run produces the same file. Columns: id, hochschule, hochschulart, geschlecht and the
EF-coded fields of seed 002 Table 3 (ef21 semesters at university, ef28 enrolment type with 1 = first
enrolment, 3 = re-registration, 4 = on leave, ef32 semesters in the subject, ef33 degree, ef35 standard
period, ef36 subject), plus a synthetic income for the microaggregation demo.

A second file holds synthetic enterprises for the magnitude-table demo of cell suppression: turnover by
economic branch (WZ 2008 section -> division) and Bavarian Regierungsbezirk, with holding groups.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sdc.files import staged_file
from sdc.quoting import quote_literal
from sdc.warehouse.database import duckdb_connect

FACTS_CONFIG = Path(__file__).with_name("facts.yml")

# (institution, Hochschulart, relative size): about the Bavarian landscape, names as in seed 002 Table 9.
INSTITUTIONS = [
    ("U München", "Universitäten", 50), ("TU München", "Universitäten", 45), ("U Erlangen-Nürnberg", "Universitäten", 38),
    ("U Würzburg", "Universitäten", 27), ("U Regensburg", "Universitäten", 20), ("U Augsburg", "Universitäten", 20),
    ("U Bamberg", "Universitäten", 12), ("U Bayreuth", "Universitäten", 13), ("U Passau", "Universitäten", 12),
    ("Kath. U Eichstätt-Ingolstadt", "Universitäten", 5), ("U der Bundeswehr München", "Universitäten", 3),
    ("H für Politik München", "Universitäten", 0.7), ("H für Philosophie München (rk)", "Universitäten", 0.4),
    ("Augustana-H Neuendettelsau (ev)", "Universitäten", 0.2),
    ("FH München", "Fachhochschulen", 18), ("TH Nürnberg Georg Simon Ohm", "Fachhochschulen", 13),
    ("FH Augsburg", "Fachhochschulen", 6.5), ("OTH Regensburg", "Fachhochschulen", 11), ("TH Deggendorf", "Fachhochschulen", 8),
    ("TH Rosenheim", "Fachhochschulen", 6), ("FH Würzburg-Schweinfurt", "Fachhochschulen", 9), ("TH Ingolstadt", "Fachhochschulen", 6),
    ("FH Landshut", "Fachhochschulen", 5), ("FH Coburg", "Fachhochschulen", 5), ("FH Kempten", "Fachhochschulen", 6),
    ("FH Hof", "Fachhochschulen", 3.5), ("FH Neu-Ulm", "Fachhochschulen", 4), ("OTH Amberg-Weiden", "Fachhochschulen", 3.5),
    ("TH Aschaffenburg", "Fachhochschulen", 3), ("FH Weihenstephan-Triesdorf", "Fachhochschulen", 6.5),
    ("H für Musik Würzburg", "Kunsthochschulen", 0.7), ("H für Musik und Theater München", "Kunsthochschulen", 1.2),
    ("Akademie der Bildenden Künste München", "Kunsthochschulen", 0.8),
    ("Akademie der Bildenden Künste Nürnberg", "Kunsthochschulen", 0.3),
]
# EF36 subject codes (first subject of the first course) with relative frequency and share of women.
SUBJECTS = [
    ("021", "BWL", 14, 0.50), ("079", "Informatik", 10, 0.22), ("107", "Medizin", 6, 0.62), ("135", "Rechtswissenschaft", 6, 0.56),
    ("105", "Maschinenbau", 8, 0.15), ("048", "Elektrotechnik", 5, 0.14), ("132", "Psychologie", 3, 0.76),
    ("128", "Physik", 2, 0.25), ("105b", "Lehramt", 9, 0.70), ("068", "Germanistik", 3, 0.73), ("027", "Biologie", 3, 0.62),
    ("032", "Chemie", 2, 0.42), ("052", "Geschichte", 2, 0.45), ("118", "Musik", 1, 0.52), ("175", "Soziale Arbeit", 4, 0.78),
    ("183", "Wirtschaftsinformatik", 4, 0.25), ("200", "Statistik", 0.3, 0.45), ("009", "Ägyptologie", 0.05, 0.60),
]
DEGREES = [("182", 0.55, 6), ("788", 0.22, 4), ("008", 0.12, 10), ("184", 0.08, 7), ("006", 0.03, 8)]  # code, share, RSZ


def generate_students(n: int = 500_000, seed: int = 2018) -> dict[str, np.ndarray]:
    """Columns of n synthetic student records (numpy arrays); deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    weights = np.array([w for _, _, w in INSTITUTIONS], dtype=float)
    inst = rng.choice(len(INSTITUTIONS), size=n, p=weights / weights.sum())
    subj_weights = np.array([w for _, _, w, _ in SUBJECTS], dtype=float)
    subj = rng.choice(len(SUBJECTS), size=n, p=subj_weights / subj_weights.sum())
    women = np.array([s for *_, s in SUBJECTS])[subj]
    sex = np.where(rng.random(n) < women, "w", "m")
    ef28 = rng.choice([1, 3, 4], size=n, p=[0.15, 0.823, 0.027])
    ef21 = np.where(ef28 == 1, np.where(rng.random(n) < 0.8, 1, rng.integers(2, 12, n)), 1 + rng.poisson(5.5, n))
    ef32 = np.minimum(ef21, np.where(rng.random(n) < 0.2, 1, 1 + rng.poisson(3.5, n)))
    degree = rng.choice(len(DEGREES), size=n, p=[s for _, s, _ in DEGREES])
    income = np.round(np.exp(rng.normal(6.7, 0.55, n)), 2)  # monthly income in euro, log-normal
    return {
        "id": np.arange(1, n + 1),
        "hochschule": np.array([name for name, _, _ in INSTITUTIONS])[inst],
        "hochschulart": np.array([kind for _, kind, _ in INSTITUTIONS])[inst],
        "geschlecht": sex,
        "ef21": ef21.astype(np.int16),
        "ef28": ef28.astype(np.int16),
        "ef32": ef32.astype(np.int16),
        "ef33": np.array([code for code, _, _ in DEGREES])[degree],
        "ef35": np.array([rsz for _, _, rsz in DEGREES], dtype=np.int16)[degree],
        "ef36": np.array([code for code, *_ in SUBJECTS])[subj],
        "fach": np.array([name for _, name, _, _ in SUBJECTS])[subj],
        "einkommen": income,
    }


def write_students(path: str | Path, n: int = 500_000, seed: int = 2018) -> int:
    """Write the synthetic microdata as Parquet (or CSV by suffix); returns the number of rows."""
    return _write(path, generate_students(n, seed))


def _write(path: str | Path, columns: dict[str, np.ndarray]) -> int:
    con = duckdb_connect()
    try:
        con.register("records", columns)
        fmt = "parquet" if str(path).endswith(".parquet") else "csv, header true"
        with staged_file(path, suffix=Path(path).suffix, command="sdc demo generate") as tmp:
            con.execute(f"copy (select * from records order by id) to {quote_literal(tmp)} (format {fmt})")
    finally:
        con.close()
    return len(columns["id"])


# WZ 2008 divisions of the enterprise demo: (division, section, relative number of enterprises, log-mean turnover)
BRANCHES = [
    ("10", "C", 6, 8.2), ("11", "C", 1.2, 8.6), ("20", "C", 0.8, 9.6), ("28", "C", 2.5, 9.3), ("29", "C", 0.5, 10.4),
    ("41", "F", 4, 7.6), ("42", "F", 1.5, 8.1), ("43", "F", 12, 6.6),
    ("45", "G", 5, 7.7), ("46", "G", 8, 8.3), ("47", "G", 14, 7.0),
    ("58", "J", 1, 7.4), ("62", "J", 5, 7.2),
    ("69", "M", 7, 6.3), ("70", "M", 3, 6.9), ("71", "M", 6, 6.6),
]
REGIONS = [("Oberbayern", 34), ("Niederbayern", 9), ("Oberpfalz", 8), ("Oberfranken", 8), ("Mittelfranken", 13),
           ("Unterfranken", 10), ("Schwaben", 14)]


def generate_enterprises(n: int = 6_000, seed: int = 2019) -> dict[str, np.ndarray]:
    """Columns of n synthetic enterprises: id, wz (division), region, umsatz (turnover in 1,000 euro, heavy
    tailed: a few large enterprises dominate some cells) and holding (a group id; most enterprises are their
    own holding, about 10 % belong to one of 60 groups spread over branches and regions)."""
    rng = np.random.default_rng(seed)
    weights = np.array([w for _, _, w, _ in BRANCHES], dtype=float)
    branch = rng.choice(len(BRANCHES), size=n, p=weights / weights.sum())
    region_weights = np.array([w for _, w in REGIONS], dtype=float)
    region = rng.choice(len(REGIONS), size=n, p=region_weights / region_weights.sum())
    log_mean = np.array([m for *_, m in BRANCHES])[branch]
    turnover = np.round(np.exp(rng.normal(log_mean, 1.3)))
    ids = np.arange(1, n + 1)
    in_group = rng.random(n) < 0.10
    holding = np.where(in_group, rng.integers(1, 61, n) * -1, ids)  # groups get negative ids, the others their own
    return {
        "id": ids,
        "wz": np.array([code for code, *_ in BRANCHES])[branch],
        "region": np.array([name for name, _ in REGIONS])[region],
        "umsatz": turnover,
        "holding": np.array([f"H{-h:03d}" if h < 0 else f"E{h:05d}" for h in holding]),
    }


def write_enterprises(path: str | Path, n: int = 6_000, seed: int = 2019) -> int:
    return _write(path, generate_enterprises(n, seed))


def hierarchy_rows() -> list[tuple[str, str, str]]:
    """The demo hierarchies (dimension, code, parent): Hochschule -> Hochschulart -> Total, and
    WZ division -> section -> Total."""
    rows = [("hochschule", "Total", "")]
    for kind in dict.fromkeys(kind for _, kind, _ in INSTITUTIONS):
        rows.append(("hochschule", kind, "Total"))
    rows += [("hochschule", name, kind) for name, kind, _ in INSTITUTIONS]
    rows.append(("wz", "Total", ""))
    rows += [("wz", section, "Total") for section in dict.fromkeys(section for _, section, _, _ in BRANCHES)]
    rows += [("wz", division, section) for division, section, _, _ in BRANCHES]
    return rows
