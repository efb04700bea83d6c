"""Perturbation tables (ptables) for the Cell Key Method: build, import, validate, export.

The public API (``__all__``): count ptables (``PTableParams``, ``create_ptable``, ``PTable``, ``read_ptable``,
``parse_ptable``, ``write_ptable``) and magnitude ptables (``NumsPTableParams``, ``create_num_ptable``,
``NumsPTableSet``, ``read_nums_ptable``, ``write_nums_ptable``).
"""

from sdc.ptable.formats import parse_ptable, read_ptable, write_ptable
from sdc.ptable.nums import NumsPTableParams, NumsPTableSet, create_num_ptable, read_nums_ptable, write_nums_ptable
from sdc.ptable.params import PTableParams
from sdc.ptable.table import PTable, RowStats

__all__ = ["NumsPTableParams", "NumsPTableSet", "PTable", "PTableParams", "create_num_ptable", "create_ptable",
           "parse_ptable", "read_nums_ptable", "read_ptable", "write_nums_ptable", "write_ptable"]

_BUILD = ("PTableBuild", "RowOutcome", "create_ptable")


def __getattr__(name):
    # the builder needs scipy (half a second to import): loaded when asked for, not by every reader of a table
    if name in _BUILD:
        from sdc.ptable import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
