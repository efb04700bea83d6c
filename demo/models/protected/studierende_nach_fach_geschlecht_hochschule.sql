-- Published: students by subject x sex x institution with cell suppression ('x' = suppressed)
{{ sdc.suppression_published(ref('supp_studierende_pattern'), ['fach', 'geschlecht', 'hochschule'], value='freq') }}
