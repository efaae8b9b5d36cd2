# Formatters and linters of every language (hack/lint.sh): Rust, Java, Python, shell.
.PHONY: fmt lint
fmt: ## format the tree (rustfmt, google-java-format via spotless, ruff) and apply safe lint fixes
	@hack/lint.sh fix

lint: ## every formatter check and linter, as the lint suite runs them (LINT="clippy rustfmt" for some)
	@hack/lint.sh check
