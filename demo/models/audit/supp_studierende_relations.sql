{{ sdc.suppression_constraints(ref('supp_studierende_cells'), ['fach', 'geschlecht', 'hochschule'],
                               hierarchy=ref('sdc_hierarchies')) }}
