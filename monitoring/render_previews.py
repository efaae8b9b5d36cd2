#!/usr/bin/env python3
"""PNG previews of the dashboards for docs/, drawn from real query results: the JSON that
`e2e/alerts.py --save-results DIR` saved (the same queries, against Prometheus scraping the
agent under the ThreadDumpStorm workload). Laid out like Grafana's grid.

  render_previews.py RESULTS_DIR OUT_DIR"""

import json
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BG, PANEL, FG, GRID = "#111217", "#181b1f", "#ccccdc", "#2c3235"
UNIT_SCALE = {
    "percentunit": (100, "%"),
    "percent": (1, "%"),
    "bytes": (1 / 2**20, "MiB"),
    "s": (1, "s"),
}


def legend(fmt, metric):
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt) or ",".join(
        f"{k}={v}" for k, v in metric.items() if k != "__name__"
    )


def unit_of(u):
    if u.startswith("suffix:"):
        return 1, u[len("suffix:") :].strip()
    return UNIT_SCALE.get(u, (1, "" if u in ("short", "none") else u))


def draw(ax, p, t0):
    scale, suffix = unit_of(p["unit"])
    ax.set_facecolor(PANEL)
    ax.set_title(p["title"], color=FG, fontsize=8, loc="left")
    ax.tick_params(colors=FG, labelsize=6)
    for s in ax.spines.values():
        s.set_color(GRID)
    series = [(tg, s) for tg in p["targets"] for s in tg["series"]]
    if not series:
        missing = sorted({m for tg in p["targets"] for m in tg["missing"]})
        msg = "No data" + (f"\n(not exposed yet: {', '.join(missing)})" if missing else "")
        ax.text(
            0.5,
            0.5,
            msg,
            color="#8e8e8e",
            ha="center",
            va="center",
            fontsize=7,
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        ax.set_yticks([])
        return
    if p["type"] == "stat":
        v = float(series[0][1]["values"][-1][1])
        ax.text(
            0.5,
            0.45,
            f"{v * scale:.3g} {suffix}".strip(),
            color="#73bf69",
            ha="center",
            va="center",
            fontsize=18,
            weight="bold",
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        ax.set_yticks([])
    elif p["type"] == "table":
        rows = []
        for _tg, s in series[:8]:
            labels = " ".join(f"{k}={v}" for k, v in s["metric"].items() if k not in ("__name__",))
            rows.append(f"{labels[:70]:<70}  {float(s['values'][-1][1]) * scale:>8.4g} {suffix}")
        ax.text(
            0.01,
            0.95,
            "\n".join(rows),
            color=FG,
            family="monospace",
            fontsize=5.5,
            va="top",
            transform=ax.transAxes,
        )
        ax.set_xticks([])
        ax.set_yticks([])
    elif p["type"] == "heatmap":
        les = sorted({s["metric"].get("le", "+Inf") for _, s in series}, key=lambda x: float(x))
        times = sorted({float(t) for _, s in series for t, _ in s["values"]})
        grid = [[0.0] * len(times) for _ in les]
        ti = {t: i for i, t in enumerate(times)}
        cum = {}
        for _, s in series:
            cum[s["metric"].get("le", "+Inf")] = {float(t): float(v) for t, v in s["values"]}
        for j, le in enumerate(les):  # cumulative buckets -> per-bucket counts
            prev = cum[les[j - 1]] if j else {}
            for t, v in cum[le].items():
                grid[j][ti[t]] = max(0.0, v - prev.get(t, 0.0))
        cmap = matplotlib.colormaps["Oranges"].copy()
        cmap.set_bad(PANEL)  # empty buckets look empty, as in Grafana
        ax.imshow(
            [[math.sqrt(v) if v > 0 else float("nan") for v in r] for r in grid],
            aspect="auto",
            origin="lower",
            cmap=cmap,
            extent=[times[0] - t0, times[-1] - t0, 0, len(les)],
            interpolation="nearest",
        )
        ax.set_yticks([i + 0.5 for i in range(len(les))][::2])
        ax.set_yticklabels(les[::2])
        ax.set_xlabel("seconds", color=FG, fontsize=6)
    else:
        for tg, s in series[:10]:
            xs = [float(t) - t0 for t, _ in s["values"]]
            ys = [
                float(v) * scale if not math.isnan(float(v)) else float("nan")
                for _, v in s["values"]
            ]
            ax.plot(xs, ys, lw=1, label=legend(tg["legend"], s["metric"])[:40])
        ax.grid(color=GRID, lw=0.5)
        ax.set_ylabel(suffix, color=FG, fontsize=6)
        ax.legend(fontsize=5, facecolor=PANEL, labelcolor=FG, edgecolor=GRID, loc="upper left")


def render(path, out):
    d = json.load(open(path))
    panels = d["panels"]
    rows = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    fig = plt.figure(figsize=(16, rows * 0.33), facecolor=BG)
    fig.suptitle(
        d["title"] + "  (real data: agent + ThreadDumpStorm workload)",
        color=FG,
        fontsize=11,
        x=0.01,
        y=0.998,
        ha="left",
        va="top",
    )
    gs = fig.add_gridspec(
        rows, 24, left=0.03, right=0.99, top=1 - 2.0 / rows, bottom=0.02, hspace=2.5, wspace=1.5
    )
    t0 = min(
        (
            float(v[0])
            for p in panels
            for tg in p["targets"]
            for s in tg["series"]
            for v in s["values"]
        ),
        default=0,
    )
    for p in panels:
        g = p["gridPos"]
        draw(fig.add_subplot(gs[g["y"] : g["y"] + g["h"], g["x"] : g["x"] + g["w"]]), p, t0)
    fig.savefig(out, dpi=80, facecolor=BG)
    print(f"wrote {out}")


if __name__ == "__main__":
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for f in sorted(os.listdir(src)):
        if f.endswith(".json"):
            render(os.path.join(src, f), os.path.join(dst, f[:-5] + ".png"))
