# The kubectl plugin (node-agent/kubectl-jvmdiag, docs/kubectl-plugin.md): `kubectl jvmdiag`.
PLUGIN_BIN := node-agent/target/release/kubectl-jvmdiag
PLUGIN_VERSION = $(shell sed -nE 's/^version = "([^"]+)"/\1/p' node-agent/kubectl-jvmdiag/Cargo.toml)
PLUGIN_ARCHIVE := bin/kubectl-jvmdiag-linux-amd64.tar.gz
.PHONY: kubectl-plugin

kubectl-plugin: ## build the kubectl plugin bin/kubectl-jvmdiag (+ a krew archive and manifest in bin/); cp it to your PATH, then kubectl jvmdiag
	@cd node-agent && nice cargo build --release -p kubectl-jvmdiag
	@mkdir -p bin && cp $(PLUGIN_BIN) bin/kubectl-jvmdiag
	@tar -C bin -czf $(PLUGIN_ARCHIVE) kubectl-jvmdiag
	@sha=$$(sha256sum $(PLUGIN_ARCHIVE) | cut -d' ' -f1); \
	  sed -e "s|@VERSION@|$(PLUGIN_VERSION)|" -e "s|@SHA256@|$$sha|" \
	      -e "s|@URI@|file://$(CURDIR)/$(PLUGIN_ARCHIVE)|" plugins/jvmdiag.yaml >bin/jvmdiag.yaml
	@echo "bin/kubectl-jvmdiag: cp bin/kubectl-jvmdiag ~/.local/bin/ (or anywhere on PATH), then: kubectl jvmdiag status"
	@echo "krew: kubectl krew install --manifest=bin/jvmdiag.yaml --archive=$(PLUGIN_ARCHIVE)"
