// The grading page: keyboard grading, saving each grade at once, notes, marking the query done, time
// per item. Keys: scale digits grade the highlighted document, m adds a note, j/k (or arrows) move,
// d marks the query done, n goes to the next query, ? help. Nothing a save answers depends on earlier
// labels: the grades that overturn one are listed only once the query is marked done (and locked).
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root) return;
  const gradesUrl = root.dataset.gradesUrl;
  const nextUrl = root.dataset.nextUrl;
  const doneUrl = root.dataset.doneUrl;
  const done = root.dataset.done === "true";
  const flow = document.getElementById("flow-message");
  let warnedUnfinished = false;
  const scale = root.dataset.scale.split(",").filter(Boolean).map(Number);
  const items = Array.from(root.querySelectorAll(".candidate"));
  const help = document.getElementById("help");
  const progress = document.getElementById("progress");
  const progressText = document.getElementById("progress-text");

  let current = -1;
  let visible = !document.hidden;
  let focusedSince = performance.now();
  const spent = new Map(); // candidate id -> ms looked at since its last save

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (e) {
      return "";
    }
  }

  // Time counts while a document is highlighted and the tab is visible.
  function banked(item) {
    if (!item) return;
    const id = item.dataset.candidate;
    const now = performance.now();
    if (items[current] === item && visible) {
      spent.set(id, (spent.get(id) || 0) + (now - focusedSince));
    }
    focusedSince = now;
  }

  function takeTime(item) {
    banked(item);
    const ms = Math.round(spent.get(item.dataset.candidate) || 0);
    spent.set(item.dataset.candidate, 0);
    return ms;
  }

  function focusItem(index) {
    if (!items.length) return;
    index = Math.max(0, Math.min(items.length - 1, index));
    if (current >= 0) {
      banked(items[current]);
      items[current].classList.remove("focused");
    }
    current = index;
    focusedSince = performance.now();
    const item = items[current];
    item.classList.add("focused");
    item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  function setState(item, cls, text) {
    const state = item.querySelector(".save-state");
    state.className = "save-state " + cls;
    state.textContent = text;
  }

  function showGrade(item, grade) {
    item.dataset.grade = grade === null || grade === undefined ? "" : String(grade);
    item.classList.toggle("graded", item.dataset.grade !== "");
    item.querySelectorAll(".grade-btn").forEach(function (btn) {
      const on = btn.dataset.grade === item.dataset.grade;
      btn.classList.toggle("selected", on);
      btn.setAttribute("aria-pressed", on ? "true" : "false");
    });
  }

  function showNote(item, note) {
    item.dataset.note = note || "";
    const own = item.querySelector(".own-note");
    own.hidden = !note;
    own.querySelector("span").textContent = note || "";
  }

  function updateProgress(graded, total) {
    progress.max = total;
    progress.value = graded;
    progressText.textContent =
      graded + " of " + total + " graded" + (total && graded >= total ? (done ? "" : " — every document graded: press d to mark the query done") : "");
  }

  function openNotePrompt(item) {
    if (item.dataset.grade === "") {
      setState(item, "error", "Grade it first: a note belongs to a grade");
      return;
    }
    const form = item.querySelector(".note-form");
    form.dataset.grade = item.dataset.grade;
    form.hidden = false;
    const area = form.querySelector("textarea");
    area.value = item.dataset.note || "";
    area.focus();
  }

  function closeNotePrompt(item) {
    const form = item.querySelector(".note-form");
    form.hidden = true;
    delete form.dataset.grade;
  }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
      body: JSON.stringify(body),
    });
    let data = {};
    try {
      data = await response.json();
    } catch (err) {
      data = {};
    }
    return { response: response, data: data };
  }

  async function save(item, grade, note) {
    if (!scale.includes(grade)) return;
    if (done && item.dataset.grade !== String(grade)) {
      setState(item, "error", "Locked: you marked this query done (a reviewer can reopen it)");
      return;
    }
    setState(item, "saving", "Saving…");
    const body = { candidate: Number(item.dataset.candidate), grade: grade, time_spent_ms: takeTime(item) };
    if (note !== undefined) body.note = note;
    await send(item, body);
  }

  // The save last asked for on each item: a busy retry gives way to a newer grade of the same document.
  const latest = new WeakMap();

  async function send(item, body) {
    latest.set(item, body);
    let response, data;
    try {
      ({ response, data } = await post(gradesUrl, body));
    } catch (err) {
      setState(item, "error", "Not saved: the server could not be reached. Grade again.");
      return;
    }
    if (latest.get(item) !== body) return;
    if (response.status === 503) {
      // The database was busy (SQLite under many raters): the same save is sent again, never dropped.
      const wait = Math.max(1, Number(response.headers.get("Retry-After")) || 2);
      setState(item, "saving", "Not saved yet: the server is busy. Trying again in " + wait + " s…");
      setTimeout(function () {
        if (latest.get(item) === body) send(item, body);
      }, wait * 1000);
      return;
    }
    if (response.ok) {
      showGrade(item, data.grade);
      showNote(item, data.note);
      closeNotePrompt(item);
      setState(item, "saved", "Saved");
      updateProgress(data.graded, data.total);
      return;
    }
    if (response.status === 403) {
      setState(item, "error", "Not saved: your session or security token expired. Reload the page and log in.");
      return;
    }
    setState(item, "error", "Not saved: " + (data.message || "error " + response.status));
  }

  // A second tab (or this one after sleeping) shows what is saved now.
  async function refresh() {
    let response;
    try {
      response = await fetch(gradesUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
    } catch (err) {
      return;
    }
    if (!response.ok) return;
    const data = await response.json();
    let graded = 0;
    items.forEach(function (item) {
      const saved = data.grades[item.dataset.candidate];
      if (saved) {
        graded += 1;
        if (item.dataset.grade !== String(saved.grade)) {
          showGrade(item, saved.grade);
          setState(item, "saved", "Saved");
        }
        showNote(item, saved.note);
      }
    });
    updateProgress(graded, items.length);
  }

  // Marking the query done locks the grades; the page then lists the grades that overturn a label.
  async function markDone() {
    if (done) {
      flow.textContent = "This query is already marked done.";
      return;
    }
    if (current >= 0) banked(items[current]);
    flow.textContent = "Marking done…";
    await sendDone();
  }

  async function sendDone() {
    let response, data;
    try {
      ({ response, data } = await post(doneUrl, {}));
    } catch (err) {
      flow.textContent = "Not marked done: the server could not be reached. Try again.";
      return;
    }
    if (response.ok) {
      window.location.reload();
      return;
    }
    if (response.status === 503) {
      // The database was busy (SQLite under many raters): marked done again, as a grade is saved again.
      const wait = Math.max(1, Number(response.headers.get("Retry-After")) || 2);
      flow.textContent = "Not marked done yet: the server is busy. Trying again in " + wait + " s…";
      setTimeout(sendDone, wait * 1000);
      return;
    }
    flow.textContent = "Not marked done: " + (data.message || "error " + response.status);
  }

  function moveOn() {
    if (current >= 0) banked(items[current]);
    if (!done && !warnedUnfinished && items.length) {
      warnedUnfinished = true;
      flow.textContent =
        "This query is not marked done yet. Press d to mark it done, or n again to leave it unfinished for now.";
      return;
    }
    window.location.href = nextUrl;
  }

  document.querySelectorAll(".overturn-form").forEach(function (form) {
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      const entry = form.closest(".overturn");
      const state = form.querySelector(".save-state");
      const note = form.querySelector("textarea").value.trim();
      if (!note) return;
      state.textContent = "Saving…";
      let response, data;
      try {
        ({ response, data } = await post(gradesUrl, {
          candidate: Number(entry.dataset.candidate),
          grade: Number(entry.dataset.grade),
          note: note,
        }));
      } catch (err) {
        state.textContent = "Not saved: the server could not be reached.";
        return;
      }
      state.className = "save-state " + (response.ok ? "saved" : "error");
      state.textContent = response.ok ? "Note saved" : "Not saved: " + (data.message || response.status);
      const item = document.getElementById("c-" + entry.dataset.candidate);
      if (response.ok && item) showNote(item, data.note);
    });
  });

  const doneButton = document.getElementById("mark-done");
  if (doneButton) doneButton.addEventListener("click", markDone);
  document.getElementById("next-query").addEventListener("click", function (event) {
    if (!done && !warnedUnfinished && items.length) {
      event.preventDefault();
      moveOn();
    }
  });

  function toggleHelp(show) {
    help.hidden = show === undefined ? !help.hidden : !show;
  }

  items.forEach(function (item, index) {
    item.addEventListener("click", function (event) {
      if (event.target.closest(".note-form, details")) return;
      if (current !== index) focusItem(index);
    });
    item.querySelectorAll(".grade-btn").forEach(function (btn) {
      btn.addEventListener("click", function () {
        if (current !== index) focusItem(index);
        save(item, Number(btn.dataset.grade));
      });
    });
    item.querySelector(".note-open").addEventListener("click", function () {
      if (current !== index) focusItem(index);
      openNotePrompt(item);
    });
    const form = item.querySelector(".note-form");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const note = form.querySelector("textarea").value.trim();
      if (!note) {
        form.querySelector("textarea").focus();
        return;
      }
      save(item, Number(form.dataset.grade), note);
      item.focus({ preventScroll: true });
    });
    form.querySelector(".note-cancel").addEventListener("click", function () {
      cancelNote(item);
    });
  });

  function cancelNote(item) {
    closeNotePrompt(item);
    item.focus({ preventScroll: true });
  }

  document.getElementById("help-close").addEventListener("click", function () {
    toggleHelp(false);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const inNote = event.target.closest && event.target.closest(".note-form");
    if (inNote) {
      const item = inNote.closest(".candidate");
      if (event.key === "Escape") {
        event.preventDefault();
        cancelNote(item);
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        inNote.requestSubmit();
      }
      return;
    }
    if (event.target.matches && event.target.matches("input, textarea, select")) return;
    const key = event.key;
    if (key === "?") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    if (key === "Escape") {
      toggleHelp(false);
      return;
    }
    if (!help.hidden) return;
    if (key === "j" || key === "ArrowDown") {
      event.preventDefault();
      focusItem(current + 1);
    } else if (key === "k" || key === "ArrowUp") {
      event.preventDefault();
      focusItem(current - 1);
    } else if (key === "n") {
      event.preventDefault();
      moveOn();
    } else if (key === "d") {
      event.preventDefault();
      markDone();
    } else if (key === "m" && current >= 0) {
      event.preventDefault();
      openNotePrompt(items[current]);
    } else if (/^[0-9]$/.test(key) && scale.includes(Number(key)) && current >= 0) {
      event.preventDefault();
      save(items[current], Number(key));
    }
  });

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      if (current >= 0) banked(items[current]);
      visible = false;
    } else {
      visible = true;
      focusedSince = performance.now();
      refresh();
    }
  });

  if (items.length) {
    const firstOpen = items.findIndex(function (item) {
      return item.dataset.grade === "";
    });
    focusItem(firstOpen >= 0 ? firstOpen : 0);
  }
  // Just marked done (or back later): what is asked now is the notes, at the top, not the last item.
  const overturnsPanel = document.getElementById("overturns");
  if (overturnsPanel) overturnsPanel.scrollIntoView({ block: "start" });
  else if (done) window.scrollTo(0, 0);
})();
