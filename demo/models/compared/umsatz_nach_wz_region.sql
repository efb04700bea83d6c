-- Not published: turnover by cell suppression, for comparison with the published magnitude CKM table (umsatz_ckm_nach_wz_region);
-- suppressed cells show the interval the published cells give
{{ sdc.suppression_published(ref('supp_umsatz_pattern'), ['wz', 'region'], value='value') }}
