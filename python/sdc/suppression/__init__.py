"""Cell suppression: a SuppressionProblem, secondary_suppression returning an audited SuppressionPattern, the
LP audit of any pattern (audit_pattern), the table layer (suppressed_table for DataFrames and files,
suppressed_linked_tables for several tables of one microdata protected by one pattern,
suppression_pattern / suppression_audit for dbt Python models) and sas-anon's interval masking (anonymise).

The table layer loads DuckDB and the macro renderer, and the entry point the optimal method (scipy.optimize),
so they are imported when first asked for: importing a method module (sdc.suppression.audit, ...) stays cheap
and free of the warehouse layer.
"""

from importlib import import_module

from sdc.suppression.audit import AuditResult, CellInterval, audit_pattern
from sdc.suppression.problem import SuppressionProblem
from sdc.suppression.sas_anon import anonymise

__all__ = [
    "SuppressionProblem",
    "secondary_suppression",
    "SuppressionPattern",
    "audit_pattern",
    "AuditResult",
    "CellInterval",
    "suppressed_table",
    "suppressed_linked_tables",
    "suppression_pattern",
    "linked_suppression_pattern",
    "suppression_audit",
    "anonymise",
]

_TABLE_LAYER = {
    "SuppressionPattern": "sdc.suppression.secondary",
    "secondary_suppression": "sdc.suppression.secondary",
    "suppressed_table": "sdc.suppression.pipeline",
    "suppressed_linked_tables": "sdc.suppression.linked_tables",
    "suppression_pattern": "sdc.suppression.warehouse",
    "linked_suppression_pattern": "sdc.suppression.warehouse",
    "suppression_audit": "sdc.suppression.warehouse",
}


def __getattr__(name: str):
    if name in _TABLE_LAYER:
        return getattr(import_module(_TABLE_LAYER[name]), name)
    raise AttributeError(f"module 'sdc.suppression' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
