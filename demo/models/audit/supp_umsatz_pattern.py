# Secondary suppression of the turnover table; suppressed cells publish the interval the published cells give
def model(dbt, session):
    from sdc.suppression.warehouse import secondary_suppression

    return secondary_suppression(session, dbt.ref("supp_umsatz_primary"), dbt.ref("supp_umsatz_relations"),
                                 dims=["wz", "region"], magnitude=True, method="heuristic", cost="value",
                                 publish_intervals=True, prefer_low_levels=True)
