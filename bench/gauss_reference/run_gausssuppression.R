# GaussSuppression (Statistics Norway, MIT) on the 3-D count table of bench/suppression_vs_gauss_bench.py, as the
# reference counts_3d_n22_pattern.csv was made (run by hand, never by the tests: R is no dependency of sdc).
# Inputs: micro.csv and hierarchy.csv that `bench/suppression_vs_gauss_bench.py --inputs DIR` writes; output: the
# suppressed cells. Set-up: ../shared/reference/linked-suppression.md section 10 (R 4.2, SSBtools, RegSDC and
# GaussSuppression installed from their sources with R CMD INSTALL -l LIB), then
#   R_LIBS=LIB Rscript bench/gauss_reference/run_gausssuppression.R DIR [LIMIT]
# Its default run: primary frequency <= 2 (sdc's freq:3), zeros published and not protected, no interval
# requirement (exact disclosure only). With LIMIT: the interval requirement protectionLimit = LIMIT (each primary
# at least LIMIT from its value, the inner cells >= 0), by the LP package Rglpk (Debian's r-cran-rglpk).
suppressPackageStartupMessages(library(GaussSuppression))
arguments <- commandArgs(trailingOnly = TRUE)
folder <- arguments[1]
limits <- if (length(arguments) > 1) list(lpPackage = "Rglpk", protectionLimit = as.numeric(arguments[2])) else list()
micro <- read.csv(file.path(folder, "micro.csv"), colClasses = "character")
h <- read.csv(file.path(folder, "hierarchy.csv"), colClasses = c("character", "character", "character", "integer"))
hierarchies <- lapply(setNames(unique(h$dim), unique(h$dim)), function(d) {
  x <- h[h$dim == d, ]
  data.frame(mapsFrom = x$mapsFrom, mapsTo = x$mapsTo, sign = 1L, level = x$level)
})
t <- system.time(out <- do.call(GaussSuppressionFromData,
                                c(list(micro, hierarchies = hierarchies, maxN = 2, protectZeros = FALSE,
                                       extend0 = FALSE, printInc = FALSE), limits)))
cat("cells", nrow(out), "primary", sum(out$primary), "suppressed", sum(out$suppressed),
    "cpu", t[["user.self"]] + t[["sys.self"]], "\n")
kept <- out[out$suppressed, ]
kept$status <- ifelse(kept$primary, "primary", "secondary")
write.csv(kept[, c(names(hierarchies), "freq", "status")], file.path(folder, "pattern.csv"), row.names = FALSE)
