-- Quality figures of every protected demo table (for the statistical office; max |noise| reveals D).
{%- set tables = [
    'beurlaubte_nach_hochschule', 'beurlaubte_nach_hochschulart', 'beurlaubte_nach_hochschulart_geschlecht',
    'studierende_nach_fach_geschlecht', 'studienanfaenger_nach_fach_geschlecht'] %}
{% for name in tables %}
select * from ({{ sdc.ckm_quality(ref('ckm_' ~ name), name) }}) as quality_{{ loop.index }}
{{ 'union all' if not loop.last }}
{% endfor %}
