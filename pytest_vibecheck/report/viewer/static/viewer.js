/* pytest-vibecheck results viewer: plain JavaScript, no dependencies, no network.
 *
 * The page embeds one JSON blob (<script type="application/json" id="vibecheck-data">): the
 * analysis tables and figures, and every report item (docs/report-schema.md items[]) with each
 * turn's messages, reply and extracted code. Views, chosen by the URL fragment:
 *   #/                      overview: one row per (suite, model, protocol, k), analysis tables
 *   #/items?instr=..&..     the item list (filters and sort in the query part)
 *   #/item/NODEID           one item (NODEID encoded with encodeURIComponent): a permalink
 *   #/compare/NODEID/NODEID two items side by side
 */
(function () {
  "use strict";

  var ROW_H = 30; // px, fixed row height of the virtualised item list
  var OVERSCAN = 12;
  var DATA = null;
  var ITEMS = [];
  var BY_ID = {};
  var state = { filters: {}, sort: "nodeid", dir: 1, view: [] };

  // ------------------------------------------------------------------ helpers

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === "text") el.textContent = attrs[k];
        else if (k === "cls") el.className = attrs[k];
        else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), attrs[k]);
        else el.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }

  /** Append each of the arguments after ``el`` (nodes, text, arrays of them; null skipped). */
  function add(el) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child == null || child === false) continue;
      if (Array.isArray(child)) { for (var j = 0; j < child.length; j++) add(el, child[j]); continue; }
      el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }

  function pct(x) { return x == null ? "-" : (100 * x).toFixed(1) + "%"; }

  function cell(kind, v) {
    if (v == null) return "-";
    if (kind === "pct") return pct(v);
    if (kind === "pct_ci") {
      var t = pct(v[0]);
      if (v[0] != null && v[1] != null && v[2] != null) {
        t += " [" + (100 * v[1]).toFixed(1) + ", " + (100 * v[2]).toFixed(1) + "]";
      }
      return t;
    }
    if (kind === "float") return typeof v === "number" ? v.toFixed(3) : String(v);
    if (kind === "float_ci") {
      if (v[0] == null) return "-";
      var s = v[0].toFixed(3);
      if (v[1] != null && v[2] != null) s += " [" + v[1].toFixed(3) + ", " + v[2].toFixed(3) + "]";
      return s;
    }
    if (kind === "p") return v >= 1e-4 ? v.toPrecision(2) : v.toExponential(1);
    return String(v);
  }

  function itemHref(id) { return "#/item/" + encodeURIComponent(id); }
  function compareHref(a, b) {
    return "#/compare/" + encodeURIComponent(a) + "/" + encodeURIComponent(b);
  }

  function finalTurn(it) { return it.turns && it.turns.length ? it.turns[it.turns.length - 1] : null; }

  /** Tests status of the item's final turn, or its pytest outcome (error, skipped). */
  function testStatus(it) {
    var t = finalTurn(it);
    if (it.outcome === "error" || it.outcome === "skipped") return it.outcome;
    return t && t.tests && t.tests.status ? t.tests.status : it.outcome;
  }

  function verdictMark(passed) { return passed === true ? "\u2713" : passed === false ? "\u2717" : "?"; }

  function badge(text, kind) { return h("span", { cls: "badge b-" + kind, text: text }); }

  // ------------------------------------------------------------------ data preparation

  function prepare(it) {
    var t = finalTurn(it);
    var failed = [];
    var cats = {};
    var verdicts = {};
    var categories = {};
    (it.instructions || []).forEach(function (i) { categories[i.id] = i.category; });
    (t ? t.verdicts || [] : []).forEach(function (v) {
      verdicts[v.id] = v.passed;
      if (v.passed === false) {
        failed.push(v.id);
        cats[categories[v.id] || DATA.instructions[v.id] || v.id.split("_")[0]] = true;
      }
    });
    it._failed = failed;
    it._cats = Object.keys(cats);
    it._verdicts = verdicts;
    it._status = testStatus(it);
    it._text = null; // built on the first text search
  }

  function searchText(it) {
    if (it._text === null) {
      var parts = [it.nodeid, it.task_id];
      (it.turns || []).forEach(function (t) { if (t.code) parts.push(t.code); });
      it._text = parts.join("\n").toLowerCase();
    }
    return it._text;
  }

  /** Put the items' long strings (stored once in DATA.strings, referred to by index) back. */
  function resolveStrings(it) {
    var S = DATA.strings || [];
    function r(v) { return typeof v === "number" ? S[v] : v; }
    var turns = it.turns || [];
    for (var t = 0; t < turns.length; t++) {
      var turn = turns[t];
      if ("reply" in turn) turn.reply = r(turn.reply);
      if ("code" in turn) turn.code = r(turn.code);
      var ms = turn.messages || [];
      for (var m = 0; m < ms.length; m++) ms[m].content = r(ms[m].content);
      if (turn.tests) turn.tests.message = r(turn.tests.message);
      var vs = turn.verdicts || [];
      for (var v = 0; v < vs.length; v++) {
        var xs = vs[v].violations || [];
        for (var x = 0; x < xs.length; x++) xs[x].message = r(xs[x].message);
      }
    }
  }

  var TIMES = {};

  function load() {
    var t0 = performance.now();
    var node = document.getElementById("vibecheck-data");
    DATA = JSON.parse(node.textContent);
    node.textContent = ""; // the page's copy of the data is no longer needed
    TIMES.parseMs = performance.now() - t0;
    ITEMS = DATA.items || [];
    for (var i = 0; i < ITEMS.length; i++) {
      resolveStrings(ITEMS[i]);
      ITEMS[i]._index = i;
      prepare(ITEMS[i]);
      BY_ID[ITEMS[i].nodeid] = ITEMS[i];
    }
    TIMES.prepareMs = performance.now() - t0 - TIMES.parseMs;
  }

  // ------------------------------------------------------------------ routing

  function parseQuery(q) {
    var out = {};
    (q || "").split("&").forEach(function (kv) {
      if (!kv) return;
      var p = kv.indexOf("=");
      var k = decodeURIComponent(p < 0 ? kv : kv.slice(0, p));
      out[k] = p < 0 ? "" : decodeURIComponent(kv.slice(p + 1).replace(/\+/g, " "));
    });
    return out;
  }

  function buildQuery(obj) {
    var parts = [];
    Object.keys(obj).sort().forEach(function (k) {
      if (obj[k] !== "" && obj[k] != null) parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(obj[k]));
    });
    return parts.join("&");
  }

  function route() {
    var hash = location.hash.replace(/^#\/?/, "");
    var main = document.getElementById("main");
    main.textContent = "";
    window.scrollTo(0, 0);
    var tabs = document.querySelectorAll("nav a[data-view]");
    var view = "overview";
    if (hash.indexOf("item/") === 0) {
      view = "item";
      renderItem(main, decodeURIComponent(hash.slice(5)));
    } else if (hash.indexOf("compare/") === 0) {
      view = "compare";
      var rest = hash.slice(8).split("/");
      renderCompare(main, decodeURIComponent(rest[0] || ""), decodeURIComponent(rest[1] || ""));
    } else if (hash.indexOf("items") === 0) {
      view = "items";
      var qi = hash.indexOf("?");
      renderItems(main, parseQuery(qi < 0 ? "" : hash.slice(qi + 1)));
    } else {
      renderOverview(main);
    }
    for (var i = 0; i < tabs.length; i++) {
      tabs[i].classList.toggle("active", tabs[i].getAttribute("data-view") === view);
    }
    document.body.setAttribute("data-view", view);
  }

  // ------------------------------------------------------------------ overview

  function renderTable(t, rowLink) {
    var table = h("table", { cls: "data", id: "table-" + t.name });
    var head = h("tr");
    t.columns.forEach(function (c) { head.appendChild(h("th", { text: c.label })); });
    table.appendChild(h("thead", null, head));
    var body = h("tbody");
    t.rows.forEach(function (row) {
      var tr = h("tr");
      row.forEach(function (v, i) {
        var c = t.columns[i];
        var td = h("td", { cls: c.kind === "text" ? "" : "num" });
        var text = cell(c.kind, v);
        if (i === 0 && rowLink) td.appendChild(h("a", { href: rowLink(row), text: text }));
        else td.textContent = text;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function renderOverview(main) {
    add(main, h("h1", { text: DATA.title }));
    var src = h("ul", { cls: "sources" });
    (DATA.sources || []).forEach(function (s) {
      src.appendChild(h("li", null, h("code", { text: s.path }), ": " + s.items + " items, created " +
        (s.created || "-") + ", plugin " + (s.plugin_version || "-") + ", Ruff " + (s.ruff_version || "-") +
        (s.suites && s.suites.length ? "; suites: " + s.suites.join(", ") : "")));
    });
    add(main, src);
    (DATA.notes || []).forEach(function (n) { add(main, h("p", { cls: "notice", text: n })); });
    var ov = DATA.overview;
    add(main, h("h2", { id: "overview", text: ov.title }));
    if (ov.note) add(main, h("p", { cls: "note", text: ov.note }));
    var keyCols = ["suite", "model", "protocol", "k"].map(function (k) {
      return ov.columns.map(function (c) { return c.key; }).indexOf(k);
    });
    add(main, h("div", { cls: "scroll" }, renderTable(ov, function (row) {
      return "#/items?" + buildQuery({ suite: row[keyCols[0]], model: row[keyCols[1]],
        protocol: row[keyCols[2]], k: String(row[keyCols[3]]) });
    })));
    var tables = DATA.tables || [];
    if (tables.length) {
      var toc = h("ul", { cls: "toc" });
      tables.forEach(function (t) {
        toc.appendChild(h("li", null, h("a", { href: "#/", "data-target": t.name, text: t.title,
          onclick: function (ev) { ev.preventDefault(); document.getElementById(t.name).scrollIntoView(); } }),
          " (" + t.rows.length + " rows)"));
      });
      add(main, h("h2", { text: "Analysis" }), toc);
    }
    tables.forEach(function (t) {
      add(main, h("h2", { id: t.name, text: t.title }));
      if (t.note) add(main, h("p", { cls: "note", text: t.note }));
      add(main, h("div", { cls: "scroll" }, renderTable(t)));
      var fig = (DATA.figures || {})[t.name];
      if (fig) add(main, h("img", { cls: "figure", alt: fig.title, src: fig.src }));
    });
  }

  // ------------------------------------------------------------------ item list

  var FILTERS = [
    ["instr", "failed instruction"], ["cat", "failed category"], ["outcome", "outcome"],
    ["status", "tests"], ["protocol", "protocol"], ["model", "model"], ["suite", "suite"], ["k", "k"]
  ];

  function distinct(fn) {
    var seen = {};
    ITEMS.forEach(function (it) { [].concat(fn(it)).forEach(function (v) { seen[v] = true; }); });
    return Object.keys(seen).sort(function (a, b) {
      var na = Number(a), nb = Number(b);
      return isNaN(na) || isNaN(nb) ? (a < b ? -1 : a > b ? 1 : 0) : na - nb;
    });
  }

  var OPTION_FNS = {
    instr: function (it) { return it._failed; },
    cat: function (it) { return it._cats; },
    outcome: function (it) { return it.outcome; },
    status: function (it) { return it._status; },
    protocol: function (it) { return it.protocol; },
    model: function (it) { return it.model; },
    suite: function (it) { return it.suite; },
    k: function (it) { return String(it.k); }
  };

  /** The indices of the items that pass the filters ``f``, sorted by ``sortKey``/``dir``. */
  function applyFilters(f, sortKey, dir) {
    var q = (f.q || "").toLowerCase();
    var out = [];
    for (var i = 0; i < ITEMS.length; i++) {
      var it = ITEMS[i];
      if (f.instr && it._failed.indexOf(f.instr) < 0) continue;
      if (f.cat && it._cats.indexOf(f.cat) < 0) continue;
      if (f.outcome && it.outcome !== f.outcome) continue;
      if (f.status && it._status !== f.status) continue;
      if (f.protocol && it.protocol !== f.protocol) continue;
      if (f.model && it.model !== f.model) continue;
      if (f.suite && it.suite !== f.suite) continue;
      if (f.k && String(it.k) !== f.k) continue;
      if (q && searchText(it).indexOf(q) < 0) continue;
      out.push(i);
    }
    var key = SORT_KEYS[sortKey] || SORT_KEYS.nodeid;
    out.sort(function (a, b) {
      var x = key(ITEMS[a]), y = key(ITEMS[b]);
      return (x < y ? -1 : x > y ? 1 : a - b) * dir;
    });
    return out;
  }

  var SORT_KEYS = {
    nodeid: function (it) { return it.nodeid; },
    outcome: function (it) { return it.outcome; },
    tests: function (it) { return it._status; },
    instructions: function (it) { return it._failed.length; },
    suite: function (it) { return it.suite; },
    task: function (it) { return it.task_id; },
    model: function (it) { return it.model; },
    protocol: function (it) { return it.protocol; },
    k: function (it) { return it.k; }
  };

  var COLUMNS = [
    ["outcome", "outcome"], ["tests", "tests"], ["instructions", "instructions (final turn)"],
    ["suite", "suite"], ["task", "task"], ["model", "model"], ["protocol", "protocol"], ["k", "k"]
  ];

  function listRow(it, top) {
    var row = h("a", { cls: "vrow o-" + it.outcome, href: itemHref(it.nodeid), style: "top:" + top + "px",
      "data-nodeid": it.nodeid });
    add(row, h("span", { cls: "c-outcome" }, badge(it.outcome, it.outcome)));
    add(row, h("span", { cls: "c-tests" }, badge(it._status, it._status)));
    var chips = h("span", { cls: "c-instructions" });
    var t = finalTurn(it);
    (t ? t.verdicts || [] : []).forEach(function (v) {
      chips.appendChild(h("span", { cls: "chip " + (v.passed === true ? "ok" : v.passed === false ? "bad" : "unk"),
        title: v.id + ": " + (v.passed === true ? "followed" : v.passed === false ? "not followed" : "not judged"),
        text: verdictMark(v.passed) + v.id }));
    });
    add(row, chips);
    add(row, h("span", { cls: "c-suite", text: it.suite }));
    add(row, h("span", { cls: "c-task", text: it.task_id }));
    add(row, h("span", { cls: "c-model", text: it.model }));
    add(row, h("span", { cls: "c-protocol", text: it.protocol }));
    add(row, h("span", { cls: "c-k num", text: String(it.k) }));
    return row;
  }

  function renderItems(main, query) {
    state.filters = {};
    FILTERS.forEach(function (f) { if (query[f[0]]) state.filters[f[0]] = query[f[0]]; });
    if (query.q) state.filters.q = query.q;
    state.sort = SORT_KEYS[query.sort] ? query.sort : "nodeid";
    state.dir = query.dir === "desc" ? -1 : 1;

    var bar = h("form", { cls: "filters", id: "filters", onsubmit: function (e) { e.preventDefault(); } });
    FILTERS.forEach(function (f) {
      var sel = h("select", { name: f[0], id: "filter-" + f[0] });
      sel.appendChild(h("option", { value: "", text: "any " + f[1] }));
      distinct(OPTION_FNS[f[0]]).forEach(function (v) {
        var o = h("option", { value: v, text: v });
        if (state.filters[f[0]] === v) o.selected = true;
        sel.appendChild(o);
      });
      sel.addEventListener("change", function () { setFilter(f[0], sel.value); });
      bar.appendChild(h("label", null, h("span", { text: f[1] }), sel));
    });
    var text = h("input", { type: "search", id: "filter-q", name: "q", placeholder: "text in task or code",
      value: state.filters.q || "" });
    var timer = null;
    text.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { setFilter("q", text.value); }, 120);
    });
    text.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { clearTimeout(timer); setFilter("q", text.value); }
    });
    bar.appendChild(h("label", { cls: "grow" }, h("span", { text: "search" }), text));
    bar.appendChild(h("button", { type: "button", id: "filter-clear", text: "clear",
      onclick: function () { location.hash = "#/items"; } }));
    add(main, bar);
    add(main, h("p", { cls: "count", id: "item-count" }));
    var head = h("div", { cls: "vhead" });
    COLUMNS.forEach(function (c) {
      var mark = state.sort === c[0] ? (state.dir > 0 ? " \u25b2" : " \u25bc") : "";
      head.appendChild(h("span", { cls: "c-" + c[0] + " sortable", "data-sort": c[0], text: c[1] + mark,
        onclick: function () { setSort(c[0]); } }));
    });
    add(main, head);
    var scroller = h("div", { cls: "vlist", id: "item-list" });
    var inner = h("div", { cls: "vinner" });
    scroller.appendChild(inner);
    add(main, scroller);
    scroller.addEventListener("scroll", function () { paint(scroller, inner); });
    refresh();
  }

  function listUrl() {
    var q = {};
    for (var k in state.filters) q[k] = state.filters[k];
    if (state.sort !== "nodeid") q.sort = state.sort;
    if (state.dir < 0) q.dir = "desc";
    var s = buildQuery(q);
    return "#/items" + (s ? "?" + s : "");
  }

  function setFilter(name, value) {
    if (value) state.filters[name] = value; else delete state.filters[name];
    refresh();
    history.replaceState(null, "", listUrl());
  }

  function setSort(key) {
    if (state.sort === key) state.dir = -state.dir; else { state.sort = key; state.dir = 1; }
    var heads = document.querySelectorAll(".vhead .sortable");
    for (var i = 0; i < heads.length; i++) {
      var c = COLUMNS.filter(function (x) { return x[0] === heads[i].getAttribute("data-sort"); })[0];
      heads[i].textContent = c[1] + (state.sort === c[0] ? (state.dir > 0 ? " \u25b2" : " \u25bc") : "");
    }
    refresh();
    history.replaceState(null, "", listUrl());
  }

  /** Re-filter, re-sort and repaint the list; returns the milliseconds it took. */
  function refresh() {
    var t0 = performance.now();
    state.view = applyFilters(state.filters, state.sort, state.dir);
    var scroller = document.getElementById("item-list");
    if (!scroller) return 0;
    var inner = scroller.firstChild;
    inner.style.height = state.view.length * ROW_H + "px";
    scroller.scrollTop = 0;
    document.getElementById("item-count").textContent =
      state.view.length + " of " + ITEMS.length + " items";
    paint(scroller, inner, true);
    var ms = performance.now() - t0;
    document.body.setAttribute("data-filter-ms", ms.toFixed(2));
    return ms;
  }

  function paint(scroller, inner, force) {
    var first = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - OVERSCAN);
    var last = Math.min(state.view.length, Math.ceil((scroller.scrollTop + scroller.clientHeight) / ROW_H) + OVERSCAN);
    if (!force && inner._first === first && inner._last === last) return;
    inner._first = first;
    inner._last = last;
    var frag = document.createDocumentFragment();
    for (var i = first; i < last; i++) frag.appendChild(listRow(ITEMS[state.view[i]], i * ROW_H));
    inner.textContent = "";
    inner.appendChild(frag);
  }

  // ------------------------------------------------------------------ one item

  function paramsText(p) {
    var keys = Object.keys(p || {});
    return keys.length ? keys.map(function (k) { return k + "=" + JSON.stringify(p[k]); }).join(", ") : "";
  }

  /** The violations of a turn by code line: {line: [{rule, message, column, id}]}. */
  function violationsByLine(turn) {
    var out = {};
    (turn.verdicts || []).forEach(function (v) {
      (v.violations || []).forEach(function (x) {
        (out[x.line] = out[x.line] || []).push({ rule: x.rule, message: x.message, column: x.column, id: v.id });
      });
    });
    return out;
  }

  function codeBlock(code, byLine) {
    var box = h("div", { cls: "code" });
    var lines = code.replace(/\n$/, "").split("\n");
    var shown = {};
    lines.forEach(function (text, i) {
      var n = i + 1;
      var vs = byLine ? byLine[n] : null;
      box.appendChild(h("div", { cls: "line" + (vs ? " vio" : ""), "data-line": n },
        h("span", { cls: "no", text: String(n) }), h("span", { cls: "src", text: text || " " })));
      if (vs) {
        shown[n] = true;
        vs.forEach(function (x) {
          box.appendChild(h("div", { cls: "vnote", "data-rule": x.rule, "data-line": n },
            h("span", { cls: "rule", text: x.rule }), " " + x.message + " ",
            h("span", { cls: "iid", text: x.id + " (line " + n + ", column " + x.column + ")" })));
        });
      }
    });
    if (byLine) {
      Object.keys(byLine).forEach(function (n) {
        if (shown[n]) return;
        byLine[n].forEach(function (x) {
          box.appendChild(h("div", { cls: "vnote", "data-rule": x.rule, "data-line": n },
            h("span", { cls: "rule", text: x.rule }), " " + x.message + " ",
            h("span", { cls: "iid", text: x.id + " (line " + n + ")" })));
        });
      });
    }
    return box;
  }

  function messagesBlock(msgs) {
    var box = h("div", { cls: "messages" });
    (msgs || []).forEach(function (m) {
      box.appendChild(h("div", { cls: "msg role-" + m.role },
        h("div", { cls: "role", text: m.role }), h("pre", { cls: "content", text: m.content })));
    });
    return box;
  }

  function verdictTable(turn, instructions) {
    var params = {};
    var cats = {};
    (instructions || []).forEach(function (i) { params[i.id] = i.params; cats[i.id] = i.category; });
    var table = h("table", { cls: "data verdicts" },
      h("thead", null, h("tr", null, ["#", "instruction", "category", "parameters", "verdict", "violations"]
        .map(function (x) { return h("th", { text: x }); }))));
    var body = h("tbody");
    (turn.verdicts || []).forEach(function (v) {
      body.appendChild(h("tr", { cls: v.passed === true ? "ok" : v.passed === false ? "bad" : "unk", "data-iid": v.id },
        h("td", { cls: "num", text: String(v.position) }), h("td", null, h("code", { text: v.id })),
        h("td", { text: cats[v.id] || DATA.instructions[v.id] || "" }),
        h("td", { text: paramsText(params[v.id]) }),
        h("td", { text: verdictMark(v.passed) + (v.passed === true ? " followed" : v.passed === false ? " not followed" : " error: " + (v.error || "")) }),
        h("td", { text: (v.violations || []).map(function (x) { return x.rule + " line " + x.line; }).join(", ") })));
    });
    table.appendChild(body);
    return table;
  }

  function testsBlock(tests) {
    if (!tests) return null;
    var box = h("div", { cls: "tests" }, h("span", { text: "tests: " }), badge(tests.status, tests.status));
    if (tests.failed_tests && tests.failed_tests.length) {
      add(box, h("span", { text: " failing: " + tests.failed_tests.join(", ") }));
    }
    if (tests.message) add(box, h("pre", { cls: "traceback", text: tests.message }));
    return box;
  }

  function diffBlock(a, b) {
    var ops = diffLines(a, b);
    var box = h("div", { cls: "code diff" });
    var changed = 0;
    ops.forEach(function (op) {
      if (op[0] !== " ") changed++;
      box.appendChild(h("div", { cls: "line " + (op[0] === "+" ? "add" : op[0] === "-" ? "del" : "ctx") },
        h("span", { cls: "no", text: op[1] == null ? "" : String(op[1]) }),
        h("span", { cls: "no", text: op[2] == null ? "" : String(op[2]) }),
        h("span", { cls: "src", text: op[0] + " " + op[3] })));
    });
    box.setAttribute("data-changed", String(changed));
    return box;
  }

  function turnSection(it, t, i) {
    var prev = i > 0 ? it.turns[i - 1] : null;
    var unchanged = prev && prev.code != null && t.code != null && prev.code === t.code;
    var nVerd = (t.verdicts || []).length;
    var nOk = (t.verdicts || []).filter(function (v) { return v.passed === true; }).length;
    var sec = h("section", { cls: "turn", id: "turn-" + t.turn, "data-turn": t.turn },
      h("h3", null, it.protocol === "multi" ? "Turn " + t.turn + " (k = " + t.k + ")" : "Reply (k = " + t.k + ")",
        " ", t.tests ? badge("tests " + t.tests.status, t.tests.status) : null, " ",
        badge(nOk + "/" + nVerd + " instructions", nOk === nVerd ? "passed" : "failed"),
        unchanged ? badge("code unchanged from turn " + prev.turn, "unchanged") : null));
    if (t.messages) {
      var det = h("details", { cls: "sent", open: "open" },
        h("summary", { text: i === 0 ? "Prompt (messages sent)" : "Messages added at this turn" }), messagesBlock(t.messages));
      add(sec, det);
    }
    if (t.reply != null) {
      add(sec, h("details", { cls: "reply-box", open: unchanged ? null : "open" },
        h("summary", { text: unchanged ? "Reply (same code as turn " + prev.turn + ")" : "Reply" }),
        h("pre", { cls: "reply", text: t.reply })));
    } else {
      add(sec, h("p", { cls: "notice", text: "The reply is not in this report (written without replies, and not found in the generation cache)." }));
    }
    var ex = t.extraction || {};
    add(sec, h("h4", null, "Extracted code ", h("span", { cls: "meta", text: "method " + ex.method +
      ", " + ex.blocks + " fenced block(s)" + (ex.block != null ? ", block " + (ex.block + 1) + " chosen" : "") +
      (ex.no_code ? ", no code" : "") })));
    if (t.code != null) add(sec, codeBlock(t.code, violationsByLine(t)));
    add(sec, testsBlock(t.tests));
    add(sec, h("h4", { text: "Instructions" }), verdictTable(t, it.instructions));
    if (prev && prev.code != null && t.code != null) {
      if (unchanged) add(sec, h("p", { cls: "unchanged-note", text: "This turn returned the code of turn " + prev.turn + " unchanged." }));
      else add(sec, h("details", { cls: "turn-diff", open: "open" }, h("summary", { text: "Changes from turn " + prev.turn }), diffBlock(prev.code, t.code)));
    }
    return sec;
  }

  function itemHeader(it) {
    return h("div", { cls: "item-head" },
      h("h1", null, h("code", { text: it.nodeid })),
      h("p", null, badge(it.outcome, it.outcome), " ", badge("tests " + it._status, it._status),
        it.no_code ? badge("no code", "no_code") : null,
        " suite ", h("b", { text: it.suite }), ", task ", h("b", { text: it.task_id }), ", model ",
        h("b", { text: it.model }), ", protocol ", h("b", { text: it.protocol }), ", k = " + it.k +
        ", sample " + it.sample, " ", h("a", { cls: "permalink", href: itemHref(it.nodeid), text: "permalink" })));
  }

  function siblings(it) {
    return ITEMS.filter(function (o) {
      return o !== it && o.suite === it.suite && o.task_id === it.task_id && o.sample === it.sample;
    });
  }

  /** Multi-turn: each instruction's verdict at each turn (given ones first, in order). */
  function turnMatrix(it) {
    var ids = [];
    (it.instructions || []).forEach(function (i) { ids.push(i.id); });
    it.turns.forEach(function (t) { (t.verdicts || []).forEach(function (v) { if (ids.indexOf(v.id) < 0) ids.push(v.id); }); });
    var given = {};
    (it.instructions || []).forEach(function (i) { given[i.id] = i.position; });
    var head = h("tr", null, h("th", { text: "instruction" }), it.turns.map(function (t) {
      var prev = t.turn > 0 ? it.turns[t.turn - 1] : null;
      return h("th", { text: "turn " + t.turn + (prev && prev.code === t.code && t.code != null ? " =" : "") });
    }));
    var body = h("tbody");
    ids.forEach(function (id) {
      var row = h("tr", { "data-iid": id }, h("td", null, h("code", { text: id }),
        given[id] ? " (given at turn " + given[id] + ")" : " (not asked for)"));
      it.turns.forEach(function (t) {
        var v = (t.verdicts || []).filter(function (x) { return x.id === id; })[0];
        row.appendChild(h("td", { cls: v ? (v.passed === true ? "ok" : v.passed === false ? "bad" : "unk") : "",
          text: v ? verdictMark(v.passed) : "" }));
      });
      body.appendChild(row);
    });
    return h("div", { cls: "scroll" }, h("table", { cls: "data matrix", id: "turn-matrix" },
      h("caption", { text: "Instructions followed at each turn (= : code unchanged from the turn before)" }),
      h("thead", null, head), body));
  }

  function renderItem(main, id) {
    var it = BY_ID[id];
    if (!it) { add(main, h("p", { cls: "notice", text: "No item " + id + " in this report." })); return; }
    add(main, itemHeader(it));
    if (it.error) add(main, h("p", { cls: "notice" }, "Infrastructure error (" + it.error.kind + "), not a model failure: " + it.error.message));
    if (it.skip_reason) add(main, h("p", { cls: "notice", text: "Skipped: " + it.skip_reason }));
    var sib = siblings(it);
    if (sib.length) {
      var sel = h("select", { id: "compare-with" }, h("option", { value: "", text: "compare with\u2026" }));
      sib.forEach(function (o) { sel.appendChild(h("option", { value: o.nodeid, text: o.model + " " + o.protocol + " k=" + o.k })); });
      sel.addEventListener("change", function () { if (sel.value) location.hash = compareHref(it.nodeid, sel.value); });
      add(main, h("p", { cls: "compare-pick" }, "Same task: ", sel));
    }
    if ((it.turns || []).length > 1) add(main, turnMatrix(it));
    if ((it.turns || []).length > 1) {
      var nav = h("p", { cls: "turn-nav" }, "Turns: ");
      it.turns.forEach(function (t, i) {
        var prev = i > 0 ? it.turns[i - 1] : null;
        var same = prev && prev.code === t.code && t.code != null;
        add(nav, h("a", { href: itemHref(it.nodeid), text: "turn " + t.turn + (same ? " (unchanged)" : ""),
          onclick: function (e) { e.preventDefault(); document.getElementById("turn-" + t.turn).scrollIntoView(); } }), " ");
      });
      add(main, nav);
    }
    (it.turns || []).forEach(function (t, i) { add(main, turnSection(it, t, i)); });
    if (!(it.turns || []).length && it.failure) add(main, h("pre", { cls: "traceback", text: it.failure }));
  }

  // ------------------------------------------------------------------ compare

  function renderCompare(main, a, b) {
    var A = BY_ID[a], B = BY_ID[b];
    if (!A || !B) { add(main, h("p", { cls: "notice", text: "No item " + (!A ? a : b) + " in this report." })); return; }
    add(main, h("h1", { text: "Compare: " + A.task_id }));
    var ids = [];
    [A, B].forEach(function (it) { (finalTurn(it) || { verdicts: [] }).verdicts.forEach(function (v) { if (ids.indexOf(v.id) < 0) ids.push(v.id); }); });
    var head = h("tr", null, h("th", { text: "" }), h("th", null, h("a", { href: itemHref(A.nodeid), text: A.model + " " + A.protocol + " k=" + A.k })),
      h("th", null, h("a", { href: itemHref(B.nodeid), text: B.model + " " + B.protocol + " k=" + B.k })));
    var body = h("tbody");
    body.appendChild(h("tr", null, h("td", { text: "outcome" }), h("td", null, badge(A.outcome, A.outcome)), h("td", null, badge(B.outcome, B.outcome))));
    body.appendChild(h("tr", null, h("td", { text: "tests" }), h("td", null, badge(A._status, A._status)), h("td", null, badge(B._status, B._status))));
    ids.forEach(function (id) {
      function v(it) {
        var p = it._verdicts[id];
        return h("td", { cls: p === true ? "ok" : p === false ? "bad" : "unk", text: p === undefined ? "not judged" : verdictMark(p) + (p ? " followed" : " not followed") });
      }
      body.appendChild(h("tr", { "data-iid": id }, h("td", null, h("code", { text: id })), v(A), v(B)));
    });
    add(main, h("table", { cls: "data compare", id: "compare-table" }, h("thead", null, head), body));
    var ca = (finalTurn(A) || {}).code, cb = (finalTurn(B) || {}).code;
    add(main, h("h2", { text: "Code (final turns): " + A.nodeid + " \u2192 " + B.nodeid }));
    if (ca != null && cb != null) add(main, diffBlock(ca, cb));
    else add(main, h("p", { cls: "notice", text: "The code of one of the items is not in this report." }));
    var cols = h("div", { cls: "side" });
    [A, B].forEach(function (it) {
      var t = finalTurn(it);
      add(cols, h("div", null, h("h3", null, h("a", { href: itemHref(it.nodeid), text: it.nodeid })),
        t && t.code != null ? codeBlock(t.code, violationsByLine(t)) : null));
    });
    add(main, cols);
  }

  // ------------------------------------------------------------------ diff (LCS over lines)

  /** Line diff of ``a`` -> ``b``: a list of [op, lineA, lineB, text], op one of " ", "-", "+". */
  function diffLines(a, b) {
    var x = a.replace(/\n$/, "").split("\n"), y = b.replace(/\n$/, "").split("\n");
    var pre = 0;
    while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
    var suf = 0;
    while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
    var xs = x.slice(pre, x.length - suf), ys = y.slice(pre, y.length - suf);
    var n = xs.length, m = ys.length, out = [], i, j;
    for (i = 0; i < pre; i++) out.push([" ", i + 1, i + 1, x[i]]);
    if (n * m > 4e6) { // too large for the table: all removed, then all added
      for (i = 0; i < n; i++) out.push(["-", pre + i + 1, null, xs[i]]);
      for (j = 0; j < m; j++) out.push(["+", null, pre + j + 1, ys[j]]);
    } else {
      var w = m + 1, L = new Uint32Array((n + 1) * w);
      for (i = n - 1; i >= 0; i--) {
        for (j = m - 1; j >= 0; j--) {
          L[i * w + j] = xs[i] === ys[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && xs[i] === ys[j]) { out.push([" ", pre + i + 1, pre + j + 1, xs[i]]); i++; j++; }
        else if (i < n && (j === m || L[(i + 1) * w + j] >= L[i * w + j + 1])) { out.push(["-", pre + i + 1, null, xs[i]]); i++; }
        else { out.push(["+", null, pre + j + 1, ys[j]]); j++; }
      }
    }
    for (i = 0; i < suf; i++) out.push([" ", x.length - suf + i + 1, y.length - suf + i + 1, x[x.length - suf + i]]);
    return out;
  }

  // ------------------------------------------------------------------ start

  function start() {
    var t0 = performance.now();
    load();
    document.getElementById("title").textContent = DATA.title;
    document.title = DATA.title;
    document.getElementById("footer").textContent = ITEMS.length + " items \u00b7 pytest-vibecheck " + DATA.version;
    window.addEventListener("hashchange", route);
    var t1 = performance.now();
    route();
    TIMES.viewMs = performance.now() - t1;
    TIMES.scriptStartAt = t0;
    // for benchmarks and tests: the same functions the page's controls call
    window.vibecheckViewer = {
      items: ITEMS.length,
      startMs: performance.now() - t0, // parse + prepare + first view
      times: TIMES,
      readyAt: performance.now(), // ms since navigation start
      setFilter: setFilter,
      clearFilters: function () { state.filters = {}; },
      filter: function (f) { return applyFilters(f || {}, state.sort, state.dir).length; },
      rows: function (f) {
        return applyFilters(f || {}, state.sort, state.dir).map(function (i) { return ITEMS[i]; });
      },
      diffLines: diffLines
    };
    document.body.setAttribute("data-ready", "1");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
