"""One-dimensional microaggregation of numeric variables (seed 004; reference
microaggregation-and-measures.md): fixed group size, Höhne's variance-preserving method with variable
group size, and the optimal partition (Hansen–Mukherjee), behind one interface."""

from sdc.microaggregation.methods import METHODS, REPLACEMENTS, MicroaggregationResult, microaggregate
from sdc.microaggregation.measures import column_report

__all__ = ["METHODS", "REPLACEMENTS", "MicroaggregationResult", "microaggregate", "column_report"]
