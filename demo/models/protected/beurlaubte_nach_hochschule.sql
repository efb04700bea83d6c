{{ sdc.ckm_published(ref('ckm_beurlaubte_nach_hochschule')) }}
