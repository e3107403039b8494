// tapgate web inbox: keys, answers in place, live updates. No framework, no build step.
// Every answer is a POST with the page's CSRF token; the server decides (core.taps).
"use strict";
(function () {
  const meta = document.querySelector('meta[name="csrf-token"]');
  const queue = document.getElementById("queue");
  if (!meta || !queue) return;
  const csrf = meta.content;
  const status = document.getElementById("status");
  const count = document.getElementById("count");
  const keys = document.getElementById("keys");
  let current = null;
  const gone = new Set();  // decided here or elsewhere: a redraw fetched earlier must not bring them back

  const cards = () => Array.from(queue.querySelectorAll("article.card"));
  const say = (text) => { if (status) status.textContent = text; };

  function setTotal(delta) {
    if (!count) return;
    const total = Math.max(0, Number(count.dataset.total || "0") + delta);
    count.dataset.total = String(total);
    count.textContent = total ? total + " pending for you" : "Nothing waits for you.";
  }

  function focusCard(card) {
    if (!card) { current = null; return; }
    if (current && current !== card) current.tabIndex = -1;
    current = card;
    card.tabIndex = 0;
    card.focus();
    card.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    const all = cards();
    if (!all.length) return;
    const at = current ? all.indexOf(current) : -1;
    focusCard(all[Math.min(all.length - 1, Math.max(0, at + step))]);
  }

  function removeCard(card) {
    gone.add(card.dataset.id);
    const all = cards();
    const at = all.indexOf(card);
    const wasCurrent = card === current;
    const section = card.closest("section.batch");
    card.remove();
    if (section && !section.querySelector("article.card")) section.remove();
    setTotal(-1);
    if (wasCurrent || !current) {
      const rest = cards();
      focusCard(rest[Math.min(at, rest.length - 1)] || null);
    }
  }

  async function post(url, body) {
    let response;
    try {
      response = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify(body),
      });
    } catch (_) {
      return { ok: false, status: 0, data: { message: "Could not reach tapgate; nothing was decided. Try again." } };
    }
    let data = {};
    try { data = await response.json(); } catch (_) { data = { message: "Unexpected answer (" + response.status + ")" }; }
    return { ok: response.ok, status: response.status, data: data };
  }

  function reasonOf(card) {
    const field = card.querySelector(".reason");
    return field ? field.value : "";
  }

  async function answer(card, action) {
    if (!card || card.dataset.busy) return;
    card.dataset.busy = "1";
    const session = card.querySelector('input[name="session"]');
    const body = { request_id: card.dataset.id, action: action, reason: reasonOf(card) };
    if (action === "approve" && session && session.checked) body.session = true;
    const result = await post("/inbox/answer", body);
    delete card.dataset.busy;
    say(result.data.message || "");
    if (result.data.outcome === "partial") {  // counted; the quorum waits for other approvers
      const out = card.querySelector(".outcome");
      if (out) out.textContent = result.data.message || "";
      card.classList.add("counted");
    } else if (result.ok || ["already", "expired", "not_found"].includes(result.data.outcome)) {
      if (card.isConnected) removeCard(card);
    } else {
      const out = card.querySelector(".outcome");
      if (out) out.textContent = result.data.message || "Refused.";
    }
  }

  async function answerBatch(card, action) {
    const section = card && card.closest("section.batch");
    if (!section) return answer(card, action === "approve_all" ? "approve" : "deny");
    const result = await post("/inbox/batch", { batch_id: section.dataset.batch, action: action, reason: reasonOf(card) });
    say(result.data.message || "");
    for (const id of result.data.ids || []) {
      const gone = document.getElementById("r-" + id);
      if (gone) removeCard(gone);
    }
  }

  async function answerSelection(action) {
    const chosen = cards().filter((c) => c.classList.contains("selected"));
    if (!chosen.length) return;
    const result = await post("/inbox/selection", { ids: chosen.map((c) => c.dataset.id), action: action });
    say((result.data.applied || 0) + " of " + chosen.length + " " + (action === "approve" ? "allowed" : "denied"));
    for (const r of result.data.results || []) {
      const card = document.getElementById("r-" + r.id);
      if (card && r.outcome !== "not_approver") removeCard(card);
    }
    updateSelection();
  }

  function updateSelection() {
    const bar = document.getElementById("selection");
    const n = cards().filter((c) => c.classList.contains("selected")).length;
    if (!bar) return;
    bar.hidden = n === 0;
    document.getElementById("selected").textContent = n + " selected";
  }

  function toggleSelected(card) {
    if (!card) return;
    card.classList.toggle("selected");
    card.setAttribute("aria-selected", card.classList.contains("selected") ? "true" : "false");
    updateSelection();
  }

  function cardOf(node) { return node && node.closest ? node.closest("article.card") : null; }

  document.addEventListener("keydown", (event) => {
    if (keys && keys.open) return;
    const target = event.target;
    const inField = target.matches && target.matches("input.reason, textarea.reason");
    if (inField) {
      const card = cardOf(target);
      if (event.key === "Enter" && target.tagName === "INPUT") { event.preventDefault(); answer(card, "deny"); }
      else if (event.key === "Escape") { event.preventDefault(); focusCard(card); }
      return;
    }
    if (target.matches && target.matches("input, textarea, select, button, a, summary")) return;
    const card = cardOf(target) || current;
    if (event.key === "Enter") {
      event.preventDefault();
      if (event.altKey) answerBatch(card, "approve_all"); else answer(card, "approve");
    } else if (event.key === "Escape") {
      event.preventDefault();
      if (event.altKey) answerBatch(card, "deny_all"); else answer(card, "deny");
    } else if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); move(1); }
    else if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); move(-1); }
    else if (event.key === "r" && card) {
      const field = card.querySelector(".reason");
      if (field) { event.preventDefault(); field.focus(); }
    } else if (event.key === "s" && card) {
      const box = card.querySelector('input[name="session"]');
      if (box) { event.preventDefault(); box.checked = !box.checked; say(box.checked ? "Allow for this session: on" : "Allow for this session: off"); }
    } else if (event.key === "e" && card) {
      const edit = card.querySelector("a.edit");
      if (edit) { event.preventDefault(); location.assign(edit.href); }
    } else if (event.key === "x" && card) { event.preventDefault(); toggleSelected(card); }
    else if (event.key === "?" && keys) { event.preventDefault(); keys.showModal(); }
  });

  queue.addEventListener("submit", (event) => {
    const form = event.target;
    const card = cardOf(form);
    const action = event.submitter ? event.submitter.value : "approve";
    event.preventDefault();
    if (form.classList.contains("batch-form")) {
      const first = form.closest("section.batch").querySelector("article.card");
      answerBatch(first, action);
    } else if (card) {
      answer(card, action);
    }
  });
  queue.addEventListener("focusin", (event) => {
    const card = cardOf(event.target);
    if (card && card !== current) { if (current) current.tabIndex = -1; current = card; card.tabIndex = 0; }
  });
  const allow = document.getElementById("allow-selected");
  const deny = document.getElementById("deny-selected");
  if (allow) allow.addEventListener("click", () => answerSelection("approve"));
  if (deny) deny.addEventListener("click", () => answerSelection("deny"));

  // A new request redraws the queue; what the approver was doing survives it:
  // typed reasons, ticked boxes, the selection, the focus (a field's too).
  function remember() {
    const kept = {};
    for (const card of cards()) {
      const reason = card.querySelector(".reason");
      const box = card.querySelector('input[name="session"]');
      kept[card.dataset.id] = {
        reason: reason ? reason.value : "",
        session: box ? box.checked : false,
        selected: card.classList.contains("selected"),
      };
    }
    return kept;
  }

  function restore(kept) {
    for (const card of cards()) {
      const was = kept[card.dataset.id];
      if (!was) continue;
      const reason = card.querySelector(".reason");
      const box = card.querySelector('input[name="session"]');
      if (reason) reason.value = was.reason;
      if (box) box.checked = was.session;
      if (was.selected) { card.classList.add("selected"); card.setAttribute("aria-selected", "true"); }
    }
    updateSelection();
  }

  // Requests arriving together start redraws whose answers can come back out of order:
  // only the last one started is drawn, so an older queue never replaces a newer one
  // (and the keys pressed on the newer one are not lost with it).
  let redraws = 0;
  async function redraw() {
    const mine = ++redraws;
    const response = await fetch("/inbox/queue?from=" + (queue.dataset.from || "0"), { credentials: "same-origin" });
    if (!response.ok) return;
    const html = await response.text();
    if (mine !== redraws) return;
    const kept = remember();  // after the last await: nothing the approver does is lost
    const keep = current ? current.dataset.id : null;
    const typing = document.activeElement && document.activeElement.matches(".reason");
    queue.innerHTML = html;
    restore(kept);
    const total = response.headers.get("X-Tapgate-Total");
    if (total !== null && count) { count.dataset.total = total; setTotal(0); }
    current = null;
    for (const card of cards()) if (gone.has(card.dataset.id)) removeCard(card);
    const again = keep && document.getElementById("r-" + keep);
    focusCard(again || cards()[0] || null);
    const field = again && typing ? again.querySelector(".reason") : null;
    if (field) field.focus();
  }

  const words = { approved: "approved", denied: "denied", expired: "expired", cancelled: "cancelled" };
  const events = new EventSource("/inbox/events");
  events.addEventListener("requested", () => { redraw(); });
  // Connected (or back after a drop): if anything changed while nobody listened, redraw.
  events.addEventListener("open", async () => {
    const response = await fetch("/inbox/queue?ids=1&from=" + (queue.dataset.from || "0"), { credentials: "same-origin" });
    if (!response.ok) return;
    const now = (await response.json()).ids.filter((id) => !gone.has(id));
    const shown = cards().map((c) => c.dataset.id);
    if (now.length !== shown.length || now.some((id, i) => id !== shown[i])) redraw();
  });
  for (const kind of ["resolved", "expired", "cancelled"]) {
    events.addEventListener(kind, (message) => {
      const data = JSON.parse(message.data);
      const card = document.getElementById("r-" + data.id);
      if (!card) return;
      removeCard(card);
      say("Request " + data.id.slice(0, 8) + " " + (words[data.status] || data.status) + (data.by ? " by " + data.by : ""));
    });
  }
  events.addEventListener("overflow", () => { location.reload(); });
  // revoked or expired while open: the reload shows the signed-out page
  events.addEventListener("signed_out", () => { events.close(); location.reload(); });

  focusCard(cards()[0] || null);
})();
