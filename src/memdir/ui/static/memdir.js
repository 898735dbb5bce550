// memdir ui: a little vanilla JavaScript on top of pages that work without it.
// Every piece of HTML it inserts is a fragment rendered (and escaped) by the server.
"use strict";

(function () {
  const csrf = document.querySelector('meta[name="memdir-csrf"]').content;

  async function fragment(url, signal) {
    const response = await fetch(url, { signal, headers: { Accept: "text/html" } });
    const text = await response.text();
    if (!response.ok) {
      const doc = new DOMParser().parseFromString(text, "text/html");
      const message = doc.querySelector(".warning");
      throw new Error(message ? message.textContent : response.statusText);
    }
    return text;
  }

  function showError(target, error) {
    const p = document.createElement("p");
    p.className = "warning";
    p.textContent = String(error.message || error);
    target.replaceChildren(p);
  }

  // -- search: results follow the query as it is typed; the URL stays bookmarkable --------
  function liveSearch() {
    const form = document.querySelector("form.search");
    const input = document.getElementById("q");
    const results = document.getElementById("results");
    if (!form || !input || !results) return;
    let timer = null;
    let controller = null;
    let shown = input.value;

    async function run() {
      const q = input.value;
      if (q === shown) return;
      shown = q;
      const url = "/search" + (q.trim() ? "?q=" + encodeURIComponent(q) : "");
      history.replaceState(null, "", url);
      document.title = (q.trim() ? q + " · " : "") + "Search · memdir";
      if (controller) controller.abort();
      controller = new AbortController();
      results.setAttribute("aria-busy", "true");
      try {
        const sep = q.trim() ? "&" : "?";
        results.innerHTML = await fragment(url + sep + "partial=1", controller.signal);
      } catch (error) {
        if (error.name !== "AbortError") showError(results, error);
      } finally {
        results.removeAttribute("aria-busy");
      }
    }

    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(run, 250);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(timer);
      shown = null;
      run();
    });
  }

  // -- index: refresh the live part while the page is open ---------------------------------
  function liveIndex() {
    const box = document.getElementById("index-live");
    if (!box) return;
    async function tick() {
      if (!document.hidden) {
        try {
          box.innerHTML = await fragment(box.dataset.refresh);
        } catch (error) {
          /* keep the last state; try again on the next tick */
        }
      }
      const live = box.querySelector(".live");
      setTimeout(tick, Number(live ? live.dataset.interval : 10000) || 10000);
    }
    const first = box.querySelector(".live");
    setTimeout(tick, Number(first ? first.dataset.interval : 10000) || 10000);
  }

  // -- dreaming: preview in place, apply only after an explicit confirmation -------------------
  function dreaming() {
    const form = document.getElementById("preview-form");
    const target = document.getElementById("preview");
    if (!form || !target) return;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const gates = form.elements.gates.value;
      history.replaceState(null, "", "/dreaming?gates=" + encodeURIComponent(gates) + "&preview=1");
      try {
        target.innerHTML = await fragment("/dreaming?partial=preview&gates=" + encodeURIComponent(gates));
        wireApply();
      } catch (error) {
        showError(target, error);
      }
    });
    wireApply();
  }

  function wireApply() {
    const open = document.getElementById("apply-open");
    const dialog = document.getElementById("apply-dialog");
    const preview = document.querySelector(".preview");
    if (!open || !dialog || !preview) return;
    const result = document.getElementById("apply-result");
    open.addEventListener("click", () => dialog.showModal());
    document.getElementById("apply-cancel").addEventListener("click", () => dialog.close());
    document.getElementById("apply-confirm").addEventListener("click", async (event) => {
      event.target.disabled = true;
      const diary = document.querySelector('#apply-form input[name="diary"]');
      try {
        const response = await fetch("/api/dreaming/apply", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Memdir-CSRF": csrf },
          body: JSON.stringify({
            gates: preview.dataset.gates,
            confirm: preview.dataset.confirm,
            diary: Boolean(diary && diary.checked),
          }),
        });
        const body = await response.json();
        result.textContent = response.ok ? body.summary : body.error;
        if (response.ok) setTimeout(() => location.replace("/dreaming"), 1500);
      } catch (error) {
        result.textContent = String(error.message || error);
      }
    });
  }

  liveSearch();
  liveIndex();
  dreaming();
})();
