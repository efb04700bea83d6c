"""Parameters of the Cell Key Method for magnitude tables, named as cellKey's ``ck_params_nums``.

One YAML file (``sdc ckm --params FILE.yml``), a dict (Python API) or dbt arguments hold them::

    preset: tauargus            # or cellkey: follow cellKey where the two tools differ (τ-Argus and cellKey)
    type: top_contr             # top_contr | mean | range | sum: the magnifier x_j of the noise
    top_k: 3                    # 1..6 (top_contr only): the largest contributions, one noise component each
    multiplier: {type: flex, fp: 1000, p: [0.3, 0.03], epsilon: [1, 0.5, 0.2], q: 3}
                                # or {type: simple, p: 0.05, epsilon: [1]}
    mu_c: 2                     # extra noise for sensitive cells
    sensitive: ["freq:15"]      # primary rules (as sdc suppress) that make a cell sensitive
    same_key: false             # component 1 uses the cell key itself (true) or its scrambled key (false)
    use_zero_rkeys: false       # the cell key sums the keys of every record (true) or of non-zero contributors
    version_keys: true          # each record's key for its version (a hash of its key and contributions: a revised
                                # value gets new noise); false: the record keys themselves (τ-Argus, cellKey)
    separation: true            # cells below the separation point use the ptable's small_cells part
    ptable: nums_ptable.csv     # magnitude ptable (sdc ptable --table nums), relative to this file

The flex multiplier (τ-Argus ``<SCALING> F(σ0, σ1, x*, q, ε2..)``): ``p = [p_small, p_large]`` = [σ1, σ0],
``fp`` = x*. The two presets differ where the tools do (τ-Argus and cellKey, and the range magnifier),
which ``Preset`` names.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from sdc.errors import SdcError
from sdc.ptable.nums import NumsPTableSet, parse_nums_ptable, read_nums_ptable

MAGNIFIERS = ("top_contr", "mean", "range", "sum")
PRESETS = ("tauargus", "cellkey")
MAX_TOP_K = 6
# the primary rules that can make a magnitude cell sensitive (mu_c): as suppression_primary reads them; its
# checks of the numbers' ranges apply when the table is built
SENSITIVITY_RULE = re.compile(r"freq:\d+|p:\d+(\.\d+)?|nk:\d+,\d+(\.\d+)?|pq:\d+(\.\d+)?,\d+(\.\d+)?|zero")
PARAMETER_NAMES = (
    "preset", "type", "top_k", "multiplier", "mu_c", "sensitive", "same_key", "use_zero_rkeys", "version_keys",
    "separation", "ptable",
)
MULTIPLIER_NAMES = {"flex": ("type", "fp", "p", "epsilon", "q"), "simple": ("type", "p", "epsilon")}


@dataclass(frozen=True)
class Preset:
    """Where τ-Argus and cellKey differ (τ-Argus and cellKey: four points, and the range magnifier; point 5, τ-Argus's
    manual-protection status that skips a cell, has no counterpart here: sdc never publishes a cell
    unperturbed). Not here, as the tools agree: a weighted sum's largest contributions are those of the
    largest unweighted values, x_j their weighted contributions (τ-Argus GetXj; cellKey orders by |value|,
    then weight, as sdc does on ties); the even/odd ptable goes by the parity of the cell's records, zeros
    included (τ-Argus Freq, cellKey nrow); a record of value 0 among the top k adds no noise in either tool
    (δ_j = 0), so sdc's components stop at the cell's contributors."""

    name: str
    # 1. flex multiplier below fp: x_j · p_small · ε_j (τ-Argus) or x_j · p_small, ε_j left out (cellKey)
    epsilon_below_fp: bool
    # 2. mu_c: added to component 1 only, and only above the separation point (τ-Argus), or to every component
    mu_c_first_only: bool
    # 3. no sign change: only component 1 is clamped (τ-Argus), or every component (cellKey)
    clamp_first_only: bool
    # 4. component 1 uses the scrambled cell key (τ-Argus always; cellKey with same_key: false)
    same_key_default: bool
    # 5. type range: max|v| - min|v| (τ-Argus GetXj "D") or max(v) - min(v) (cellKey's spread), both over the
    # cell's records, zeros included, and of the unweighted values, also for a weighted sum
    range_of_absolute_values: bool


PRESET = {
    "tauargus": Preset("tauargus", epsilon_below_fp=True, mu_c_first_only=True, clamp_first_only=True,
                       same_key_default=False, range_of_absolute_values=True),
    "cellkey": Preset("cellkey", epsilon_below_fp=False, mu_c_first_only=False, clamp_first_only=False,
                      same_key_default=True, range_of_absolute_values=False),
}


@dataclass(frozen=True)
class Multiplier:
    """m(z) of τ-Argus and cellKey: flex (σ1 up to fp, falling towards σ0 above) or simple (σ1 everywhere)."""

    kind: str
    p_small: float  # σ1
    p_large: float | None  # σ0 (flex only)
    fp: float | None  # z_f (flex only)
    q: float | None  # flex only
    epsilon: tuple[float, ...]

    def m(self, z: float) -> float:
        """The flex function for |x_j| = z above the separation point."""
        if self.kind == "simple" or z < self.fp:
            return self.p_small
        s0, s1, zf, q = self.p_large, self.p_small, self.fp, self.q
        return s0 * (1 + ((s1 * z - s0 * zf) / (s0 * zf)) * (2 * zf / (z + zf)) ** q)

    @property
    def e(self) -> float:
        """E = Σ ε_j² (the separation point divides by its root)."""
        return sum(x * x for x in self.epsilon)


@dataclass(frozen=True)
class MagnitudeParams:
    preset: Preset
    magnifier: str
    top_k: int
    multiplier: Multiplier
    mu_c: float = 0.0
    sensitive: tuple[str, ...] = ()
    same_key: bool = True
    use_zero_rkeys: bool = False
    version_keys: bool = True
    separation: bool = False
    ptable: str | None = None
    source: str = "parameters"

    @property
    def components(self) -> int:
        """Noise components per cell: top_k for top_contr, else 1."""
        return self.top_k if self.magnifier == "top_contr" else 1

    def key_shifts(self, j: int) -> int:
        """How often component j (1-based) scrambles the cell key: j - 1 with the same key, else j."""
        return j - 1 if self.same_key else j

    def separation_point(self, small_cells_variance: float | None) -> float:
        """z_s = sqrt(m1²) / (σ1 sqrt(E)), m1² the variance of the small-cells table's last row; 0 without separation."""
        if not self.separation:
            return 0.0
        return math.sqrt(small_cells_variance) / (self.multiplier.p_small * math.sqrt(self.multiplier.e))


