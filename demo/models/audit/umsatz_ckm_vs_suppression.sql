-- The turnover table protected two ways, cell by cell: the magnitude CKM's published value (and how far it moved)
-- beside the cell suppression pattern of the same table (status and what umsatz_nach_wz_region shows)
select
    ckm.wz,
    ckm.region,
    ckm.original_value as original,
    ckm.value as ckm_value,
    abs(ckm.value - ckm.original_value) / nullif(abs(ckm.original_value), 0) as ckm_relative_deviation,
    ckm.sensitive as ckm_sensitive,
    coalesce(pattern.status, 'empty') as suppression_status,
    published.published_text as suppression_published
from {{ ref('ckm_umsatz_nach_wz_region') }} as ckm
left join {{ ref('supp_umsatz_pattern') }} as pattern
    on cast(pattern.wz as {{ sdc.text_type() }}) = cast(ckm.wz as {{ sdc.text_type() }}) and cast(pattern.region as {{ sdc.text_type() }}) = cast(ckm.region as {{ sdc.text_type() }})
left join {{ ref('umsatz_nach_wz_region') }} as published
    on cast(published.wz as {{ sdc.text_type() }}) = cast(ckm.wz as {{ sdc.text_type() }}) and cast(published.region as {{ sdc.text_type() }}) = cast(ckm.region as {{ sdc.text_type() }})
