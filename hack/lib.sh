# Shared helpers for hack/ scripts. Source it: . "$(dirname "$0")/lib.sh"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JVMDIAG_CACHE="${JVMDIAG_CACHE:-$HOME/.cache/jvm-diagnostics}"
export JVMDIAG_CACHE
mkdir -p "$JVMDIAG_CACHE"
JDK17="${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}"
JDK25="${JDK25:-$(ls -d /usr/lib/jvm/temurin-25-jdk-* 2>/dev/null | head -n1)}"
export JDK17 JDK25
# The Java test workloads, in one place for every test and benchmark that runs a real JVM
# (the e2e scripts, hack/bench.d, the node agent's tests/*.rs).
export JVMDIAG_WORKLOADS="${JVMDIAG_WORKLOADS:-$REPO_ROOT/e2e/workloads}"

log() { printf '>> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Counting test results from the runners we use; each echoes "P F".
count_cargo() {  # cargo test output: "test result: ok. 3 passed; 0 failed; ..."
  awk '/^test result:/ {for(i=1;i<=NF;i++){if($(i)~/^passed;?/)p+=$(i-1); if($(i)~/^failed;?/)f+=$(i-1)}} END{print p+0, f+0}' "$1"
}
count_surefire() {  # Maven: "Tests run: 10, Failures: 1, Errors: 0, Skipped: 2" (the per-module summary lines)
  awk '/Tests run:.*Failures:/ && !/Time elapsed/ {gsub(/,/,""); for(i=1;i<=NF;i++){if($i=="run:")r+=$(i+1); if($i=="Failures:")fl+=$(i+1); if($i=="Errors:")e+=$(i+1); if($i=="Skipped:")s+=$(i+1)}} END{print r-fl-e-s, fl+e}' "$1"
}
# A suite ends by calling: suite_result NAME PASSED FAILED
suite_result() { echo "suite $1: $2 passed, $3 failed"; }

# ../shared sits beside the repository (in CI too); its metrics-contract checker is used by tests.
if [ -z "${CONTRACT_TOOL:-}" ]; then
  for c in "$REPO_ROOT/../shared/tools/check-metrics-contract.py" /work/shared/tools/check-metrics-contract.py; do
    [ -f "$c" ] && { CONTRACT_TOOL="$(cd "$(dirname "$c")" && pwd)/$(basename "$c")"; break; }
  done
fi
export CONTRACT_TOOL="${CONTRACT_TOOL:-$REPO_ROOT/../shared/tools/check-metrics-contract.py}"
