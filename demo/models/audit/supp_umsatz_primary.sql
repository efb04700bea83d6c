-- Dominance rules: p% with p = 10 and (2, 85)
{{ sdc.suppression_primary(ref('supp_umsatz_cells'), ['p:10', 'nk:2,85']) }}
