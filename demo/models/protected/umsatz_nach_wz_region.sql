-- Published: turnover (1,000 euro) by WZ x Regierungsbezirk; suppressed cells show the interval the published cells give
{{ sdc.suppression_published(ref('supp_umsatz_pattern'), ['wz', 'region'], value='value') }}
