# The one-command demo (hack/demo/) and the chart's helpers.
.PHONY: demo chart-crds chart-test
demo: setup ## local cluster + chart + Prometheus + three JVM incidents, live summary (DEMO_DURATION=120: run 120 s and exit)
	@hack/demo/demo.sh

chart-crds: ## copy the generated CRDs (crds/) into the chart
	@charts/jvm-diagnostics/scripts/sync-crds.sh

chart-test: ## the chart suite alone (lint, schema, unit tests, server dry-run, real install)
	@SUITES=chart hack/test.sh
