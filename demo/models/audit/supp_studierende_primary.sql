-- Minimum frequency rule (seed 001): fewer than 3 students in a cell is unsafe
{{ sdc.suppression_primary(ref('supp_studierende_cells'), ['freq:3']) }}
