"""Perturbation tables (ptables) for the Cell Key Method: build, import, validate, export, plot."""

from sdc.ptable.params import PTableParams
from sdc.ptable.table import PTable, RowStats

__all__ = ["PTable", "PTableBuild", "PTableParams", "RowOutcome", "RowStats", "create_ptable"]

_BUILD = ("PTableBuild", "RowOutcome", "create_ptable")


def __getattr__(name):
    # the builder needs scipy (half a second to import): loaded when asked for, not by every reader of a table
    if name in _BUILD:
        from sdc.ptable import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
