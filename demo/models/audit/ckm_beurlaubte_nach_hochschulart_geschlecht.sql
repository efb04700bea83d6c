-- Students on leave by Hochschulart x sex with all totals (seed 002, Table 2b)
{{ sdc.ckm_count(source('raw', 'students'), dims=['hochschulart', 'geschlecht'], fact='f_beurlaubte') }}
