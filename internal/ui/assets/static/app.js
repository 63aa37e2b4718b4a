// Live updates: when the server says an environment changed, fetch this
// page again and swap in its content, keeping open history entries, focus
// and whatever is being typed. No reload, no framework.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || main.dataset.live !== "on" || !window.EventSource) return;
  var live = document.getElementById("live");
  var busy = false, again = false;

  function openDetails() {
    var open = [];
    main.querySelectorAll("details[open] summary").forEach(function (s) { open.push(s.textContent); });
    return open;
  }
  function typing() {
    var a = document.activeElement;
    return a && main.contains(a) && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT") && a.value !== a.defaultValue;
  }
  // same compares two renderings of the content, ignoring relative times ("2 min ago") and open entries.
  function same(a, b) {
    var n = function (h) {
      return h.replace(/<time[^>]*>[^<]*<\/time>/g, "").replace(/\d+ (s|min|h|days) ago/g, "").replace(/<details open="">/g, "<details>");
    };
    return n(a) === n(b);
  }
  function refresh() {
    if (busy) { again = true; return; }
    if (typing()) { if (live) live.textContent = "Updates are waiting until you finish typing."; setTimeout(refresh, 2000); return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        if (!fresh) return;
        fresh.querySelectorAll("#flash").forEach(function (f) { f.remove(); });
        var cur = main.cloneNode(true), f0 = cur.querySelector("#flash");
        if (f0) f0.remove();
        if (same(cur.innerHTML, fresh.innerHTML)) return; // nothing changed: leave the page alone
        var open = openDetails();
        var focusId = document.activeElement && document.activeElement.id;
        var flash = main.querySelector("#flash");
        main.innerHTML = fresh.innerHTML;
        if (flash) main.insertBefore(flash, main.firstChild);
        main.querySelectorAll("details summary").forEach(function (s) {
          if (open.indexOf(s.textContent) >= 0) s.parentElement.open = true;
        });
        if (focusId) { var f = document.getElementById(focusId); if (f) f.focus(); }
        if (live) live.textContent = "Updated " + new Date().toLocaleTimeString();
      })
      .catch(function () { if (live) live.textContent = "Could not update; retrying on the next change."; })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/events");
  es.addEventListener("change", refresh);
  // Sent once the server watches every change from now on: catch up on what changed since this page was
  // rendered (and, after a reconnect, while the stream was down).
  es.addEventListener("ready", refresh);
  es.onopen = function () { if (live) live.textContent = "Live"; };
  es.onerror = function () { if (live) live.textContent = "Reconnecting…"; };
})();
