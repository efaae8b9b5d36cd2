# Images and the chart to a registry: REGISTRY=host[:port][/path] (the local cluster's own
# registry is 127.0.0.1:15000 + 10 x CLUSTER_INDEX).
.PHONY: images-push chart-push
images-push: ## push the built image archives (agent, operator) to REGISTRY=host:port[/path] as :TAG (default: the chart's appVersion)
	@[ -n "$(REGISTRY)" ] || { echo "error: set REGISTRY=host[:port][/path], e.g. make images-push REGISTRY=127.0.0.1:15000" >&2; exit 2; }
	@hack/images/push.sh "$(REGISTRY)" "$(TAG)"

chart-push: ## package the chart and push it to oci://REGISTRY/charts (helm push)
	@[ -n "$(REGISTRY)" ] || { echo "error: set REGISTRY=host[:port][/path], e.g. make chart-push REGISTRY=127.0.0.1:15000" >&2; exit 2; }
	@hack/chart/push.sh "$(REGISTRY)"
