# Alerts and dashboards (monitoring/): generate from the single source, previews, local Prometheus.
MON_PY = $(JVMDIAG_CACHE)/venv-monitoring/bin/python

.PHONY: monitoring-generate monitoring-previews monitoring-binaries
monitoring-binaries: ## build Prometheus 3.x (prometheus, promtool) and Alertmanager (alertmanager, amtool) once (cached)
	@hack/monitoring-binaries.sh

monitoring-generate: ## regenerate rules, operator alert templates, docs/alerts.md and dashboards from monitoring/
	@bash hack/setup.d/monitoring.sh && $(MON_PY) monitoring/generate.py

monitoring-previews: ## run the alerts suite (real agent + Prometheus) and redraw docs/img/*.png from its query results
	@bash hack/setup.d/monitoring.sh && $(MON_PY) -m pip install -q --disable-pip-version-check matplotlib==3.9.2 && \
	  rm -rf /tmp/jvmdiag-previews && \
	  JVMDIAG_SAVE_RESULTS=/tmp/jvmdiag-previews bash hack/suites/50-alerts.sh && \
	  $(MON_PY) monitoring/render_previews.py /tmp/jvmdiag-previews docs/img
