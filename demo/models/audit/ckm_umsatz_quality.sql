-- Quality figures of the CKM turnover table (macro ckm_sum_quality): share changed, relative deviations
{{ sdc.ckm_sum_quality(ref('ckm_umsatz_nach_wz_region'), 'umsatz_ckm_nach_wz_region') }}
