-- Not published: students by subject x sex by the CKM; the same population is published by cell suppression
-- (studierende_nach_fach_geschlecht_hochschule), and one population goes out by one method only
{{ sdc.ckm_published(ref('ckm_studierende_nach_fach_geschlecht')) }}
