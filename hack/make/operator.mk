# The operator (operator/, crds/): build, regenerate the CRD, start/stop against the local cluster.
.PHONY: operator-build operator-crd operator-up operator-down
operator-build: ## build operator/target/jvmdiag-operator.jar (Maven on the JDK 25; Java 21 code)
	@. hack/lib.sh && cd operator && JAVA_HOME="$$JDK25" mvn -B -q package -DskipTests -DskipITs

operator-crd: ## regenerate crds/ from the operator's Java model
	@. hack/lib.sh && cd operator && JAVA_HOME="$$JDK25" mvn -B -q process-classes && cp target/crds/*.yml ../crds/

operator-up: ## build and start the operator in the background (chart RBAC, webhook on 127.0.0.1)
	@operator/scripts/up.sh

operator-down: ## stop the operator started by operator-up and remove its webhook registration
	@operator/scripts/down.sh
