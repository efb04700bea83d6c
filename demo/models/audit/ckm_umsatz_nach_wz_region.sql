-- Audit of turnover (1,000 euro) by WZ (section subtotals) x Regierungsbezirk, protected by the magnitude Cell
-- Key Method (var sdc_magnitude_params, seed sdc_nums_ptable); originals, keys and noise per component
{{ sdc.ckm_sum(source('raw', 'enterprises'), dims=['wz', 'region'], value='umsatz', hierarchy=ref('sdc_hierarchies'),
               audit=true) }}
