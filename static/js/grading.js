// The grading page: keyboard grading, saving each grade at once, can't judge, undo, notes, marking the
// query done, time per item, the progress strip. Its keys are the rows of labeling/keyboard.py that it
// uses (static/js/keys.js reads them; the help lists them): the scale's digits grade the highlighted
// document, x marks it can't judge (with a reason), u undoes the last change on this page, c opens its
// note, j/k (or arrows) move, d marks the query done, p and n go to the previous and next query. What
// happened is announced in a live region for screen readers. Nothing a save answers depends on earlier
// labels: the grades that overturn one are listed only once the query is marked done (and locked).
// What a document and the progress strip show, and the live region, are static/js/grading_view.js; the
// folded texts and the rubric's place, static/js/grading_layout.js.
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root) return;
  const gradesUrl = root.dataset.gradesUrl;
  const nextUrl = root.dataset.nextUrl;
  const previousUrl = root.dataset.previousUrl || "";
  const doneUrl = root.dataset.doneUrl;
  const done = root.dataset.done === "true";
  const flow = document.getElementById("flow-message");
  const scale = root.dataset.scale.split(",").filter(Boolean).map(Number);
  const items = Array.from(root.querySelectorAll(".candidate"));
  const progressText = document.getElementById("progress-text");
  const { announce, titleOf, stateOf, describe, setState, showGrade, showMark, showNote, updateProgress, countToday } =
    window.AssayGradingView;
  const keyFor = window.AssayKeys.keyFor;
  const undoStack = []; // {item, before: {grade, cantJudge, note}}: this page's changes, newest last
  const unsaved = new Set(); // documents whose last save has not (yet) succeeded

  // What the page says about the query as a whole (a refusal of d, the warning before leaving, nothing
  // to undo) shows in the status line fixed at the bottom of the screen, where it is seen whatever the
  // scroll, and is announced. It stands until a save changes the page (`clearFlow`): then what it said
  // may be stale ("0 of 5 graded"), and leaving warns again.
  function say(text) {
    flow.textContent = text;
    announce(text);
  }

  // Leaving (n, p, a link, closing the tab) warns once while a grade is not saved or a note or can't
  // judge is open; n (and the next-query link) also while the query is not marked done.
  function unsavedWords(how) {
    if (unsaved.size) {
      return "A grade of yours is not saved (" + Array.from(unsaved).map(titleOf).join(", ") + "). " +
        "Grade it again to save it, or leave again to go without it.";
    }
    const open = items.find(function (item) {
      return !item.querySelector(".note-form").hidden || !item.querySelector(".cj-form").hidden;
    });
    if (open) {
      return "Your note or can't judge on " + titleOf(open) + " is not saved: Enter saves it, Esc cancels. " +
        "Leave again to go without it.";
    }
    if (how === "next" && !done && items.length) {
      return "This query is not marked done yet. Press " + keyFor("done") + " to mark it done, or " + keyFor("next_query") +
        " again to leave it unfinished for now.";
    }
    return "";
  }

  const guard = window.AssayKeys.guard({ unsaved: unsavedWords, say: say });

  function clearFlow() {
    flow.textContent = "";
    guard.rearm();
  }

  let current = -1;
  let visible = !document.hidden;
  let focusedSince = performance.now();
  const spent = new Map(); // candidate token -> ms looked at since its last save

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
    return item;
  }

  function moveFocus(index) {
    if (!items.length) return;
    const item = focusItem(index);
    announce("Document " + (current + 1) + " of " + items.length + ": " + titleOf(item) + ", " + describe(stateOf(item)));
  }

  function openNotePrompt(item) {
    if (item.dataset.grade === "" && !item.dataset.cantJudge) {
      setState(item, "error", "Grade it (or mark it can't judge) first: a note belongs to a grade");
      announce("No note yet: grade the document first");
      return;
    }
    closeMarkPrompt(item);
    const form = item.querySelector(".note-form");
    form.dataset.grade = item.dataset.grade;
    form.dataset.cantJudge = item.dataset.cantJudge || "";
    form.hidden = false;
    const area = form.querySelector("textarea");
    area.value = item.dataset.note || "";
    area.focus();
  }

  function closeNotePrompt(item) {
    const form = item.querySelector(".note-form");
    form.hidden = true;
    delete form.dataset.grade;
    delete form.dataset.cantJudge;
  }

  // x: the reasons as radio buttons (arrows choose, Enter saves, Esc cancels), with an optional note.
  function openMarkPrompt(item) {
    if (done && !item.dataset.cantJudge) {
      setState(item, "error", "Locked: you marked this query done (a reviewer can reopen it)");
      announce("Locked: this query is marked done");
      return;
    }
    closeNotePrompt(item);
    const form = item.querySelector(".cj-form");
    const chosen = item.dataset.cantJudge || form.querySelector("input[name=reason]").value;
    form.querySelectorAll("input[name=reason]").forEach(function (input) {
      input.checked = input.value === chosen;
    });
    form.querySelector("textarea").value = item.dataset.cantJudge ? item.dataset.note || "" : "";
    form.hidden = false;
    form.querySelector("input[name=reason]:checked").focus();
    announce("Can't judge " + titleOf(item) + ": choose a reason with the arrow keys, Enter saves, Escape cancels");
  }

  function closeMarkPrompt(item) {
    item.querySelector(".cj-form").hidden = true;
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
    if (note === undefined) {
      closeNotePrompt(item); // a grade by button while a prompt was open: the prompt's state is stale
      closeMarkPrompt(item);
    }
    await saveState(item, { grade: grade, cantJudge: "", note: note });
  }

  // Every change of a document goes through here: a grade, can't judge with a reason, or (undo) neither.
  async function saveState(item, state, undone) {
    const undo = Boolean(undone);
    const grade = state.grade === "" || state.grade === null || state.grade === undefined ? null : Number(state.grade);
    if (done && (String(grade === null ? "" : grade) !== item.dataset.grade || (state.cantJudge || "") !== (item.dataset.cantJudge || ""))) {
      setState(item, "error", "Locked: you marked this query done (a reviewer can reopen it)");
      announce("Locked: this query is marked done, nothing changed");
      return;
    }
    setState(item, "saving", undo ? "Undoing…" : "Saving…");
    unsaved.add(item);
    const body = { candidate: item.dataset.candidate, grade: grade, time_spent_ms: takeTime(item) };
    if (state.cantJudge) body.cant_judge = state.cantJudge;
    if (state.note !== undefined) body.note = state.note;
    if (undo) body.undo = true;
    await send(item, body, stateOf(item), undone);
  }

  // u: the document of this page's last change goes back to what it was before (through the same save,
  // so its history records the undo).
  async function undoLast() {
    const last = undoStack.pop();
    if (!last) {
      say("Nothing to undo on this page.");
      return;
    }
    focusItem(items.indexOf(last.item));
    await saveState(last.item, last.before, last);
  }

  // The save last asked for on each item: a busy retry gives way to a newer grade of the same document.
  const latest = new WeakMap();

  async function send(item, body, before, undone) {
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
        if (latest.get(item) === body) send(item, body, before, undone);
      }, wait * 1000);
      return;
    }
    if (response.ok) {
      unsaved.delete(item);
      showGrade(item, data.grade);
      showMark(item, data.cant_judge || "");
      showNote(item, data.note);
      // A prompt closes with the save it made (or an undo), not with an earlier save still answering.
      if (body.note !== undefined) closeNotePrompt(item);
      if (body.cant_judge || body.undo) closeMarkPrompt(item);
      const now = stateOf(item);
      const kept = now.grade !== "" || now.cantJudge;
      setState(item, kept ? "saved" : "", kept ? "Saved" : body.undo ? "Undone" : "");
      updateProgress(data.graded, data.total, data.cant_judged || 0);
      if (data.changed) {
        clearFlow();
        countToday(item);
        if (!body.undo) undoStack.push({ item: item, before: before });
      }
      let said = body.undo ? "Undone: " + titleOf(item) + " is back to " + describe(now) : "Saved " + describe(now);
      if (!body.undo && body.note) said = "Saved " + describe(now) + " with your note";
      announce(said + ". " + progressText.textContent);
      return;
    }
    if (undone) undoStack.push(undone); // not undone: u tries it again
    if (response.status === 403) {
      setState(item, "error", "Not saved: your session or security token expired. Reload the page and log in.");
      announce("Not saved: your session expired");
      return;
    }
    setState(item, "error", "Not saved: " + (data.message || "error " + response.status));
    announce("Not saved: " + (data.message || "error " + response.status));
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
    const marks = data.cant_judge || {};
    let graded = 0;
    let marked = 0;
    items.forEach(function (item) {
      const saved = data.grades[item.dataset.candidate];
      const mark = marks[item.dataset.candidate];
      const before = stateOf(item);
      showGrade(item, saved ? saved.grade : null);
      showMark(item, mark ? mark.reason : "");
      showNote(item, saved ? saved.note : mark ? mark.note : "");
      if (saved) graded += 1;
      if (mark) marked += 1;
      const now = stateOf(item);
      if (now.grade !== before.grade || now.cantJudge !== before.cantJudge) {
        setState(item, saved || mark ? "saved" : "", saved || mark ? "Saved" : "");
      }
    });
    updateProgress(graded, items.length, marked);
  }

  // Marking the query done locks the grades; the page then lists the grades that overturn a label.
  async function markDone() {
    if (done) {
      say("This query is already marked done.");
      return;
    }
    if (current >= 0) banked(items[current]);
    say("Marking done…");
    await sendDone();
  }

  async function sendDone() {
    let response, data;
    try {
      ({ response, data } = await post(doneUrl, {}));
    } catch (err) {
      say("Not marked done: the server could not be reached. Try again.");
      return;
    }
    if (response.ok) {
      // The page comes back at its top (the grades to explain), not at the old scroll position.
      history.scrollRestoration = "manual";
      window.location.reload();
      return;
    }
    if (response.status === 503) {
      // The database was busy (SQLite under many raters): marked done again, as a grade is saved again.
      const wait = Math.max(1, Number(response.headers.get("Retry-After")) || 2);
      say("Not marked done yet: the server is busy. Trying again in " + wait + " s…");
      setTimeout(sendDone, wait * 1000);
      return;
    }
    say("Not marked done: " + (data.message || "error " + response.status));
  }

  function moveOn() {
    if (current >= 0) banked(items[current]);
    guard.go(nextUrl, "next");
  }

  function moveBack() {
    if (current >= 0) banked(items[current]);
    if (!previousUrl) {
      say("No open query before this one in your queue.");
      return;
    }
    guard.go(previousUrl, "link");
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
          candidate: entry.dataset.candidate,
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
      if (!response.ok) {
        announce(state.textContent);
        return;
      }
      if (item) showNote(item, data.note);
      // On to the next grade still to explain, as Enter in the c prompt moves on.
      const next = firstUnexplained();
      if (next) {
        next.focus();
        announce("Note saved. Next: " + next.labels[0].textContent.trim());
      } else {
        announce("Note saved. Every grade is explained.");
      }
    });
  });

  // The first overturn note not saved yet (the panel's own state line says so), or null.
  function firstUnexplained() {
    const open = Array.from(document.querySelectorAll(".overturn-form")).find(function (form) {
      return !form.querySelector(".save-state").classList.contains("saved");
    });
    return open ? open.querySelector("textarea") : null;
  }

  const doneButton = document.getElementById("mark-done");
  if (doneButton) doneButton.addEventListener("click", markDone);

  items.forEach(function (item, index) {
    item.addEventListener("click", function (event) {
      if (event.target.closest(".note-form, .cj-form, details, .fold-toggle")) return;
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
    item.querySelector(".cj-open").addEventListener("click", function () {
      if (current !== index) focusItem(index);
      openMarkPrompt(item);
    });
    const form = item.querySelector(".note-form");
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      const note = form.querySelector("textarea").value.trim();
      if (!note) {
        form.querySelector("textarea").focus();
        return;
      }
      saveState(item, { grade: form.dataset.grade, cantJudge: form.dataset.cantJudge || "", note: note });
      item.focus({ preventScroll: true });
    });
    form.querySelector(".note-cancel").addEventListener("click", function () {
      cancelNote(item);
    });
    const markForm = item.querySelector(".cj-form");
    markForm.addEventListener("submit", function (event) {
      event.preventDefault();
      const reason = markForm.querySelector("input[name=reason]:checked").value;
      saveState(item, { grade: null, cantJudge: reason, note: markForm.querySelector("textarea").value.trim() });
      item.focus({ preventScroll: true });
    });
    markForm.querySelector(".cj-cancel").addEventListener("click", function () {
      cancelNote(item);
    });
  });

  function cancelNote(item) {
    closeNotePrompt(item);
    closeMarkPrompt(item);
    item.focus({ preventScroll: true });
    announce("Cancelled");
  }

  // The prompts and the overturns' notes take their own keys: Enter (submit) saves, Shift+Enter starts a
  // new line, Esc (close) cancels a prompt or goes back to the list from an overturn's note.
  function intercept(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return true;
    const overturn = event.target.closest && event.target.closest(".overturn-form");
    if (overturn) {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        overturn.requestSubmit();
      } else if (event.key === "Escape" && current >= 0) {
        event.preventDefault();
        focusItem(current);
      }
      return true;
    }
    const inNote = event.target.closest && event.target.closest(".note-form, .cj-form");
    if (inNote) {
      const item = inNote.closest(".candidate");
      if (event.key === "Escape") {
        event.preventDefault();
        cancelNote(item);
      } else if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        inNote.requestSubmit();
      }
      return true;
    }
    if (event.target.matches && event.target.matches("input, textarea, select")) return true;
    // A focused link's, button's or summary's own Enter and space.
    return Boolean(event.target.closest && event.target.closest("a, button, summary") && (event.key === "Enter" || event.key === " "));
  }

  // Each key's action (labeling/keyboard.py names them); a key prevents the browser's own use of it.
  function onFocused(run) {
    return function (arg, event) {
      event.preventDefault();
      if (current >= 0) run(items[current], arg);
    };
  }

  function always(run) {
    return function (arg, event) {
      event.preventDefault();
      run();
    };
  }

  window.AssayKeys.listen({
    intercept: intercept,
    actions: {
      answer: onFocused(function (item, grade) {
        if (scale.includes(grade)) save(item, grade);
      }),
      next_item: always(function () {
        moveFocus(current + 1);
      }),
      previous_item: always(function () {
        moveFocus(current - 1);
      }),
      cant_judge: onFocused(openMarkPrompt),
      note: onFocused(openNotePrompt),
      undo: always(undoLast),
      done: always(markDone),
      previous_query: always(moveBack),
      next_query: always(moveOn),
    },
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
      return item.dataset.grade === "" && !item.dataset.cantJudge;
    });
    focusItem(firstOpen >= 0 ? firstOpen : 0);
  }
  // Just marked done (or back later): what is asked now is the notes, at the top, not the last item; the
  // first note still needed has the focus (Enter saves it and moves to the next), and it is announced.
  const overturnsPanel = document.getElementById("overturns");
  if (done) history.scrollRestoration = "manual";
  if (overturnsPanel) {
    overturnsPanel.scrollIntoView({ block: "start" });
    const first = firstUnexplained();
    if (first) {
      first.focus({ preventScroll: true });
      announce(
        document.getElementById("overturns-title").textContent.trim() +
          ": add a note to each, Enter saves it. First: " +
          first.labels[0].textContent.trim()
      );
    }
  } else if (done) window.scrollTo(0, 0);
})();
