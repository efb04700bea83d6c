-- First-year students (first semester at a university) by subject x sex
{{ sdc.ckm_count(source('raw', 'students'), dims=['fach', 'geschlecht'], fact='f_studanf_hs1') }}
