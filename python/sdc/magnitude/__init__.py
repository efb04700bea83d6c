"""The Cell Key Method for magnitude tables (sums of a numeric variable) and weighted counts."""
