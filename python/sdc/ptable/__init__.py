"""Perturbation tables (ptables) for the Cell Key Method: build, import, validate, export, plot."""

from .build import PTableBuild, RowOutcome, create_ptable
from .params import PTableParams
from .table import PTable, RowStats

__all__ = ["PTable", "PTableBuild", "PTableParams", "RowOutcome", "RowStats", "create_ptable"]
