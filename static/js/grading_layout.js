// The grading page's reading aids (templates/labeling/grade.html, loaded before static/js/grading.js):
// long texts folded to a few lines with a "more" button, and the rubric placed by the screen's width.
(function () {
  "use strict";

  if (!document.getElementById("grading")) return;

  // Long texts fold to a few lines with a "more" button (only where they overflow).
  document.querySelectorAll(".foldable").forEach(function (text) {
    text.classList.add("folded");
    if (text.scrollHeight <= text.clientHeight + 2) {
      text.classList.remove("folded");
      return;
    }
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "link-button fold-toggle";
    toggle.textContent = "more";
    toggle.setAttribute("aria-expanded", "false");
    if (!text.id) text.id = "fold-" + Math.random().toString(36).slice(2);
    toggle.setAttribute("aria-controls", text.id);
    toggle.addEventListener("click", function () {
      const open = text.classList.toggle("folded") === false;
      toggle.textContent = open ? "less" : "more";
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    });
    text.after(toggle);
  });

  // The rubric and its examples are open beside the list on a wide screen; on a narrow one the rubric
  // sits above the list, folded, and opens with its summary.
  const rubricPanel = document.getElementById("rubric-panel");
  const wide = window.matchMedia("(min-width: 901px)");
  function placeRubric() {
    if (!rubricPanel) return;
    rubricPanel.open = wide.matches;
    rubricPanel.querySelectorAll(".rubric-examples").forEach(function (examples) {
      examples.open = wide.matches;
    });
  }
  placeRubric();
  wide.addEventListener("change", placeRubric);
})();
