// Live regions: every [data-live] element is re-rendered by the server once a second and
// pushed over one websocket; htmx swaps the HTML in. No polling.
(function () {
  "use strict";
  const status = document.getElementById("live-status");
  const regions = () => Array.from(document.querySelectorAll("[data-live]"));
  const STALE_MS = 3000;
  let lastTick = 0;
  let retries = 0;

  function show(state, text) {
    if (!status) return;
    status.dataset.state = state;
    status.textContent = text;
  }

  function apply(payload) {
    clockOffset = payload.at_ms - Date.now();
    for (const [name, html] of Object.entries(payload.fragments)) {
      for (const el of document.querySelectorAll(`[data-live="${CSS.escape(name)}"]`)) {
        if (el.hasAttribute("data-live-rows")) mergeRows(el, html);
        else htmx.swap(el, html, { swapStyle: "innerHTML" });
      }
    }
    countdowns();
    lastTick = Date.now();
    // UTC, like every other time on the page (the browser's zone is not the servers').
    show("live", "live · " + new Date(payload.at_ms).toISOString().slice(11, 19) + " UTC");
    // The charts (charts.js) take their rows from here, after the fragments are in place.
    document.dispatchEvent(new CustomEvent("streamdesk:tick", { detail: payload }));
  }

  async function signedIn() {
    try {
      const response = await fetch(location.pathname, { method: "HEAD", redirect: "manual" });
      return response.type !== "opaqueredirect" && response.status !== 403;
    } catch (e) {
      return true; // the server is unreachable, not a sign-out: keep retrying
    }
  }

  // A live table's rows (a tbody with data-live-rows) are merged by their data-row id, not
  // swapped: a row still there keeps its cells marked data-keep (the operator's ticked box)
  // and gets the others only when they changed; a row marked data-row-fixed (a dead letter,
  // which never changes) is left as it is, a Retry's outcome included; new rows come in at
  // their place, rows gone go (but one showing an outcome). So ticking rows while they
  // update loses nothing.
  function mergeRows(body, html) {
    const template = document.createElement("template");
    template.innerHTML = `<table><tbody>${html}</tbody></table>`;
    const fresh = Array.from(template.content.querySelectorAll("tbody > tr[data-row]"));
    const old = new Map(Array.from(body.children).map((tr) => [tr.dataset.row, tr]));
    let at = null; // the row the next one goes after
    for (const row of fresh) {
      let kept = old.get(row.dataset.row);
      if (kept) {
        old.delete(row.dataset.row);
        if (!kept.hasAttribute("data-row-fixed")) updateCells(kept, row);
      } else {
        kept = document.importNode(row, true);
        htmx.process(kept);
      }
      const next = at ? at.nextElementSibling : body.firstElementChild;
      if (next !== kept) body.insertBefore(kept, next);
      at = kept;
    }
    // A row gone from the list stays while it shows what the operator's click did to it (a
    // redriven letter leaves the dead letters, its "Retried as ..." must not).
    for (const gone of old.values()) if (!gone.querySelector(".row-outcome")) gone.remove();
  }

  function updateCells(row, fresh) {
    const cells = Array.from(row.children);
    const next = Array.from(fresh.children);
    if (cells.length !== next.length) {
      row.replaceWith(document.importNode(fresh, true));
      return;
    }
    cells.forEach((cell, i) => {
      if (cell.hasAttribute("data-keep") || cell.innerHTML === next[i].innerHTML) return;
      cell.replaceWith(document.importNode(next[i], true));
    });
  }

  // "(in 3.1 s)" counts down between ticks, from the due time and the server's clock (the
  // last tick's time, or the page's), so it never freezes, live table or not.
  let clockOffset = 0;
  const stamped = document.querySelector("[data-at-ms]");
  if (stamped) clockOffset = Number(stamped.dataset.atMs) - Date.now();

  function duration(ms) {
    if (ms < 1000) return `${Math.round(ms)} ms`;
    const s = ms / 1000;
    if (s < 60) return `${s.toFixed(1)} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  }

  function countdowns() {
    const now = Date.now() + clockOffset;
    for (const el of document.querySelectorAll("[data-due-ms]")) {
      const left = Number(el.dataset.dueMs) - now;
      el.textContent = left > 0 ? `(in ${duration(left)})` : "(due now)";
    }
  }
  setInterval(countdowns, 500);

  let socket = null;
  let subscribed = "";

  // A region swapped in by htmx (a filter, a pager, a list reloaded after an action) may
  // name other live parts: tell the server.
  function resubscribe() {
    const names = regions().map((el) => el.dataset.live);
    if (!socket || socket.readyState !== WebSocket.OPEN || JSON.stringify(names) === subscribed) return;
    subscribed = JSON.stringify(names);
    socket.send(JSON.stringify({ subscribe: names }));
  }
  document.addEventListener("htmx:afterSettle", resubscribe);

  function connect() {
    const names = regions().map((el) => el.dataset.live);
    if (!names.length) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws/dashboard/`);
    socket.addEventListener("open", () => {
      retries = 0;
      subscribed = JSON.stringify(names);
      socket.send(JSON.stringify({ subscribe: names }));
      show("connecting", "connected, waiting for data");
      document.dispatchEvent(new CustomEvent("streamdesk:connected"));
    });
    socket.addEventListener("message", (event) => apply(JSON.parse(event.data)));
    socket.addEventListener("close", async () => {
      // A refused handshake looks like any other drop (code 1006): ask the server whether
      // we are still signed in before retrying, so an expired session says so.
      if (!(await signedIn())) {
        show("down", "signed out: reload the page to sign in again");
        return;
      }
      retries += 1;
      const delay = Math.min(1000 * 2 ** retries, 15000);
      show("down", `disconnected, retrying in ${Math.round(delay / 1000)} s`);
      setTimeout(connect, delay);
    });
  }

  setInterval(() => {
    if (lastTick && Date.now() - lastTick > STALE_MS && status && status.dataset.state === "live") {
      show("stale", `no update for ${Math.round((Date.now() - lastTick) / 1000)} s`);
    }
  }, 1000);

  connect();
})();

// "Select all on this page" checkboxes.
document.addEventListener("change", (event) => {
  const box = event.target.closest("[data-select-all]");
  if (!box) return;
  for (const item of document.querySelectorAll(`input[name="ids"][form="${box.dataset.selectAll}"]`)) {
    item.checked = box.checked;
  }
});
