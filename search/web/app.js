// The search page: asks GET /ask and draws the answer and passages.
//
// Everything that comes from the index or the question is put in the page as text
// (textContent, text nodes, attribute values): never as HTML. The page's state lives in
// the URL (?q=...&mode=...&source=...&where=category=football&sort=newest), so a result,
// filters included, can be shared, reloaded and reached with Back. Facets are drawn as
// chips: choosing one adds its filter to the URL, choosing it again removes it.
"use strict";

(function () {
  const MODES = ["hybrid", "bm25", "dense"];
  const MODE_NAMES = { hybrid: "hybrid", bm25: "BM25", dense: "dense" };
  const MODE_HINTS = {
    hybrid: "Hybrid fuses keyword (BM25) and meaning (dense) rankings.",
    bm25: "BM25 ranks passages by the words they share with the question.",
    dense: "Dense ranks passages by meaning, even without shared words.",
  };
  // After this long the spinner says why it may take a while; after TIMEOUT_MS we give up.
  const SLOW_MS = 3000;
  const TIMEOUT_MS = 90000;
  // Words too common to be worth highlighting.
  const STOPWORDS = new Set(
    ("the and for are but not you all any can had her was one our out has him his how man new " +
      "now old see two way who did its let put say she too use what when where which while why " +
      "with would could should this that these those there their them then than they from into " +
      "about after before over under again also been being does doing done have having here " +
      "just more most much only other same some such very will your yours were what whom whose " +
      "against between during each both few nor own off once until upon via yet").split(" "),
  );
  const WORD = /[\p{L}\p{N}]+/gu;
  // URL parameters that narrow or order a search, passed through to /ask as they are.
  const FILTER_KEYS = ["source", "where", "since", "until", "sort"];
  const SORTS = ["relevance", "newest", "recency"];
  const FACET_NAMES = { source: "Source", category: "Category", month: "Month", people: "People", teams: "Teams" };

  const form = document.getElementById("search-form");
  const input = document.getElementById("q");
  const status = document.getElementById("status");
  const results = document.getElementById("results");
  const hint = document.getElementById("mode-hint");
  const sortSelect = document.getElementById("sort");

  let inflight = null; // the AbortController of the request being waited for
  let seq = 0; // the number of the latest search: older answers are dropped

  // -- small DOM helpers (text only) ---------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child); // a string becomes a text node
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many || one + "s"}`;
  }

  // -- query terms and highlighting ----------------------------------------------------
  function queryTerms(question) {
    const terms = new Set();
    for (const m of question.toLowerCase().matchAll(WORD)) {
      if (m[0].length >= 3 && !STOPWORDS.has(m[0])) terms.add(m[0]);
    }
    return terms;
  }

  // `text` as text nodes, each word that is a query term wrapped in <mark>.
  function highlighted(text, terms) {
    const frag = document.createDocumentFragment();
    let last = 0;
    if (terms.size) {
      for (const m of text.matchAll(WORD)) {
        if (!terms.has(m[0].toLowerCase())) continue;
        if (m.index > last) frag.append(text.slice(last, m.index));
        frag.append(el("mark", {}, m[0]));
        last = m.index + m[0].length;
      }
    }
    if (last < text.length) frag.append(text.slice(last));
    return frag;
  }

  // `sentence` as text, the short answer in it (case-insensitively) in <strong>.
  function withAnswer(sentence, answer) {
    const frag = document.createDocumentFragment();
    const at = answer ? sentence.toLowerCase().indexOf(answer.toLowerCase()) : -1;
    if (at < 0) {
      frag.append(sentence);
      return frag;
    }
    frag.append(sentence.slice(0, at), el("strong", {}, sentence.slice(at, at + answer.length)));
    frag.append(sentence.slice(at + answer.length));
    return frag;
  }

  // -- links ---------------------------------------------------------------------------
  // The article page with [start, end) highlighted; ids may hold "/", kept as separators.
  function articleUrl(docId, start, end) {
    const path = String(docId).split("/").map(encodeURIComponent).join("/");
    return `/documents/${path}?format=html&span=${Number(start)}:${Number(end)}#cited`;
  }

  function safeExternalUrl(url) {
    try {
      const u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  function formatDate(value) {
    const dateOnly = /^\d{4}-\d{2}-\d{2}$/.test(value);
    const t = Date.parse(value);
    if (Number.isNaN(t)) return value;
    const opts = { year: "numeric", month: "short", day: "numeric" };
    if (dateOnly) opts.timeZone = "UTC"; // a bare date is a calendar day, not UTC midnight
    return new Date(t).toLocaleDateString(undefined, opts);
  }

  // -- states --------------------------------------------------------------------------
  function setStatus(...children) {
    clear(status);
    status.append(...children);
  }

  function showLoading(question, mode, id) {
    results.setAttribute("aria-busy", "true");
    clear(results);
    const message = el("span", { class: "status-text" }, `Searching (${MODE_NAMES[mode]})…`);
    setStatus(el("span", { class: "spinner", "aria-hidden": "true" }), message);
    status.classList.add("loading");
    setTimeout(() => {
      if (id !== seq || !status.classList.contains("loading")) return;
      message.textContent =
        "Still working… the first question after the server starts can take a few seconds " +
        "while the model loads.";
      status.classList.add("slow");
    }, SLOW_MS);
  }

  function doneLoading() {
    status.classList.remove("loading", "slow");
    results.removeAttribute("aria-busy");
  }

  function showError(title, detail, retry) {
    doneLoading();
    setStatus(); // the alert below is announced itself
    clear(results);
    const box = el("div", { class: "error", role: "alert" }, el("h2", {}, title));
    if (detail) box.append(el("p", {}, detail));
    if (retry) {
      const button = el("button", { type: "button", class: "retry" }, "Try again");
      button.addEventListener("click", retry);
      box.append(button);
    }
    results.append(box);
  }

  // -- drawing a result ----------------------------------------------------------------
  function citation(sentence, byRank) {
    const n = sentence.passage_rank;
    const passage = byRank.get(n);
    const label = `Source ${n}: ${passage ? passage.title || passage.doc_id : sentence.doc_id}`;
    return el(
      "a",
      { class: "cite", href: articleUrl(sentence.doc_id, sentence.start, sentence.end), title: label, "aria-label": label },
      `[${n}]`,
    );
  }

  function evidenceList(sentences, answerText, byRank) {
    const list = el("ul", { class: "evidence" });
    for (const s of sentences) {
      // A no-break space keeps the number with the end of the quote.
      list.append(el("li", {}, el("q", {}, withAnswer(s.text, answerText)), "\u00a0", citation(s, byRank)));
    }
    return list;
  }

  function drawAnswer(data, stats, byRank) {
    const answer = data.answer;
    if (!answer) return null;
    const section = el("section", { class: "answer", "aria-labelledby": "answer-heading" });
    if (!answer.sentences.length) {
      section.append(
        el("h2", { id: "answer-heading" }, "No answer found"),
        el("p", {}, "None of the passages below answers the question directly; they are the closest matches."),
      );
      if (answer.notice) section.append(el("p", { class: "notice", role: "status" }, answer.notice));
      return section;
    }
    const conflicts = answer.conflicts || [];
    if (answer.text) {
      section.append(el("h2", { id: "answer-heading" }, "Answer"), el("p", { class: "short-answer" }, answer.text));
    } else {
      section.append(
        el("h2", { id: "answer-heading" }, "No short answer"),
        el("p", { class: "muted" }, answer.summary || "The articles do not state one clearly; this is the best supporting sentence."),
      );
    }
    // One wording on every face (the CLI, MCP and this page): the server's own summary.
    if (answer.text) section.append(el("p", { class: "support" }, answer.summary));
    // How to fix the index when it is behind this version (stored entities, their patterns).
    if (answer.notice) section.append(el("p", { class: "notice", role: "status" }, answer.notice));
    if (!conflicts.length) {
      section.append(evidenceList(answer.sentences, answer.text, byRank));
      return section;
    }
    // The articles disagree: the answer (with none, the version the others contradict) and
    // each other version, side by side.
    section.append(el("h3", { class: "conflict-heading" }, "The articles disagree"));
    const versions = el("div", { class: "versions" });
    const ref = answer.text ? null : answer.reference;
    if (ref) section.append(evidenceList(answer.sentences, null, byRank)); // the quote, then the versions
    const main = el(
      "div",
      { class: "version winner" },
      el("p", { class: "version-text" }, answer.text || (ref ? ref.text : "This version")),
      el("p", { class: "version-support" }, plural(ref ? ref.support : answer.support, "article")),
      evidenceList(ref ? ref.sentences : answer.sentences, answer.text || (ref && ref.text), byRank),
    );
    versions.append(main);
    for (const c of conflicts) {
      versions.append(
        el(
          "div",
          { class: "version" },
          el("p", { class: "version-text" }, c.text),
          el("p", { class: "version-support" }, plural(c.support, "article")),
          evidenceList(c.sentences, c.text, byRank),
        ),
      );
    }
    section.append(versions);
    return section;
  }

  function drawPassage(p, terms, cited) {
    const title = p.title || p.doc_id;
    const meta = el("p", { class: "meta" });
    const bits = [];
    if (p.source) bits.push(el("span", { class: "source" }, p.source));
    if (p.published) bits.push(el("time", { datetime: p.published_utc || p.published }, formatDate(p.published)));
    const category = p.metadata && typeof p.metadata.category === "string" ? p.metadata.category : null;
    if (category) bits.push(el("span", { class: "category" }, category));
    const ranks = [];
    if (p.bm25_rank) ranks.push(`BM25 #${p.bm25_rank}`);
    if (p.dense_rank) ranks.push(`dense #${p.dense_rank}`);
    if (ranks.length) bits.push(el("span", { class: "ranks" }, ranks.join(", ")));
    const external = p.url ? safeExternalUrl(p.url) : null;
    if (external) bits.push(el("a", { href: external, rel: "noopener noreferrer" }, "original"));
    if (cited.has(p.rank)) bits.push(el("span", { class: "cited-tag" }, "cited in the answer"));
    if (p.duplicates && p.duplicates.length) {
      bits.push(el("span", {}, `also in ${plural(p.duplicates.length, "near-duplicate")}`));
    }
    bits.forEach((bit, i) => {
      if (i) meta.append(el("span", { class: "sep", "aria-hidden": "true" }, " · "));
      meta.append(bit);
    });
    return el(
      "li",
      { class: "passage", id: `passage-${p.rank}` },
      el(
        "h3",
        {},
        el("span", { class: "rank", "aria-hidden": "true" }, String(p.rank)),
        el("a", { href: articleUrl(p.doc_id, p.start, p.end) }, el("span", { class: "visually-hidden" }, `${p.rank}. `), title),
      ),
      meta,
      el("p", { class: "passage-text" }, highlighted(p.text, terms)),
    );
  }

  function draw(data, stats) {
    doneLoading();
    clear(results);
    const passages = data.passages || [];
    const articles = new Set(passages.map((p) => p.doc_id)).size;
    const active = drawActive(urlFilters());
    if (active) results.append(active);
    if (!passages.length && active) {
      setStatus(`No passages match “${data.question}” with these filters.`);
      results.append(
        el(
          "div",
          { class: "empty" },
          el("h2", {}, "No results with these filters"),
          el("p", {}, "Remove a filter above, or choose one of the counts below."),
        ),
      );
      const facets = drawFacets(data.facets);
      if (facets) results.append(facets);
      return;
    }
    if (!passages.length) {
      setStatus(`No passages match “${data.question}”.`);
      results.append(
        el(
          "div",
          { class: "empty" },
          el("h2", {}, "No results"),
          el(
            "p",
            {},
            `Nothing in the index matches “${data.question}” in ${MODE_NAMES[data.mode]} mode. ` +
              "Try other words, or another retrieval mode.",
          ),
        ),
      );
      return;
    }
    const byRank = new Map(passages.map((p) => [p.rank, p]));
    const answerSection = drawAnswer(data, stats, byRank);
    if (answerSection) results.append(answerSection);
    const terms = queryTerms(data.question);
    const list = el("ol", { class: "passages" });
    const cited = new Set();
    if (data.answer) {
      for (const s of data.answer.sentences) cited.add(s.passage_rank);
      const versions = (data.answer.conflicts || []).concat(data.answer.reference ? [data.answer.reference] : []);
      for (const c of versions) for (const s of c.sentences) cited.add(s.passage_rank);
    }
    for (const p of passages) list.append(drawPassage(p, terms, cited));
    const facets = drawFacets(data.facets);
    if (facets) results.append(facets);
    results.append(
      el(
        "section",
        { class: "passages-section", "aria-labelledby": "passages-heading" },
        el("h2", { id: "passages-heading" }, "Passages ", el("span", { class: "count" }, `${plural(passages.length, "passage")} from ${plural(articles, "article")}`)),
        list,
      ),
    );
    // The answer is on screen just below: said to screen readers only.
    const said = data.answer && data.answer.text ? `Answer: ${data.answer.text}. ` : "";
    setStatus(
      el("span", { class: "visually-hidden" }, said),
      `${plural(passages.length, "passage")} from ${plural(articles, "article")}, in ${Math.round(data.took_ms)} ms.`,
    );
  }

  // -- filters and facets --------------------------------------------------------------
  // The filter parameters of the page's URL, as [key, value] pairs.
  function urlFilters() {
    const params = new URLSearchParams(window.location.search);
    const out = [];
    for (const key of FILTER_KEYS) {
      for (const value of params.getAll(key)) {
        if (key === "sort" && (value === "relevance" || !SORTS.includes(value))) continue;
        if (value) out.push([key, value]);
      }
    }
    return out;
  }

  // The URL parameter a facet value filters by: source=..., or where=FIELD=VALUE.
  function facetFilter(name, value) {
    if (name === "source") return ["source", value];
    if (name === "month") return ["where", `published=${value}`];
    return ["where", `${name}=${value}`];
  }

  function hasFilter(filters, pair) {
    return filters.some(([k, v]) => k === pair[0] && v === pair[1]);
  }

  // Go to the same question with these filters (pushes the URL, so Back undoes it).
  function navigate(filters) {
    const params = new URLSearchParams(window.location.search);
    for (const key of FILTER_KEYS) params.delete(key);
    for (const [k, v] of filters) params.append(k, v);
    const url = `${window.location.pathname}?${params}`;
    window.history.pushState(null, "", url);
    fromUrl();
  }

  function toggle(pair) {
    const filters = urlFilters();
    navigate(hasFilter(filters, pair) ? filters.filter(([k, v]) => !(k === pair[0] && v === pair[1])) : [...filters, pair]);
  }

  function filterLabel([key, value]) {
    if (key === "where") return value.replace(/^published=/, "month: ").replace("=", ": ");
    if (key === "sort") return `sorted: ${value}`;
    return `${key}: ${value}`;
  }

  // The active filters, each a chip that removes it.
  function drawActive(filters) {
    if (!filters.length) return null;
    const bar = el("div", { class: "active-filters", "aria-label": "Active filters" }, el("span", { class: "muted" }, "Filters: "));
    for (const pair of filters) {
      const chip = el(
        "button",
        { type: "button", class: "chip active", "aria-pressed": "true", title: "Remove this filter", "data-filter": `${pair[0]}=${pair[1]}` },
        filterLabel(pair),
        el("span", { "aria-hidden": "true" }, " ×"),
      );
      chip.addEventListener("click", () => toggle(pair));
      bar.append(chip);
    }
    if (filters.length > 1) {
      const all = el("button", { type: "button", class: "chip clear" }, "Clear all");
      all.addEventListener("click", () => navigate([]));
      bar.append(all);
    }
    return bar;
  }

  // Facet counts as chips: source, category and month filter; people and teams are shown.
  function drawFacets(facets) {
    if (!facets || !facets.passages) return null;
    const filters = urlFilters();
    const head = facets.unfiltered
      ? `Without the filters, ${plural(facets.passages, "passage")} match`
      : `${plural(facets.passages, "passage")} match`;
    const section = el("section", { class: "facets", "aria-labelledby": "facets-heading" }, el("h2", { id: "facets-heading" }, head));
    for (const name of Object.keys(FACET_NAMES)) {
      const counts = facets[name] || [];
      if (!counts.length) continue;
      const sampled = (name === "people" || name === "teams") && facets.entities_over < facets.passages;
      const label = sampled ? `${FACET_NAMES[name]} (best ${facets.entities_over.toLocaleString()})` : FACET_NAMES[name];
      const group = el("div", { class: "facet", "data-facet": name }, el("span", { class: "facet-name" }, label));
      for (const { value, count } of counts.slice(0, 12)) {
        if (name === "people" || name === "teams") {
          group.append(el("span", { class: "chip static" }, `${value} (${count})`));
          continue;
        }
        const pair = facetFilter(name, value);
        const on = hasFilter(filters, pair);
        const chip = el(
          "button",
          { type: "button", class: on ? "chip active" : "chip", "aria-pressed": on ? "true" : "false", "data-value": value },
          `${value} `,
          el("span", { class: "count" }, `(${count})`),
        );
        chip.addEventListener("click", () => toggle(pair));
        group.append(chip);
      }
      section.append(group);
    }
    return section;
  }

  // -- talking to the server -----------------------------------------------------------
  async function errorOf(response) {
    try {
      const body = await response.json();
      if (body && body.error && body.error.message) return body.error;
    } catch (e) {
      /* not our JSON: a proxy's page, say */
    }
    return { code: `http_${response.status}`, message: response.statusText || "no details" };
  }

  async function fetchStats(signal) {
    try {
      const r = await fetch("/stats", { headers: { Accept: "application/json" }, signal });
      return r.ok ? await r.json() : null;
    } catch (e) {
      return null;
    }
  }

  async function run(question, mode) {
    const id = ++seq;
    if (inflight) inflight.abort();
    const controller = new AbortController();
    inflight = controller;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, TIMEOUT_MS);
    showLoading(question, mode, id);
    const retry = () => run(question, mode);
    try {
      const params = new URLSearchParams({ q: question, mode });
      for (const [k, v] of urlFilters()) params.append(k, v);
      const [response, stats] = await Promise.all([
        fetch(`/ask?${params}`, { headers: { Accept: "application/json" }, signal: controller.signal }),
        fetchStats(controller.signal),
      ]);
      if (id !== seq) return;
      if (!response.ok) {
        const err = await errorOf(response);
        if (id !== seq) return;
        if (response.status < 500) {
          showError("The question could not be searched", err.message, null);
        } else {
          showError(`The server could not answer (${response.status}, ${err.code})`, err.message, retry);
        }
        return;
      }
      const data = await response.json();
      if (id !== seq) return;
      draw(data, stats);
    } catch (e) {
      if (id !== seq) return;
      if (timedOut) {
        showError(`No answer after ${TIMEOUT_MS / 1000} s`, "The server may be busy or stuck.", retry);
      } else {
        showError("Could not reach the server", "Check that `search serve` is still running.", retry);
      }
    } finally {
      clearTimeout(timer);
      if (inflight === controller) inflight = null;
    }
  }

  // -- the form and the URL ------------------------------------------------------------
  function selectedMode() {
    const checked = form.querySelector('input[name="mode"]:checked');
    return checked && MODES.includes(checked.value) ? checked.value : "hybrid";
  }

  function setMode(mode) {
    const radio = document.getElementById(`mode-${mode}`);
    if (radio) radio.checked = true;
    hint.textContent = MODE_HINTS[mode];
  }

  function fromUrl() {
    const params = new URLSearchParams(window.location.search);
    const question = (params.get("q") || "").trim();
    const mode = MODES.includes(params.get("mode")) ? params.get("mode") : "hybrid";
    input.value = question;
    setMode(mode);
    if (sortSelect) sortSelect.value = SORTS.includes(params.get("sort")) ? params.get("sort") : "relevance";
    if (question) {
      document.title = `${question} · Match search`;
      run(question, mode);
    } else {
      document.title = "Match search";
      if (inflight) inflight.abort();
      seq++;
      doneLoading();
      clear(results);
      setStatus("");
    }
  }

  function submit() {
    const question = input.value.trim();
    if (!question) {
      input.focus();
      setStatus("Type a question first, e.g. “who scored the winner”.");
      return;
    }
    const params = new URLSearchParams({ q: question, mode: selectedMode() });
    // A new question keeps the filters in force (each is a chip that removes it).
    for (const [k, v] of urlFilters()) if (k !== "sort") params.append(k, v);
    if (sortSelect && sortSelect.value !== "relevance") params.append("sort", sortSelect.value);
    const url = `${window.location.pathname}?${params}`;
    if (url !== window.location.pathname + window.location.search) window.history.pushState(null, "", url);
    fromUrl();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  for (const radio of form.querySelectorAll('input[name="mode"]')) {
    radio.addEventListener("change", () => {
      hint.textContent = MODE_HINTS[selectedMode()];
      if (input.value.trim()) submit();
    });
  }
  if (sortSelect) {
    sortSelect.addEventListener("change", () => {
      if (input.value.trim()) submit();
    });
  }
  window.addEventListener("popstate", fromUrl);
  fromUrl();
  input.focus();
})();
