/* The confusion and meta-inference pages of a site written by `nlieval view` (part of
   nlieval, Apache-2.0; no library, no build step). Their tables are the text that
   `nlieval sci-report` and `nlieval infer report` print, cell for cell, and the labels
   each reading allows come from the same decision procedure (nlieval.view.sci): nothing
   is computed here. Every text from the data (premises, labels, model names) is put on
   the page with textContent, never parsed as markup. */
"use strict";
(function () {
  var PAGE_SIZE = 50;

  var el = window.NLIEVAL.el;  // app.js's, loaded before this script
  var clear = window.NLIEVAL.clear;

  function commandLine(text, id) {
    var said = el("p", "as printed by: ", "runs");
    var code = el("code", text);
    code.id = id;
    said.appendChild(code);
    return said;
  }

  function table(header, rows, id, cls) {
    var t = el("table", null, cls), head = el("tr"), body = el("tbody"), thead = el("thead");
    if (id) t.id = id;
    header.forEach(function (h) { head.appendChild(el("th", h)); });
    thead.appendChild(head);
    t.appendChild(thead);
    rows.forEach(function (row) {
      var tr = el("tr");
      row.forEach(function (c) { tr.appendChild(el("td", c)); });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }

  // A confusion matrix's cells shaded by their share of the gold row: the counts are the
  // numbers the data carries beside each text (`values`), never read back from the text.
  function shade(t, values) {
    Array.prototype.forEach.call(t.tBodies[0].rows, function (tr, r) {
      var cells = Array.prototype.slice.call(tr.cells, 1);
      var counts = values[r].slice(1).map(function (v) { return v || 0; });
      var total = counts.reduce(function (a, v) { return a + v; }, 0);
      cells.forEach(function (c, i) {
        var share = total ? counts[i] / total : 0;
        c.style.backgroundColor = "rgba(51, 51, 85, " + (0.75 * share).toFixed(3) + ")";
        if (share > 0.5) c.style.color = "#fff";
      });
    });
    return t;
  }

  // Lines of text before a table: `### ...` a heading, the others notes; before a
  // confusion matrix (its `kind`), its title, the last line, is the heading.
  function blockText(b, page) {
    var titled = b.kind === "confusion";
    b.text.forEach(function (line, n) {
      if (line.indexOf("### ") === 0) page.appendChild(el("h3", line.slice(4)));
      else page.appendChild(el(titled && n === b.text.length - 1 ? "h3" : "p", line, "note"));
    });
  }
  function blockNotes(b, page) {
    (b.notes || []).forEach(function (line) { page.appendChild(el("p", line, "note")); });
  }

  /* ------------------------------------------------------------- confusion */
  function renderConfusion(meta, page) {
    var sci = meta.sci;
    if (!sci) return false;
    page.appendChild(el("h2", "Scientific NLI: scores and confusion matrices"));
    page.appendChild(commandLine(sci.command, "sci-command"));
    var at = 0, matrix = 0;
    sci.blocks.forEach(function (b) {
      blockText(b, page);
      if (!b.header) return;
      if (b.kind !== "confusion") {
        page.appendChild(table(b.header, b.rows, "sci-table-" + at++, "grid"));
        blockNotes(b, page);
        return;
      }
      var id = "confusion-" + matrix++;
      page.appendChild(shade(table(b.header, b.rows, id, "confusion"), b.values));
      blockNotes(b, page);
      if (b.runs.length) {
        var box = el("details");
        box.appendChild(el("summary", "each of its " + b.runs.length + " runs"));
        b.runs.forEach(function (run, m) {
          box.appendChild(el("h4", run.title));
          box.appendChild(shade(table(b.header, run.rows, id + "-run-" + m, "confusion"), run.values));
        });
        page.appendChild(box);
      }
    });
    return true;
  }

  /* --------------------------------------------------------- meta-inference */
  function sourceCell(sources) {
    var td = el("td");
    sources.forEach(function (s) {
      var line = el("div", null, "source");
      line.appendChild(el("span", s.id, "source-id"));
      line.appendChild(el("span", " " + (s.label === null ? "(no label)" : s.label) + ": ", "source-label"));
      if (s.premise === null) {
        line.appendChild(el("span", "(its text is in none of these folders' tasks)", "note"));
      } else {
        line.appendChild(el("span", s.premise, "source-premise"));
        line.appendChild(el("span", " / "));
        line.appendChild(el("span", s.hypothesis, "source-hypothesis"));
      }
      td.appendChild(line);
    });
    return td;
  }

  function allowedText(r) {
    return r.inferred + " (allowed: " + (r.allowed.length ? r.allowed.join(", ") : "none") + ")";
  }

  function itemRow(it, readings) {
    var tr = el("tr");
    tr.dataset.id = it.id;
    [it.id, it.pattern, it.input, it.target, it.premise, it.hypothesis]
      .forEach(function (v) { tr.appendChild(el("td", v)); });
    tr.appendChild(sourceCell(it.sources));
    readings.forEach(function (name) { tr.appendChild(el("td", allowedText(it.readings[name]), "reading")); });
    var preds = el("td");
    it.predictions.forEach(function (p) {
      var line = el("div", null, "prediction");
      line.appendChild(el("span", p.point + ": "));
      line.appendChild(el("span", p.pred === null ? "(none)" : p.pred, "pred"));
      line.appendChild(el("span", "; consistent under " + (p.consistent.length ? p.consistent.join(", ") : "none")));
      if (p.inconsistent.length) {
        line.appendChild(el("span", "; not under " + p.inconsistent.join(", ")));
        line.classList.add("inconsistent");
      }
      preds.appendChild(line);
    });
    tr.appendChild(preds);
    return tr;
  }

  function itemBrowser(run, n, page) {
    var state = { pattern: "", page: 0 };
    page.appendChild(el("h3", "Inferred items (" + run.items.length + ")"));
    var controls = el("p");
    var label = el("label", "pattern ");
    var select = el("select");
    select.id = "infer-" + n + "-pattern";
    select.appendChild(el("option", "any"));
    select.options[0].value = "";
    var seen = {};
    run.items.forEach(function (it) {
      if (!seen[it.pattern]) { seen[it.pattern] = true; var o = el("option", it.pattern); o.value = it.pattern; select.appendChild(o); }
    });
    label.appendChild(select);
    controls.appendChild(label);
    var count = el("span");
    count.id = "infer-" + n + "-count";
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(count);
    controls.appendChild(document.createTextNode(" items "));
    var prev = el("button", "previous"), next = el("button", "next"), where = el("span");
    prev.type = next.type = "button";
    prev.id = "infer-" + n + "-prev";
    next.id = "infer-" + n + "-next";
    where.id = "infer-" + n + "-page";
    [prev, where, next].forEach(function (x) { controls.appendChild(x); });
    page.appendChild(controls);
    var header = ["id", "pattern", "input", "target", "premise", "hypothesis", "input items"]
      .concat(run.readings.map(function (r) { return r + " allows"; })).concat(["predictions"]);
    var t = table(header, [], "infer-" + n + "-items", "inferred");
    page.appendChild(t);

    function render() {
      var chosen = run.items.filter(function (it) { return !state.pattern || it.pattern === state.pattern; });
      var pages = Math.max(1, Math.ceil(chosen.length / PAGE_SIZE));
      state.page = Math.min(state.page, pages - 1);
      count.textContent = String(chosen.length);
      where.textContent = " page " + (state.page + 1) + " of " + pages + " ";
      var body = t.tBodies[0];
      clear(body);
      chosen.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE)
        .forEach(function (it) { body.appendChild(itemRow(it, run.readings)); });
    }
    select.addEventListener("change", function () { state.pattern = select.value; state.page = 0; render(); });
    prev.addEventListener("click", function () { if (state.page > 0) { state.page--; render(); } });
    next.addEventListener("click", function () { state.page++; render(); });
    render();
  }

  function renderInferred(meta, page) {
    var runs = meta.infer || [];
    if (!runs.length) return false;
    runs.forEach(function (run, n) {
      var box = el("article", null, "run");
      box.appendChild(el("h2", run.folder));
      var pairs = [["inferred items", run.items_folder],
                   ["source run", run.source_run === null ? "none (no folder holds the input items: no filtered table)" : run.source_run]];
      if (run.coverage) pairs.push(["source items with a record", run.coverage[0] + " of " + run.coverage[1]]);
      var list = el("dl");
      pairs.forEach(function (p) { list.appendChild(el("dt", p[0])); list.appendChild(el("dd", p[1])); });
      box.appendChild(list);
      box.appendChild(commandLine(run.command, "infer-command-" + n));
      var at = 0;
      run.blocks.forEach(function (b) {
        blockText(b, box);
        if (b.header) box.appendChild(table(b.header, b.rows, "infer-" + n + "-table-" + at++, "grid"));
        blockNotes(b, box);
      });
      itemBrowser(run, n, box);
      page.appendChild(box);
    });
    return true;
  }

  window.NLIEVAL.page("confusion", renderConfusion);
  window.NLIEVAL.page("inferred", renderInferred);
})();
