-- Published: turnover (1,000 euro) by WZ x Regierungsbezirk, every cell published, perturbed by the magnitude CKM
{{ sdc.ckm_published(ref('ckm_umsatz_nach_wz_region')) }}
