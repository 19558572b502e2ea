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
    for (const [name, html] of Object.entries(payload.fragments)) {
      for (const el of document.querySelectorAll(`[data-live="${CSS.escape(name)}"]`)) {
        htmx.swap(el, html, { swapStyle: "innerHTML" });
      }
    }
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

  function connect() {
    const names = regions().map((el) => el.dataset.live);
    if (!names.length) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/ws/dashboard/`);
    socket.addEventListener("open", () => {
      retries = 0;
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
