-- Students by subject x sex
{{ sdc.ckm_count(source('raw', 'students'), dims=['fach', 'geschlecht'], fact='f_studierende') }}
