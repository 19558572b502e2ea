// Errors that reach the page: htmx 2 swaps nothing for a 4xx/5xx answer and says nothing when
// the request never left, so an operator's refused or failed action would vanish silently.
// Every failed htmx request is said in words, in an alert region next to the control that
// made it (after its form; outside a live region, which is re-rendered every second).
// The text is set with textContent: a server message is never parsed as HTML into the page.
(function () {
  "use strict";
  const SESSION_EXPIRED = "Your session expired: sign in again.";
  const UNREACHABLE = "The console did not answer (network error or the server is down): " +
    "check the connection and try again.";
  const MAX_CHARS = 500;

  function loginPath() {
    return document.body.dataset.loginUrl || "/login/";
  }

  // Where the message goes: after the control's form, or after the live region holding it.
  function anchorOf(elt) {
    if (!elt || !elt.isConnected) return document.getElementById("main");
    const live = elt.closest("[data-live]");
    if (live) return live;
    return elt.closest("form") || elt.form || elt;
  }

  function regionAfter(anchor) {
    const next = anchor.nextElementSibling;
    if (next && next.matches("[data-action-error]")) return next;
    const region = document.createElement("p");
    region.className = "outcome bad action-error";
    region.setAttribute("role", "alert");
    region.dataset.actionError = "";
    if (anchor.id === "main") anchor.prepend(region);
    else anchor.after(region);
    return region;
  }

  function clear(elt) {
    const anchor = anchorOf(elt);
    const next = anchor && anchor.nextElementSibling;
    if (next && next.matches("[data-action-error]")) next.remove();
  }

  function say(elt, text, signIn) {
    const region = regionAfter(anchorOf(elt));
    region.textContent = text;
    if (signIn) {
      const link = document.createElement("a");
      link.href = `${loginPath()}?next=${encodeURIComponent(location.pathname + location.search)}`;
      link.textContent = "Sign in";
      region.append(" ", link);
    }
    region.scrollIntoView({ block: "nearest" });
  }

  // The control's own words ("Claim", "Purge all matching"), so the message says which
  // action it is about; "" for a request no button sent (a list reloading itself).
  function labelOf(elt) {
    if (!elt) return "";
    const button = elt.matches("button, input[type=submit]") ? elt
      : elt.matches("form") ? elt.querySelector("button[type=submit], button:not([type])") : null;
    return button ? (button.textContent || button.value || "").trim() : "";
  }

  function clip(text) {
    const flat = text.replace(/\s+/g, " ").trim();
    return flat.length > MAX_CHARS ? flat.slice(0, MAX_CHARS - 1) + "…" : flat;
  }

  // The server's own words: its alert or outcome line, else the error page's heading and
  // message, else the JSON error, else the status line.
  function messageOf(xhr) {
    const type = xhr.getResponseHeader("Content-Type") || "";
    const body = xhr.responseText || "";
    if (type.includes("json")) {
      try {
        const data = JSON.parse(body);
        if (data && typeof data.error === "string") return clip(data.error);
      } catch (e) { /* not JSON after all */ }
    }
    if (type.includes("html")) {
      const doc = new DOMParser().parseFromString(body, "text/html");
      const said = doc.querySelector("[role=alert], .outcome.bad, .outcome");
      if (said && said.textContent.trim()) return clip(said.textContent);
      const heading = doc.querySelector("main h1") || doc.querySelector("h1");
      // Django's own pages when DEBUG is on: the message is the exception's value.
      const para = doc.querySelector(".exception_value") || doc.querySelector("main p") ||
        doc.querySelector("p");
      const parts = [heading, para].filter((el) => el && el.textContent.trim());
      if (parts.length) return clip(parts.map((el) => el.textContent.trim()).join(": "));
    } else if (body.trim()) {
      return clip(body);
    }
    return `${xhr.status} ${xhr.statusText || "error"}`.trim();
  }

  function signedOut(xhr) {
    // A signed-out request is redirected to the login page; XHR follows the redirect.
    if (xhr.responseURL) {
      const url = new URL(xhr.responseURL, location.href);
      if (url.origin === location.origin && url.pathname === loginPath()) return true;
    }
    // A CSRF refusal: the page's token belongs to a session that has ended.
    return xhr.status === 403 && (xhr.responseText || "").includes("CSRF verification failed");
  }

  // htmx:beforeSwap is fired on the swap's target, not on the control: remember which
  // control sent each request.
  const senders = new WeakMap();

  document.body.addEventListener("htmx:beforeRequest", (event) => {
    senders.set(event.detail.xhr, event.detail.elt);
    clear(event.detail.elt);
  });

  document.body.addEventListener("htmx:beforeSwap", (event) => {
    const detail = event.detail;
    const xhr = detail.xhr;
    const sender = senders.get(xhr) || detail.elt;
    if (signedOut(xhr)) {
      detail.shouldSwap = false;
      say(sender, SESSION_EXPIRED, true);
      return;
    }
    if (xhr.status >= 400) {
      detail.shouldSwap = false;
      const label = labelOf(sender);
      const text = `${messageOf(xhr)} (HTTP ${xhr.status})`;
      say(sender, label ? `${label}: ${text}` : text, false);
    }
  });

  document.body.addEventListener("htmx:sendError", (event) => {
    say(event.detail.elt, UNREACHABLE, false);
  });
})();
