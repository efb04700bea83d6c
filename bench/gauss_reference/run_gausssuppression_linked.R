# GaussSuppression (Statistics Norway, MIT) on the three linked 4-D count tables of
# bench/suppression_vs_gauss_bench.py (run by hand, never by the tests: R is no dependency of sdc). Inputs: micro.csv,
# hierarchy.csv and tables.csv that `bench/suppression_vs_gauss_bench.py --linked-inputs DIR` writes; output:
# pattern.csv, the suppressed cells of each table. Set-up as run_gausssuppression.R, then
#   R_LIBS=LIB Rscript bench/gauss_reference/run_gausssuppression_linked.R DIR
# One formula per table (each dimension expanded by its hierarchy), linkedGauss = "global": one elimination over the
# union of the tables' cells, safe against an attacker who combines all tables. Primary frequency <= 2 (sdc's
# freq:3), zeros published and not protected, no interval requirement (exact disclosure only).
suppressPackageStartupMessages(library(GaussSuppression))
folder <- commandArgs(trailingOnly = TRUE)[1]
micro <- read.csv(file.path(folder, "micro.csv"), colClasses = "character")
h <- read.csv(file.path(folder, "hierarchy.csv"), colClasses = c("character", "character", "character", "integer"))
hierarchies <- lapply(setNames(unique(h$dim), unique(h$dim)), function(d) {
  x <- h[h$dim == d, ]
  data.frame(mapsFrom = x$mapsFrom, mapsTo = x$mapsTo, sign = 1L, level = x$level)
})
tables <- readLines(file.path(folder, "tables.csv"))
formulas <- setNames(lapply(tables, function(t) as.formula(paste("~", gsub(",", "*", t)))),
                     paste0("table_", seq_along(tables)))
t <- system.time(out <- GaussSuppressionFromData(micro, hierarchies = hierarchies, formula = formulas,
                                                 linkedGauss = "global", maxN = 2, protectZeros = FALSE,
                                                 extend0 = FALSE, printInc = FALSE))
cat("cells", nrow(out), "primary", sum(out$primary), "suppressed", sum(out$suppressed),
    "cpu", t[["user.self"]] + t[["sys.self"]], "\n")
out$status <- ifelse(out$primary, "primary", ifelse(out$suppressed, "secondary", "published"))
write.csv(out[, c(names(hierarchies), "freq", "status")], file.path(folder, "pattern.csv"), row.names = FALSE)
