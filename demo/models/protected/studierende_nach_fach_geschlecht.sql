{{ sdc.ckm_published(ref('ckm_studierende_nach_fach_geschlecht')) }}
