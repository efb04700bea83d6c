"""Parameters of a count perturbation table and the checks that can be made before solving."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

from sdc.errors import SdcError

MIN_PROBABILITY = 1e-8  # every allowed target's least probability in a row (the solver's bound)

PerRow = Union[float, Sequence[float]]


@dataclass(frozen=True)
class PTableParams:
    """Parameters of ``create_cnt_ptable`` (R package ptable), with the same names and defaults.

    D      maximum absolute noise
    V      noise variance
    js     no perturbed value in 1..js (0: no restriction)
    pstay  lower bound of the stay probability P(v = 0); 0 = none. Scalar or one value per row 1..ncat.
    mono   left tail non-decreasing towards v = 0. Scalar or one value per row 1..ncat.
    optim  1: variance <= V; 4: variance = V. Scalar or one value per row 1..ncat.

    Row i (1..ncat; ncat = D, or D + js + 1 with js) may move to max(0, i - D) .. i + D, without 1..js;
    ``validate`` names the first parameter that cannot work before anything is solved.

    >>> from sdc.ptable import PTableParams
    >>> params = PTableParams(D=2, V=1)
    >>> params.ncat, params.support(1), params.support(2)
    (2, [0, 1, 2, 3], [0, 1, 2, 3, 4])
    >>> PTableParams(D=3, V=1, js=1).validate()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    sdc.errors.SdcError: V=1 is too small for js=1: row i=1 may only move to 0 or to 2 and beyond, ...
    """

    D: int
    V: float
    js: int = 0
    pstay: PerRow = 0.0
    mono: bool | Sequence[bool] = True
    optim: int | Sequence[int] = 1

    @property
    def ncat(self) -> int:
        """Largest row; it stands for every original value >= ncat (R package ptable)."""
        return self.D if self.js == 0 else self.D + self.js + 1

    def per_row(self, name: str) -> tuple:
        """The parameter ``name`` as one value per row i = 1..ncat."""
        value = getattr(self, name)
        if isinstance(value, (list, tuple)):
            return tuple(value)
        return (value,) * self.ncat

    def support(self, i: int) -> list[int]:
        """Allowed targets j of row i: max(0, i-D) .. i+D without 1..js."""
        return [j for j in range(max(0, i - self.D), i + self.D + 1) if not 1 <= j <= self.js]

    def validate(self) -> None:
        """Raise SdcError naming the first parameter that cannot work, with the bound it violates."""
        if isinstance(self.D, bool) or not isinstance(self.D, int) or self.D < 1:
            raise SdcError(f"D must be a whole number >= 1, got {self.D!r}")
        if isinstance(self.js, bool) or not isinstance(self.js, int) or self.js < 0:
            raise SdcError(f"js must be a whole number >= 0, got {self.js!r}")
        if not (isinstance(self.V, (int, float)) and math.isfinite(self.V) and self.V > 0):
            raise SdcError(f"V must be a positive number, got {self.V!r}")
        for name in ("pstay", "mono", "optim"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)) and len(value) != self.ncat:
                raise SdcError(
                    f"{name} has {len(value)} values but the table has rows 1..{self.ncat} "
                    f"(ncat = {'D' if self.js == 0 else 'D + js + 1'} = {self.ncat}); give {self.ncat} values or one"
                )
        for row, pstay in enumerate(self.per_row("pstay"), start=1):
            if not (isinstance(pstay, (int, float)) and 0 <= pstay < 1):
                raise SdcError(f"pstay for row i={row} must be in [0, 1), got {pstay!r}")
        for row, optim in enumerate(self.per_row("optim"), start=1):
            if optim not in (1, 4):
                raise SdcError(f"optim for row i={row} must be 1 (variance <= V) or 4 (variance = V), got {optim!r}")
        for row, mono in enumerate(self.per_row("mono"), start=1):
            if not isinstance(mono, bool):
                raise SdcError(f"mono for row i={row} must be true or false, got {mono!r}")
        if self.js > 0 and self.D <= self.js:
            # Row js+1 may not move to 1..js, so its only downward target is 0, which is js+1 away.
            raise SdcError(
                f"D={self.D} is too small for js={self.js}: row i={self.js + 1} cannot move down (targets "
                f"1..{self.js} are blocked and 0 is {self.js + 1} away), so its noise cannot have mean 0; "
                f"choose D >= js+1 = {self.js + 1}"
            )
        if self.js > 0:
            # Value i in 1..js must move to 0 or to >= js+1; with mean 0 the least variance is i*(js+1-i)
            # (two-point law on {-i, js+1-i}); the worst row is i = (js+1)//2. That bound itself is out of
            # reach: the row has a third target (js+2 <= i+D, as D >= js+1), and every allowed target keeps a
            # probability of at least MIN_PROBABILITY, which adds to the variance. So V must exceed it.
            worst = (self.js + 1) // 2
            least = worst * (self.js + 1 - worst)
            if self.V <= least:
                raise SdcError(
                    f"V={self.V} is too small for js={self.js}: row i={worst} may only move to 0 or to "
                    f"{self.js + 1} and beyond, so its variance exceeds {worst}*({self.js}+1-{worst}) = {least} "
                    f"(reached only with no probability on its other targets, and each keeps at least "
                    f"{MIN_PROBABILITY:g}); choose V > floor((js+1)^2/4) = {least} or a smaller js"
                )
