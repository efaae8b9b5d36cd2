#!/usr/bin/env python3
"""The promtool tests can fail: each mutation of the rules (a thinkable regression) must make
`promtool test rules TEST` fail. Prints `ok`/`FAIL` per mutation.

  check_mutations.py RULES.yaml TEST.yaml"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

# The suite's promtool (hack/lib.sh monitoring_tools: Prometheus 3.x from its Go module, or Debian's).
PROMTOOL = os.environ.get("PROMTOOL", "promtool")


def rule(groups, name):
    return next(r for g in groups["groups"] for r in g["rules"] if r.get("alert") == name)


def m_threshold_le(g):  # compare against the wrong bucket
    r = rule(g, "JvmDiagSafepointPauseHigh")
    r["expr"] = re.sub(r'le="[^"]+"', 'le="+Inf"', r["expr"])


def m_no_new_series_arm(g):  # forget the series born with a long pause (its arm matches nothing)
    r = rule(g, "JvmDiagSafepointPauseHigh")
    r["expr"] = re.sub(
        r"unless (jvmdiag_safepoint_pause_seconds_count(\{[^}]*\})?) offset \S+",
        r"unless \1",
        r["expr"],
    )


def m_for(g):  # fire without waiting
    rule(g, "JvmDiagThreadStartRateHigh")["for"] = "0m"


def m_culprit(g):  # aggregate the culprit away (in every arm of the starter join)
    r = rule(g, "JvmDiagThreadStartRateHigh")
    r["expr"] = re.sub(
        r"(rate\(jvmdiag_thread_starts_total[^\]]*\]\))",
        r"sum without (thread_name) (\1)",
        r["expr"],
    )


def _without_culprit_join(r):  # keep only the fallback arm of with_culprit()
    r["expr"] = r["expr"].split("\nor on (", 1)[1].split(")\n", 1)[1]


def m_requester_join(g):  # lose who requested the VM operation of a long pause
    _without_culprit_join(rule(g, "JvmDiagSafepointPauseHigh"))


def m_starter_join(g):  # lose who starts the threads of a storm
    _without_culprit_join(rule(g, "JvmDiagThreadStartRateHigh"))


def m_description(g):  # a description that no longer names the pod
    r = rule(g, "JvmDiagCodeCacheNearlyFull")
    r["annotations"]["description"] = r["annotations"]["description"].replace(
        "$labels.pod", "$labels.instance"
    )


def m_method_join(g):  # lose the method of the compilation-rate alert
    r = rule(g, "JvmDiagCompilationRateHigh")
    r["expr"] = r["expr"].split("\n+ ignoring")[0]


def m_code_heap(g):  # alert per code heap instead of the whole cache
    r = rule(g, "JvmDiagCodeCacheNearlyFull")
    r["expr"] = re.sub(
        r"sum without \(code_heap\) \((jvmdiag_code_cache_\w+(\{[^}]*\})?)\)", r"\1", r["expr"]
    )


def m_monitor_class(g):  # sum the monitor classes of a JVM: no culprit, and no "one class"
    r = rule(g, "JvmDiagMonitorContentionHigh")
    r["expr"] = (
        r["expr"].replace("rate(", "sum without (monitor_class) (rate(", 1).replace("])", "]))", 1)
    )


def m_monitor_other(g):  # alert on "other" (the classes folded beyond the top K)
    r = rule(g, "JvmDiagMonitorContentionHigh")
    r["expr"] = re.sub(r',?\s*monitor_class!="other"', "", r["expr"])


def m_operator_absent(g):  # forget the operator gone from the targets (absent arm dropped)
    r = rule(g, "JvmDiagOperatorDown")
    r["expr"] = r["expr"].split("\nor\n")[0]


def m_agent_missing_down(g):  # count a scraped-but-down agent as missing (JvmDiagAgentDown's case)
    r = rule(g, "JvmDiagAgentMissing")
    r["expr"] = re.sub(r"(up\{[^}]*\})\)$", r"(\1 == 1))", r["expr"])


def m_webhook_own_refusals(g):  # alert on the resource webhook refusing a bad JvmDiagnostics
    r = rule(g, "JvmDiagWebhookFailing")
    r["expr"] = re.sub(r',\s*error_type!="no_error"', "", r["expr"])


def m_events_jvm_share(g):  # alert on a JVM holding its share of an in-flight table
    r = rule(g, "JvmDiagAgentEventsLost")
    r["expr"] = re.sub(r'\{?,?\s*reason="full"\}?', "", r["expr"])


def _culprit_stacks(g, name, old, new):  # edit the culprit stacks' query in a description
    r = rule(g, name)
    d = r["annotations"]["description"]
    assert old in d, (name, old)
    r["annotations"]["description"] = d.replace(old, new)


def m_code_pod(g):  # name another pod's code (the culprit stacks' pod matcher lost)
    _culprit_stacks(g, "JvmDiagThreadStartRateHigh", "pod=%[2]q,", "")


def m_code_jdk(g):  # name "none" (only JDK frames) or "other" as the code
    _culprit_stacks(g, "JvmDiagThreadStartRateHigh", ',frame!~\\"none|other\\"', "")


def m_code_window(g):  # name code that requested VM operations before the window
    r = rule(g, "JvmDiagSafepointPauseHigh")
    d = r["annotations"]["description"]
    r["annotations"]["description"] = re.sub(
        r"increase\((jvmdiag_culprit_stack_samples_total\{[^}]*\})\[\w+\]\) > 0 or \(.*? offset \w+\)",
        r"\1",
        d,
    )
    assert r["annotations"]["description"] != d


def m_code_kind(g):  # name the waiters' code as the holder's
    _culprit_stacks(
        g, "JvmDiagMonitorContentionHigh", 'kind=\\"monitor_hold\\"', 'kind=\\"monitor_wait\\"'
    )


def m_pool_work_wait(g):  # count a pool's waits for work (its idle workers) as resource waits
    r = rule(g, "JvmDiagPoolSaturated")
    e = r["expr"]
    r["expr"] = re.sub(r'frame!~"none\|[^"]*\|other"', 'frame!="other"', e)
    assert r["expr"] != e


def m_pool_other(g):  # count the frames past the name budget (other) as resource waits
    r = rule(g, "JvmDiagPoolSaturated")
    e = r["expr"]
    r["expr"] = e.replace('|other"', '"')
    assert r["expr"] != e


def m_pool_none(g):  # count only-JDK parks (none) in the share
    r = rule(g, "JvmDiagPoolSaturated")
    e = r["expr"]
    r["expr"] = e.replace('frame!~"none|other"', 'frame!="other"')
    assert r["expr"] != e


def m_pool_pools_summed(g):  # sum the pools of a JVM: no pool named, and no "one pool"
    r = rule(g, "JvmDiagPoolSaturated")
    r["expr"] = r["expr"].replace(", thread_name) (", ") (", 1)


def m_pool_other_name(g):  # alert on thread_name="other" (the names past the budget: no pool)
    r = rule(g, "JvmDiagPoolSaturated")
    r["expr"] = r["expr"].replace(', thread_name!="other"', "")


def m_pool_code(g):  # name the frame parked at most, a wait for work too, as what the pool waits on
    r = rule(g, "JvmDiagPoolSaturated")
    d = r["annotations"]["description"]
    r["annotations"]["description"] = re.sub(
        r'frame!~\\"none\|[^"]*\|other\\"', r'frame!~\\"none|other\\"', d
    )
    assert r["annotations"]["description"] != d


def m_pool_share_per_jvm(g):  # the resource share of the whole JVM's parks, not the pool's
    r = rule(g, "JvmDiagPoolSaturated")
    e = r["expr"]
    r["expr"] = re.sub(
        r"sum by \(([^)]*), thread_name\) \(rate\(jvmdiag_culprit",
        r"sum by (\1) (rate(jvmdiag_culprit",
        e,
    )
    r["expr"] = re.sub(r"and on \(([^)]*), thread_name\)", r"and on (\1)", r["expr"])
    assert r["expr"].count("thread_name") == e.count("thread_name") - 3


def m_pool_code_per_jvm(g):  # name the JVM's top resource frame, another pool's, as this pool's
    r = rule(g, "JvmDiagPoolSaturated")
    d = r["annotations"]["description"]
    d2 = d.replace(",thread_name=%[7]q", "").replace(" $labels.thread_name | query", " | query")
    assert "%[7]q" not in d2 and "$labels.thread_name | query" not in d2 and d2 != d
    r["annotations"]["description"] = d2


# The description's query is the same text in both rule sets: these are tested by the
# default rules' tests alone.
m_code_window.only = m_code_kind.only = m_pool_code.only = m_pool_code_per_jvm.only = "defaults"


MUTATIONS = [
    m_threshold_le,
    m_no_new_series_arm,
    m_for,
    m_culprit,
    m_requester_join,
    m_starter_join,
    m_description,
    m_method_join,
    m_code_heap,
    m_monitor_class,
    m_monitor_other,
    m_operator_absent,
    m_agent_missing_down,
    m_webhook_own_refusals,
    m_events_jvm_share,
    m_code_pod,
    m_code_jdk,
    m_code_window,
    m_code_kind,
    m_pool_work_wait,
    m_pool_other,
    m_pool_none,
    m_pool_pools_summed,
    m_pool_other_name,
    m_pool_code,
    m_pool_share_per_jvm,
    m_pool_code_per_jvm,
]


def main(rules_path, test_path):
    bad = 0
    for m in MUTATIONS:
        if not os.path.basename(test_path).startswith(getattr(m, "only", "")):
            continue
        g = yaml.safe_load(open(rules_path))
        try:
            m(g)
        except StopIteration:
            continue  # this rule set has no such alert
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "rules.yaml"), "w") as f:
                yaml.safe_dump(g, f, sort_keys=False, width=1000)
            shutil.copy(test_path, d)
            r = subprocess.run(
                [PROMTOOL, "test", "rules", os.path.basename(test_path)],
                cwd=d,
                capture_output=True,
                text=True,
            )
        what = m.__doc__ or m.__name__[2:].replace("_", " ")
        if r.returncode:
            print(f"ok mutation caught: {what}")
        else:
            bad += 1
            print(f"FAIL mutation not caught by {os.path.basename(test_path)}: {what}")
    return bad


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1], sys.argv[2]) else 0)
