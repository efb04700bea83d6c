# Secondary suppression of the students table (heuristic; cost = frequency x 10^level keeps totals)
def model(dbt, session):
    from sdc.suppression.warehouse import suppression_pattern

    return suppression_pattern(session, dbt.ref("supp_studierende_primary"), dbt.ref("supp_studierende_relations"),
                               dims=["fach", "geschlecht", "hochschule"], method="heuristic", cost="freq", mark="x",
                               prefer_low_levels=True)
