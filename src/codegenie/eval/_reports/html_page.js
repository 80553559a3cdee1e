// The script of codegenie-bench's --format html page (ASCII only: the page hashes it).
// It reads the rows from the page's JSON block and builds the table with textContent
// only: whatever a string holds, it is shown as text, never parsed as markup.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const columns = data.columns;
  const KNOWN = new Set([
    "passed", "failed", "missing", "error", "warning",
    "regressed", "improved", "unchanged", "new", "gone",
  ]);
  const NAMED = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };
  // Control characters, DEL, C1, U+2028/U+2029 and the bidirectional controls, as text
  // output escapes them; a block of text (a stderr tail) keeps its newlines and tabs.
  const INLINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
  const BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

  const escapeOne = (c) => {
    if (NAMED[c]) return NAMED[c];
    const code = c.charCodeAt(0);
    return code < 0x100
      ? "\\x" + code.toString(16).padStart(2, "0")
      : "\\u" + code.toString(16).padStart(4, "0");
  };
  const shown = (text, block) => String(text).replace(block ? BLOCK : INLINE, escapeOne);

  const make = (tag, className, text) => {
    const element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined && text !== null) element.textContent = text;
    return element;
  };
  const statusClass = (value) => "st-" + (KNOWN.has(value) ? value : "other");

  const display = (value, column) => {
    if (value === null || value === undefined) return "-";
    switch (column.type) {
      case "number":
        return typeof value === "number" ? value.toFixed(column.digits || 0) : "-";
      case "ratio":
        return Array.isArray(value) ? value[0] + "/" + value[1] : "-";
      case "list":
        return Array.isArray(value) ? value.map((item) => shown(item, false)).join(", ") : "-";
      default:
        return shown(value, false);
    }
  };

  const sortKey = (value, column) => {
    if (value === null || value === undefined) return null;
    switch (column.type) {
      case "number":
        return typeof value === "number" ? value : null;
      case "ratio":
        return Array.isArray(value) && value[1] ? value[0] / value[1] : null;
      case "list":
        return Array.isArray(value) ? value.join(", ") : null;
      default:
        return String(value);
    }
  };

  const cellOf = (value, column) => {
    const numeric = column.type === "number" || column.type === "ratio";
    const empty = value === null || value === undefined;
    const td = make("td", numeric ? "num" : column.wide ? "wide" : column.key ? "key" : "text");
    if (empty) td.classList.add("none");
    if (column.type === "status" && !empty) {
      td.append(make("span", "st " + statusClass(value), shown(value, false)));
    } else {
      td.textContent = display(value, column);
    }
    return td;
  };

  const headerOf = (cols, sortable) => {
    const tr = make("tr");
    const corner = make("th", "corner");
    corner.setAttribute("aria-label", "details");
    tr.append(corner);
    cols.forEach((column, index) => {
      const th = make("th", column.type === "number" || column.type === "ratio" ? "num" : "");
      th.scope = "col";
      if (sortable) {
        th.setAttribute("aria-sort", "none");
        const button = make("button", "sort", column.label);
        button.type = "button";
        button.dataset.column = String(index);
        button.addEventListener("click", () => sortBy(index));
        th.append(button);
      } else {
        th.textContent = column.label;
      }
      tr.append(th);
    });
    return tr;
  };

  // -- the detail row of a case: fields, logs, samples --------------------------------------

  const blockOf = (label, text) => {
    const section = make("section", "block");
    section.append(make("h4", "", label), make("pre", "", shown(text, true)));
    return section;
  };

  const samplesOf = (samples) => {
    const sampleColumns = data.sample_columns;
    const table = make("table", "samples");
    table.append(make("caption", "", samples.length + " samples"));
    const head = make("thead");
    const header = headerOf(sampleColumns, false);
    header.firstChild.remove();
    header.append(make("th", "", "output"));
    head.append(header);
    const body = make("tbody");
    for (const sample of samples) {
      const tr = make("tr", "sample");
      sample.cells.forEach((value, index) => tr.append(cellOf(value, sampleColumns[index])));
      const output = make("td", "output");
      for (const [label, text] of sample.blocks || []) {
        const details = make("details");
        details.append(make("summary", "", label), make("pre", "", shown(text, true)));
        output.append(details);
      }
      tr.append(output);
      body.append(tr);
    }
    table.append(head, body);
    return table;
  };

  const detailOf = (detail) => {
    const tr = make("tr", "detail");
    const td = make("td");
    td.colSpan = columns.length + 1;
    if (detail.fields.length) {
      const dl = make("dl");
      for (const [label, value] of detail.fields) {
        dl.append(make("dt", "", label), make("dd", "", shown(value, false)));
      }
      td.append(dl);
    }
    for (const [label, text] of detail.blocks) td.append(blockOf(label, text));
    if (detail.samples) td.append(samplesOf(detail.samples));
    tr.append(td);
    return tr;
  };

  // -- the table ------------------------------------------------------------------------------

  const table = document.getElementById("cases");
  const tbody = table.tBodies[0];
  table.tHead.append(headerOf(columns, true));

  const toggle = (entry) => {
    if (!entry.detail) {
      entry.detail = detailOf(entry.row.detail);
      entry.tr.after(entry.detail);
    }
    entry.open = !entry.open;
    entry.detail.hidden = !entry.open || entry.tr.hidden;
    entry.button.setAttribute("aria-expanded", String(entry.open));
    entry.button.textContent = entry.open ? "\u25be" : "\u25b8";
  };

  const entries = data.rows.map((row, index) => {
    const status = row.cells[data.status_column];
    const tr = make("tr", "row row-" + (KNOWN.has(status) ? status : "other"));
    tr.dataset.index = String(index);
    const first = make("td", "toggle-cell");
    const entry = { row, tr, index, detail: null, open: false, button: null, search: "" };
    if (row.detail) {
      const button = make("button", "toggle", "\u25b8");
      button.type = "button";
      button.setAttribute("aria-expanded", "false");
      button.setAttribute("aria-label", "details");
      button.addEventListener("click", () => toggle(entry));
      entry.button = button;
      first.append(button);
    }
    tr.append(first);
    row.cells.forEach((value, i) => tr.append(cellOf(value, columns[i])));
    const words = row.cells.map((value, i) => display(value, columns[i]));
    for (const values of Object.values(row.facets)) words.push(...values);
    entry.search = words.join("\n").toLowerCase();
    return entry;
  });
  let order = entries.slice();

  const place = () => {
    const fragment = document.createDocumentFragment();
    for (const entry of order) {
      fragment.append(entry.tr);
      if (entry.detail) fragment.append(entry.detail);
    }
    tbody.append(fragment);
  };

  // Sorting: a click on a column's header sorts by it, a second click the other way;
  // empty cells last either way, ties in the document's order.
  let sorted = { column: -1, descending: false };
  const compare = (a, b) => {
    if (typeof a === "number" && typeof b === "number") return a - b;
    const x = String(a);
    const y = String(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  function sortBy(index) {
    const descending = sorted.column === index ? !sorted.descending : false;
    sorted = { column: index, descending };
    const column = columns[index];
    const keys = entries.map((entry) => sortKey(entry.row.cells[index], column));
    order = entries.slice().sort((a, b) => {
      const x = keys[a.index];
      const y = keys[b.index];
      if (x === null || y === null) {
        return x === y ? a.index - b.index : x === null ? 1 : -1;
      }
      const found = compare(x, y);
      return (descending ? -found : found) || a.index - b.index;
    });
    for (const th of table.tHead.querySelectorAll("th[aria-sort]")) {
      const button = th.querySelector("button");
      const mine = button && button.dataset.column === String(index);
      th.setAttribute("aria-sort", mine ? (descending ? "descending" : "ascending") : "none");
    }
    place();
  }

  // Filtering: one select per facet (status, tag, ...), and a text search over the row.
  const filters = document.getElementById("filters");
  const selects = [];
  for (const facet of data.facets) {
    const label = make("label", "", facet.label);
    const select = make("select");
    select.dataset.facet = facet.key;
    select.append(make("option", "", "all"));
    select.options[0].value = "";
    facet.options.forEach((option, index) => {
      const element = make("option", "", shown(option, false));
      element.value = String(index);
      select.append(element);
    });
    select.addEventListener("change", () => apply());
    selects.push([facet, select]);
    label.append(select);
    filters.append(label);
  }
  const searchLabel = make("label", "", "search");
  const search = make("input");
  search.type = "search";
  search.id = "filter-text";
  search.placeholder = "text in any column";
  search.addEventListener("input", () => apply());
  searchLabel.append(search);
  const count = make("output");
  count.id = "shown";
  count.setAttribute("aria-live", "polite");
  filters.append(searchLabel, count);

  function apply() {
    const wanted = selects
      .filter(([, select]) => select.value !== "")
      .map(([facet, select]) => [facet.key, facet.options[Number(select.value)]]);
    const query = search.value.trim().toLowerCase();
    let visible = 0;
    for (const entry of entries) {
      const facets = entry.row.facets;
      const keep =
        wanted.every(([key, value]) => (facets[key] || []).includes(value)) &&
        (query === "" || entry.search.includes(query));
      entry.tr.hidden = !keep;
      if (entry.detail) entry.detail.hidden = !keep || !entry.open;
      if (keep) visible += 1;
    }
    const total = entries.length;
    count.textContent =
      visible === total ? total + " " + data.noun : visible + " of " + total + " " + data.noun;
  }

  place();
  apply();
})();
