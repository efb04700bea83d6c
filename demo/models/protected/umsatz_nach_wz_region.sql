-- Published: turnover (1,000 euro) by WZ x Regierungsbezirk; suppressed cells show their audit interval
{{ sdc.suppression_published(ref('supp_umsatz_pattern'), ['wz', 'region'], value='value') }}
