-- Students on leave by Hochschulart (seed 002, Table 2a)
{{ sdc.ckm_count(source('raw', 'students'), dims=['hochschulart'], fact='f_beurlaubte') }}
