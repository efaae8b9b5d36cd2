# Fuzzing the untrusted-input parsers (node-agent/fuzz). `make test` runs each target briefly
# (hack/suites/15-inspect.sh); this runs each for FUZZ_SECONDS (default 60).
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz: ## fuzz every parser of untrusted input for FUZZ_SECONDS each (default 60); FUZZ_TARGETS="maps elf_symbols" to pick
	@bash hack/setup.d/fuzz.sh
	@bash node-agent/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)
