# The LP audit of the published turnover pattern (data test sdc_suppression_audit)
def model(dbt, session):
    from sdc.suppression.warehouse import suppression_audit

    return suppression_audit(session, dbt.ref("supp_umsatz_pattern"), dbt.ref("supp_umsatz_relations"),
                             dims=["wz", "region"], magnitude=True)
