"""Dimension names a method can use: the rule of the macro check_dimension_names, checked before any work
starts so the CLI and Python API name the problem instead of an engine error or an ambiguous output."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sdc.conventions import DIMENSION_COLUMN_SUFFIXES, HIERARCHY_LEVEL_MARKERS
from sdc.errors import SdcError


def check_dimension_names(dims: list[str], own_columns: Iterable[str], roles: dict[str, str] | None = None,
                          top_contributions: bool = False, patterns: Iterable[str] = ()) -> None:
    """Refuse an empty or repeated (in any letter case) dimension name, a column that has another role
    (``roles``: column -> what it is, e.g. the record key), one of ``own_columns`` (the columns the method
    adds), ``top_<n>`` when the method adds the largest contributions, a name that matches one of ``patterns``
    (regular expressions of the method's column families, whole name), a name with a hierarchy level suffix
    (``<dim>__level_<n>``, ``<dim>__leaf``) and one that ends like the columns the published tables add per
    dimension (``<dim>__level``, ``<dim>__is_total``, ...: conventions.DIMENSION_COLUMN_SUFFIXES). Names compare without regard to letter case, as the engines
    compare identifiers."""
    own = sorted({c.lower() for c in own_columns})
    roles = {column.lower(): role for column, role in (roles or {}).items() if column}
    seen: set[str] = set()
    for dim in dims:
        lowered = dim.lower()
        if not dim.strip():
            raise SdcError("a dimension name is empty")
        if lowered in seen:
            raise SdcError(f"dimension {dim!r} is listed twice (names compare without regard to letter case)")
        if lowered in roles:
            raise SdcError(f"dimension {dim!r} is also the {roles[lowered]}")
        if lowered in own or (top_contributions and re.fullmatch(r"top_[0-9]+", lowered)):
            added = ", ".join(own) + (", top_<n>" if top_contributions else "")
            raise SdcError(f"dimension {dim!r} has the name of a column the method adds ({added}); rename the column")
        family = next((p for p in patterns if re.fullmatch(p, lowered)), None)
        if family is not None:
            raise SdcError(f"dimension {dim!r} has the name of a column family the method adds ({family}); "
                           "rename the column")
        if HIERARCHY_LEVEL_MARKERS[0] in lowered or lowered.endswith(HIERARCHY_LEVEL_MARKERS[1]):
            raise SdcError(f"dimension {dim!r} ends like the level columns of a hierarchical dimension "
                           "(__level_<n>, __leaf); rename the column")
        if dimension_column(lowered):
            raise SdcError(f"dimension {dim!r} ends like the columns published tables add per dimension "
                           f"({', '.join(DIMENSION_COLUMN_SUFFIXES.values())}); rename the column")
        seen.add(lowered)


def dimension_column(name: str) -> bool:
    """A column the publishing steps add per dimension (``<dim>__level``, ``<dim>__is_total``, ``<dim>__parent``,
    ``<dim>__sort``): it describes a cell's codes, so it is neither a dimension that tells cells apart nor a
    measure."""
    lowered = name.lower()
    return any(lowered.endswith(suffix) and len(lowered) > len(suffix) for suffix in DIMENSION_COLUMN_SUFFIXES.values())
