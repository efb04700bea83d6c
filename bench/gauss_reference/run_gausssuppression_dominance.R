# GaussSuppression (Statistics Norway, MIT) on the 3-D turnover table of bench/suppression_vs_gauss_bench.py under
# the p % rule (run by hand, never by the tests: R is no dependency of sdc). Inputs: micro.csv (with turnover) and
# hierarchy.csv that `bench/suppression_vs_gauss_bench.py --magnitude-inputs DIR` writes; output: pattern.csv, the
# table's cells with their status. Set-up as run_gausssuppression.R, then
#   R_LIBS=LIB Rscript bench/gauss_reference/run_gausssuppression_dominance.R DIR
# SuppressDominantCells with pPercent = 10 (sdc's p:10; each record a contributor), its defaults otherwise: no
# interval requirement (exact disclosure only), its own singleton handling.
suppressPackageStartupMessages(library(GaussSuppression))
folder <- commandArgs(trailingOnly = TRUE)[1]
micro <- read.csv(file.path(folder, "micro.csv"), colClasses = "character")
micro$turnover <- as.numeric(micro$turnover)
h <- read.csv(file.path(folder, "hierarchy.csv"), colClasses = c("character", "character", "character", "integer"))
hierarchies <- lapply(setNames(unique(h$dim), unique(h$dim)), function(d) {
  x <- h[h$dim == d, ]
  data.frame(mapsFrom = x$mapsFrom, mapsTo = x$mapsTo, sign = 1L, level = x$level)
})
t <- system.time(out <- SuppressDominantCells(micro, pPercent = 10, numVar = "turnover", hierarchies = hierarchies,
                                              printInc = FALSE))
cat("cells", nrow(out), "primary", sum(out$primary), "suppressed", sum(out$suppressed),
    "cpu", t[["user.self"]] + t[["sys.self"]], "\n")
out$status <- ifelse(out$primary, "primary", ifelse(out$suppressed, "secondary", "published"))
write.csv(out[, c(names(hierarchies), "turnover", "status")], file.path(folder, "pattern.csv"), row.names = FALSE)
