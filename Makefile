# jvm-diagnostics: entry points. Each part adds its own targets in hack/make/<part>.mk.
SHELL := /bin/bash
.DEFAULT_GOAL := help
export JVMDIAG_CACHE ?= $(HOME)/.cache/jvm-diagnostics

.PHONY: help setup test bench demo kube-binaries
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

setup: ## install what the project needs (Debian packages, toolchains); idempotent
	@hack/setup.sh

test: setup ## every suite; ends with "N passed, N failed"
	@hack/test.sh

bench: setup ## benchmarks: the product against the same workload without it
	@hack/bench.sh

kube-binaries: ## build kube-apiserver/controller-manager/scheduler/kubelet v1.34.4 once (cached)
	@hack/kube-binaries.sh

-include hack/make/*.mk
