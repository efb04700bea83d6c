{{ config(materialized='view') }}
-- Enrolled students (EF28 < 4): the population of the cell-suppression demo table
select fach, geschlecht, hochschule from {{ source('raw', 'students') }} where f_studierende = 1
