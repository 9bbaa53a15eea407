// The one script of both web interfaces. Pages are rendered on the server; this script only:
// - submits forms marked data-api to the service's REST API as JSON (or multipart with a file), with the
//   session's CSRF token in X-XSRF-TOKEN, then reloads or goes where data-then says;
// - runs buttons marked data-api (one request, or one per selected row with data-each), after data-confirm;
// - a checkbox marked data-if-checked sends that JSON value when checked (null: remove a stored secret), nothing
//   otherwise;
// - sends a form marked data-fanout="a b" once per combination of the values of its fields a and b (checked
//   boxes, or lines of a field): each value fills {a} in the route or the field a of the body; a box marked
//   data-fields='{"x":…}' gives several fields at once;
// - fills the element data-plan-target names with the fragment GET <data-plan>?values=<the lines> as a field
//   marked data-plan is typed (the new analysis's guessed data types), and keeps the lines in the URL (values);
// - shows the answer of a form or button marked data-show="<id>" as text in that element instead of reloading;
// - copies the text of an element to the clipboard (button data-copy="<id>");
// - keeps the selection of a list (select all, the count of selected rows);
// - follows the live stream: the top bar's counters are refreshed in place, a region marked data-live is
//   re-rendered from data-live-src when an event concerns it, unless the user selected rows in it (then a
//   bar offers the refresh);
// - signs out, switches organisation, and focuses the search with "/".
// Nothing here builds HTML from data: fragments come rendered and escaped from the server.
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="xsrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";

  function request(method, url, body, isForm) {
    var headers = { "X-XSRF-TOKEN": csrf, "Accept": "application/json" };
    var opts = { method: method, headers: headers, credentials: "same-origin" };
    if (body !== undefined && body !== null) {
      if (isForm) {
        opts.body = body;
      } else {
        headers["Content-Type"] = "application/json";
        opts.body = JSON.stringify(body);
      }
    }
    return fetch(url, opts).then(function (r) {
      if (r.status === 401) {
        location.href = "/ui/login?expired=1&next=" + encodeURIComponent(location.pathname + location.search);
        throw new Error("Your session ended; sign in again.");
      }
      var ct = r.headers.get("Content-Type") || "";
      var parse = ct.indexOf("json") >= 0 ? r.json() : r.text();
      return parse.then(function (data) {
        if (!r.ok) {
          var msg = (data && data.message) ? data.message : ("Request failed (" + r.status + ")");
          throw new Error(msg);
        }
        return data;
      });
    });
  }

  // value converts a field's value by its data-type: int, bool, list (one per line or comma), lines (one per
  // line), float, millis (a date or datetime-local input to epoch milliseconds), json.
  function value(el) {
    var t = el.getAttribute("data-type") || "";
    if (el.type === "checkbox") { return el.checked; }
    if (el.tagName === "SELECT" && el.multiple) {
      return Array.prototype.filter.call(el.options, function (o) { return o.selected; })
        .map(function (o) { return o.value; });
    }
    var v = el.value;
    switch (t) {
      case "int": return v === "" ? null : parseInt(v, 10);
      case "float": return v === "" ? null : parseFloat(v);
      case "bool": return v === "" ? null : v === "true";
      case "list": return v.split(/[\n,]/).map(function (s) { return s.trim(); }).filter(Boolean);
      case "lines": return v.split("\n").map(function (s) { return s.trim(); }).filter(Boolean);
      case "millis": return v === "" ? null : new Date(v).getTime();
      case "json": return v === "" ? null : JSON.parse(v);
    }
    return v;
  }

  function setPath(obj, path, v) {
    var parts = path.split(".");
    for (var i = 0; i < parts.length - 1; i++) {
      if (typeof obj[parts[i]] !== "object" || obj[parts[i]] === null) { obj[parts[i]] = {}; }
      obj = obj[parts[i]];
    }
    obj[parts[parts.length - 1]] = v;
  }

  // formBody is the form's request: JSON, or multipart with the JSON in _json when a file is chosen. Fields
  // named in skip are left out; extra fields (name -> value) are set.
  function formBody(form, skip, extra) {
    var json = {};
    var files = [];
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el.disabled || el.name === "sel" || el.name === "analyzer" || (skip && skip.indexOf(el.name) >= 0)) { return; }
      if (el.type === "file") {
        Array.prototype.forEach.call(el.files, function (f) { files.push([el.name, f]); });
        return;
      }
      if (el.type === "radio" && !el.checked) { return; }
      if (el.type === "submit" || el.type === "button") { return; }
      if (el.type === "checkbox" && el.hasAttribute("data-if-checked")) {
        // A box that sends its JSON value when checked (null: remove a stored secret), nothing otherwise.
        if (el.checked) { setPath(json, el.name, JSON.parse(el.getAttribute("data-if-checked"))); }
        return;
      }
      var v = value(el);
      if (el.hasAttribute("data-as-tasks")) {
        if (v.length) { json.tasks = v.map(function (t, i) { return { title: t, order: i }; }); }
        return;
      }
      if (el.hasAttribute("data-omit-empty") && (v === "" || v === null || (Array.isArray(v) && !v.length))) { return; }
      setPath(json, el.name, v);
    });
    Object.keys(extra || {}).forEach(function (k) { setPath(json, k, extra[k]); });
    if (files.length) {
      var fd = new FormData();
      files.forEach(function (f) { fd.append(f[0], f[1], f[1].name); });
      fd.append("_json", JSON.stringify(json));
      return { body: fd, isForm: true };
    }
    return { body: json, isForm: false };
  }

  function then(el, data) {
    var show = document.getElementById(el.getAttribute("data-show") || "");
    if (show) {
      // The answer (a scan's result…) as text: nothing is built as HTML from it.
      show.textContent = typeof data === "string" ? data : JSON.stringify(data, null, 2);
      show.hidden = false;
      Array.prototype.forEach.call(el.tagName === "FORM" ? el.querySelectorAll('[type="submit"]') : [el], function (b) { b.disabled = false; });
      return;
    }
    var to = el.getAttribute("data-then");
    if (to) {
      var id = data && (data._id || data.id || (Array.isArray(data) && data[0] && (data[0]._id || data[0].id))) || "";
      location.href = to.replace("{id}", encodeURIComponent(id));
    } else {
      location.reload();
    }
  }

  function showError(el, err) {
    var box = el.querySelector("[data-error]") || document.getElementById(el.getAttribute("data-error-box") || "page-error");
    if (box) { box.textContent = err.message; box.focus && box.focus(); } else { alert(err.message); }
  }

  // fieldValues are the values of a form's fields of that name: the checked boxes, or the lines of a field.
  function fieldValues(form, name) {
    var out = [];
    Array.prototype.forEach.call(form.querySelectorAll('[name="' + name + '"]'), function (el) {
      if (el.disabled || ((el.type === "checkbox" || el.type === "radio") && !el.checked)) { return; }
      if (el.hasAttribute("data-fields")) { out.push(JSON.parse(el.getAttribute("data-fields"))); return; }
      el.value.split("\n").forEach(function (v) { v = v.trim(); if (v) { out.push(v); } });
    });
    return out;
  }

  // fanout sends the form once per combination of the values of the fields data-fanout names (a field with
  // no value is left out, unless the route needs it: then the form's error says so), four at a time.
  function fanout(form) {
    var names = form.getAttribute("data-fanout").split(/\s+/).filter(Boolean);
    var route = form.getAttribute("data-api");
    var combos = [{}];
    names.forEach(function (name) {
      var vals = fieldValues(form, name);
      if (!vals.length) { return; }
      var next = [];
      combos.forEach(function (c) {
        vals.forEach(function (v) {
          var n = {};
          Object.keys(c).forEach(function (k) { n[k] = c[k]; });
          if (typeof v === "object") { Object.keys(v).forEach(function (k) { n[k] = v[k]; }); } else { n[name] = v; }
          next.push(n);
        });
      });
      combos = next;
    });
    var missing = route.match(/\{([a-zA-Z]+)\}/g) || [];
    missing = missing.map(function (m) { return m.slice(1, -1); }).filter(function (n) { return combos[0][n] === undefined; });
    if (missing.length) {
      var el = form.querySelector('[name="' + missing[0] + '"]');
      return Promise.reject(new Error((el && el.getAttribute("data-missing")) || form.getAttribute("data-missing") ||
        ("Choose at least one " + missing[0] + ".")));
    }
    var reqs = combos.map(function (c) {
      var extra = {};
      var url = route.replace(/\{([a-zA-Z]+)\}/g, function (m, name) { return encodeURIComponent(c[name]); });
      Object.keys(c).forEach(function (n) { if (route.indexOf("{" + n + "}") < 0) { extra[n] = c[n]; } });
      return function () { var b = formBody(form, names, extra); return request(form.getAttribute("data-method") || "POST", url, b.body, b.isForm); };
    });
    var results = [];
    var next = 0;
    function worker() {
      if (next >= reqs.length) { return Promise.resolve(); }
      var i = next++;
      return reqs[i]().then(function (r) { results[i] = r; return worker(); });
    }
    var pool = [];
    for (var k = 0; k < Math.min(4, reqs.length); k++) { pool.push(worker()); }
    return Promise.all(pool).then(function () { return results; });
  }

  // plan fills a data-plan field's target with the server's fragment for its lines, the last typed winning;
  // the target says which lines it shows (data-planned).
  var planTimer, planSeq = 0;
  function plan(field) {
    var target = document.getElementById(field.getAttribute("data-plan-target") || "");
    if (!target) { return; }
    var lines = field.value.split("\n").map(function (s) { return s.trim(); }).filter(Boolean).join("\n");
    if (target.getAttribute("data-planned") === lines) { return; }
    var seq = ++planSeq;
    fetch(field.getAttribute("data-plan") + "?values=" + encodeURIComponent(lines),
      { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (r) {
      if (!r.ok) { throw new Error("The data types could not be guessed (" + r.status + ")."); }
      return r.text();
    }).then(function (html) {
      if (seq !== planSeq) { return; }
      target.innerHTML = html; // server-rendered, escaped fragment of this origin
      target.setAttribute("data-planned", lines);
      // The values are part of the page's state: a reload or a link shows the same plan.
      var q = new URLSearchParams(location.search);
      if (lines) { q.set("values", lines); } else { q.delete("values"); }
      history.replaceState(null, "", location.pathname + "?" + q.toString());
    }).catch(function (e) { showError(field.form || document, e); });
  }

  document.addEventListener("input", function (ev) {
    var el = ev.target;
    if (!el.hasAttribute || !el.hasAttribute("data-plan")) { return; }
    clearTimeout(planTimer);
    planTimer = setTimeout(function () { plan(el); }, 250);
  });

  function selected(scope) {
    return Array.prototype.map.call((scope || document).querySelectorAll('input[name="sel"]:checked'),
      function (c) { return c.value; });
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.hasAttribute("data-api")) { return; }
    ev.preventDefault();
    if (form.hasAttribute("data-confirm") && !confirm(form.getAttribute("data-confirm"))) { return; }
    if (form.hasAttribute("data-fanout")) {
      var fbtn = form.querySelector('[type="submit"]');
      if (fbtn) { fbtn.disabled = true; }
      fanout(form).then(function (data) { then(form, data); })
        .catch(function (e) { if (fbtn) { fbtn.disabled = false; } showError(form, e); });
      return;
    }
    var b;
    try { b = formBody(form); } catch (e) { showError(form, e); return; }
    // {name} in the route is the value of the form's field of that name (a case number to merge…).
    var url = form.getAttribute("data-api").replace(/\{([a-zA-Z]+)\}/g, function (m, name) {
      var f = form.elements[name];
      if (!f || !f.value) { return m; }
      if (!b.isForm) { delete b.body[name]; }
      return encodeURIComponent(f.value.trim());
    });
    var scope = document.getElementById(form.getAttribute("data-scope")) || document;
    var sel = selected(scope);
    var needsSel = form.hasAttribute("data-ids") || form.hasAttribute("data-merge") || form.hasAttribute("data-run-jobs");
    if (needsSel && !sel.length) { showError(form, new Error("Select at least one row first.")); return; }
    if (form.hasAttribute("data-ids")) { b.body[form.getAttribute("data-ids")] = sel; }
    var btn = form.querySelector('[type="submit"]');
    if (btn) { btn.disabled = true; }
    var p;
    if (form.hasAttribute("data-merge")) {
      p = request("POST", url + sel.map(encodeURIComponent).join(","));
    } else if (form.hasAttribute("data-run-jobs")) {
      // One job per selected observable and chosen analyzer (value "server|analyzer id").
      var chosen = Array.prototype.filter.call(form.querySelectorAll('input[name="analyzer"]'), function (c) { return c.checked; });
      if (!chosen.length) { if (btn) { btn.disabled = false; } showError(form, new Error("Choose at least one analyzer.")); return; }
      var calls = [];
      sel.forEach(function (obs) {
        chosen.forEach(function (c) {
          var parts = c.value.split("|");
          calls.push(request("POST", url, { analysisId: parts[0], analyzerId: parts[1], artifactId: obs }));
        });
      });
      p = Promise.all(calls);
    } else {
      p = request(form.getAttribute("data-method") || "POST", url, b.body, b.isForm);
    }
    p.then(function (data) { then(form, data); })
      .catch(function (e) { if (btn) { btn.disabled = false; } showError(form, e); });
  });

  document.addEventListener("click", function (ev) {
    var el = ev.target.closest ? ev.target.closest("button[data-api]") : null;
    if (el) {
      ev.preventDefault();
      if (el.hasAttribute("data-confirm") && !confirm(el.getAttribute("data-confirm"))) { return; }
      var body = el.hasAttribute("data-body") ? JSON.parse(el.getAttribute("data-body")) : null;
      var url = el.getAttribute("data-api");
      var method = el.getAttribute("data-method") || "POST";
      var scope = document.getElementById(el.getAttribute("data-scope")) || document;
      var p;
      if (el.hasAttribute("data-each") || el.hasAttribute("data-ids")) {
        var sel = selected(scope);
        if (!sel.length) { showError(document, new Error("Select at least one row first.")); return; }
        if (el.hasAttribute("data-ids")) {
          body = body || {};
          body[el.getAttribute("data-ids")] = sel;
          p = request(method, url, body);
        } else {
          p = Promise.all(sel.map(function (id) {
            return request(method, url.replace("{id}", encodeURIComponent(id)), body);
          }));
        }
      } else {
        p = request(method, url, body);
      }
      el.disabled = true;
      p.then(function (data) { then(el, data); })
        .catch(function (e) { el.disabled = false; showError(document, e); });
      return;
    }
    var rev = ev.target.closest ? ev.target.closest("button[data-reveal]") : null;
    if (rev) {
      // Shows a secret (an API key) the user asked for, in the element it names, never in a URL.
      if (rev.hasAttribute("data-confirm") && !confirm(rev.getAttribute("data-confirm"))) { return; }
      request(rev.getAttribute("data-method") || "GET", rev.getAttribute("data-reveal")).then(function (k) {
        var t = document.getElementById(rev.getAttribute("data-target"));
        if (t) { t.textContent = typeof k === "string" ? k : JSON.stringify(k); t.classList.remove("muted"); }
      }).catch(function (e) { showError(document, e); });
      return;
    }
    var copy = ev.target.closest ? ev.target.closest("button[data-copy]") : null;
    if (copy) {
      // Copies the text of the element it names (a raw report) to the clipboard.
      var src = document.getElementById(copy.getAttribute("data-copy"));
      if (src && navigator.clipboard) {
        navigator.clipboard.writeText(src.textContent).then(function () { copy.textContent = "Copied"; })
          .catch(function (e) { showError(document, e); });
      }
      return;
    }
    var out = ev.target.closest ? ev.target.closest("button[data-logout]") : null;
    if (out) {
      request("POST", out.getAttribute("data-logout")).catch(function () {}).then(function () {
        location.href = "/ui/login";
      });
    }
  });

  // Selection: select all, the row highlight and the selected count.
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.hasAttribute("data-select-all")) {
      var scope = document.getElementById(el.getAttribute("data-select-all")) || document;
      Array.prototype.forEach.call(scope.querySelectorAll('input[name="sel"]'), function (c) { c.checked = el.checked; });
    }
    if (el.name === "sel" || el.hasAttribute("data-select-all")) { markSelection(); }
    if (el.hasAttribute("data-org-switch")) {
      request("POST", "/ui/organisation", { organisation: el.value }).then(function () { location.reload(); })
        .catch(function (e) { showError(document, e); });
    }
  });

  function markSelection() {
    Array.prototype.forEach.call(document.querySelectorAll('input[name="sel"]'), function (c) {
      var tr = c.closest("tr");
      if (tr) { tr.classList.toggle("selected", c.checked); }
    });
    var n = selected().length;
    Array.prototype.forEach.call(document.querySelectorAll("[data-selected-count]"), function (s) {
      s.textContent = n ? n + " selected" : "";
    });
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "/" || /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName)) { return; }
    var q = document.querySelector("[data-search]");
    if (q) { ev.preventDefault(); q.focus(); }
  });

  // Live updates from the service's stream.
  var live = document.getElementById("live");
  var countersUrl = document.body.getAttribute("data-counters");
  var pending = null;

  function refreshCounters() {
    if (!countersUrl) { return; }
    request("GET", countersUrl).then(function (c) {
      Object.keys(c).forEach(function (k) {
        var el = document.getElementById(k);
        if (el) { el.textContent = c[k] ? String(c[k]) : ""; }
      });
    }).catch(function () {});
  }

  // busy says whether the user works in a region (rows selected, a field focused): it is then not re-rendered
  // under them (selection, scroll, typing), a bar offers the refresh instead.
  function busy(region) {
    return region.querySelector('input[name="sel"]:checked') || region.contains(document.activeElement) &&
      /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName);
  }

  function offerRefresh() {
    if (live) { live.hidden = false; live.textContent = "This page changed. "; live.appendChild(reloadLink()); }
  }

  function refreshRegion(region) {
    var src = region.getAttribute("data-live-src");
    if (!src || busy(region)) {
      offerRefresh();
      return;
    }
    fetch(src, { credentials: "same-origin", headers: { "Accept": "text/html" } }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null) { return; }
      if (busy(region)) { offerRefresh(); return; } // the user began to work in it while it loaded
      var open = Array.prototype.map.call(region.querySelectorAll("details[open][id]"), function (d) { return d.id; });
      region.innerHTML = html; // server-rendered, escaped fragment of this origin
      open.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
      region.setAttribute("data-refreshed", String(Date.now()));
    }).catch(function () {});
  }

  function reloadLink() {
    var a = document.createElement("a");
    a.href = location.pathname + location.search;
    a.textContent = "Refresh";
    return a;
  }

  function onEvents(events) {
    if (!events || !events.length) { return; }
    var roots = {};
    var types = {};
    // A Resync marker: the stream fell behind and dropped events; every live part may have changed.
    var resync = events.some(function (e) { return e.operation === "Resync"; });
    events.forEach(function (e) {
      var b = (e.base && typeof e.base === "object") ? e.base : e; // v0 messages are flat; base is a flag
      if (b.rootId) { roots[b.rootId] = true; }
      if (b.objectId) { roots[b.objectId] = true; }
      if (b.objectType) { types[b.objectType] = true; }
    });
    clearTimeout(pending);
    pending = setTimeout(function () {
      refreshCounters();
      Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), function (region) {
        var root = region.getAttribute("data-live-root");
        var kinds = (region.getAttribute("data-live") || "").split(/\s+/).filter(Boolean);
        var hit = resync || (root ? roots[root] : kinds.some(function (k) { return types[k]; }));
        if (hit) { refreshRegion(region); }
      });
    }, 150);
  }

  function follow() {
    var url = document.body.getAttribute("data-stream");
    if (!url) { return; }
    var failures = 0;
    request("POST", url).then(function (id) {
      var streamId = typeof id === "string" ? id : (id && id.id);
      // What changed between the page's render and its stream (a job that ended meanwhile) is in no event the
      // stream will deliver: the live parts are refreshed once now.
      refreshCounters();
      Array.prototype.forEach.call(document.querySelectorAll('[data-live][data-live-src]:not([data-live-src=""])'), refreshRegion);
      function poll() {
        fetch(url + "/" + encodeURIComponent(streamId), { credentials: "same-origin", headers: { "Accept": "application/json" } })
          .then(function (r) {
            if (r.status === 401) { location.href = "/ui/login?expired=1&next=" + encodeURIComponent(location.pathname + location.search); return null; }
            if (r.status === 404) { return "restart"; }
            return r.ok ? r.json() : null;
          })
          .then(function (events) {
            if (events === "restart") { setTimeout(follow, 1000); return; }
            failures = 0;
            onEvents(events);
            poll();
          })
          .catch(function () { failures++; setTimeout(poll, Math.min(30000, 1000 * failures)); });
      }
      poll();
    }).catch(function () { setTimeout(follow, 5000); });
  }

  markSelection();
  Array.prototype.forEach.call(document.querySelectorAll("[data-plan]"), function (f) { if (f.value) { plan(f); } });
  refreshCounters(); // the page renders without them (no count on its path); they come right after
  follow();
})();
