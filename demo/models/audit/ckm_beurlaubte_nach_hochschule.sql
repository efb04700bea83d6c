-- Students on leave by institution, with Hochschulart subtotals and the total (seed 002, Table 9)
{{ sdc.ckm_count(source('raw', 'students'), dims=['hochschule'], fact='f_beurlaubte', hierarchy=ref('sdc_hierarchies')) }}
