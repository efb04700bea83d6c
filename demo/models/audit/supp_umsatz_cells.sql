-- Turnover by WZ division (section subtotals) x Regierungsbezirk; contributions per holding group
{{ sdc.suppression_cells(source('raw', 'enterprises'), dims=['wz', 'region'], value='umsatz', holding='holding',
                         hierarchy=ref('sdc_hierarchies')) }}
