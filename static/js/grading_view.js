// How the grading page shows what is saved (templates/labeling/grade.html; its behaviour is
// static/js/grading.js, which reads these through window.AssayGradingView): each document's save line,
// grade buttons, can't-judge mark and own note, the progress strip and today's count, a document's state
// in words, and what is said to screen readers through the page's live region.
(function () {
  "use strict";

  const root = document.getElementById("grading");
  if (!root) return;
  const done = root.dataset.done === "true";
  const announcer = document.getElementById("announcer");
  const first = root.querySelector(".candidate");
  const progress = document.getElementById("progress");
  const progressText = document.getElementById("progress-text");
  const todayCount = document.getElementById("today-count");
  const reasons = {};
  (first ? first.querySelectorAll(".cj-form input[name=reason]") : []).forEach(function (input) {
    reasons[input.value] = input.parentElement.textContent.trim();
  });
  const keyFor = window.AssayKeys.keyFor;

  // Said once to screen readers (the region is polite and atomic); cleared first so a repeat is heard.
  function announce(text) {
    announcer.textContent = "";
    window.setTimeout(function () {
      announcer.textContent = text;
    }, 30);
  }

  function titleOf(item) {
    return item.querySelector(".doc-title").textContent.trim();
  }

  function stateOf(item) {
    return { grade: item.dataset.grade, cantJudge: item.dataset.cantJudge || "", note: item.dataset.note || "" };
  }

  function describe(state) {
    if (state.grade !== "" && state.grade !== null && state.grade !== undefined) return "grade " + state.grade;
    if (state.cantJudge) return "can't judge (" + (reasons[state.cantJudge] || state.cantJudge) + ")";
    return "no grade";
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

  function showMark(item, reason) {
    item.dataset.cantJudge = reason || "";
    item.classList.toggle("marked", item.dataset.cantJudge !== "");
    item.querySelector(".cj-state").textContent = reason ? "Can't judge: " + (reasons[reason] || reason) : "";
  }

  function showNote(item, note) {
    item.dataset.note = note || "";
    const own = item.querySelector(".own-note");
    own.hidden = !note;
    own.querySelector("span").textContent = note || "";
  }

  function updateProgress(graded, total, cantJudged) {
    const handled = graded + (cantJudged || 0);
    progress.max = total;
    progress.value = handled;
    progressText.textContent =
      graded + " of " + total + " graded" + (cantJudged ? ", " + cantJudged + " can't judge" : "") +
      (total && handled >= total ? (done ? "" : " — every document done: press " + keyFor("done") + " to mark the query done") : "");
  }

  function countToday(item) {
    if (item.dataset.today === "true" || !todayCount) return;
    item.dataset.today = "true";
    const n = Number(todayCount.dataset.count || 0) + 1;
    todayCount.dataset.count = String(n);
    todayCount.textContent = n + (n === 1 ? " document" : " documents");
  }

  window.AssayGradingView = {
    announce: announce,
    titleOf: titleOf,
    stateOf: stateOf,
    describe: describe,
    setState: setState,
    showGrade: showGrade,
    showMark: showMark,
    showNote: showNote,
    updateProgress: updateProgress,
    countToday: countToday,
  };
})();
