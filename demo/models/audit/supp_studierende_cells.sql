-- Students by subject x sex x institution (Hochschulart subtotals): every cell with its frequency
{{ sdc.suppression_cells(ref('supp_studierende_records'), dims=['fach', 'geschlecht', 'hochschule'],
                         hierarchy=ref('sdc_hierarchies')) }}
