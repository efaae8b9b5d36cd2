# Node agent (node-agent/): build, run standalone, its suite.
AGENT_BIN := node-agent/target/release/jvmdiag-agent
.PHONY: agent agent-run agent-test agent-bench

agent: ## build the node agent (release): node-agent/target/release/jvmdiag-agent
	@cd node-agent && nice cargo build --release -p jvmdiag-agent

agent-run: agent ## run the agent standalone on 127.0.0.1:9464 (root); curl 127.0.0.1:9464/metrics
	@$(AGENT_BIN) --standalone --listen 127.0.0.1:9464

agent-test: setup ## the agent suite alone (unit, golden, real JVMs on JDK 17 and 25)
	@SUITES=agent hack/test.sh

agent-bench: setup ## the agent overhead benchmark alone (BENCH_ROUNDS, BENCH_THREADS)
	@BENCH=agent hack/bench.sh
