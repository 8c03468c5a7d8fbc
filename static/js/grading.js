// The grading page: keyboard grading, saving each grade at once, note prompts, time per item.
// Keys: scale digits grade the highlighted document, j/k (or arrows) move, n next query, ? help.
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root) return;
  const gradesUrl = root.dataset.gradesUrl;
  const nextUrl = root.dataset.nextUrl;
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
      graded + " of " + total + " graded" + (total && graded >= total ? " — all done, press n for the next query" : "");
  }

  function openNotePrompt(item, grade, message) {
    const form = item.querySelector(".note-form");
    form.dataset.grade = String(grade);
    form.hidden = false;
    form.querySelector("label").textContent = message;
    const area = form.querySelector("textarea");
    area.value = "";
    area.focus();
  }

  function closeNotePrompt(item) {
    const form = item.querySelector(".note-form");
    form.hidden = true;
    delete form.dataset.grade;
  }

  async function save(item, grade, note) {
    if (!scale.includes(grade)) return;
    setState(item, "saving", "Saving…");
    const body = { candidate: Number(item.dataset.candidate), grade: grade, time_spent_ms: takeTime(item) };
    if (note !== undefined) body.note = note;
    let response;
    try {
      response = await fetch(gradesUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "application/json" },
        body: JSON.stringify(body),
      });
    } catch (err) {
      setState(item, "error", "Not saved: the server could not be reached. Grade again.");
      return;
    }
    let data = {};
    try {
      data = await response.json();
    } catch (err) {
      data = {};
    }
    if (response.ok) {
      showGrade(item, data.grade);
      showNote(item, data.note);
      closeNotePrompt(item);
      setState(item, "saved", "Saved");
      updateProgress(data.graded, data.total);
      return;
    }
    if (response.status === 422 && data.error === "note_required") {
      setState(item, "needs-note", "Not saved yet: add a note");
      openNotePrompt(item, grade, data.message);
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
    setState(item, "error", item.dataset.grade === "" ? "Not saved" : "Not changed: still " + item.dataset.grade);
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
      if (current >= 0) banked(items[current]);
      window.location.href = nextUrl;
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
})();
