{{ sdc.ckm_published(ref('ckm_studienanfaenger_nach_fach_geschlecht')) }}