def parse_params(raw: dict, source: str = "parameters", base: Path | None = None) -> MagnitudeParams:
    """Check a parameter dict and return MagnitudeParams; every error names the parameter and the value."""
    if not isinstance(raw, dict):
        raise SdcError(f"{source}: the magnitude parameters must be a mapping of names to values, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(PARAMETER_NAMES))
    if unknown:
        raise SdcError(f"{source}: unknown parameter {', '.join(map(repr, unknown))}; known: {', '.join(PARAMETER_NAMES)}")
    preset_name = raw.get("preset", "tauargus")
    if preset_name not in PRESETS:
        raise SdcError(f"{source}: preset must be one of {', '.join(PRESETS)}, got {preset_name!r}")
    preset = PRESET[preset_name]
    magnifier = raw.get("type", "top_contr")
    if magnifier not in MAGNIFIERS:
        raise SdcError(f"{source}: type must be one of {', '.join(MAGNIFIERS)}, got {magnifier!r}")
    top_k = raw.get("top_k", 1)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise SdcError(f"{source}: top_k must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r}")
    if magnifier != "top_contr" and "top_k" in raw and top_k != 1:
        raise SdcError(f"{source}: top_k={top_k} applies to type top_contr only; type {magnifier} has one noise component")
    components = top_k if magnifier == "top_contr" else 1
    multiplier = _multiplier(raw.get("multiplier"), components, source)
    mu_c = raw.get("mu_c", 0)
    if isinstance(mu_c, bool) or not isinstance(mu_c, (int, float)) or not math.isfinite(mu_c) or mu_c < 0:
        raise SdcError(f"{source}: mu_c must be a number >= 0, got {mu_c!r}")
    sensitive = raw.get("sensitive", [])
    if isinstance(sensitive, str) or not isinstance(sensitive, list) or not all(isinstance(r, str) for r in sensitive):
        raise SdcError(f"{source}: sensitive must be a list of rules such as [\"freq:15\", \"p:10\"], got {sensitive!r}")
    unreadable = next((r for r in sensitive if not SENSITIVITY_RULE.fullmatch(r)), None)
    if unreadable is not None:
        raise SdcError(f"{source}: cannot read the sensitivity rule {unreadable!r}; use freq:n, p:p, nk:n,k, pq:p,q "
                       "or zero (as sdc suppress; the rules read each cell's records and largest contributions)")
    if mu_c > 0 and not sensitive:
        raise SdcError(f"{source}: mu_c={mu_c} adds noise to sensitive cells, but no rule makes a cell sensitive: give sensitive: [...]")
    flags = {}
    for name, default in (("same_key", preset.same_key_default), ("use_zero_rkeys", False), ("version_keys", True),
                          ("separation", False)):
        value = raw.get(name, default)
        if not isinstance(value, bool):
            raise SdcError(f"{source}: {name} must be true or false, got {value!r}")
        flags[name] = value
    ptable = raw.get("ptable")
    if ptable is not None:
        if not isinstance(ptable, str) or not ptable:
            raise SdcError(f"{source}: ptable must be a file name, got {ptable!r}")
        ptable = str((base / ptable) if base is not None and not Path(ptable).is_absolute() else Path(ptable))
    return MagnitudeParams(
        preset=preset, magnifier=magnifier, top_k=top_k, multiplier=multiplier, mu_c=float(mu_c),
        sensitive=tuple(sensitive), ptable=ptable, source=source, **flags,
    )


def read_params(path: str | Path) -> MagnitudeParams:
    """Read a YAML parameter file (ptable paths relative to it)."""
    import yaml

    from sdc.files import read_text

    path = Path(path)
    try:
        raw = yaml.safe_load(read_text(path, "parameter file"))
    except yaml.YAMLError as error:
        raise SdcError(f"{path}: not valid YAML: {error}") from None
    return parse_params(raw if raw is not None else {}, source=str(path), base=path.parent)


def _multiplier(raw, components: int, source: str) -> Multiplier:
    if raw is None:
        raise SdcError(f"{source}: multiplier is required, e.g. {{type: flex, fp: 1000, p: [0.3, 0.03], epsilon: [1], q: 3}} "
                       f"or {{type: simple, p: 0.05, epsilon: [1]}}")
    if not isinstance(raw, dict) or raw.get("type") not in MULTIPLIER_NAMES:
        raise SdcError(f"{source}: multiplier must be a mapping with type flex or simple, got {raw!r}")
    kind = raw["type"]
    unknown = sorted(set(raw) - set(MULTIPLIER_NAMES[kind]))
    if unknown:
        raise SdcError(f"{source}: unknown multiplier parameter {', '.join(map(repr, unknown))} for type {kind}; "
                       f"known: {', '.join(MULTIPLIER_NAMES[kind])}")
    epsilon = raw.get("epsilon", [1] if components == 1 else None)
    if not isinstance(epsilon, list) or not all(_positive(e) and e <= 1 for e in epsilon):
        raise SdcError(f"{source}: multiplier epsilon must be a list of numbers in (0, 1], one per noise component, got {epsilon!r}")
    if len(epsilon) != components:
        raise SdcError(f"{source}: multiplier epsilon has {len(epsilon)} values but there are {components} noise components (top_k)")
    if epsilon[0] != 1 or any(b > a for a, b in zip(epsilon, epsilon[1:])):
        raise SdcError(f"{source}: multiplier epsilon must start with 1 and not increase (the largest contribution gets "
                       f"the full noise), got {epsilon}")
    if kind == "simple":
        p = raw.get("p")
        if not (_positive(p) and p < 1):
            raise SdcError(f"{source}: multiplier p must be a share in (0, 1), got {p!r}")
        return Multiplier("simple", float(p), None, None, None, tuple(float(e) for e in epsilon))
    p, fp, q = raw.get("p"), raw.get("fp"), raw.get("q")
    if not (isinstance(p, list) and len(p) == 2 and all(_positive(x) and x < 1 for x in p)):
        raise SdcError(f"{source}: multiplier p must be [p_small, p_large], two shares in (0, 1), got {p!r}")
    if p[1] > p[0]:
        raise SdcError(f"{source}: multiplier p = {p}: p_large (for large cells) may not exceed p_small")
    if not _positive(fp):
        raise SdcError(f"{source}: multiplier fp must be a number > 0, got {fp!r}")
    if not (_positive(q) and q > 1):
        raise SdcError(f"{source}: multiplier q must be a number > 1 (the flex function falls towards p_large only then), got {q!r}")
    return Multiplier("flex", float(p[0]), float(p[1]), float(fp), float(q), tuple(float(e) for e in epsilon))


def _positive(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def magnitude_params(params) -> MagnitudeParams:
    if isinstance(params, MagnitudeParams):
        return params
    if isinstance(params, (str, os.PathLike)):
        return read_params(params)
    if isinstance(params, dict):
        return parse_params(params)
    raise SdcError(f"params must be a dict of magnitude parameters or a YAML file, got {type(params).__name__}")


def nums_ptable(ptable, params: MagnitudeParams) -> NumsPTableSet:
    source = ptable if ptable is not None else params.ptable
    if source is None:
        raise SdcError("no magnitude ptable: give ptable= (or --ptable), or name one in the parameters (ptable: FILE)")
    if isinstance(source, NumsPTableSet):
        tables = source
    elif isinstance(source, (str, os.PathLike)):
        tables = read_nums_ptable(source)
    elif hasattr(source, "to_csv"):
        tables = parse_nums_ptable(source.to_csv(index=False), "the ptable DataFrame")
    else:
        raise SdcError(f"ptable must be a file, a DataFrame or a NumsPTableSet, got {type(source).__name__}")
    if params.separation and tables.small_cells is None:
        raise SdcError("separation is on, but the magnitude ptable has no small_cells part (build one with "
                       "sdc ptable --table nums --type small_cells --add-to FILE)")
    if tables.parity and not (params.magnifier == "top_contr" and params.top_k == 1):
        raise SdcError("the magnitude ptable has parity tables (even/odd), which serve type top_contr with top_k 1 only")
    return tables


def dbt_params(params: MagnitudeParams) -> dict:
    """The parameters as ckm_sum takes them (params= or var sdc_magnitude_params)."""
    m = params.multiplier
    multiplier = {"type": m.kind, "p": [m.p_small, m.p_large], "fp": m.fp, "q": m.q, "epsilon": list(m.epsilon)}
    if m.kind == "simple":
        multiplier = {"type": "simple", "p": m.p_small, "epsilon": list(m.epsilon)}
    return {
        "preset": params.preset.name, "type": params.magnifier, "top_k": params.top_k, "multiplier": multiplier,
        "mu_c": params.mu_c, "sensitive": list(params.sensitive), "same_key": params.same_key,
        "use_zero_rkeys": params.use_zero_rkeys, "version_keys": params.version_keys, "separation": params.separation,
    }
