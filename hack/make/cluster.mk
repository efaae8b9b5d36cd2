# Local single-node cluster (hack/cluster/) and images built without a container engine
# (hack/images/). CLUSTER_NODE=0: control plane only.
.PHONY: cluster-up cluster-down images
cluster-up: ## start the local cluster (CLUSTER_NODE=0: control plane only); last line: export KUBECONFIG=...
	@hack/cluster/up.sh

cluster-down: ## stop the local cluster and remove everything it added
	@hack/cluster/down.sh

images: ## build the images (pause, JDK bases, agent, operator) as archives; import them if the node runs
	@hack/images/build.sh all
