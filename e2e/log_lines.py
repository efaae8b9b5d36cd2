#!/usr/bin/env python3
"""One parser for the JSON log lines of both processes: the operator (--log-format json) and the
node agent (--log-format json) write the same keys (docs/operator.md, "Logs").

Every line is one JSON object with
  ts         RFC 3339 in UTC, microseconds: 2026-01-02T12:00:00.000042Z
  level      error, warn, info, debug or trace
  msg        a string
  target     the module (agent) or logger (operator) that logged it, not empty
  error      (only with an error) a string: the operator's exception with its stack
and the event's own fields beside them (the operator's: the MDC java-operator-sdk sets during a
reconcile, resource.namespace, resource.name, resource.kind, …).

Usage: log_lines.py [--name NAME] [--from-line N] [--after-last PREFIX] [--ignore PREFIX]
                    [--require KEY,KEY]... < LOG
  --from-line N        check from line N on
  --after-last PREFIX  check only the lines after the last one starting with PREFIX (a marker
                       a script writes before each start of a process into the same file)
  --ignore PREFIX      lines starting with PREFIX are such markers, not log lines
  --require KEY,KEY    at least one line carries every one of these keys (repeatable)
Prints one summary line; exits 1 naming the first bad line (or the requirement not met).
"""

import argparse
import collections
import json
import re
import sys

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")
LEVELS = ("error", "warn", "info", "debug", "trace")


def line_problem(text):
    """Why one line is not a log line of the agreed shape, or None."""
    try:
        event = json.loads(text)
    except ValueError as e:
        return f"not JSON ({e})"
    if not isinstance(event, dict):
        return "not a JSON object"
    ts = event.get("ts")
    if not isinstance(ts, str) or not TIMESTAMP.match(ts):
        return f"ts {ts!r} is not RFC 3339 UTC with microseconds"
    if event.get("level") not in LEVELS:
        return f"level {event.get('level')!r} is not one of {', '.join(LEVELS)}"
    if not isinstance(event.get("msg"), str):
        return "no msg string"
    if not isinstance(event.get("target"), str) or not event["target"]:
        return "no target"
    if "error" in event and not isinstance(event["error"], str):
        return "error is not one string"
    return None


def check(lines, require=(), first=1, ignore=None):
    """(problem or None, summary) for the log lines (blank lines are skipped); the first one is
    line number `first` of its file."""
    levels = collections.Counter()
    targets = set()
    found = {tuple(keys): 0 for keys in require}
    n = 0
    for number, text in enumerate(lines, first):
        if not text.strip() or (ignore and text.startswith(ignore)):
            continue
        problem = line_problem(text)
        if problem:
            return f"line {number}: {problem}: {text.strip()[:200]}", None
        event = json.loads(text)
        n += 1
        levels[event["level"]] += 1
        targets.add(event["target"])
        for keys in found:
            if all(k in event for k in keys):
                found[keys] += 1
    if n == 0:
        return "no log lines", None
    for keys, count in found.items():
        if count == 0:
            return f"none of the {n} lines carries {'+'.join(keys)}", None
    by_level = ", ".join(f"{lvl} {levels[lvl]}" for lvl in LEVELS if levels[lvl])
    summary = f"{n} JSON lines ({by_level}) from {len(targets)} targets"
    for keys, count in found.items():
        summary += f"; {count} with {'+'.join(keys)}"
    return None, summary


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name", default="log")
    p.add_argument("--from-line", metavar="N", type=int, default=1)
    p.add_argument("--after-last", metavar="PREFIX")
    p.add_argument("--ignore", metavar="PREFIX")
    p.add_argument("--require", metavar="KEY,KEY", action="append", default=[])
    args = p.parse_args()
    lines = sys.stdin.read().splitlines()
    start = max(args.from_line - 1, 0)
    if args.after_last:
        marks = [i for i, line in enumerate(lines) if line.startswith(args.after_last)]
        start = max(start, marks[-1] + 1 if marks else 0)
    require = [r.split(",") for r in args.require]
    problem, summary = check(lines[start:], require, start + 1, args.ignore)
    if problem:
        print(f"{args.name}: {problem}")
        return 1
    print(f"{args.name}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
