# Secondary suppression of the turnover table; suppressed cells publish the interval the published cells give
def model(dbt, session):
    from sdc.suppression.warehouse import suppression_pattern

    return suppression_pattern(session, dbt.ref("supp_umsatz_primary"), dbt.ref("supp_umsatz_relations"),
                               dims=["wz", "region"], magnitude=True, method="heuristic", cost="value",
                               publish_intervals=True, prefer_low_levels=True)
