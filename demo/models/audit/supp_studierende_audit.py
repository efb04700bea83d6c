# The LP audit of the published students pattern (data test sdc_suppression_audit)
def model(dbt, session):
    from sdc.suppression.warehouse import suppression_audit

    return suppression_audit(session, dbt.ref("supp_studierende_pattern"), dbt.ref("supp_studierende_relations"),
                             dims=["fach", "geschlecht", "hochschule"])
