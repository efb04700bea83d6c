{{ sdc.suppression_constraints(ref('supp_umsatz_cells'), ['wz', 'region'], hierarchy=ref('sdc_hierarchies')) }}
