/* The pages of a site written by `nlieval view` (part of nlieval, Apache-2.0; no library,
   no build step). Every text that comes from the data (premises, model names, prompts,
   configurations) is put on the page with textContent, never parsed as markup. The data
   comes as script files that call NLIEVAL.meta and NLIEVAL.chunk: a file:// page cannot
   fetch JSON in Chromium, but it can load a script. */
"use strict";
(function () {
  var META = null;
  var added = [];  // pages of other scripts (sci.js): [name, render(meta, section) -> shown]
  var chunks = {};
  var waiting = {};
  var PAGE_SIZE = 50;
  var state = { filters: {}, fields: {}, search: "", sort: "id", descending: false,
                page: 0, order: [], token: 0, dirty: false };

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function num(x, digits) {
    return x === null || x === undefined ? "–" : Number(x).toFixed(digits === undefined ? 3 : digits);
  }
  function $(id) { return document.getElementById(id); }

  window.NLIEVAL = {
    meta: function (data) { META = data; start(); },
    chunk: function (n, data) {
      chunks[n] = data;
      (waiting[n] || []).forEach(function (done) { done[0](data); });
      delete waiting[n];
    },
    page: function (name, render) { PAGES.push(name); added.push([name, render]); },
    // The page's two ways of making elements, for the pages of other scripts (sci.js):
    // text goes in through textContent only.
    el: el,
    clear: clear
  };

  function loadChunk(n) {
    if (chunks[n]) return Promise.resolve(chunks[n]);
    return new Promise(function (resolve, reject) {
      var first = !waiting[n];
      (waiting[n] = waiting[n] || []).push([resolve, reject]);
      if (!first) return;
      var script = document.createElement("script");
      script.src = "data/chunk-" + String(n).padStart(5, "0") + ".js";
      script.onerror = function () {
        (waiting[n] || []).forEach(function (done) { done[1](new Error("cannot load " + script.src)); });
        delete waiting[n];
      };
      document.body.appendChild(script);
    });
  }
  function chunkCount() { return Math.ceil(META.items.count / META.items.chunk); }
  function loadAll() {
    var all = [];
    for (var n = 0; n < chunkCount(); n++) all.push(loadChunk(n));
    return Promise.all(all);
  }
  function detail(i) {
    var part = chunks[Math.floor(i / META.items.chunk)];
    return part ? part.rows[i % META.items.chunk] : null;
  }

  /* ---------------------------------------------------------------- pages */
  var PAGES = ["overview", "results", "figures", "items"];
  function show(page) {
    PAGES.forEach(function (p) {
      $("page-" + p).hidden = p !== page;
      $("tab-" + p).classList.toggle("active", p === page);
    });
  }

  function start() {
    document.querySelectorAll("nav button").forEach(function (b) {
      b.addEventListener("click", function () {
        show(b.dataset.page);
        location.hash = b.dataset.page;
      });
    });
    renderOverview();
    renderResults();
    renderFigures();
    setupItems();
    // A page without data keeps its tab hidden.
    added.forEach(function (a) { $("tab-" + a[0]).hidden = !a[1](META, $("page-" + a[0])); });
    var wanted = location.hash.slice(1);
    show(PAGES.indexOf(wanted) >= 0 && !$("tab-" + wanted).hidden ? wanted : "overview");
  }

  function dl(pairs) {
    var list = el("dl");
    pairs.forEach(function (p) { list.appendChild(el("dt", p[0])); list.appendChild(el("dd", p[1])); });
    return list;
  }
  function fold(title, text) {
    var box = el("details");
    box.appendChild(el("summary", title));
    box.appendChild(el("pre", text));
    return box;
  }

  function renderOverview() {
    var page = $("page-overview");
    page.appendChild(el("h2", META.runs.length + " run folder" + (META.runs.length === 1 ? "" : "s")));
    META.runs.forEach(function (run) {
      var box = el("article", null, "run");
      box.appendChild(el("h3", run.folder));
      box.appendChild(dl([
        ["models", run.models.join(", ")],
        ["tasks", run.tasks.join(", ")],
        ["sweep points", run.points.map(function (p) { return "k=" + p[0] + " seed=" + p[1]; }).join(", ")],
        ["records", run.records]
      ]));
      box.appendChild(el("pre", run.summary, "summary"));
      box.appendChild(fold("config.json", JSON.stringify(run.config, null, 2)));
      box.appendChild(fold("provenance (" + run.provenance.length + " entries, fingerprints)",
                           run.provenance.map(function (p) { return JSON.stringify(p, null, 2); }).join("\n")));
      page.appendChild(box);
    });
    var skipped = META.skipped || [];
    if (skipped.length) {
      page.appendChild(el("h2", skipped.length + " folder" + (skipped.length === 1 ? "" : "s") + " not shown"));
      var list = el("ul", null, "skipped");
      skipped.forEach(function (s) { list.appendChild(el("li", s.folder + ": " + s.reason)); });
      page.appendChild(list);
    }
  }

  function renderResults() {
    var page = $("page-results");
    META.grids.forEach(function (g, at) {
      page.appendChild(el("h2", g.title));
      var said = el("p", "as printed by: ", "runs");
      var command = el("code", g.command);
      command.id = "grid-command-" + at;
      said.appendChild(command);
      page.appendChild(said);
      var table = el("table", null, "grid");
      table.id = "grid-" + at;
      var head = el("tr");
      var body = el("tbody");
      g.header.forEach(function (h, col) {
        var th = el("th", h);
        th.title = "sort by this column";
        th.addEventListener("click", function () { sortGrid(body, col, th); });
        head.appendChild(th);
      });
      var thead = el("thead");
      thead.appendChild(head);
      table.appendChild(thead);
      g.rows.forEach(function (row, r) {
        var tr = el("tr");
        tr.values = g.values[r];  // the numbers behind the texts (null: text only)
        row.forEach(function (c) { tr.appendChild(el("td", c)); });
        body.appendChild(tr);
      });
      table.appendChild(body);
      page.appendChild(table);
      g.notes.forEach(function (n) { page.appendChild(el("p", n, "note")); });
    });
  }

  /* The figures of `nlieval figure` and `nlieval plots`, SVG files of the site shown by
     <img> (an image runs no script); the file name is the site's own, never the data's. */
  function renderFigures() {
    var page = $("page-figures"), figs = META.figures || { shown: [], notes: [] };
    figs.shown.forEach(function (f, at) {
      var box = el("figure", null, "figure");
      box.id = "figure-" + at;
      var img = el("img");
      img.src = f.file;
      img.alt = f.title;
      box.appendChild(img);
      var caption = el("figcaption", f.title + ", as drawn by: ");
      caption.appendChild(el("code", f.command));
      box.appendChild(caption);
      page.appendChild(box);
    });
    figs.notes.forEach(function (n) { page.appendChild(el("p", n, "note")); });
  }

  function sortGrid(body, col, th) {
    var down = th.dataset.order !== "descending";
    th.dataset.order = down ? "descending" : "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      var nx = a.values[col], ny = b.values[col];
      var c = nx !== null && ny !== null ? nx - ny : x < y ? -1 : x > y ? 1 : 0;
      return down ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  /* ---------------------------------------------------------------- items */
  function sortKeys() {
    var ix = META.items;
    var keys = [["id", "task, k, seed, id", function (i) { return i; }],
                ["task", "task", function (i) { return ix.task[i]; }],
                ["gold", "gold", function (i) { return ix.gold[i]; }],
                ["majority", "ChaosNLI majority", function (i) { return ix.majority[i]; }],
                ["entropy", "human entropy", function (i) { return ix.entropy[i]; }],
                ["wrong", "models wrong", function (i) { return ix.wrong[i]; }]];
    ix.models.forEach(function (m) {
      keys.push(["pred:" + m, m + ": prediction", function (i) { return ix.preds[m][i]; }]);
      keys.push(["entropy:" + m, m + ": entropy", function (i) { return ix.model_entropy[m][i]; }]);
      keys.push(["js:" + m, m + ": JS distance", function (i) { return ix.js[m][i]; }]);
    });
    ix.fields.forEach(function (f) {
      keys.push(["field:" + f, f, function (i) { return ix.values[f][i]; }]);
    });
    return keys;
  }

  function setupItems() {
    var ix = META.items;
    $("item-total").textContent = String(ix.count);
    (ix.textless || []).forEach(function (line) {
      $("page-items").insertBefore(el("p", line, "note textless"), $("item-controls"));
    });
    var filters = $("item-filters");
    ix.filters.forEach(function (f) {
      var label = el("label");
      var box = el("input");
      box.type = "checkbox";
      box.id = "filter-" + f;
      box.addEventListener("change", function () { state.filters[f] = box.checked; update(true); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + f));
      filters.appendChild(label);
    });
    var fields = $("item-fields");
    if (!ix.fields.length) fields.hidden = true;
    ix.fields.forEach(function (f) {
      var label = el("label", f + " ");
      var select = el("select");
      select.id = "field-" + f;
      select.appendChild(el("option", "any"));
      select.options[0].value = "";
      var seen = {};
      ix.values[f].forEach(function (v) { if (v !== null) seen[v] = true; });
      Object.keys(seen).sort().forEach(function (v) {
        var opt = el("option", v);
        opt.value = v;
        select.appendChild(opt);
      });
      select.addEventListener("change", function () {
        if (select.selectedIndex === 0) delete state.fields[f]; else state.fields[f] = select.value;
        update(true);
      });
      label.appendChild(select);
      fields.appendChild(label);
    });
    var sort = $("item-sort");
    state.keys = {};
    sortKeys().forEach(function (k) {
      var opt = el("option", k[1]);
      opt.value = k[0];
      sort.appendChild(opt);
      state.keys[k[0]] = k[2];
    });
    sort.addEventListener("change", function () { state.sort = sort.value; update(true); });
    $("item-descending").addEventListener("change", function () {
      state.descending = $("item-descending").checked; update(true);
    });
    var typing = null;
    $("item-search").addEventListener("input", function () {
      document.body.dataset.ready = "no";
      clearTimeout(typing);
      typing = setTimeout(function () { state.search = $("item-search").value; update(true); }, 150);
    });
    $("item-controls").addEventListener("submit", function (e) { e.preventDefault(); });
    $("item-prev").addEventListener("click", function () { if (state.page > 0) { state.page--; update(false); } });
    $("item-next").addEventListener("click", function () {
      if ((state.page + 1) * PAGE_SIZE < state.order.length) { state.page++; update(false); }
    });
    var head = el("tr");
    ["id", "task", "k", "seed", "premise", "hypothesis", "gold", "majority", "humans"]
      .concat(ix.models).forEach(function (h) { head.appendChild(el("th", h)); });
    $("item-table").tHead.appendChild(head);
    update(true);
  }

  function matching() {
    var ix = META.items, need = 0, q = state.search.toLowerCase(), out = [];
    ix.filters.forEach(function (f, b) { if (state.filters[f]) need |= 1 << b; });
    var chosen = Object.keys(state.fields);
    for (var i = 0; i < ix.count; i++) {
      if ((ix.flags[i] & need) !== need) continue;
      var ok = true;
      for (var c = 0; c < chosen.length; c++) {
        if (ix.values[chosen[c]][i] !== state.fields[chosen[c]]) { ok = false; break; }
      }
      if (!ok) continue;
      if (q) {
        var d = detail(i);
        var texts = d.texts || {};
        var text = [ix.id[i], d.premise, d.hypothesis].concat(d.choices)
          .concat(Object.keys(texts).map(function (f) { return texts[f]; })).join("\n").toLowerCase();
        if (text.indexOf(q) < 0) continue;
      }
      out.push(i);
    }
    var key = state.keys[state.sort], sign = state.descending ? -1 : 1;
    out.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === y) return a - b;
      if (x === null || x === undefined) return 1;  // no value: last either way
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    return out;
  }

  function update(again) {
    // A change of the filters is kept until an update gets to apply it (a newer update
    // may overtake this one while a chunk loads).
    if (again) state.dirty = true;
    var token = ++state.token;
    document.body.dataset.ready = "no";  // for a reader (a test) waiting on the rows
    $("item-loading").hidden = false;
    var ready = state.search ? loadAll() : Promise.resolve();
    return ready.then(function () {
      if (token !== state.token) return null;
      if (state.dirty) { state.order = matching(); state.page = 0; state.dirty = false; }
      var shown = state.order.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
      var need = {};
      shown.forEach(function (i) { need[Math.floor(i / META.items.chunk)] = true; });
      return Promise.all(Object.keys(need).map(function (n) { return loadChunk(Number(n)); }))
        .then(function () { if (token === state.token) renderRows(shown); });
    }).then(function () {
      if (token === state.token) {
        $("item-loading").hidden = true;
        document.body.dataset.ready = "yes";
      }
    }, function (err) {
      $("item-loading").textContent = "(" + err.message + ")";
    });
  }

  function bar(labels, values) {
    var total = values.reduce(function (a, b) { return a + b; }, 0) || 1;
    var box = el("span", null, "bar");
    labels.forEach(function (lab, k) {
      var seg = el("span", null, "seg seg-" + (k % 4));
      seg.style.width = (100 * values[k] / total).toFixed(2) + "%";
      seg.title = lab + " " + (values[k] / total).toFixed(3);
      box.appendChild(seg);
    });
    return box;
  }
  function shares(labels, values) {
    // As the items listing prints counts (analyses.label_counts_text): "=" between a
    // label and its share, so alpha-NLI's labels 1 and 2 never run into a number; a
    // label is cut to its first letter only when those letters tell the labels apart.
    var total = values.reduce(function (a, b) { return a + b; }, 0) || 1;
    var first = labels.map(function (lab) { return lab.slice(0, 1).toUpperCase(); });
    var cut = labels.every(function (lab) { return /^[A-Za-z]/.test(lab); }) &&
      first.every(function (f, k) { return first.indexOf(f) === k; });
    return labels.map(function (lab, k) {
      return (cut ? first[k] : lab) + "=" + Math.round(100 * values[k] / total) + "%";
    }).join(" ");
  }

  function renderRows(shown) {
    var ix = META.items, body = $("item-table").tBodies[0];
    clear(body);
    var pages = Math.max(1, Math.ceil(state.order.length / PAGE_SIZE));
    $("item-count").textContent = String(state.order.length);
    $("item-page").textContent = "page " + (state.page + 1) + " of " + pages;
    shown.forEach(function (i) {
      var d = detail(i), tr = el("tr");
      tr.dataset.index = String(i);
      [ix.id[i], ix.task[i], ix.k[i], ix.seed[i], d.premise, d.hypothesis, ix.gold[i],
       ix.majority[i]].forEach(function (v, at) {
        // The two texts wrap at a readable width; the short cells do not wrap at all.
        tr.appendChild(el("td", v === null ? "–" : v, at === 4 || at === 5 ? "text" : "short"));
      });
      var humans = el("td");
      if (d.human) {
        var labs = Object.keys(d.human), counts = labs.map(function (l) { return d.human[l]; });
        humans.appendChild(bar(labs, counts));
        humans.appendChild(el("span", shares(labs, counts), "shares"));
      }
      tr.appendChild(humans);
      ix.models.forEach(function (m) {
        var td = el("td"), rec = d.models.filter(function (r) { return r.name === m; })[0];
        if (rec) {
          td.appendChild(el("span", rec.pred === null ? "(none)" : rec.pred, "pred"));
          td.appendChild(bar(rec.labels, rec.probs));
          if (rec.pred !== ix.gold[i] && ix.gold[i] !== null) td.classList.add("wrong");
        }
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { showDetail(i); });
      body.appendChild(tr);
    });
  }

  function showDetail(i) {
    var ix = META.items, d = detail(i), box = $("item-detail");
    clear(box);
    box.hidden = false;
    box.appendChild(el("h2", ix.task[i] + " " + ix.id[i]));
    var pairs = [["k", ix.k[i]], ["seed", ix.seed[i]]];
    var alpha = d.choices.length > 0;
    pairs.push([alpha ? "observation 1" : "premise", d.premise]);
    pairs.push([alpha ? "observation 2" : "hypothesis", d.hypothesis]);
    d.choices.forEach(function (c, k) { pairs.push(["hypothesis " + (k + 1), c]); });
    pairs.push(["gold", ix.gold[i] === null ? "–" : ix.gold[i]]);
    pairs.push(["ChaosNLI majority", ix.majority[i] === null ? "–" : ix.majority[i]]);
    if (d.human) {
      pairs.push(["human labels", Object.keys(d.human).map(function (l) { return l + " " + d.human[l]; }).join(", ")]);
      pairs.push(["human entropy (bits)", num(ix.entropy[i])]);
    }
    ix.fields.forEach(function (f) { if (ix.values[f][i] !== null) pairs.push([f, ix.values[f][i]]); });
    Object.keys(d.texts || {}).forEach(function (f) { pairs.push([f, d.texts[f]]); });
    box.appendChild(dl(pairs));
    d.models.forEach(function (rec) {
      var part = el("article", null, "model");
      part.appendChild(el("h3", rec.name));
      part.appendChild(dl([["prediction", rec.pred === null ? "(none)" : rec.pred],
                           ["entropy (bits)", num(rec.entropy)],
                           ["JS distance to the humans", num(rec.js)]]));
      var table = el("table", null, "options"), head = el("tr");
      ["label", "probability", "log-likelihood", ""].forEach(function (h) { head.appendChild(el("th", h)); });
      table.appendChild(head);
      rec.labels.forEach(function (lab, k) {
        var tr = el("tr");
        tr.appendChild(el("td", lab));
        tr.appendChild(el("td", num(rec.probs[k])));
        tr.appendChild(el("td", num(rec.loglik[k])));
        var cell = el("td");
        cell.appendChild(bar([lab, ""], [rec.probs[k], 1 - rec.probs[k]]));
        tr.appendChild(cell);
        table.appendChild(tr);
      });
      part.appendChild(table);
      var prompt = fold("prompt", rec.prompt ? rec.prompt : "(the record holds no prompt)");
      prompt.classList.add("prompt");
      part.appendChild(prompt);
      box.appendChild(part);
    });
    box.scrollIntoView();
  }
})();
