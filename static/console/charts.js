// Time-series charts (uPlot, static/vendor/): drawn once from the page's recorded history
// (<script id="chart-series" type="application/json">), then kept current in place from the
// websocket's ticks (live.js dispatches "streamdesk:tick"): each tick's newest rows are merged
// by time and the chart redrawn with setData, never rebuilt. A chart whose slot sits inside a
// live fragment is moved into the new slot after each swap, so the swap does not destroy it.
(function () {
  "use strict";
  const source = document.getElementById("chart-series");
  if (!source || typeof uPlot === "undefined") return;

  const WINDOW_S = { "5m": 300, "1h": 3600, "24h": 86400 };
  const HEIGHT = 150;
  // Blue, green, red first: added, processed, failed.
  const COLOURS = ["#1f5fbf", "#1a7f45", "#c4261d", "#8e44ad", "#d9822b", "#138d90"];
  const RANGE_KEY = "streamdesk-range";
  const DEFAULT_RANGE = "5m";
  const REFETCH_MIN_MS = 10000;
  const TIME_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  const charts = new Map(); // key -> { data: ChartData, plot: uPlot | null }
  let range = DEFAULT_RANGE;
  let nowS = 0; // the server's time of the newest sample: the charts' right edge
  let connections = 0;
  let refetchedAt = 0;

  function number(v) {
    if (v == null) return "—";
    const abs = Math.abs(v);
    if (abs >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (abs >= 1e4) return (v / 1e3).toFixed(1) + "k";
    return abs >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(1);
  }

  const utc = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
  const clock = { seconds: uPlot.fmtDate("{HH}:{mm}:{ss}"), minutes: uPlot.fmtDate("{HH}:{mm}") };
  const stamp = uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}");

  // The last value of a column that is not a gap, or null.
  function newest(col) {
    for (let i = (col ? col.length : 0) - 1; i >= 0; i -= 1) {
      if (col[i] != null) return col[i];
    }
    return null;
  }

  function css(name, fallback) {
    return getComputedStyle(document.body).getPropertyValue(name).trim() || fallback;
  }

  function options(data, width) {
    const axis = { stroke: css("--muted", "#5d636e"), grid: { stroke: css("--line", "#e3e5e8"), width: 1 }, ticks: { show: false } };
    const percent = data.unit === "%";
    return {
      title: data.title,
      // Times in UTC (24 h clock), as everywhere on the console.
      tzDate: utc,
      width: width,
      height: HEIGHT,
      legend: { live: true },
      cursor: { points: { size: 6 } },
      scales: {
        x: { time: true, range: () => [nowS - WINDOW_S[range], nowS] },
        y: { range: (u, min, max) => [0, percent ? 100 : max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        {
          ...axis,
          space: 70, // px between time ticks: room for hh:mm:ss
          // uPlot's own steps jump from 1 to 5 min: a 300 px chart of 5 min got one label.
          incrs: TIME_STEPS_S,
          values: (u, splits) => splits.map((s) => (range === "5m" ? clock.seconds : clock.minutes)(utc(s))),
        },
        { ...axis, label: data.unit, size: 52, labelSize: 16, values: (u, splits) => splits.map(number) },
      ],
      // The legend reads "label: value unit" (the colon is console.css'): under the cursor
      // while hovering, else the newest value, so it is never a row of dashes.
      series: [
        {
          label: "time (UTC)",
          value: (u, v, si, idx) => {
            const at = idx == null ? newest(u.data[0]) : v;
            return at == null ? "—" : (idx == null ? "newest " : "") + stamp(utc(at));
          },
        },
        ...data.labels.map((label, i) => ({
          label: label,
          stroke: COLOURS[i % COLOURS.length],
          width: 1.5,
          spanGaps: false, // null is a gap: no line is drawn across it
          value: (u, v, si, idx) => {
            const shown = idx == null ? newest(u.data[si]) : v;
            return shown == null ? "—" : `${number(shown)} ${data.unit}`;
          },
        })),
      ],
    };
  }

  function columns(entry) {
    const cols = entry.data.ranges[range];
    return cols && cols.length === entry.data.labels.length + 1 ? cols : [[], ...entry.data.labels.map(() => [])];
  }

  function draw(key, entry, slot) {
    const cols = columns(entry);
    slot.dataset.range = range;
    slot.dataset.rows = String(cols[0].length);
    if (!entry.plot) {
      slot.replaceChildren();
      entry.plot = new uPlot(options(entry.data, slot.clientWidth || 320), cols, slot);
    } else {
      entry.plot.setData(cols);
      entry.plot.setLegend(); // the newest values, unless the cursor holds a point
    }
  }

  // Every slot on the page gets its chart: new slots (a fragment swap) take over the chart
  // element already drawn, which keeps its canvas, cursor and legend.
  function attach() {
    for (const slot of document.querySelectorAll("[data-chart]")) {
      const key = slot.dataset.chart;
      const entry = charts.get(key);
      if (!entry) continue;
      if (entry.plot && entry.plot.root.parentNode !== slot) {
        slot.replaceChildren(entry.plot.root);
      }
      draw(key, entry, slot);
    }
  }

  function sameLines(a, b) {
    return a.unit === b.unit && a.labels.length === b.labels.length && a.labels.every((l, i) => l === b.labels[i]);
  }

  // Rows of ``tail`` into ``cols`` by time: a row for a time already there replaces it.
  function merge(cols, tail) {
    const xs = cols[0];
    tail[0].forEach((x, i) => {
      let j = xs.length - 1;
      while (j >= 0 && xs[j] > x) j -= 1;
      if (j >= 0 && xs[j] === x) {
        cols.forEach((col, k) => { col[j] = tail[k][i]; });
      } else {
        cols.forEach((col, k) => { col.splice(j + 1, 0, tail[k][i]); });
      }
    });
  }

  function trim(cols, windowS) {
    let drop = 0;
    while (drop < cols[0].length && cols[0][drop] < nowS - windowS) drop += 1;
    if (drop) cols.forEach((col) => col.splice(0, drop));
  }

  function take(series) {
    let stale = false;
    for (const [key, data] of Object.entries(series)) {
      const entry = charts.get(key);
      if (!entry || data.full) {
        if (entry && entry.plot && !sameLines(entry.data, data)) {
          entry.plot.destroy();
          entry.plot = null;
        }
        if (entry) entry.data = data;
        else charts.set(key, { data: data, plot: null });
        if (!data.full) stale = true; // a chart we had no history for: fetch it
        continue;
      }
      if (!sameLines(entry.data, data)) {
        stale = true; // a group came or went: its lines need their history
        continue;
      }
      for (const [name, tail] of Object.entries(data.ranges)) {
        merge(entry.data.ranges[name], tail);
        trim(entry.data.ranges[name], WINDOW_S[name]);
      }
    }
    return stale;
  }

  // The page's own render has every chart's full history: fetched again after the socket
  // was down (ticks were missed) or when a chart's lines changed.
  async function refetch() {
    if (Date.now() - refetchedAt < REFETCH_MIN_MS) return;
    refetchedAt = Date.now();
    try {
      const response = await fetch(location.href, { credentials: "same-origin" });
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("chart-series");
      if (fresh) load(JSON.parse(fresh.textContent));
    } catch (e) {
      // the next reconnect tries again
    }
  }

  function load(initial) {
    nowS = Math.max(nowS, initial.at_ms / 1000);
    take(initial.charts);
    attach();
  }

  function select(next) {
    if (!WINDOW_S[next]) return;
    range = next;
    for (const b of document.querySelectorAll("[data-range]")) {
      b.setAttribute("aria-pressed", String(b.dataset.range === range));
    }
    attach();
  }

  // The range is kept in the URL (?range=1h; none for the default), so a reload, a shared
  // link and the back button show the same range; localStorage remembers it across pages.
  function withRange(url) {
    if (range === DEFAULT_RANGE) url.searchParams.delete("range");
    else url.searchParams.set("range", range);
    return url;
  }

  function keepInUrl() {
    const url = withRange(new URL(location.href));
    if (url.href !== location.href) history.replaceState(history.state, "", url);
  }

  // Pages with these charts: the overview, a stream's and a group's (not its entries or
  // dead letters, which have none).
  function chartPage(url) {
    if (url.origin !== location.origin) return false;
    return url.pathname === "/" || /^\/streams\/[^/]+\/(groups\/[^/]+\/)?$/.test(url.pathname);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-range]");
    if (button) {
      select(button.dataset.range);
      try { localStorage.setItem(RANGE_KEY, range); } catch (e) { /* private mode */ }
      keepInUrl();
      return;
    }
    // A link to another page with charts carries the range along.
    const link = event.target.closest("a[href]");
    if (!link || link.hasAttribute("hx-get")) return;
    const url = new URL(link.href, location.href);
    if (chartPage(url) && url.pathname !== location.pathname) link.href = withRange(url).href;
  }, true);

  // htmx's pushed URLs (a filter, a pager) are built from their own query: add it back.
  document.addEventListener("htmx:pushedIntoHistory", keepInUrl);

  document.addEventListener("streamdesk:tick", (event) => {
    const payload = event.detail;
    nowS = Math.max(nowS, payload.at_ms / 1000);
    const stale = take(payload.series || {});
    attach();
    if (stale) refetch();
  });

  document.addEventListener("streamdesk:connected", () => {
    connections += 1;
    if (connections > 1) refetch(); // ticks were missed while the socket was down
  });

  let resizing = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const entry of charts.values()) {
        const slot = entry.plot && entry.plot.root.parentNode;
        if (slot) entry.plot.setSize({ width: slot.clientWidth || 320, height: HEIGHT });
      }
    }, 100);
  });

  // The URL's range first (a reload, a shared link), else the one last chosen here.
  let stored = null;
  try { stored = localStorage.getItem(RANGE_KEY); } catch (e) { /* private mode */ }
  const asked = new URLSearchParams(location.search).get("range");
  range = WINDOW_S[asked] ? asked : WINDOW_S[stored] ? stored : DEFAULT_RANGE;
  load(JSON.parse(source.textContent));
  select(range);
  keepInUrl();
})();
