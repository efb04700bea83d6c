"""Cell suppression: the LP audit of suppression patterns (secondary suppression follows)."""

from sdc.suppression.audit import AuditResult, CellInterval, audit_pattern

__all__ = ["AuditResult", "CellInterval", "audit_pattern"]
